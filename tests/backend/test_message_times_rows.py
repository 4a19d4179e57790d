"""The tests of tests/test_message_times.py that read or stage the memory's tables directly (the
times as written)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from core import Engine
from core.clock import frozen, utc_now
from core.errors import InvalidInput
from tests.conftest import rows
from tests.test_message_times import (
    BAD_TIMES,
    CONFIG,
    ENGINE_TIME,
    NOW,
    NOW_TEXT,
    message,
)


@pytest.fixture
async def engine(memory: str):
    async with Engine.open(memory, config=CONFIG) as opened:
        yield opened


def stored_times(memory: str, session_id: str) -> list[tuple[int, str, str]]:
    """(sequence, event created_at, its first chunk's created_at) as the tables hold them."""
    return [tuple(row) for row in rows(
        memory, "SELECT e.sequence, e.created_at, c.created_at FROM conversation_events e"
                " JOIN chunks c ON c.session_id = e.session_id AND c.sequence_start = e.sequence"
                " WHERE e.session_id = ? ORDER BY e.sequence", session_id)]


async def test_store_and_append_keep_the_time_given_in_utc_as_the_engine_writes(
        engine: Engine, memory: str) -> None:
    with frozen(NOW):
        await engine.store("s", 1, message("an offset"), "2024-05-01T14:30:00.123456+02:30")
        await engine.store("s", 2, message("zulu"), created_at="2024-05-01T12:00:01Z")
        await engine.append("s", message("aware datetime"),
                            datetime(2024, 5, 1, 7, 0, 2, tzinfo=timezone(timedelta(hours=-5))))
        await engine.append("s", message("none given"), created_at=None)
        await engine.store("s", 5, message("not given"))
    expected = ["2024-05-01T12:00:00.123Z", "2024-05-01T12:00:01.000Z",
                "2024-05-01T12:00:02.000Z", NOW_TEXT, NOW_TEXT]
    assert [r.created_at for r in await engine.recall("s")] == expected
    # The same text in the event and its chunk, in utc_now's format, on either backend.
    assert stored_times(memory, "s") == [(n, t, t) for n, t in enumerate(expected, 1)]
    assert all(ENGINE_TIME.fullmatch(t) for t in [*expected, utc_now()])
    (session,) = await engine.list_sessions()
    assert (session.created_at, session.updated_at) == ("2024-05-01T12:00:00.123Z", NOW_TEXT)


@pytest.mark.parametrize(("bad", "said"), BAD_TIMES)
@pytest.mark.parametrize("how", ["store", "append"])
async def test_a_time_that_is_not_one_with_an_offset_is_refused_writing_nothing(
        engine: Engine, memory: str, how: str, bad: object, said: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        if how == "store":
            await engine.store("s", 1, message("hello"), created_at=bad)
        else:
            await engine.append("s", message("hello"), bad)
    text = str(refused.value)
    assert text.startswith("created_at ") and said in text
    assert "\n" not in text and len(text) < 260  # the value quoted, cut to ~100 characters
    assert "2024-05-01T12:00:00Z or 2024-05-01T14:00:00+02:00" in text or "datetime" in text
    assert await engine.list_sessions() == []
    for table in ("sessions", "conversation_events", "chunks"):
        assert rows(memory, f"SELECT count(*) FROM {table}") == [(0,)]
