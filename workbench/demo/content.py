"""What the demo memory file holds: three agents' conversations, notes, facts and schedules.

Hand-written so that the first thing a new user opens reads like a real agent's memory:
a billing-support bot, a research assistant planning a trek, an on-call ops agent. Every
time is fixed relative to :data:`ANCHOR` (the demo's "now"), so the file is the same on
every run. :mod:`workbench.demo.build` turns these structures into engine calls.

This module gathers them: the vocabulary is in :mod:`workbench.demo.script`, each agent's
conversations in its own module, the notes, facts and schedules in theirs.
"""

from __future__ import annotations

from workbench.demo.notes import FACTS, NOTES
from workbench.demo.ops import FRIDAY_DEPLOY, LATENCY_INCIDENT, POSTGRES_UPGRADE
from workbench.demo.research import ALTA_VIA_1, GEAR_LIST, MEMORY_PAPERS
from workbench.demo.schedules import SCHEDULES
from workbench.demo.script import AGENTS, ANCHOR
from workbench.demo.support import (
    ACME_DOUBLE_CHARGE,
    SEAT_DOWNGRADE,
    VAT_INVOICE,
    WEBHOOK_FAILURES,
)

__all__ = ["AGENTS", "ANCHOR", "FACTS", "NOTES", "SCHEDULES", "SESSIONS"]

SESSIONS = (ACME_DOUBLE_CHARGE, SEAT_DOWNGRADE, WEBHOOK_FAILURES, VAT_INVOICE,
            ALTA_VIA_1, MEMORY_PAPERS, GEAR_LIST,
            POSTGRES_UPGRADE, LATENCY_INCIDENT, FRIDAY_DEPLOY)
