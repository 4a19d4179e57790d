"""Messages stored in bulk keep the times they are given: ``store_many`` items with a
``created_at`` (normalised to the engine's text), the rest stamped with the batch's time; an
unreadable or zoneless time refuses only its own message; a session's ``updated_at`` never
moves back. ``normalise_timestamp`` is what importers read their sources' times with."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core import Engine
from core.clock import format_utc, frozen, normalise_timestamp
from tests.conftest import DETERMINISTIC

CONFIG = {**DETERMINISTIC, "summary": {"auto": False}, "consolidation": {"enabled": False}}
NOW = datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)
NOW_TEXT = "2030-01-02T03:04:05.000Z"


@pytest.fixture
async def engine(memory: str):
    async with Engine.open(memory, config=CONFIG) as opened:
        yield opened


def message(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


@pytest.mark.parametrize(("given_time", "stored"), [
    ("2024-05-01T12:00:00.000Z", "2024-05-01T12:00:00.000Z"),
    ("2024-05-01T12:00:00Z", "2024-05-01T12:00:00.000Z"),
    ("2024-05-01t12:00:00.5z", "2024-05-01T12:00:00.500Z"),
    ("2024-05-01T14:30:00.123456+02:30", "2024-05-01T12:00:00.123Z"),
    ("2024-05-01T07:00:00-0500", "2024-05-01T12:00:00.000Z"),
    ("2024-05-01 12:00:00", "2024-05-01T12:00:00.000Z"),  # SQLite's CURRENT_TIMESTAMP
    ("2024-05-01T12:00:00", "2024-05-01T12:00:00.000Z"),  # no zone: UTC
    (" 2024-05-01T12:00:00,25Z ", "2024-05-01T12:00:00.250Z"),
    ("0999-12-31T23:59:59.999Z", "0999-12-31T23:59:59.999Z"),
])
def test_accepted_timestamps_are_normalised(given_time: str, stored: str) -> None:
    assert normalise_timestamp(given_time) == stored


@pytest.mark.parametrize("bad", [
    "", "yesterday", "2024-05-01", "2024-05-01T12:00", "2024-13-01T00:00:00Z",
    "2024-02-30 10:00:00", "2024-05-01T23:59:60Z", "2024-W18-3T12:00:00", "20240501T120000Z",
    "2024-05-01X12:00:00", "2024-05-01T12:00:00+25:00", "0001-01-01T00:30:00+01:00",
    1714564800, b"2024-05-01T12:00:00Z",
])
def test_anything_else_is_refused_naming_the_value(bad: object) -> None:
    with pytest.raises(ValueError, match="is not a timestamp") as raised:
        normalise_timestamp(bad)
    assert repr(bad)[:40] in str(raised.value)


# RFC 3339 offsets are whole minutes (a zone's local mean time, like -00:16:08, is not one).
OFFSETS = st.integers(-(24 * 60 - 1), 24 * 60 - 1).map(lambda m: timezone(timedelta(minutes=m)))


@given(st.datetimes(min_value=datetime(1000, 1, 2), max_value=datetime(9999, 12, 30),
                    timezones=OFFSETS))
def test_any_moment_reads_back_as_the_engine_writes_it(moment: datetime) -> None:
    engine_text = format_utc(moment)
    assert normalise_timestamp(engine_text) == engine_text
    # The same moment written with its own offset: the same instant, to the millisecond.
    offset = moment.isoformat()
    assert normalise_timestamp(offset) == engine_text


async def test_three_and_four_element_items_mix(engine: Engine) -> None:
    items = [
        ("s", 1, message("plain, stamped now")),
        ("s", 2, message("given"), "2024-05-01T12:00:00+02:00"),
        ("s", 3, message("none given"), None),
        ("t", None, message("allocated, given"), "2023-01-01T00:00:00Z"),
        ("t", None, message("allocated, plain")),
    ]
    with frozen(NOW):
        result = await engine.store_many(items, batch_size=2)  # across batches, too
    assert (result.stored, result.rejected) == (5, [])
    assert [(r.sequence, r.created_at) for r in await engine.recall("s")] == [
        (1, NOW_TEXT), (2, "2024-05-01T10:00:00.000Z"), (3, NOW_TEXT)]
    assert [(r.sequence, r.created_at) for r in await engine.recall("t")] == [
        (1, "2023-01-01T00:00:00.000Z"), (2, NOW_TEXT)]


@pytest.mark.parametrize("bad", ["next tuesday", "2024-05-01", 1714564800,
                                 "2024-05-01 12:01:00"])
async def test_an_unreadable_created_at_refuses_only_its_message(engine: Engine,
                                                                 bad: object) -> None:
    items = [("s", 1, message("one"), "2024-05-01T12:00:00Z"),
             ("s", 2, message("two"), bad),
             ("s", 3, message("three"), "2024-05-01T12:02:00Z")]
    result = await engine.store_many(items)
    assert result.stored == 2
    (refused,) = result.rejected
    assert (refused.index, refused.session_id, refused.sequence) == (1, "s", 2)
    assert refused.reason.startswith(f"created_at {bad!r} ")
    assert "2024-05-01T12:00:00Z or 2024-05-01T14:00:00+02:00" in refused.reason
    assert [(r.sequence, r.created_at) for r in await engine.recall("s")] == [
        (1, "2024-05-01T12:00:00.000Z"), (3, "2024-05-01T12:02:00.000Z")]


async def session_times(engine: Engine, session_id: str) -> tuple[str, str]:
    (session,) = [s for s in await engine.list_sessions() if s.session_id == session_id]
    return session.created_at, session.updated_at


async def test_a_session_spans_its_messages_and_updated_at_never_moves_back(
        engine: Engine) -> None:
    # Out of time order within one batch: the session is made at the earliest and stamped
    # with the latest, not with whichever came last.
    await engine.store_many([("s", 1, message("a"), "2024-05-01T10:00:00Z"),
                             ("s", 2, message("b"), "2024-05-01T10:05:00Z"),
                             ("s", 3, message("c"), "2024-05-01T10:02:00Z")])
    assert await session_times(engine, "s") == ("2024-05-01T10:00:00.000Z",
                                                "2024-05-01T10:05:00.000Z")
    await engine.store_many([("s", 4, message("later"), "2024-05-01T12:00:00Z")])
    assert await session_times(engine, "s") == ("2024-05-01T10:00:00.000Z",
                                                "2024-05-01T12:00:00.000Z")
    await engine.store_many([("s", 5, message("older"), "2024-04-01T09:00:00Z")])
    assert await session_times(engine, "s") == ("2024-05-01T10:00:00.000Z",
                                                "2024-05-01T12:00:00.000Z")

    # A live session, then old messages imported into it: it stays as recent as it was.
    with frozen(NOW):
        await engine.store("live", 1, message("today"))
    await engine.store_many([("live", 2, message("from an old export"),
                               format_utc(NOW - timedelta(days=400)))])
    assert await session_times(engine, "live") == (NOW_TEXT, NOW_TEXT)
    assert [s.session_id for s in await engine.list_sessions()][:1] == ["live"]
