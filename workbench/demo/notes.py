"""The demo's notes and facts, each written at a fixed time before the anchor."""

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
class DemoNote:
    """A note as ``engine.add_note`` takes it, written at ``written``."""

    namespace: str
    name: str
    content: str
    category: str
    tags: tuple[str, ...]
    source: str
    written: datetime
    importance: float = 0.5
    aliases: tuple[str, ...] = ()


NOTES = (
    DemoNote(SUPPORT, "customer-acme",
             "Acme Corp (cus_8YqL2): Scale plan, 140 seats, billed monthly in USD to the Visa "
             "ending 4417. Billing contacts: ap@acme.example and Priya Natarajan "
             "(priya@acme.example). Account manager: Daniel Okafor. Double-charged twice in "
             "2026 (SUP-1184 in March, INV-2291 in November, both refunded); escalate any "
             "further billing problem to Daniel straight away.",
             "core", ("customer", "enterprise", "billing"), "import", at(2, 8, 0), 0.8,
             ("acme", "acme-corp")),
    DemoNote(SUPPORT, "refund-policy",
             "Refunds: duplicate or erroneous charges are refunded in full, any age. Other "
             "refunds within 30 days of the charge. The support bot may refund up to $5,000 "
             "on its own; above that a human in billing-ops approves. Card refunds take 5-10 "
             "business days.",
             "core", ("policy", "refund"), "import", at(1, 9, 0), 0.7, ("refunds",)),
    DemoNote(SUPPORT, "proration-rules",
             "Monthly plans: seat changes apply at once; a decrease creates a credit note for "
             "the unused days (seats × price × days left / days in period), applied to the "
             "next invoice. Annual plans: decreases take effect at renewal.",
             "core", ("policy", "billing", "seats"), "import", at(1, 9, 5)),
    DemoNote(SUPPORT, "webhook-secret-rotation",
             "Rotating a webhook signing secret with 'expire immediately' breaks every "
             "delivery until the customer deploys the new secret (401 'signature "
             "verification failed'). Advise the 24 h dual-secret mode; after a fix, replay "
             "failed deliveries oldest first. Seen with Parcelwise on 2026-11-17.",
             "conversation", ("webhooks", "developer", "troubleshooting"), "agent",
             at(17, 14, 0), 0.6),
    DemoNote(SUPPORT, "daily-2026-11-19",
             "Support digest for Nov 19: 1 conversation (Kessler Maschinenbau: VAT ID added, "
             "INV-2417 reissued as INV-2417-R1 under reverse charge). No refunds. PAY-412 "
             "(double-charge fix) still targeted for Nov 24.",
             "daily", ("digest",), "agent", at(20, 7, 0)),
    DemoNote(RESEARCH, "user-profile",
             "Sam: severely allergic to peanuts (carries an EpiPen); pescatarian (fish, no "
             "meat). Left knee hurts on long descents: use poles, avoid steep scree. Hikes "
             "most weekends with partner Lena. Based in Amsterdam; prefers metric units.",
             "core", ("profile", "health"), "user", at(12, 19, 58), 0.9, ("sam", "me")),
    DemoNote(RESEARCH, "trip-alta-via-1",
             "Alta Via 1, July 2027, with Lena: arrive Jul 10 (Dobbiaco), walk Jul 11-20 in "
             "10 stages from Lago di Braies to La Pissa/Belluno, spare day Jul 21. Fanes "
             "booked for Jul 12 (deposit paid), Lagazuoi waitlisted for Jul 13. Other huts "
             "open bookings Jan-Feb; reminders set for Jan 15 and Feb 1. Budget ~€2,600 for "
             "two, excluding flights.",
             "core", ("trip", "hiking", "dolomites"), "agent", at(13, 16, 0), 0.8,
             ("av1", "dolomites-trip")),
    DemoNote(RESEARCH, "reading-list",
             "Agent memory reading list: Generative Agents (Park et al. 2023), MemGPT "
             "(Packer et al. 2023), Lost in the Middle (Liu et al. 2023), Reciprocal Rank "
             "Fusion (Cormack, Clarke, Büttcher 2009) for hybrid keyword + vector retrieval. "
             "Next: papers on memory consolidation and forgetting.",
             "core", ("papers", "reading"), "user", at(15, 20, 5)),
    DemoNote(RESEARCH, "paper-lost-in-the-middle",
             "Liu et al. 2023, arXiv:2307.03172. Accuracy is highest when the relevant "
             "passage is at the start or end of the context and drops when it is in the "
             "middle (a U-shaped curve), even for long-context models. For memory: retrieve "
             "fewer items, rank them well, put the best at the edges.",
             "conversation", ("papers", "long-context"), "agent", at(15, 20, 18), 0.6,
             ("liu-2023",)),
    DemoNote(RESEARCH, "daily-2026-11-18",
             "Nov 18: started the Alta Via packing list (28 items, target 7-8 kg without "
             "water); decided to drop the second T-shirt, keep the shorts. To do: order a silk "
             "liner.",
             "daily", ("trip", "gear"), "agent", at(18, 21, 0)),
    DemoNote(OPS, "deploy-policy",
             "Never deploy on Fridays. No production changes Friday through Sunday unless "
             "it is an incident fix. Deploy windows avoid :55-:05, when the hourly invoice "
             "run happens. Set by Marco on 2026-11-13.",
             "core", ("policy", "deploys"), "user", at(13, 10, 30), 0.9,
             ("friday-rule", "change-freeze")),
    DemoNote(OPS, "runbook-billing-api-latency",
             "billing-api latency runbook: 1. Check p99 and error rate (query_metrics). "
             "2. List deploys in the last 6 h. 3. grep logs for 'pool exhausted' and slow "
             "requests. 4. If a deploy is the cause, roll back first, investigate after. "
             "5. Post a status update within 15 minutes of the page.",
             "core", ("runbook", "billing-api"), "import", at(3, 11, 0), 0.7,
             ("billing-api-runbook",)),
    DemoNote(OPS, "incident-2026-11-16",
             "Billing API latency incident, 2026-11-16 13:15-14:35 UTC. v2.14.0 rendered "
             "invoice PDFs in the request path, holding db connections ~9 s; pool of 20 "
             "exhausted, p99 2.6 s, 3.1% 503s. Rolled back to v2.13.4. Follow-ups: PDFs in "
             "the worker queue (v2.14.1), pool saturation alert, load-test PDF endpoints.",
             "conversation", ("incident", "postmortem", "billing-api"), "agent",
             at(16, 15, 10), 0.8, ("inc-7731",)),
    DemoNote(OPS, "oncall-rotation",
             "On-call rotation, weekly from Monday 09:00 Paris: Nov 16 Inès, Nov 23 Marco, "
             "Nov 30 Kofi. Escalation: platform lead (Marco) after 15 minutes.",
             "core", ("oncall",), "import", at(9, 9, 0)),
)

FACTS = (  # (namespace, category, key, value, source, written)
    (SUPPORT, "account", "acme.plan", "Scale, 140 seats, monthly", "agent", at(2, 8, 0)),
    (SUPPORT, "account", "acme.account_manager", "Daniel Okafor", "agent", at(2, 8, 0)),
    (SUPPORT, "limits", "refund_without_approval_usd", "5000", "user", at(1, 9, 0)),
    (RESEARCH, "health", "allergy", "peanuts (severe, carries EpiPen)", "user",
     at(12, 19, 41)),
    (RESEARCH, "preferences", "diet", "pescatarian", "user", at(12, 19, 52)),
    (RESEARCH, "trip", "av1.start_date", "2027-07-11", "agent", at(12, 19, 50)),
    (OPS, "policy", "deploy_days", "Monday to Thursday only", "user", at(13, 10, 30)),
    (OPS, "service", "billing-api.version", "v2.13.4 (rolled back from v2.14.0)", "agent",
     at(16, 14, 30)),
)
