"""The schedule store (oxydra SchedulerStore): every method against the seed's semantics."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from core import Engine
from core.clock import format_utc, utc_now
from core.errors import InvalidCadence, InvalidInput, NotFound
from core.storage.vocabulary import ScheduleChanges
from tests.conftest import DETERMINISTIC

CONFIG = {**DETERMINISTIC, "consolidation": {"enabled": False},
          "scheduler": {"min_interval_secs": 300, "keep_runs": 5,
                        "max_consecutive_failures": 3}}
EVERY_HOUR = {"kind": "interval", "value": "1h", "timezone": "UTC"}


@pytest.fixture
async def engine(memory: str):
    async with Engine.open(memory, config=CONFIG) as opened:
        yield opened


async def make_due(engine: Engine, schedule_id: str, when: str = "2000-01-01T00:00:00.000Z"):
    await engine.backend.update_schedule(schedule_id, ScheduleChanges(next_run_at=when), utc_now())


def run(status: str = "ok", output: str = "done", **fields: Any) -> dict[str, Any]:
    return {"status": status, "output": output, "started_at": utc_now(),
            "finished_at": utc_now(), **fields}


@pytest.mark.parametrize(("fields", "message"), [
    ({"user_id": ""}, "user_id"), ({"goal": "  "}, "goal"),
    ({"notification_policy": "sometimes"}, "notification_policy"),
    ({"goal": "x" * 8001}, "8000"),
])
async def test_bad_fields_are_refused(engine: Engine, fields: dict[str, Any],
                                      message: str) -> None:
    args = {"user_id": "alice", "goal": "g", "cadence": EVERY_HOUR, **fields}
    policy = args.pop("notification_policy", "always")
    with pytest.raises(InvalidInput, match=message):
        await engine.schedules.create_schedule(args.pop("user_id"), args.pop("goal"),
                                               args.pop("cadence"), notification_policy=policy)


async def test_search_filters_by_status_name_and_text_with_count_and_pages(
        engine: Engine) -> None:
    store = engine.schedules
    made = [await store.create_schedule("alice", f"goal {i} about {'tea' if i % 2 else 'cake'}",
                                        EVERY_HOUR, name=f"job{i}") for i in range(7)]
    await store.create_schedule("bob", "bob's tea", EVERY_HOUR, name="job1")
    await store.pause_schedule(made[0].schedule_id)
    everything = await store.search_schedules("alice")
    assert everything.total == 7 and len(everything.schedules) == 7
    page = await store.search_schedules("alice", limit=3, offset=3)
    assert page.total == 7 and [s.name for s in page.schedules] == ["job3", "job2", "job1"]
    assert (await store.search_schedules("alice", status="paused")).total == 1
    assert [s.name for s in (await store.search_schedules("alice", name="job4")).schedules] == [
        "job4"]
    tea = await store.search_schedules("alice", text="TEA")
    assert tea.total == 3 and all("tea" in s.goal for s in tea.schedules)
    assert (await store.search_schedules("alice", text="100%")).total == 0  # LIKE escaped
    assert (await store.search_schedules(None, name="job1")).total == 2
    assert await store.count_schedules("alice") == 7 and await store.count_schedules("zed") == 0
    with pytest.raises(InvalidInput, match="2 schedules are named 'job1'"):
        await store.get_schedule("job1")
    assert (await store.get_schedule("job1", "bob")).user_id == "bob"


async def test_update_by_patch_checks_everything_and_recomputes_the_next_run(
        engine: Engine) -> None:
    store = engine.schedules
    made = await store.create_schedule("alice", "g", EVERY_HOUR, name="n")
    changed = await store.update_schedule(made.schedule_id, goal="new goal",
                                          notification_policy="never",
                                          cadence={"kind": "cron", "value": "0 9 * * *",
                                                   "timezone": "Europe/Paris"})
    assert (changed.goal, changed.notification_policy) == ("new goal", "never")
    assert changed.cadence["timezone"] == "Europe/Paris" and changed.next_run_at != made.next_run_at
    assert changed.updated_at >= made.updated_at and changed.created_at == made.created_at
    with pytest.raises(InvalidCadence):
        await store.update_schedule("n", cadence={"kind": "interval", "value": "10s"})
    with pytest.raises(InvalidInput, match="cannot change"):
        await store.update_schedule("n", user_id="mallory")
    with pytest.raises(NotFound):
        await store.update_schedule("nope", goal="x")
    assert (await store.get_schedule("n")).goal == "new goal"  # refusals wrote nothing


async def test_due_schedules_are_active_and_due_soonest_first(engine: Engine) -> None:
    store = engine.schedules
    a, b, c = [await store.create_schedule("u", f"g{i}", EVERY_HOUR) for i in range(3)]
    await make_due(engine, a.schedule_id, "2000-01-02T00:00:00.000Z")
    await make_due(engine, b.schedule_id, "2000-01-01T00:00:00.000Z")
    await make_due(engine, c.schedule_id, "2000-01-01T00:00:00.000Z")
    await store.pause_schedule(c.schedule_id)
    due = await store.due_schedules("2000-01-05T00:00:00Z")
    assert [s.schedule_id for s in due] == [b.schedule_id, a.schedule_id]
    assert [s.schedule_id for s in await store.due_schedules("2000-01-01T12:00:00Z")] == [
        b.schedule_id]
    assert len(await store.due_schedules("2000-01-05T00:00:00Z", limit=1)) == 1


async def test_record_run_and_reschedule_is_one_step(engine: Engine) -> None:
    store = engine.schedules
    made = await store.create_schedule("u", "g", EVERY_HOUR)
    started = "2026-01-01T10:00:00.000Z"
    after = await store.record_run_and_reschedule(
        made.schedule_id, run(output="x" * 900, started_at=started, notified=True),
        "2026-01-01T11:00:00.000Z")
    assert (after.last_run_at, after.last_run_status, after.next_run_at) == (
        started, "ok", "2026-01-01T11:00:00.000Z")
    (recorded,) = await store.get_run_history(made.schedule_id)
    assert recorded.output == "x" * 900 and recorded.output_summary == "x" * 500
    assert recorded.notified is True and recorded.run_id.startswith("run-")
    assert await store.get_run_by_id(recorded.run_id) == recorded
    with pytest.raises(NotFound):
        await store.get_run_by_id("run-missing")
    done = await store.record_run_and_reschedule(made.schedule_id, run(), None, "completed",
                                                 "a once schedule has no next run")
    assert (done.status, done.next_run_at, done.status_reason) == (
        "completed", None, "a once schedule has no next run")
    with pytest.raises(InvalidInput, match="run status"):
        await store.record_run_and_reschedule(made.schedule_id, run(status="meh"), None)


async def test_failures_count_up_reset_on_success_and_pause_at_the_limit(
        engine: Engine) -> None:
    store = engine.schedules
    made = await store.create_schedule("u", "g", EVERY_HOUR)
    soon = format_utc(datetime.now(UTC) - timedelta(minutes=1))
    one = await store.record_run_and_reschedule(made.schedule_id, run("failed", "boom"), soon)
    two = await store.record_run_and_reschedule(made.schedule_id, run("timeout", "slow"), soon)
    assert (one.consecutive_failures, two.consecutive_failures, two.status) == (1, 2, "active")
    reset = await store.record_run_and_reschedule(made.schedule_id, run(), soon)
    assert reset.consecutive_failures == 0
    for _ in range(2):
        await store.record_run_and_reschedule(made.schedule_id, run("failed", "boom"), soon)
    paused = await store.record_run_and_reschedule(made.schedule_id,
                                                   run("failed", "disk full"), soon)
    assert (paused.status, paused.consecutive_failures) == ("paused", 3)
    assert paused.status_reason.startswith("paused after 3 consecutive failures")
    assert "disk full" in paused.status_reason
    assert await store.due_schedules() == []  # a paused schedule is never due
    resumed = await store.resume_schedule(made.schedule_id)
    assert (resumed.status, resumed.consecutive_failures, resumed.status_reason) == (
        "active", 0, None)
    assert resumed.next_run_at > utc_now()


async def test_history_is_pruned_to_the_newest(engine: Engine) -> None:
    store = engine.schedules
    made = await store.create_schedule("u", "g", EVERY_HOUR)
    for hour in range(8):  # keep_runs is 5: recording prunes as it goes
        stamp = f"2026-01-01T{hour:02d}:00:00.000Z"
        await store.record_run_and_reschedule(made.schedule_id,
                                              run(started_at=stamp, output=str(hour)), None)
    history = await store.get_run_history(made.schedule_id, limit=50)
    assert [r.output for r in history] == ["7", "6", "5", "4", "3"]
    assert await store.prune_run_history(made.schedule_id, 2) == 3
    assert [r.output for r in await store.get_run_history(made.schedule_id)] == ["7", "6"]
