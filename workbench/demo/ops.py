"""ops-agent's conversations: on-call and deploy assistant for Ledgerly's platform."""

from __future__ import annotations

from workbench.demo.script import (
    OPS,
    SALIENT,
    Pause,
    Recall,
    Scratchpad,
    Session,
    ToolCall,
    assistant,
    at,
    system,
    tool,
    tools,
    user,
)

OPS_SYSTEM = system(
    "You are the ops assistant for Ledgerly's platform team. You can query metrics, read "
    "logs, list and roll back deploys, and post status updates. Prefer the smallest safe "
    "change; never act on production without a human's go-ahead.")

POSTGRES_UPGRADE = Session("ops-postgres-upgrade-plan", OPS, at(13, 10, 0), (
    OPS_SYSTEM,
    user("We need to plan the Postgres 15 → 16 upgrade for billing-db. What are our "
         "options?", name="marco", tags=("postgres", "planning")),
    tool("describe_database", {"name": "billing-db"}, {
        "engine": "postgres 15.8", "size_gb": 412, "replicas": 2, "extensions":
        ["pg_stat_statements", "pgcrypto"], "peak_writes_per_s": 1800}),
    assistant("For a 412 GB primary with two replicas there are two realistic paths:\n"
              "1. pg_upgrade --link: minutes of downtime, but the replicas must be rebuilt "
              "afterwards and rolling back means restoring from backup.\n"
              "2. Logical replication to a new 16 cluster: near-zero downtime and an easy "
              "rollback (the old cluster stays), at the cost of setting up and watching "
              "replication for a few days.\n"
              "Both extensions are available on 16."),
    user("Downtime is expensive for us: invoices are generated on the hour. Logical "
         "replication it is.", name="marco"),
    assistant("Then the plan is: build the 16 cluster, publish all tables from 15, let the "
              "initial copy finish (about 6-8 h at this size), watch the lag for a couple of "
              "days, then switch the app over in a short write pause between two invoice "
              "runs."),
    user("Important rule before we schedule anything: we never deploy on Fridays. No "
         "production changes Friday through Sunday unless it's an incident fix.",
         name="marco", importance=SALIENT, tags=("policy", "deploys")),
    assistant("Understood, and I'll hold every plan to it: no production changes on Fridays, "
              "Saturdays or Sundays except incident fixes. For this upgrade that means "
              "starting the copy on a Monday and switching over on a Tuesday or Wednesday.",
              importance=SALIENT, tags=("policy", "deploys")),
    Scratchpad((
        "Build pg16 cluster billing-db-16 (same instance class)",
        "Check sequences: logical replication doesn't copy them; sync at cutover",
        "CREATE PUBLICATION on 15; SUBSCRIPTION on 16; initial copy ~6-8 h",
        "Watch replication lag for 48 h",
        "Cutover in the write pause between two hourly invoice runs (Tue/Wed)",
        "Keep 15 running for a week as the rollback",
        "Never on Fri-Sun",
    )),
    user("What can go wrong at cutover?", name="marco"),
    assistant("Three things to rehearse: sequences (not replicated, so set them on 16 before "
              "writes resume), large objects (none here, I checked), and connection strings "
              "(switch via the pgbouncer config, not app env vars, so it's one reload). I'd "
              "do a full rehearsal on staging first."),
    user("Let's rehearse on staging on Tuesday the 24th.", name="marco"),
    tool("calendar_add", {"title": "billing-db pg16 cutover rehearsal (staging)",
                          "date": "2026-11-24T10:00:00+01:00", "attendees":
                          ["marco", "ines"]},
         {"event_id": "cal_8810", "ok": True}),
    assistant("Booked: Tue Nov 24, 10:00 Paris time, with Marco and Inès."),
))

LATENCY_INCIDENT = Session("ops-incident-billing-api-latency", OPS, at(16, 14, 21), (
    OPS_SYSTEM,
    system("PagerDuty alert: billing-api p99 latency above 2,000 ms for 5 minutes "
           "(threshold 800 ms). Severity: high.", importance=0.8),
    user("I'm on it. What changed?", name="ines", tags=("incident", "billing-api")),
    tools(ToolCall("query_metrics", {"service": "billing-api", "metric": "latency_p99_ms",
                                     "window": "2h", "step": "15m"},
                   {"points": [212, 205, 220, 214, 1380, 2240, 2610, 2580]}),
          ToolCall("get_recent_deploys", {"service": "billing-api", "since": "6h"},
                   [{"version": "v2.14.0", "deployed_at": "2026-11-16T13:05:12Z",
                     "author": "ci", "changes": ["render invoice PDFs on request",
                                                 "bump pg driver 3.1 → 3.2"]}]),
          text="Pulling latency and recent deploys together."),
    assistant("p99 was flat around 210 ms until 13:15, then jumped to 1.4 s and is now at "
              "2.6 s. v2.14.0 went out at 13:05 with two changes: invoice PDFs are now "
              "rendered on request, and the Postgres driver went from 3.1 to 3.2. The timing "
              "points at that deploy.", tags=("incident",)),
    user("Errors too, or just slow?", name="ines"),
    tool("query_metrics", {"service": "billing-api", "metric": "error_rate",
                           "window": "1h"}, {"current": 0.031, "baseline": 0.0004,
                                             "top_status": {"503": 0.027, "500": 0.004}}),
    assistant("Errors too: 3.1% against a 0.04% baseline, mostly 503s, which we return when "
              "a request can't get a database connection in time."),
    tool("tail_logs", {"service": "billing-api", "grep": "pool", "lines": 5}, [
        "14:19:02 WARN db pool exhausted: 20/20 in use, 143 waiting",
        "14:19:02 WARN slow request GET /invoices/INV-2384/pdf 9120 ms",
        "14:19:03 WARN db pool exhausted: 20/20 in use, 151 waiting",
        "14:19:05 ERROR acquire timeout after 5000 ms (GET /v1/subscriptions)",
        "14:19:05 WARN slow request GET /invoices/INV-2390/pdf 8870 ms"]),
    assistant("The logs explain it: PDF requests take ~9 s and hold a database connection the "
              "whole time, so the pool of 20 is exhausted and everything else queues behind "
              "them. The new on-request PDF rendering is the cause; the driver bump looks "
              "innocent.", importance=0.8, tags=("incident", "root-cause")),
    Scratchpad((
        "14:15 p99 up after v2.14.0 (13:05): on-request PDF rendering holds db connections",
        "Pool 20/20 exhausted, 503s at 3.1%",
        "Roll back to v2.13.4? waiting for Inès",
        "Status page: investigating",
        "Follow-up: render PDFs in the worker queue, not in the request",
    )),
    user("Roll back to v2.13.4. And post a status update.", name="ines"),
    tools(ToolCall("rollback_deploy", {"service": "billing-api", "to_version": "v2.13.4"},
                   {"ok": True, "version": "v2.13.4", "started_at": "2026-11-16T14:24:02Z",
                    "healthy_pods": "6/6"}),
          ToolCall("post_status_update", {
              "component": "Billing API", "status": "identified",
              "message": "Elevated latency and errors on the Billing API since 13:15 UTC. "
                         "We've identified the cause and are rolling back."},
              {"ok": True, "incident_url": "https://status.ledgerly.example/inc/7731"})),
    assistant("Rollback to v2.13.4 is done, 6/6 pods healthy, and the status page says "
              "'identified' (inc/7731). I'll watch latency for the next 10 minutes."),
    Pause(minutes=12),
    tool("query_metrics", {"service": "billing-api", "metric": "latency_p99_ms",
                           "window": "20m", "step": "5m"}, {"points": [2480, 640, 231, 209]}),
    assistant("Recovered: p99 is back to 209 ms and errors are at baseline since 14:35. Shall "
              "I resolve the status page incident?"),
    user("Yes, resolve it. Then draft the postmortem summary.", name="ines"),
    tool("post_status_update", {"component": "Billing API", "status": "resolved",
                                "message": "Latency and error rates are back to normal. "
                                           "A fix will follow in the next release."},
         {"ok": True}),
    assistant("Resolved. Postmortem draft:\n"
              "Impact: 13:15-14:35 UTC, p99 up to 2.6 s, 3.1% of API requests failed (503).\n"
              "Cause: v2.14.0 rendered invoice PDFs inside the request, holding a database "
              "connection for ~9 s each; the pool of 20 ran out.\n"
              "Fix: rolled back to v2.13.4 at 14:24.\n"
              "Follow-ups: move PDF rendering to the worker queue (v2.14.1); alert on pool "
              "saturation, not only latency; load-test PDF endpoints before release.",
              importance=0.8, tags=("incident", "postmortem")),
    user("Good. I'll take it from here. Thanks.", name="ines"),
    Recall("db pool exhausted connection", "session",
           judged=(("pool exhausted", 3), ("pdf requests take", 2))),
    Scratchpad((
        "Resolved 14:35: rolled back to v2.13.4, status inc/7731 resolved",
        "Postmortem draft posted; owner Inès",
        "v2.14.1 must render PDFs in the worker queue",
        "Add alert: db pool saturation > 90% for 2 min",
    )),
))

FRIDAY_DEPLOY = Session("ops-friday-deploy", OPS, at(20, 15, 5), (
    OPS_SYSTEM,
    user("v2.14.1 is green on staging: PDFs render in the worker queue now. Can we ship it "
         "to production this afternoon?", name="ines", tags=("deploys", "billing-api")),
    Recall("deploy on Fridays policy", "namespace",
           judged=(("never deploy on fridays", 3), ("no production changes", 3))),
    assistant("Not today: it's Friday, and the team rule (Marco, Nov 13) is never to deploy "
              "on Fridays, with no production changes Friday through Sunday except incident "
              "fixes. Billing-api is stable on v2.13.4, so this isn't an incident fix.",
              tags=("policy", "deploys")),
    user("Fair. Monday morning then?", name="ines"),
    tool("get_deploy_windows", {"service": "billing-api", "from": "2026-11-23"}, {
        "windows": ["2026-11-23T09:30:00+01:00", "2026-11-23T14:00:00+01:00"],
        "note": "avoid :55-:05, the hourly invoice run"}),
    assistant("Monday Nov 23 at 9:30 Paris time is the first window, clear of the hourly "
              "invoice run. I'll schedule the deploy for then, notify you when it runs, and "
              "watch pool saturation for 30 minutes afterwards."),
    user("Do it.", name="ines"),
    tool("create_schedule", {"name": "deploy-billing-api-v2.14.1", "cadence": {
        "kind": "once", "value": "2026-11-23T09:30", "timezone": "Europe/Paris"},
        "goal": "Deploy billing-api v2.14.1 and watch db pool saturation for 30 min."},
         {"ok": True, "status": "active", "next_run_at": "2026-11-23T08:30:00.000Z"}),
    assistant("Scheduled 'deploy-billing-api-v2.14.1' for Mon Nov 23, 09:30 Europe/Paris. "
              "Have a good weekend!"),
))
