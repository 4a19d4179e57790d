"""The schedule runner: takes due schedules, runs the configured action, records each run.

A runner claims one due schedule at a time in the database (``Schedules.claim_due``), so any
number of runners, in any processes, can share one file and each due schedule runs once.
The claim lasts ``scheduler.claim_secs`` (the action's timeout and a minute by default): a
runner that dies mid-action leaves its claim to run out, and then another runner takes the
schedule. A run is recorded and the schedule rescheduled in one transaction.

The next run follows the time the schedule was due, not the time the run ended, so a
cadence does not drift; when that time has already passed (the runner was down, or the run
took longer than the gap) it skips to the first time after now, so a backlog is never
replayed: a schedule missed ten times fires once.

Notification: a run's ``notified`` flag says whether the schedule's policy wants its user
told about the run (``always``; ``on_failure``: only when it failed or timed out;
``never``). Delivering the message is out of scope here; whatever owns the user's channel
reads the flag.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Protocol, cast

from core import clock
from core.clock import utc_now
from core.errors import ConfigError, InvalidInput, NotFound, ReadOnlyDatabase, WorkbenchError
from core.schedules.actions import Action, ActionResult, action_from_config
from core.schedules.cadence import Cadence, next_run_for_cadence, parse_duration
from core.schedules.store import SUMMARY_CHARS, as_cadence, parse_when
from core.types import ScheduleDefinition, ScheduleRun

if TYPE_CHECKING:
    from core.config import Config, SchedulerConfig
    from core.schedules.store import Schedules

log = logging.getLogger(__name__)

CLAIM_MARGIN_SECS = 60.0
PASS_LIMIT = 100
"""Schedules one pass runs at most; a busy runner starts the next pass without waiting."""

class SchedulesHolder(Protocol):
    """What a runner takes from the engine it fires schedules of (``core.engine.Engine``):
    named here so the schedules need nothing from the engine above them."""

    @property
    def config(self) -> Config: ...

    @property
    def read_only(self) -> bool: ...

    @property
    def schedules(self) -> Schedules: ...


RunCallback = Callable[[ScheduleRun, ScheduleDefinition], None]
"""Told of each recorded run, with the schedule as it stands after it."""


def default_runner_id() -> str:
    """``host:pid:random``, unique per runner, readable in ``claimed_by``."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def should_notify(policy: str, run_status: str) -> bool:
    """Whether a run's user is to be told of it under a schedule's notification policy."""
    if policy == "always":
        return True
    return policy == "on_failure" and run_status != "ok"


def next_fire(cadence: Cadence, scheduled_for: datetime | None,
              now: datetime) -> datetime | None:
    """The cadence's next time after the run due at ``scheduled_for``; when that is not in
    the future, the first time after ``now`` (missed times are skipped, not replayed). An
    interval keeps its phase: it skips whole steps from ``scheduled_for``."""
    moment = next_run_for_cadence(cadence, scheduled_for or now)
    if moment is None or moment > now:
        return moment
    if cadence.kind == "interval" and scheduled_for is not None:
        step = timedelta(seconds=parse_duration(cadence.value))
        return scheduled_for + step * ((now - scheduled_for) // step + 1)
    return next_run_for_cadence(cadence, now)


class Runner:
    """Fires due schedules of one engine with the action ``[scheduler]`` configures.

    ``config`` is the ``[scheduler]`` section (or the whole config; default: the engine's).
    ``action`` replaces the configured one (a front end with its own way to run goals).
    """

    def __init__(self, engine: SchedulesHolder, config: SchedulerConfig | Config | None = None,
                 runner_id: str | None = None, *, action: Action | None = None) -> None:
        if config is None:
            config = engine.config.scheduler
        scheduler = cast("SchedulerConfig", getattr(config, "scheduler", config))
        if engine.read_only:
            raise ReadOnlyDatabase("a runner records its runs: open the file writable")
        self.action = action if action is not None else action_from_config(scheduler)
        timeout = scheduler.action_timeout_secs
        self.claim_secs = (timeout + CLAIM_MARGIN_SECS if scheduler.claim_secs is None
                           else scheduler.claim_secs)
        if self.claim_secs <= timeout:
            raise ConfigError(f"scheduler.claim_secs ({self.claim_secs:g}) must be longer than "
                              f"scheduler.action_timeout_secs ({timeout:g}), or another runner "
                              "could take a schedule that is still running")
        if scheduler.poll_interval_secs <= 0:
            raise ConfigError("scheduler.poll_interval_secs must be above 0, got "
                              f"{scheduler.poll_interval_secs:g}")
        self.config = scheduler
        self.runner_id = runner_id or default_runner_id()
        self._schedules = engine.schedules

    async def run_once(self, now: datetime | str | None = None, *,
                       on_run: RunCallback | None = None) -> list[ScheduleRun]:
        """One pass: run every schedule due at ``now`` (default: the clock, read at each
        claim) that no other runner holds, one at a time; the runs recorded."""
        fired = await self._pass(None if now is None else parse_when(now), None, on_run)
        return [run for run, _ in fired]

    async def run_forever(self, stop_event: asyncio.Event, *,
                          on_run: RunCallback | None = None) -> None:
        """Pass after pass, ``scheduler.poll_interval_secs`` apart, until ``stop_event`` is
        set; a run under way when it is set finishes and is recorded first."""
        log.info("runner %s: %s, polling every %g s", self.runner_id, self.action.describe(),
                 self.config.poll_interval_secs)
        while not stop_event.is_set():
            try:
                fired = await self._pass(None, stop_event, on_run)
            except WorkbenchError as exc:  # the file was busy or changed under us: try again
                log.warning("runner %s: pass failed: %s", self.runner_id, exc)
                fired = []
            if len(fired) >= PASS_LIMIT:
                continue
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop_event.wait(), self.config.poll_interval_secs)

    async def _pass(self, now: datetime | None, stop_event: asyncio.Event | None,
                    on_run: RunCallback | None) -> list[tuple[ScheduleRun, ScheduleDefinition]]:
        fired = []
        for _ in range(PASS_LIMIT):
            if stop_event is not None and stop_event.is_set():
                break
            claimed = await self._schedules.claim_due(self.runner_id, lease_secs=self.claim_secs,
                                                      limit=1, now=now)
            if not claimed:
                break
            recorded = await self._fire(claimed[0], now)
            if recorded is None:
                continue
            fired.append(recorded)
            if on_run is not None:
                on_run(*recorded)
        return fired

    async def _fire(self, schedule: ScheduleDefinition,
                    now: datetime | None) -> tuple[ScheduleRun, ScheduleDefinition] | None:
        """Run one claimed schedule and record it; None when it was deleted meanwhile."""
        run_id = f"run-{uuid.uuid4()}"
        scheduled_for = schedule.next_run_at
        started_at = utc_now()
        new_status: str | None = None
        reason: str | None = None
        next_at: datetime | None
        try:
            cadence = as_cadence(schedule.cadence)
        except InvalidInput as exc:
            result = ActionResult("failed", f"[not run: its cadence cannot be read: {exc}]")
            next_at, new_status = None, "paused"
            reason = f"paused: its cadence cannot be read ({exc}); edit it and resume"
        else:
            try:
                result = await self.action.run(schedule, run_id, scheduled_for)
            except asyncio.CancelledError:  # stopped mid-run: hand the schedule back
                with contextlib.suppress(WorkbenchError):
                    await self._schedules.release_claim(schedule.schedule_id, self.runner_id)
                raise
            due = None if scheduled_for is None else parse_when(scheduled_for)
            next_at = next_fire(cadence, due, now or clock.now())
            if next_at is None:
                new_status = "completed"
                reason = (f"ran once, at {started_at} ({result.status})" if cadence.kind == "once"
                          else f"{cadence.describe()} has no time after this run")
        run = ScheduleRun(
            run_id=run_id, schedule_id=schedule.schedule_id, started_at=started_at,
            finished_at=utc_now(), status=result.status,
            output_summary=result.output[:SUMMARY_CHARS], output=result.output,
            notified=should_notify(schedule.notification_policy, result.status))
        try:
            after = await self._schedules.record_run_and_reschedule(
                schedule.schedule_id, run, next_at, new_status=new_status, status_reason=reason)
        except NotFound:
            log.warning("runner %s: schedule %s was deleted while it ran; run %s not recorded",
                        self.runner_id, schedule.schedule_id, run_id)
            return None
        return run, after

