"""Schedules: claims are exclusive across writers; a run is recorded with its reschedule."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest

from core.errors import NotFound
from core.storage.backend import Backend
from core.storage.vocabulary import ScheduleChanges, ScheduleDraft
from core.types import ScheduleRun
from tests.backend.conftest import Opener

NOW = "2026-01-01T12:00:00.000Z"
PAST = "2026-01-01T11:00:00.000Z"
FUTURE = "2026-01-02T12:00:00.000Z"
LEASE = "2026-01-01T12:05:00.000Z"


def row(schedule_id: str, *, name: str = "plants", user: str = "alice",
        next_run_at: str | None = PAST, status: str = "active") -> ScheduleDraft:
    return ScheduleDraft(schedule_id=schedule_id, user_id=user, name=name,
                         goal=f"water the {name}",
                         cadence_json='{"kind": "interval", "every": 3600}',
                         notification_policy="always", status=status, created_at=NOW,
                         updated_at=NOW, next_run_at=next_run_at, consecutive_failures=0,
                         channel_id=None, channel_context_id=None)


def run(schedule_id: str, run_id: str, status: str = "ok",
        started_at: str = NOW) -> ScheduleRun:
    return ScheduleRun(run_id=run_id, schedule_id=schedule_id, started_at=started_at,
                       finished_at=started_at, status=status, output_summary="done",
                       output="done")


async def test_insert_get_search_update_and_delete(backend: Backend) -> None:
    inserted = await backend.insert_schedule(row("sch-1"))
    assert await backend.get_schedule("sch-1") == inserted
    with pytest.raises(NotFound):
        await backend.get_schedule("sch-none")
    await backend.insert_schedule(row("sch-2", name="50%_off", user="bob"))
    assert [s.schedule_id for s in await backend.schedules_named("plants", None)] == [
        "sch-1"]
    assert await backend.schedules_named("plants", "bob") == []
    total, page = await backend.search_schedules(None, None, None, "50%", 10, 0)
    assert (total, [s.schedule_id for s in page]) == (1, ["sch-2"])
    total, _ = await backend.search_schedules(None, None, None, "%", 10, 0)
    assert total == 1  # wildcards are literal
    assert await backend.count_schedules("alice") == 1
    updated = await backend.update_schedule("sch-1", ScheduleChanges(status="paused"), FUTURE)
    assert (updated.status, updated.updated_at) == ("paused", FUTURE)
    assert updated == dataclasses.replace(inserted, status="paused", updated_at=FUTURE)
    # None is a value a change stores; a field left at KEEP keeps the stored one.
    unnamed = await backend.update_schedule("sch-1", ScheduleChanges(name=None), FUTURE)
    assert unnamed == dataclasses.replace(updated, name=None)
    with pytest.raises(NotFound):
        await backend.update_schedule("sch-none", ScheduleChanges(status="paused"), FUTURE)
    assert await backend.delete_schedule("sch-1") is True
    assert await backend.delete_schedule("sch-1") is False


async def test_search_is_newest_first_ties_by_insertion_and_text_ignores_ascii_case(
        backend: Backend) -> None:
    for n in range(3):  # one created_at: insertion order breaks the tie
        await backend.insert_schedule(row(f"sch-{n}", name=f"plants {n}"))
    total, page = await backend.search_schedules("alice", "active", None, "WATER THE", 2, 1)
    assert (total, [s.schedule_id for s in page]) == (3, ["sch-1", "sch-0"])
    assert [s.schedule_id for s in await backend.due_schedules(NOW, -1)] == [
        "sch-0", "sch-1", "sch-2"]  # a negative limit is none


async def test_due_schedules_are_active_and_due_soonest_first(backend: Backend) -> None:
    await backend.insert_schedule(row("later", next_run_at=PAST))
    await backend.insert_schedule(row("sooner", next_run_at="2026-01-01T10:00:00.000Z"))
    await backend.insert_schedule(row("future", next_run_at=FUTURE))
    await backend.insert_schedule(row("paused", status="paused"))
    assert [s.schedule_id for s in await backend.due_schedules(NOW, 10)] == [
        "sooner", "later"]


async def test_two_writers_never_claim_the_same_schedule(backend: Backend,
                                                         open_backend: Opener) -> None:
    for n in range(6):
        await backend.insert_schedule(row(f"sch-{n}"))
    other = await open_backend()
    mine, theirs = await asyncio.gather(backend.claim_due(NOW, "runner-a", LEASE, 4),
                                        other.claim_due(NOW, "runner-b", LEASE, 4))
    claimed_a = {s.schedule_id for s in mine}
    claimed_b = {s.schedule_id for s in theirs}
    assert not claimed_a & claimed_b and len(claimed_a | claimed_b) == 6
    assert await backend.claim_due(NOW, "runner-c", LEASE, 10) == []
    some = sorted(claimed_a)[0]
    await backend.release_claim(some, "runner-b")  # not runner-b's: stays claimed
    assert await backend.claim_due(NOW, "runner-c", LEASE, 10) == []
    await backend.release_claim(some, "runner-a")
    assert [s.schedule_id for s in await backend.claim_due(NOW, "runner-c", LEASE, 10)] \
        == [some]
    # A lease that ran out is claimable again.
    expired = await backend.claim_due(FUTURE, "runner-d", FUTURE, 10)
    assert len(expired) == 6


async def test_many_runners_at_once_share_the_due_schedules_without_overlap(
        backend: Backend, open_backend: Opener) -> None:
    for n in range(6):
        await backend.insert_schedule(row(f"sch-{n}"))
    runners = [backend, *[await open_backend() for _ in range(3)]]
    claims = await asyncio.gather(*(runner.claim_due(NOW, f"runner-{n}", LEASE, 2)
                                    for n, runner in enumerate(runners)))
    claimed = [s.schedule_id for claim in claims for s in claim]
    assert sorted(claimed) == [f"sch-{n}" for n in range(6)]  # each once, none left over
    assert all(len(claim) <= 2 for claim in claims)


async def test_failed_runs_recorded_at_once_both_count(backend: Backend,
                                                       open_backend: Opener) -> None:
    await backend.insert_schedule(row("sch-1"))
    other = await open_backend()
    await asyncio.gather(
        backend.record_run_and_reschedule(run("sch-1", "run-a", "error"), FUTURE, None, None,
                                          0, 10, NOW),
        other.record_run_and_reschedule(run("sch-1", "run-b", "error"), FUTURE, None, None,
                                        0, 10, NOW))
    schedule = await backend.get_schedule("sch-1")
    assert schedule.consecutive_failures == 2
    assert await backend.count_runs("sch-1") == 2


async def test_a_run_is_recorded_with_its_reschedule_and_failures_pause(
        backend: Backend) -> None:
    await backend.insert_schedule(row("sch-1"))
    await backend.claim_due(NOW, "runner", LEASE, 1)
    after = await backend.record_run_and_reschedule(run("sch-1", "run-1", "error"), FUTURE,
                                                    None, None, 2, 10, NOW)
    assert (after.last_run_status, after.consecutive_failures, after.next_run_at,
            after.status) == ("error", 1, FUTURE, "active")
    assert await backend.claim_due(FUTURE, "other", FUTURE, 1) != []  # claim released
    paused = await backend.record_run_and_reschedule(
        run("sch-1", "run-2", "error", started_at=FUTURE), FUTURE, None, None, 2, 10, FUTURE)
    assert paused.status == "paused" and "2 consecutive failures" in paused.status_reason
    assert (await backend.get_run("run-1")).status == "error"
    with pytest.raises(NotFound):
        await backend.get_run("run-none")
    with pytest.raises(NotFound):
        await backend.record_run_and_reschedule(run("sch-none", "run-3"), None, None, None,
                                                2, 10, NOW)
    assert await backend.count_runs("sch-1") == 2  # the refused run left nothing


async def test_history_is_pruned_to_the_newest_and_goes_with_its_schedule(
        backend: Backend) -> None:
    await backend.insert_schedule(row("sch-1"))
    for n in range(5):
        await backend.record_run_and_reschedule(
            run("sch-1", f"run-{n}", started_at=f"2026-01-01T12:0{n}:00.000Z"), FUTURE, None,
            None, 0, 4, NOW)
    assert await backend.count_runs("sch-1") == 4  # pruned with the record
    assert await backend.prune_run_history("sch-1", 2) == 2
    assert [r.run_id for r in await backend.run_history("sch-1", 10)] == ["run-4", "run-3"]
    await backend.delete_schedule("sch-1")
    assert await backend.count_runs("sch-1") == 0
