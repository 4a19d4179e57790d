"""Schedules as someone types them: checks by field, previews, plain words, run counts."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from core import Engine, clock
from core.clock import format_utc
from core.errors import InvalidInput
from core.schedules.cadence import Cadence, parse_cadence
from core.schedules.drafts import ScheduleDraft, check_draft, upcoming
from core.schedules.wording import in_words
from tests.conftest import DETERMINISTIC

NOW = datetime(2026, 5, 4, 12, 0, tzinfo=UTC)
CONFIG = {**DETERMINISTIC, "consolidation": {"enabled": False},
          "scheduler": {"min_interval_secs": 300}}


def draft(**fields: str) -> ScheduleDraft:
    values = {"user_id": "planner", "goal": "Check huts", "kind": "cron",
              "value": "0 8 * * *", "timezone": "Europe/Rome"}
    return ScheduleDraft(**{**values, **fields})


# --- plain words ------------------------------------------------------------------------------


@pytest.mark.parametrize(("kind", "value", "zone", "words"), [
    ("cron", "0 8 * * *", "Europe/Rome", "every day at 08:00 Europe/Rome"),
    ("cron", "@daily", "UTC", "every day at 00:00 UTC"),
    ("cron", "30 9 * * 1-5", "UTC", "every Monday to Friday at 09:30 UTC"),
    ("cron", "0 9 * * mon-fri", "UTC", "every Monday to Friday at 09:00 UTC"),
    ("cron", "0 10 * * 6,0", "UTC", "every Saturday and Sunday at 10:00 UTC"),
    ("cron", "0 10 * * 7", "UTC", "every Sunday at 10:00 UTC"),
    ("cron", "0 8,18 * * *", "Asia/Tokyo", "every day at 08:00 and 18:00 Asia/Tokyo"),
    ("cron", "5 */6 * * *", "UTC", "every day at 00:05, 06:05, 12:05 and 18:05 UTC"),
    ("cron", "5 */2 * * *", "UTC", "every 2 hours from 00:05 UTC"),
    ("cron", "0 9-17 * * 1-5", "UTC", "every hour from 09:00 to 17:00 on Monday to Friday UTC"),
    ("cron", "*/15 * * * *", "UTC", "every 15 minutes"),
    ("cron", "*/15 * * * 1-5", "UTC", "every 15 minutes on Monday to Friday (UTC)"),
    ("cron", "17 * * * *", "Asia/Kathmandu", "every hour at minute 17 (Asia/Kathmandu)"),
    ("cron", "0 0 1 * *", "UTC", "on day 1 of every month at 00:00 UTC"),
    ("cron", "0 6 1,15 * *", "UTC", "on days 1 and 15 of every month at 06:00 UTC"),
    ("cron", "@yearly", "UTC", "every year on 1 January at 00:00 UTC"),
    ("interval", "90m", "UTC", "every 1h30m"),
    ("once", "2026-12-01T09:00", "Europe/Paris", "once at 2026-12-01 09:00 Europe/Paris"),
])
def test_in_words_reads_common_shapes_aloud(kind: str, value: str, zone: str,
                                            words: str) -> None:
    assert in_words(Cadence(kind, value, zone)) == words


@pytest.mark.parametrize("value", [
    "0 8 1 * 1",          # day of month and day of week both: Vixie's "either" rule
    "0 8 L * *",          # last day of the month
    "0 8 * * 1#2",        # the second Monday
    "0 22-2 * * *",       # a wrap-around range
    "0 8 * * * 30",       # seconds as a sixth field
    "7,19,31,43,55 3,9,15,21 * * *",
])
def test_in_words_falls_back_to_the_cron_itself(value: str) -> None:
    cadence = parse_cadence("cron", value, "UTC")
    assert in_words(cadence) == cadence.describe()


# --- checking a draft -------------------------------------------------------------------------


def test_a_valid_draft_previews_five_times_in_order() -> None:
    check = check_draft(draft(), 300, now=NOW)
    assert check.ok and check.cadence == Cadence("cron", "0 8 * * *", "Europe/Rome")
    assert [format_utc(t) for t in check.next_times] == [
        f"2026-05-{day:02d}T06:00:00.000Z" for day in range(5, 10)]


def test_the_preview_starts_from_the_frozen_clock_when_no_now_is_given() -> None:
    with clock.frozen(NOW):
        check = check_draft(draft(kind="interval", value="6h", timezone="UTC"), 300)
    assert check.next_times == [NOW + timedelta(hours=6 * step) for step in range(1, 6)]


@pytest.mark.parametrize(("fields", "field", "words"), [
    ({"value": "*/1 * * * *"}, "value", "the minimum is 300 s"),
    ({"kind": "interval", "value": "1m"}, "value", "the minimum is 300 s"),
    ({"value": "not a cron"}, "value", "has 3 fields"),
    ({"kind": "once", "value": "2026-05-01T09:00"}, "value", "in the past"),
    ({"timezone": "Europe/Rom"}, "timezone", "did you mean 'Europe/Rome'"),
    ({"user_id": "  "}, "user_id", "user must be non-empty"),
    ({"goal": ""}, "goal", "goal must be non-empty"),
    ({"name": "x" * 201}, "name", "limit is 200"),
    ({"notification_policy": "sometimes"}, "notification_policy", "always, on_failure, never"),
    ({"kind": "weekly"}, "kind", "cron, once, interval"),
])
def test_each_refusal_is_at_its_field(fields: dict[str, str], field: str, words: str) -> None:
    check = check_draft(draft(**fields), 300, now=NOW)
    assert set(check.problems) == {field}
    assert words in check.problems[field]
    about_when = field in ("kind", "value", "timezone")
    assert len(check.next_times) == (0 if about_when else 5)  # a bad goal still previews


@pytest.mark.parametrize("value", ["61 * * * *", "*/1 * * * *"])
def test_a_bad_zone_and_a_bad_value_are_both_reported(value: str) -> None:
    check = check_draft(draft(value=value, timezone="Mars/Olympus"), 300, now=NOW)
    assert set(check.problems) == {"value", "timezone"} and check.next_times == []


async def test_what_the_draft_passes_the_store_accepts(memory: str) -> None:
    async with Engine.open(memory, config=CONFIG) as engine:
        for fields in ({}, {"kind": "interval", "value": "5m", "timezone": "UTC"},
                       {"kind": "once", "value": "2030-01-01T09:00"}):
            typed = draft(**fields)
            assert check_draft(typed, engine.config.scheduler.min_interval_secs).ok
            await engine.schedules.create_schedule(typed.user_id, typed.goal,
                                                   typed.cadence_dict())
        typed = draft(value="*/1 * * * *")
        assert not check_draft(typed, engine.config.scheduler.min_interval_secs).ok
        with pytest.raises(InvalidInput):
            await engine.schedules.create_schedule(typed.user_id, typed.goal,
                                                   typed.cadence_dict())


async def test_an_unchanged_cadence_is_not_checked_again_and_previews_the_schedule(
        memory: str) -> None:
    with clock.frozen(NOW):
        async with Engine.open(memory, config=CONFIG) as engine:
            once = await engine.schedules.create_schedule(
                "planner", "Remind me", {"kind": "once", "value": "2026-05-04T15:00",
                                         "timezone": "Europe/Rome"})
    later = NOW + timedelta(days=1)  # the once is in the past now, as a completed one would be
    edited = ScheduleDraft.of(once)
    assert check_draft(edited, 300, current=once, now=later).ok
    moved = check_draft(edited, 300, now=later)
    assert "in the past" in moved.problems["value"]
    same = check_draft(edited, 300, current=once, now=NOW)
    assert same.next_times == upcoming(once, now=NOW) == [NOW + timedelta(hours=1)]


def test_upcoming_follows_the_status() -> None:
    from core.types import ScheduleDefinition

    base = dict(schedule_id="s", user_id="u", name=None, goal="g",
                cadence={"kind": "interval", "value": "1h", "timezone": "UTC"},
                notification_policy="always", created_at="", updated_at="",
                last_run_at=None, last_run_status=None, consecutive_failures=0,
                channel_id=None, channel_context_id=None)
    active = ScheduleDefinition(**base, status="active", next_run_at="2026-05-04T13:30:00.000Z")
    assert [format_utc(t)[11:16] for t in upcoming(active, 3)] == ["13:30", "14:30", "15:30"]
    paused = ScheduleDefinition(**base, status="paused", next_run_at=None)
    assert upcoming(paused, 2, now=NOW) == [NOW + timedelta(hours=1), NOW + timedelta(hours=2)]
    done = ScheduleDefinition(**base, status="completed", next_run_at=None)
    assert upcoming(done) == [] and upcoming(active, 0) == []


# --- run counts -------------------------------------------------------------------------------


async def test_count_runs_counts_a_schedules_history(memory: str) -> None:
    async with Engine.open(memory, config=CONFIG) as engine:
        store = engine.schedules
        created = await store.create_schedule("u", "g", {"kind": "interval", "value": "1h"})
        assert await store.count_runs(created.schedule_id) == 0
        for status in ("ok", "failed"):
            await store.record_run_and_reschedule(
                created.schedule_id, {"status": status, "output": status}, None)
        assert await store.count_runs(created.schedule_id) == 2
        assert await store.count_runs("sched-none") == 0
