"""Build the demo memory file: three agents' last ten days of conversations, notes and schedules.

It is what a new user opens first and what the README screenshots show, so it holds every
kind of thing the workbench displays: tool calls and their results, salient messages, a
rolling summary, a compacted conversation, scratchpads, notes with aliases, facts, schedules
with runs (one failing, one paused) and the agents' own searches in the retrieval log.

Everything goes through the public :class:`core.Engine` API, with the engine's clock frozen
at the moment each thing happened (:mod:`core.clock`), counted back from the fixed
:data:`~workbench.demo.content.ANCHOR`: the same content and times on every run. The content
itself lives in :mod:`workbench.demo.content`.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core import clock
from workbench.demo.content import AGENTS, ANCHOR, FACTS, NOTES, SCHEDULES, SESSIONS
from workbench.demo.schedules import DemoRun, DemoSchedule
from workbench.demo.script import (
    Compact,
    Pause,
    Recall,
    Scratchpad,
    Session,
    Step,
    Summarize,
    ToolStep,
)

if TYPE_CHECKING:
    from core.config import Config
    from core.engine import ConfigSource, Engine
    from core.types import ScheduleDefinition

RUN_IDS = uuid.UUID("6f1d3c2e-93a4-4b6e-9a57-0d2f7c1e8b40")
"""Namespace of the demo's run ids (uuid5 of schedule name and run number): the engine
would draw random ones, and the demo is to be the same on every run."""

STEP_SECONDS = 5.0
"""Time an agent's action (a search, a scratchpad write, a compaction) takes in the demo."""

RUNNER_DELAY_SECONDS = 2.0
"""How long after a schedule is due its run starts (the runner polls)."""


@dataclass(frozen=True)
class DemoSummary:
    """What :func:`build_demo` wrote, counted."""

    agents: int
    sessions: int
    messages: int
    notes: int
    scratchpads: int
    schedules: int
    runs: int


@dataclass
class _Written:
    """Running counts of what the conversations wrote."""

    messages: int = 0
    scratchpads: set[str] = dataclasses.field(default_factory=set)


def default_demo_path() -> Path:
    """Where ``workbench demo`` writes the demo file unless told otherwise."""
    return Path("data/demo.db")


async def build_demo(path: Path, config: ConfigSource = None, *,
                     progress: Callable[[str], None] | None = None) -> DemoSummary:
    """Create the demo memory file at ``path`` (``FileExistsError`` when it exists).

    ``config`` chooses the embedding model like any engine's; the background work that
    would stamp its own times (automatic summaries, consolidation) is off while building.
    A build that fails removes the half-written file. The engine's clock is moved while
    building and given back as it was, also on error.
    """
    from core.engine import Engine

    path = Path(path)
    if path.exists():
        raise FileExistsError(f"{path} already exists; the demo is written to a new file")
    report = progress or (lambda _message: None)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        with clock.frozen(ANCHOR):
            async with Engine.open(path, _build_config(config)) as engine:
                return await _write_everything(engine, report)
    except BaseException:
        for leftover in (path, *(path.with_name(path.name + end) for end in ("-wal", "-shm"))):
            leftover.unlink(missing_ok=True)
        raise


def _build_config(config: ConfigSource) -> Config:
    """The caller's config with automatic summaries and consolidation off: both run in the
    background, at whatever moment the frozen clock shows then."""
    from core.config import load_config

    loaded = load_config(config)
    return loaded.model_copy(update={
        "summary": loaded.summary.model_copy(update={"auto": False}),
        "consolidation": loaded.consolidation.model_copy(update={"enabled": False})})


async def _write_everything(engine: Engine, report: Callable[[str], None]) -> DemoSummary:
    """Notes first (the agents' searches find them), then each agent's conversations, then
    the schedules; the file is done when every chunk has its vector."""
    report("writing notes and facts…")
    await _write_notes(engine)
    written = _Written()
    for agent in AGENTS:
        report(f"writing {agent} conversations…")
        for session in SESSIONS:
            if session.agent == agent:
                await _play(engine, session, written)
    report("writing schedules and their runs…")
    for schedule in SCHEDULES:
        await _write_schedule(engine, schedule)
    report("waiting for the embeddings…")
    clock.set_time(ANCHOR)
    await engine.drain()
    return DemoSummary(
        agents=len(AGENTS), sessions=len(SESSIONS), messages=written.messages,
        notes=len(NOTES), scratchpads=len(written.scratchpads), schedules=len(SCHEDULES),
        runs=sum(len(schedule.runs) for schedule in SCHEDULES))


# -- notes and facts -----------------------------------------------------------------------


async def _write_notes(engine: Engine) -> None:
    """Every note and fact, each at the moment it was written."""
    for note in NOTES:
        clock.set_time(note.written)
        await engine.add_note(note.name, note.content, namespace=note.namespace, kind="Note",
                              category=note.category, tags=list(note.tags), source=note.source,
                              importance=note.importance, aliases=list(note.aliases))
    for namespace, category, key, value, source, written in FACTS:
        clock.set_time(written)
        await engine.upsert_fact(category, key, value, source=source, namespace=namespace)


# -- conversations -------------------------------------------------------------------------


async def _play(engine: Engine, session: Session, written: _Written) -> None:
    """Run a session's script, each message stored at its own moment."""
    moment = session.start
    call_ids = (f"call_{number}" for number in itertools.count(1))
    for step in session.script:
        if isinstance(step, Pause):
            moment += timedelta(minutes=step.minutes)
            continue
        if isinstance(step, dict | ToolStep):
            for message in _messages(step, call_ids):
                moment += _typing_time(message)
                clock.set_time(moment)
                await engine.append(session.session_id, message, agent=session.agent)
                written.messages += 1
            continue
        moment += timedelta(seconds=STEP_SECONDS)
        clock.set_time(moment)
        await _act(engine, session, step, written)


def _messages(step: dict[str, Any] | ToolStep, call_ids: Iterator[str]) -> list[dict[str, Any]]:
    """A script's message, or a tool step as the assistant's calls and one result per call."""
    if isinstance(step, dict):
        return [step]
    numbered = [(next(call_ids), call) for call in step.calls]
    request = {"role": "assistant", "content": step.text, "tool_calls": [
        {"id": call_id, "type": "function", "function": {
            "name": call.name, "arguments": json.dumps(call.arguments, ensure_ascii=False)}}
        for call_id, call in numbered]}
    results = [{"role": "tool", "tool_call_id": call_id, "tool_name": call.name,
                "content": json.dumps(call.result, ensure_ascii=False)}
               for call_id, call in numbered]
    return [request, *results]


def _typing_time(message: dict[str, Any]) -> timedelta:
    """How long after the previous message this one lands: people read the answer and type
    (a few characters a second), models write about 60 a second, tools answer at once."""
    text = message.get("content") or ""
    role = message["role"]
    if role == "user":
        seconds = 40 + len(text) / 3
    elif role == "assistant":
        seconds = (1.5 if message.get("tool_calls") else 2.0) + len(text) / 60
    elif role == "tool":
        seconds = 0.4 + len(text) / 4000
    else:
        seconds = 0.0
    return timedelta(milliseconds=round(seconds * 1000))


async def _act(engine: Engine, session: Session, step: Step, written: _Written) -> None:
    """What happens between messages: a scratchpad write, a search, a summary, a compaction."""
    session_id = session.session_id
    if isinstance(step, Scratchpad):
        await engine.write_scratchpad(session_id, list(step.items), agent=session.agent)
        written.scratchpads.add(session_id)
    elif isinstance(step, Recall):
        await _recall(engine, session, step)
    elif isinstance(step, Summarize):
        outcome = await engine.summarize(session_id, token_budget=step.token_budget)
        if not outcome.applied:
            raise RuntimeError(f"the demo's rolling summary of {session_id} did not happen: "
                               f"{outcome.reason}")
    elif isinstance(step, Compact):
        result = await engine.compact(session_id)
        if result.compacted == 0:
            raise RuntimeError(f"the demo's compaction of {session_id} folded nothing")
    else:
        raise TypeError(f"a demo script holds no step like {step!r}")


async def _recall(engine: Engine, session: Session, step: Recall) -> None:
    """Search as the agent would, and grade the results that hold the judged phrases."""
    await engine.drain()  # so the vector leg sees every message written so far
    in_session = step.scope == "session"
    results = await engine.hybrid_query(
        query=step.query, caller="agent", session_id=session.session_id if in_session else None,
        namespace=None if in_session else session.agent)
    for phrase, grade in step.judged:
        hit = next((result for result in results if phrase in result.text.lower()), None)
        if hit is not None:
            await engine.judge(step.query, hit.chunk_id, grade,
                               session_id=session.session_id if in_session else None,
                               namespace=None if in_session else session.agent)


# -- schedules -----------------------------------------------------------------------------


async def _write_schedule(engine: Engine, spec: DemoSchedule) -> None:
    """Create a schedule, record one run at each time it fell due, pause it if it was."""
    from core.schedules.cadence import next_run_for_cadence
    from core.schedules.store import as_cadence, parse_when

    clock.set_time(spec.created)
    schedule = await engine.schedules.create_schedule(
        spec.user_id, spec.goal, spec.cadence, name=spec.name,
        notification_policy=spec.notification_policy)
    cadence = as_cadence(spec.cadence)
    until = spec.paused[0] if spec.paused else ANCHOR
    due = parse_when(schedule.next_run_at) if schedule.next_run_at else None
    for number, run in enumerate(spec.runs, start=1):
        if due is None or due >= until:
            raise ValueError(f"demo schedule {spec.name} is given {len(spec.runs)} runs but "
                             f"falls due only {number - 1} times before {until}")
        following = next_run_for_cadence(cadence, due)
        await _record_run(engine, schedule, number, run, due, following)
        due = following
    if due is not None and due < until:
        raise ValueError(f"demo schedule {spec.name} falls due at {due} with no run given")
    if spec.paused:
        moment, reason = spec.paused
        clock.set_time(moment)
        await engine.schedules.pause_schedule(schedule.schedule_id, reason)


async def _record_run(engine: Engine, schedule: ScheduleDefinition, number: int, run: DemoRun,
                      due: datetime, following: datetime | None) -> None:
    """Record one run as the runner would have, at the time it finished."""
    from core.schedules.runner import should_notify

    started = due + timedelta(seconds=RUNNER_DELAY_SECONDS)
    finished = started + timedelta(seconds=run.seconds)
    clock.set_time(finished)
    await engine.schedules.record_run_and_reschedule(schedule.schedule_id, {
        "run_id": f"run-{uuid.uuid5(RUN_IDS, f'{schedule.name}#{number}')}",
        "status": run.status, "output": run.output, "started_at": started,
        "finished_at": finished,
        "notified": should_notify(schedule.notification_policy, run.status)}, following)
