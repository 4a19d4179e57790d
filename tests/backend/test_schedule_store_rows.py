"""The tests of tests/test_schedule_store.py that read or stage the memory's tables directly (rows,
cascades, claims and the due query's plan)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from core import Engine
from core.clock import format_utc
from core.errors import InvalidCadence
from tests.conftest import rows
from tests.test_schedule_store import (
    CONFIG,
    EVERY_HOUR,
    make_due,
    run,
)


@pytest.fixture
async def engine(memory: str):
    async with Engine.open(memory, config=CONFIG) as opened:
        yield opened


async def test_create_validates_computes_the_next_run_and_get_finds_it(engine: Engine) -> None:
    now = datetime.now(UTC)
    before = now.replace(microsecond=now.microsecond // 1000 * 1000)  # stored to the ms
    created = await engine.schedules.create_schedule(
        "alice", "summarise my inbox", EVERY_HOUR, name="inbox",
        notification_policy="on_failure", channel_id="slack", channel_context_id="C1")
    assert created.schedule_id.startswith("sched-") and created.status == "active"
    assert (created.cadence["kind"], created.cadence["timezone"]) == ("interval", "UTC")
    next_run = datetime.fromisoformat(created.next_run_at.replace("Z", "+00:00"))
    assert before + timedelta(hours=1) <= next_run <= datetime.now(UTC) + timedelta(hours=1)
    assert (created.consecutive_failures, created.last_run_at) == (0, None)
    assert await engine.schedules.get_schedule(created.schedule_id) == created
    assert await engine.schedules.get_schedule("inbox") == created
    stored = rows(engine.location, "SELECT cadence_json FROM schedules")[0][0]
    assert '"kind": "interval"' in stored or '"kind":"interval"' in stored


@pytest.mark.parametrize(("cadence", "message"), [
    ({"kind": "cron", "value": "*/1 * * * *"}, "300"),
    ({"kind": "interval", "value": "1m"}, "300"),
    ({"kind": "once", "value": "2001-01-01T09:00"}, "past"),
    ({"kind": "cron", "value": "not a cron"}, "cron"),
    ({"kind": "cron", "value": "0 9 * * *", "timezone": "Mars/Olympus"}, "Mars/Olympus"),
    ({"kind": "weekly", "value": "x"}, "weekly"),
])
async def test_bad_cadences_are_refused_saying_why_and_nothing_is_written(
        engine: Engine, cadence: dict[str, str], message: str) -> None:
    with pytest.raises(InvalidCadence, match=message):
        await engine.schedules.create_schedule("alice", "goal", cadence)
    assert rows(engine.location, "SELECT count(*) FROM schedules") == [(0,)]


async def test_delete_cascades_its_runs(engine: Engine) -> None:
    store = engine.schedules
    made = await store.create_schedule("alice", "g", EVERY_HOUR)
    await store.record_run_and_reschedule(made.schedule_id, run(), None)
    assert rows(engine.location, "SELECT count(*) FROM schedule_runs") == [(1,)]
    assert await store.delete_schedule(made.schedule_id)
    assert not await store.delete_schedule(made.schedule_id)
    assert rows(engine.location, "SELECT count(*) FROM schedule_runs") == [(0,)]


async def test_the_due_query_uses_its_index(db_path: Path) -> None:
    # About the SQLite file's query plan (EXPLAIN QUERY PLAN is SQLite's).
    async with Engine.open(db_path, config=CONFIG):
        pass
    plan = rows(db_path, "EXPLAIN QUERY PLAN SELECT * FROM schedules WHERE status = "
                         "'active' AND next_run_at <= '2001' ORDER BY next_run_at LIMIT 5")
    assert "schedules_due" in " ".join(str(r) for r in plan)


async def test_claims_are_exclusive_until_recorded_released_or_expired(engine: Engine) -> None:
    store = engine.schedules
    made = [await store.create_schedule("u", f"g{i}", EVERY_HOUR) for i in range(4)]
    for schedule in made:
        await make_due(engine, schedule.schedule_id)
    first, second = await asyncio.gather(store.claim_due("r1", lease_secs=60, limit=3),
                                         store.claim_due("r2", lease_secs=60, limit=3))
    claimed = [s.schedule_id for s in first + second]
    assert sorted(claimed) == sorted(s.schedule_id for s in made)  # each once, none twice
    assert await store.claim_due("r3", lease_secs=60) == []
    await store.release_claim(first[0].schedule_id, "r1")
    assert [s.schedule_id for s in await store.claim_due("r3", lease_secs=60)] == [
        first[0].schedule_id]
    later = format_utc(datetime.now(UTC) + timedelta(minutes=5))  # every claim has run out
    assert len(await store.claim_due("r4", lease_secs=60, now=later, limit=10)) == 4
    await store.record_run_and_reschedule(first[-1].schedule_id, run(), later)
    assert rows(engine.location, "SELECT claimed_by FROM schedules WHERE schedule_id = ?",
                first[-1].schedule_id) == [(None,)]
