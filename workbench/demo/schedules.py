"""The demo's schedules and their runs: fire times filled up to the anchor (or a pause)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from workbench.demo.script import (
    OPS,
    RESEARCH,
    SUPPORT,
    at,
)


@dataclass(frozen=True)
class DemoRun:
    """One run of a schedule: how it went, what it printed, how long it took."""

    status: str  # "ok", "failed" or "timeout"
    output: str
    seconds: float


@dataclass(frozen=True)
class DemoSchedule:
    """A schedule created at ``created``; its runs fill its fire times up to the anchor
    (or the pause), one each."""

    name: str
    user_id: str
    goal: str
    cadence: dict[str, str]
    created: datetime
    runs: tuple[DemoRun, ...] = ()
    notification_policy: str = "always"
    paused: tuple[datetime, str] | None = None  # when, and the reason given


def _health(p99: int, errors: str, pods: str = "6/6") -> DemoRun:
    """A health check that found billing-api well."""
    return DemoRun("ok", f"billing-api healthy: p99 {p99} ms, error rate {errors}, "
                         f"{pods} pods ready, db pool 41% used", 3.2)


SCHEDULES = (
    DemoSchedule(
        "daily-support-digest", SUPPORT,
        "Summarise yesterday's support conversations: refunds issued, escalations, open "
        "tickets, and anything the account managers should know.",
        {"kind": "cron", "value": "0 8 * * *", "timezone": "Europe/Paris"},
        at(13, 16, 0), (
            DemoRun("ok", "Nov 13: 0 conversations. Open: PAY-412 (double-charge fix).", 8.1),
            DemoRun("ok", "Nov 14: 1 conversation (Brightline Studio: 25 → 18 seats, "
                          "credit note CN-0388 $107.52). No escalations.", 11.4),
            DemoRun("ok", "Nov 15: no conversations.", 4.9),
            DemoRun("failed", "summarizer endpoint timed out after 60 s (HTTP 504 from "
                              "llm-gateway); no digest written", 60.3),
            DemoRun("ok", "Nov 17: 1 conversation (Parcelwise: webhook secret rotated, 214 "
                          "deliveries replayed, 0 failed). Docs gap passed to product.", 12.7),
            DemoRun("ok", "Nov 18: no conversations.", 5.2),
            DemoRun("ok", "Nov 19: 1 conversation (Kessler Maschinenbau: VAT ID added, "
                          "INV-2417 reissued). PAY-412 still targeted for Nov 24.", 10.9),
        )),
    DemoSchedule(
        "billing-api-health-check", OPS,
        "Check billing-api: p99 latency, error rate, ready pods and db pool use; alert "
        "on-call when any is out of bounds.",
        {"kind": "interval", "value": "1h30m", "timezone": "UTC"},
        at(19, 23, 10), (
            _health(212, "0.03%"), _health(208, "0.04%"), _health(215, "0.03%"),
            _health(204, "0.02%"), _health(219, "0.04%"), _health(231, "0.05%"),
            _health(226, "0.04%"), _health(240, "0.05%"),
            DemoRun("failed", "metrics API returned 503 Service Unavailable (3 attempts); "
                              "health unknown", 31.0),
            DemoRun("timeout", "no answer from metrics API within 300 s", 300.0),
            DemoRun("failed", "metrics API returned 503 Service Unavailable (3 attempts); "
                              "health unknown. Paging on-call after the next failure.", 31.4),
        ), notification_policy="on_failure"),
    DemoSchedule(
        "weekly-paper-digest", RESEARCH,
        "Find new papers on retrieval and long-term memory for LLM agents (arXiv cs.CL, "
        "cs.AI, cs.IR) and send Sam a digest of the five most relevant, one paragraph each.",
        {"kind": "cron", "value": "0 9 * * mon", "timezone": "America/New_York"},
        at(6, 18, 0), (
            DemoRun("ok", "5 papers: query rewriting for RAG; reranking with small models; "
                          "chunking strategies for long documents; long-context evaluation; "
                          "retrieval for code assistants. Sent to Sam.", 94.2),
            DemoRun("ok", "5 papers: episodic vs semantic memory in agents; retrieval "
                          "evaluation with graded judgments; reflection-based memory "
                          "compression; long-context vs retrieval trade-offs; memory "
                          "poisoning risks. Sent to Sam.", 101.7),
        )),
    DemoSchedule(
        "nightly-backup-verify", OPS,
        "Restore last night's billing-db backup into a scratch instance, run the integrity "
        "checks and compare row counts with production.",
        {"kind": "cron", "value": "30 2 * * *", "timezone": "UTC"},
        at(12, 10, 0), (
            DemoRun("ok", "backup 2026-11-13 restored in 41 min; checks passed; row counts "
                          "match (invoices 18,204,331)", 2710.5),
            DemoRun("ok", "backup 2026-11-14 restored in 40 min; checks passed; row counts "
                          "match (invoices 18,231,907)", 2655.0),
            DemoRun("ok", "backup 2026-11-15 restored in 43 min; checks passed; row counts "
                          "match (invoices 18,240,112)", 2838.2),
            DemoRun("ok", "backup 2026-11-16 restored in 42 min; checks passed; row counts "
                          "match (invoices 18,262,045)", 2790.9),
            DemoRun("failed", "restore failed: AccessDenied reading "
                              "s3://ledgerly-backups/billing-db/2026-11-17.tar.zst", 12.4),
            DemoRun("failed", "restore failed: AccessDenied reading "
                              "s3://ledgerly-backups/billing-db/2026-11-18.tar.zst", 11.9),
        ), notification_policy="on_failure",
        paused=(at(18, 9, 15), "paused by Marco: the backup bucket is moving to eu-west-3 "
                               "(CHG-1182); resume after Nov 24")),
    DemoSchedule(
        "deploy-billing-api-v2.14.1", OPS,
        "Deploy billing-api v2.14.1 and watch db pool saturation for 30 min.",
        {"kind": "once", "value": "2026-11-23T09:30", "timezone": "Europe/Paris"},
        at(20, 15, 8)),
)
