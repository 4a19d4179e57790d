"""A small fixture memory and an app factory for the app's Pilot and snapshot tests.

The fixture is written under a frozen engine clock and read by an app whose clock is
frozen at the same moment, with no polling, blinking or animation, so a snapshot renders
the same on every run.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import shutil
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from core import Engine, clock
from workbench.app.app import AppSettings, WorkbenchApp
from workbench.app.screenshots import settle  # noqa: F401  (the tests import it from here)
from workbench.app.themes import PROJECT_THEMES

FIXTURE_NOW = datetime(2026, 5, 4, 12, 0, tzinfo=UTC)
FIXTURE_CONFIG: dict[str, Any] = {
    "embedding": {"backend": "deterministic", "fallback_dimensions": 64},
    "consolidation": {"enabled": False},
    "summary": {"auto": False},
}
SIZE = (160, 48)

TRIP = [
    {"role": "system", "content": "You are a trip-planning assistant. Be brief."},
    {"role": "user", "content": "I want to hike in the Dolomites in late June."},
    {"role": "assistant", "content": "Late June is good: most huts open on 20 June."},
    {"role": "assistant", "content": "",
     "tool_calls": [{"id": "call_1", "type": "function",
                     "function": {"name": "weather_forecast",
                                  "arguments": "{\"place\": \"Cortina\", \"month\": 6}"}}]},
    {"role": "tool", "tool_call_id": "call_1", "tool_name": "weather_forecast",
     "content": "{\"avg_high_c\": 19, \"rain_days\": 9}"},
    {"role": "assistant", "content": "Expect about 19 °C and nine rainy days in June."},
    {"role": "user", "content": "I am allergic to peanuts, remember that for hut meals.",
     "importance": 0.95},
    {"role": "assistant", "content": "Noted: no peanuts. I will flag it when booking huts."},
]
BILLING = [
    {"role": "user", "content": "Why was I charged twice for invoice INV-2291?",
     "metadata": {"tags": ["billing", "refund"]}},
    {"role": "assistant", "content": "Let me look that invoice up."},
    {"role": "tool", "tool_call_id": "call_7", "tool_name": "lookup_invoice",
     "content": "{\"invoice\": \"INV-2291\", \"charges\": 2, \"amount\": 49.0}"},
    {"role": "assistant", "content": "It was charged twice; I have refunded the second charge."},
]


@contextlib.contextmanager
def fixture_clock(moment: datetime = FIXTURE_NOW) -> Iterator[None]:
    """The engine's clock stopped at the fixture's "now" for the block."""
    with clock.frozen(moment):
        yield


_built: list[Path] = []  # this process's first build, which later ones copy
_UUID4 = uuid.uuid4  # as the module has it: a test may seed it (monkeypatch)


async def build_fixture(path: Path) -> None:
    """Two agents' sessions (with a tool call and its result), notes, a scratchpad,
    schedules with runs and logged queries, every timestamp fixed.

    Built once a test process and copied after (a build writes through the engine, a
    quarter of a second or more; the app's tests ask for it some eighty times). A path that
    already holds a file is written to as before, the fixture added to what is there; a test
    that seeded ``uuid.uuid4`` gets a build of its own.
    """
    if path.exists() or uuid.uuid4 is not _UUID4:
        # A test that seeds the ids (snapshots show them) builds its own: a copy would
        # carry the ids of whichever test built the template first in this process.
        await _build(path)
        return
    if not _built:
        template = Path(tempfile.mkdtemp(prefix="workbench-fixture-")) / "fixture.db"
        atexit.register(shutil.rmtree, template.parent, ignore_errors=True)
        await _build(template)
        _built.append(template)
    shutil.copyfile(_built[0], path)


async def _build(path: Path) -> None:
    with clock.frozen(FIXTURE_NOW):  # restores whatever the clock was, frozen or not
        await _write_fixture(path)
    # Whether the derived indexes were built and saved before the engine closed depends on
    # timing; without a saved copy the app's first answers come from SQL, every run alike.
    shutil.rmtree(path.with_name(path.name + "-index"), ignore_errors=True)
    for leftover in ("-wal", "-shm"):  # a closed memory keeps none, so a copy is whole
        assert not path.with_name(path.name + leftover).exists(), leftover


def built_fixture(folder: Path) -> Path:
    """``folder/fixture.db``, built at the fixture's frozen moment."""
    path = folder / "fixture.db"
    with fixture_clock():
        asyncio.run(build_fixture(path))
    return path


async def _write_fixture(path: Path) -> None:
    start = FIXTURE_NOW - timedelta(days=2)
    async with Engine.open(path, config=FIXTURE_CONFIG) as engine:
        for offset, (session, agent, messages) in enumerate(
                (("trip-dolomites", "planner", TRIP), ("billing-4471", "support", BILLING))):
            for index, message in enumerate(messages):
                clock.set_time(start + timedelta(hours=offset * 20, minutes=index * 3))
                await engine.append(session, message, agent=agent)
        clock.set_time(FIXTURE_NOW - timedelta(hours=3))
        await engine.add_note("packing-list", "Boots, rain shell, hut sleeping bag liner.",
                              namespace="planner", category="core", tags=["trip", "gear"],
                              aliases=["packing"], source="user", importance=0.7)
        await engine.add_note("refund-policy", "Refunds within 30 days, no questions asked.",
                              namespace="support", category="core", tags=["billing"],
                              source="import")
        await engine.add_note("standup", "Standup moved to 9:30 on Tuesdays.",
                              namespace="support", category="daily", tags=["team"])
        await engine.write_scratchpad("trip-dolomites", ["book Rifugio Lagazuoi",
                                                         "check cable car times"],
                                      agent="planner")
        schedules = engine.schedules
        daily = await schedules.create_schedule(
            "planner", "Check hut availability", {"kind": "cron", "value": "0 8 * * *",
                                                  "timezone": "Europe/Rome"},
            name="hut-check")
        await schedules.create_schedule(
            "support", "Summarise open refund tickets",
            {"kind": "interval", "value": "6h", "timezone": "UTC"}, name="refund-digest")
        for hours, status, output in ((26, "ok", "3 huts free on 24 June"),
                                      (2, "failed", "booking site answered 503")):
            moment = FIXTURE_NOW - timedelta(hours=hours)
            await schedules.record_run_and_reschedule(
                daily.schedule_id, {"status": status, "output": output,
                                    "started_at": moment,
                                    "finished_at": moment + timedelta(seconds=4)},
                FIXTURE_NOW + timedelta(hours=20))
        clock.set_time(FIXTURE_NOW - timedelta(hours=1))
        await engine.hybrid_query(session_id="trip-dolomites", query="peanut allergy",
                                  caller="agent")
        await engine.hybrid_query(namespace="support", query="charged twice refund",
                                  caller="agent")
        await engine.drain()


def make_app(path: Path, **settings: Any) -> WorkbenchApp:
    """The app the tests drive: still (no polling, blink or animation), the project's dark
    theme, no user theme folder, the model loaded before the panes ask for it."""
    options: dict[str, Any] = {"still": True, "theme": "workbench-dusk",
                               "theme_dirs": (PROJECT_THEMES,), "defer_model": False}
    options.update(settings)
    return WorkbenchApp(path, FIXTURE_CONFIG, AppSettings(**options))


@contextlib.asynccontextmanager
async def running_app(path: Path, *, build: bool = True, size: tuple[int, int] = SIZE,
                      **settings: Any) -> AsyncIterator[tuple[WorkbenchApp, Any]]:
    """The app running on ``path`` (with its Pilot), the fixture memory built there first
    unless ``build`` is False, the engine clock frozen at the fixture's "now" throughout."""
    with fixture_clock():
        if build:
            await build_fixture(path)
        app = make_app(path, **settings)
        async with app.run_test(size=size) as pilot:
            yield app, pilot
