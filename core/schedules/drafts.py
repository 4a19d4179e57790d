"""A schedule as someone types it: every field checked on its own, and the times it fires.

An editor checks a draft on each keystroke and shows each refusal at the field it is about,
so the checks here are the store's own (:mod:`core.schedules.store`: the same text limits,
policies, cadence parsing and ``min_interval_secs``) split by field. What the draft passes,
``create_schedule`` and ``update_schedule`` accept; they still check again when saving.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from core import clock
from core.errors import InvalidInput
from core.schedules.cadence import (
    CADENCE_KINDS,
    Cadence,
    format_in_timezone,
    next_runs,
    parse_cadence,
    validate_cadence,
    zone_named,
)
from core.schedules.store import (
    MAX_GOAL_CHARS,
    MAX_NAME_CHARS,
    POLICIES,
    as_cadence,
    checked_choice,
    checked_text,
    parse_when,
)
from core.schedules.wording import in_words
from core.types import ScheduleDefinition

PREVIEW_COUNT = 5
"""How many fire times a preview shows."""


@dataclass(frozen=True)
class ScheduleDraft:
    """A schedule's fields as typed, not yet checked (an empty name means no name)."""

    user_id: str
    goal: str
    kind: str
    value: str
    timezone: str = "UTC"
    name: str = ""
    notification_policy: str = "always"

    @classmethod
    def of(cls, schedule: ScheduleDefinition) -> ScheduleDraft:
        """The draft a stored schedule starts an edit from."""
        cadence = schedule.cadence
        return cls(user_id=schedule.user_id, goal=schedule.goal, kind=cadence["kind"],
                   value=cadence["value"], timezone=cadence.get("timezone") or "UTC",
                   name=schedule.name or "", notification_policy=schedule.notification_policy)

    def cadence_dict(self) -> dict[str, str]:
        return {"kind": self.kind, "value": self.value, "timezone": self.timezone.strip()}


@dataclass(frozen=True)
class DraftCheck:
    """What is wrong with a draft, field by field, and when it would fire."""

    problems: dict[str, str] = field(default_factory=dict)
    """Field name (a :class:`ScheduleDraft` attribute) -> why it is refused."""
    cadence: Cadence | None = None
    """The cadence, normalised, when it parsed."""
    next_times: list[datetime] = field(default_factory=list)
    """The next fire times (UTC) when the cadence is valid."""
    unchanged: bool = False
    """Whether the cadence is the edited schedule's own (so its preview is the schedule's
    own next runs, not what saving would give)."""

    @property
    def ok(self) -> bool:
        return not self.problems


def check_draft(draft: ScheduleDraft, min_interval_secs: int, *,
                current: ScheduleDefinition | None = None,
                current_cadence: Cadence | None = None, now: datetime | None = None,
                count: int = PREVIEW_COUNT) -> DraftCheck:
    """Check every field of ``draft`` as the store would, and preview ``count`` fire times.

    With ``current`` (the schedule being edited) an unchanged cadence is not checked again,
    as ``update_schedule`` does not, and its preview is the schedule's own next runs.
    ``current_cadence`` is ``current``'s cadence already parsed (parsed here when not given),
    for a caller that checks the same schedule on every keystroke.
    """
    now = clock.now() if now is None else now
    problems: dict[str, str] = {}
    for name, check in (
            ("user_id", lambda: checked_text(draft.user_id, "user", MAX_NAME_CHARS)),
            ("goal", lambda: checked_text(draft.goal, "goal", MAX_GOAL_CHARS)),
            ("name", lambda: checked_text(draft.name.strip() or None, "name", MAX_NAME_CHARS,
                                          optional=True)),
            ("notification_policy", lambda: checked_choice(draft.notification_policy,
                                                           "notification policy", POLICIES)),
            ("kind", lambda: checked_choice(draft.kind, "cadence kind", CADENCE_KINDS))):
        try:
            check()
        except InvalidInput as error:
            problems[name] = str(error)
    try:
        zone_named(draft.timezone.strip())
    except InvalidInput as error:
        problems["timezone"] = str(error)
    if "kind" in problems:
        return DraftCheck(problems)
    zone_ok = "timezone" not in problems
    try:
        cadence = parse_cadence(draft.kind, draft.value, draft.timezone if zone_ok else "UTC")
    except InvalidInput as error:
        return DraftCheck({**problems, "value": str(error)})
    if zone_ok and current is not None:
        if current_cadence is None:
            current_cadence = as_cadence(current.cadence)
        if cadence == current_cadence:
            return DraftCheck(problems, cadence,
                              upcoming(current, count, now=now, cadence=current_cadence),
                              unchanged=True)
    if zone_ok or cadence.kind != "once":  # a gap is the same in every zone; the past is not
        try:
            validate_cadence(cadence, min_interval_secs, now)
        except InvalidInput as error:
            return DraftCheck({**problems, "value": str(error)}, cadence)
    return DraftCheck(problems, cadence, next_runs(cadence, now, count) if zone_ok else [])


def upcoming(schedule: ScheduleDefinition, count: int = PREVIEW_COUNT, *,
             now: datetime | None = None, cadence: Cadence | None = None) -> list[datetime]:
    """The next ``count`` times a schedule fires (UTC): from its next run when active, from
    now when paused (what resuming would give), none when completed. ``cadence`` is the
    schedule's own, already parsed (parsed here when not given)."""
    if count <= 0:
        return []
    if cadence is None:
        cadence = as_cadence(schedule.cadence)
    if schedule.status == "active" and schedule.next_run_at:
        first = parse_when(schedule.next_run_at)
        return [first, *next_runs(cadence, first, count - 1)]
    if schedule.status == "paused":
        return next_runs(cadence, clock.now() if now is None else now, count)
    return []


def schedule_preview(schedule: ScheduleDefinition,
                     times: list[datetime] | None = None) -> dict[str, Any]:
    """A schedule as JSON (the CLI's ``--json``, the app's copy): every field, its cadence
    described and in words, and its next fire times (``times``, else :func:`upcoming`'s) in
    UTC and on its own clock."""
    cadence = as_cadence(schedule.cadence)
    if times is None:
        times = upcoming(schedule, cadence=cadence)
    return {**schedule.to_dict(), "cadence_description": cadence.describe(),
            "cadence_in_words": in_words(cadence),
            "next_runs": [clock.format_utc(t) for t in times],
            "next_runs_local": [format_in_timezone(t, cadence) for t in times]}
