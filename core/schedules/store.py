"""The schedule store on the engine (oxydra ``SchedulerStore``): ``engine.schedules``.

Every value is checked before it is written: a cadence is parsed and validated against
``scheduler.min_interval_secs`` (a once in the past, a cron firing too often are refused,
saying why), and the first ``next_run_at`` is computed from it. Schedules are found by id
or, for people editing by hand, by name (refused when the name is ambiguous). A schedule's
name and user id are identifiers, held to the one rule (:func:`core.inputs.identifier`).
"""

from __future__ import annotations

import json
import uuid
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, overload

from core import clock
from core.clock import format_utc, utc_now
from core.errors import InvalidInput, NotFound
from core.inputs import identifier, query_text, shown, utf8_text
from core.schedules.cadence import (
    Cadence,
    next_run_for_cadence,
    parse_cadence,
    validate_cadence,
)
from core.storage.vocabulary import ScheduleChanges, ScheduleDraft
from core.types import ScheduleDefinition, ScheduleRun, ScheduleSearchResult

if TYPE_CHECKING:
    from core.config import SchedulerConfig
    from core.storage.backend import Backend

POLICIES = ("always", "on_failure", "never")
STATUSES = ("active", "paused", "completed")
RUN_STATUSES = ("ok", "failed", "timeout")
SUMMARY_CHARS = 500
MAX_GOAL_CHARS = 8000
MAX_NAME_CHARS = 200


def new_schedule_id() -> str:
    return f"sched-{uuid.uuid4()}"


def as_cadence(value: Any) -> Cadence:
    """A ``Cadence``, its dict ``{"kind", "value", "timezone"}`` or its JSON, parsed."""
    if isinstance(value, str):
        value = Cadence.from_json(value)
    if isinstance(value, Cadence):
        return parse_cadence(value.kind, value.value, value.timezone)
    if not isinstance(value, dict) or not {"kind", "value"} <= set(value):
        raise InvalidInput('a cadence is {"kind": "cron"|"once"|"interval", "value": ..., '
                           f'"timezone": ...}}, got {shown(value)}')
    return parse_cadence(value["kind"], value["value"], value.get("timezone") or "UTC")


@overload
def checked_text(value: Any, what: str, limit: int) -> str: ...
@overload
def checked_text(value: Any, what: str, limit: int, *, optional: bool) -> str | None: ...
def checked_text(value: Any, what: str, limit: int, *, optional: bool = False) -> str | None:
    """``value`` stripped, or InvalidInput when it is not non-empty text within ``limit``
    characters (None passes when ``optional``)."""
    if value is None and optional:
        return None
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(f"{what} must be non-empty text, got {shown(value)}")
    if len(value) > limit:
        raise InvalidInput(f"{what} is {len(value)} characters; the limit is {limit}")
    return utf8_text(value, what).strip()


@overload
def checked_identifier(value: Any, what: str) -> str: ...
@overload
def checked_identifier(value: Any, what: str, *, optional: bool) -> str | None: ...
def checked_identifier(value: Any, what: str, *, optional: bool = False) -> str | None:
    """An identifier (a schedule's name, a user id) trimmed, as a note's name is, or
    InvalidInput (None passes when ``optional``)."""
    if value is None and optional:
        return None
    return identifier(value.strip() if isinstance(value, str) else value, what, MAX_NAME_CHARS)


def checked_channel(value: Any, what: str) -> str | None:
    """A channel id or context id: None, or text (kept as given) within the name limit."""
    if value is None:
        return None
    if len(utf8_text(value, what)) > MAX_NAME_CHARS:
        raise InvalidInput(f"{what} is {len(value)} characters; the limit is {MAX_NAME_CHARS}")
    return value


def checked_choice(value: Any, what: str, allowed: tuple[str, ...]) -> str:
    """``value``, or InvalidInput when it is not one of ``allowed``."""
    if value not in allowed:
        raise InvalidInput(f"{what} must be one of {', '.join(allowed)}; got {shown(value)}")
    return value


def parse_when(value: datetime | str | None) -> datetime:
    """An aware UTC datetime from a datetime, an engine timestamp or ISO text (None: now)."""
    if value is None:
        return clock.now()
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise InvalidInput(f"not a timestamp: {shown(value)}") from None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def run_seconds(run: ScheduleRun) -> float:
    """How long a run took, in seconds."""
    return (parse_when(run.finished_at) - parse_when(run.started_at)).total_seconds()


class Schedules:
    """oxydra's ``SchedulerStore`` over the engine's file."""

    def __init__(self, backend: Backend, config: SchedulerConfig) -> None:
        self._backend = backend
        self._config = config

    def _next_run(self, cadence: Cadence, after: datetime) -> str | None:
        moment = next_run_for_cadence(cadence, after)
        return None if moment is None else format_utc(moment)

    async def create_schedule(self, user_id: str, goal: str, cadence: Any, *,
                              name: str | None = None, notification_policy: str = "always",
                              channel_id: str | None = None,
                              channel_context_id: str | None = None) -> ScheduleDefinition:
        """Validate and store a schedule; its first run is the cadence's next after now."""
        parsed = as_cadence(cadence)
        now = clock.now()
        validate_cadence(parsed, self._config.min_interval_secs, now)
        stamp = format_utc(now)
        draft = ScheduleDraft(
            schedule_id=new_schedule_id(), user_id=checked_identifier(user_id, "user_id"),
            name=checked_identifier(name, "name", optional=True),
            goal=checked_text(goal, "goal", MAX_GOAL_CHARS), cadence_json=parsed.to_json(),
            notification_policy=checked_choice(notification_policy, "notification_policy",
                                               POLICIES),
            status="active", created_at=stamp, updated_at=stamp,
            next_run_at=self._next_run(parsed, now), consecutive_failures=0,
            channel_id=checked_channel(channel_id, "channel_id"),
            channel_context_id=checked_channel(channel_context_id, "channel_context_id"))
        return await self._backend.insert_schedule(draft)

    async def get_schedule(self, ref: str, user_id: str | None = None) -> ScheduleDefinition:
        """A schedule by id or by name, of ``user_id`` when given (another user's, even by
        its id, is ``NotFound``); ``InvalidInput`` when a name is shared by several."""
        return await self._row(ref, user_id)

    async def _row(self, ref: str, user_id: str | None = None) -> ScheduleDefinition:
        if not isinstance(ref, str) or not ref.strip():
            raise InvalidInput(f"a schedule is named by its id or name; got {shown(ref)}")
        if len(ref) > MAX_NAME_CHARS:  # longer than any id or name: it names nothing
            raise NotFound(f"no schedule with id or name {shown(ref)}")
        try:
            found = await self._backend.get_schedule(ref)
            if user_id is None or found.user_id == user_id:
                return found  # another user's id is not found, as another user's name is
        except NotFound:
            pass
        named = await self._backend.schedules_named(ref, user_id)
        if not named:
            raise NotFound(f"no schedule with id or name {shown(ref)}")
        if len(named) > 1:
            ids = ", ".join(schedule.schedule_id for schedule in named)
            raise InvalidInput(f"{len(named)} schedules are named {shown(ref)} ({ids}); use an id")
        return named[0]

    async def search_schedules(self, user_id: str | None = None, *, status: str | None = None,
                               name: str | None = None, text: str | None = None,
                               limit: int = 50, offset: int = 0) -> ScheduleSearchResult:
        """A page of schedules (newest first) matching every filter, and the total."""
        if status is not None:
            checked_choice(status, "status", STATUSES)
        for what, number in (("limit", limit), ("offset", offset)):
            if isinstance(number, bool) or not isinstance(number, int) or number < 0:
                raise InvalidInput(f"{what} must be a non-negative integer, got {shown(number)}")
        for what, searched in (("name", name), ("text", text)):
            if searched is not None:
                query_text(searched, what)
        total, page = await self._backend.search_schedules(user_id, status, name, text, limit,
                                                           offset)
        return ScheduleSearchResult(total, page)

    async def count_schedules(self, user_id: str) -> int:
        """How many schedules a user has."""
        return await self._backend.count_schedules(user_id)

    async def delete_schedule(self, ref: str) -> bool:
        """Delete a schedule and its run history; False when there was none."""
        try:
            schedule = await self._row(ref)
        except NotFound:
            return False
        return await self._backend.delete_schedule(schedule.schedule_id)

    async def update_schedule(self, ref: str, **patch: Any) -> ScheduleDefinition:
        """Change the fields given (``name``, ``goal``, ``cadence``, ``notification_policy``,
        ``status``, ``channel_id``, ``channel_context_id``), all checked first. A new cadence
        or a resume computes the next run from now; a resume also clears the failures."""
        schedule = await self._row(ref)
        unknown = set(patch) - {"name", "goal", "cadence", "notification_policy", "status",
                                "channel_id", "channel_context_id", "status_reason"}
        if unknown:
            raise InvalidInput(f"cannot change {', '.join(sorted(unknown))} of a schedule")
        changes = ScheduleChanges()  # every column kept, until a change below is checked
        now = clock.now()
        if "name" in patch:
            changes = replace(changes, name=checked_identifier(patch["name"], "name",
                                                               optional=True))
        if "goal" in patch:
            changes = replace(changes, goal=checked_text(patch["goal"], "goal", MAX_GOAL_CHARS))
        if "notification_policy" in patch:
            changes = replace(changes, notification_policy=checked_choice(
                patch["notification_policy"], "notification_policy", POLICIES))
        if "channel_id" in patch:
            changes = replace(changes,
                              channel_id=checked_channel(patch["channel_id"], "channel_id"))
        if "channel_context_id" in patch:
            changes = replace(changes, channel_context_id=checked_channel(
                patch["channel_context_id"], "channel_context_id"))
        # Checked as its stored cadence_json is, so a damaged one is refused the same way.
        cadence = as_cadence(json.dumps(schedule.cadence, ensure_ascii=False))
        if "cadence" in patch:
            cadence = as_cadence(patch["cadence"])
            validate_cadence(cadence, self._config.min_interval_secs, now)
            changes = replace(changes, cadence_json=cadence.to_json(),
                              next_run_at=self._next_run(cadence, now))
        if "status" in patch:
            status = checked_choice(patch["status"], "status", STATUSES)
            changes = replace(changes, status=status, status_reason=patch.get("status_reason"))
            if status == "active" and schedule.status != "active":
                if cadence.kind == "once":
                    validate_cadence(cadence, self._config.min_interval_secs, now)
                changes = replace(changes, next_run_at=self._next_run(cadence, now),
                                  consecutive_failures=0)
        return await self._backend.update_schedule(schedule.schedule_id, changes,
                                                   format_utc(now))

    async def pause_schedule(self, ref: str, reason: str = "paused by hand") -> ScheduleDefinition:
        """Stop a schedule from firing until it is resumed."""
        return await self.update_schedule(ref, status="paused", status_reason=reason)

    async def resume_schedule(self, ref: str) -> ScheduleDefinition:
        """Let a paused schedule fire again, from its cadence's next time after now."""
        return await self.update_schedule(ref, status="active")

    async def due_schedules(self, now: datetime | str | None = None,
                            limit: int = 100) -> list[ScheduleDefinition]:
        """Active schedules due at ``now`` (default: now), soonest first."""
        return await self._backend.due_schedules(format_utc(parse_when(now)), limit)

    async def claim_due(self, runner: str, *, lease_secs: float, limit: int = 10,
                        now: datetime | str | None = None) -> list[ScheduleDefinition]:
        """Claim due schedules for one runner (no other runner gets them until the claim is
        recorded, released or runs out after ``lease_secs``)."""
        moment = parse_when(now)
        return await self._backend.claim_due(
            format_utc(moment), runner, format_utc(moment + timedelta(seconds=lease_secs)), limit)

    async def release_claim(self, schedule_id: str, runner: str) -> None:
        """Give back a claim without recording a run."""
        await self._backend.release_claim(schedule_id, runner)

    async def record_run_and_reschedule(self, schedule_id: str, run: ScheduleRun | dict[str, Any],
                                        next_run_at: datetime | str | None,
                                        new_status: str | None = None,
                                        status_reason: str | None = None) -> ScheduleDefinition:
        """Record a run and reschedule, in one transaction (oxydra). A failure adds to
        ``consecutive_failures``; at ``scheduler.max_consecutive_failures`` the schedule
        pauses itself and ``status_reason`` says why. History is pruned to
        ``scheduler.keep_runs``."""
        fields = run.to_dict() if isinstance(run, ScheduleRun) else dict(run)
        fields.setdefault("run_id", f"run-{uuid.uuid4()}")
        fields["schedule_id"] = schedule_id
        checked_choice(fields.get("status"), "run status", RUN_STATUSES)
        output = str(fields.get("output") or "")
        fields["output"] = output
        fields["output_summary"] = str(fields.get("output_summary") or output)[:SUMMARY_CHARS]
        for key in ("started_at", "finished_at"):
            fields[key] = format_utc(parse_when(fields.get(key) or utc_now()))
        if new_status is not None:
            checked_choice(new_status, "status", STATUSES)
        checked = ScheduleRun(
            run_id=fields["run_id"], schedule_id=schedule_id, started_at=fields["started_at"],
            finished_at=fields["finished_at"], status=fields["status"],
            output_summary=fields["output_summary"], output=output,
            turn_count=fields.get("turn_count", 0), cost=fields.get("cost", 0.0),
            notified=bool(fields.get("notified")))
        after = None if next_run_at is None else format_utc(parse_when(next_run_at))
        return await self._backend.record_run_and_reschedule(
            checked, after, new_status, status_reason, self._config.max_consecutive_failures,
            self._config.keep_runs, utc_now())

    async def prune_run_history(self, schedule_id: str, keep: int) -> int:
        """Keep a schedule's newest ``keep`` runs; how many were deleted."""
        return await self._backend.prune_run_history(schedule_id, keep)

    async def get_run_history(self, schedule_id: str, limit: int = 20) -> list[ScheduleRun]:
        """A schedule's runs, newest first."""
        return await self._backend.run_history(schedule_id, limit)

    async def count_runs(self, schedule_id: str) -> int:
        """How many runs of a schedule its history holds (0 for none, or no such schedule)."""
        return await self._backend.count_runs(schedule_id)

    async def get_run_by_id(self, run_id: str) -> ScheduleRun:
        """One run; ``NotFound`` when there is none."""
        return await self._backend.get_run(run_id)
