"""The per-session scratchpad (oxydra): read, whole-replace write, clear, and its limits."""

from __future__ import annotations

import pytest

from core import Engine
from core.errors import InvalidInput, ReadOnlyDatabase
from tests.conftest import DETERMINISTIC


@pytest.fixture
async def engine(memory: str):
    async with Engine.open(memory, config=DETERMINISTIC) as opened:
        yield opened


async def test_read_write_clear(engine: Engine) -> None:
    assert await engine.read_scratchpad("s") is None
    written = await engine.write_scratchpad("s", ["goal: ship notes", "done: schema"])
    assert written.items == ["goal: ship notes", "done: schema"]
    assert await engine.read_scratchpad("s") == written
    replaced = await engine.write_scratchpad("s", ["pending: tests"])
    assert (await engine.read_scratchpad("s")).items == ["pending: tests"] == replaced.items
    assert (await engine.write_scratchpad("s", [])).items == []  # an empty list is a list
    assert await engine.clear_scratchpad("s") is True
    assert await engine.read_scratchpad("s") is None
    assert await engine.clear_scratchpad("s") is False
    assert await engine.clear_scratchpad("never seen") is False


async def test_the_limits_are_inclusive(engine: Engine) -> None:
    items = ["x" * 240] * 32
    assert (await engine.write_scratchpad("s", items)).items == items
    assert (await engine.read_scratchpad("s")).items == items


@pytest.mark.parametrize("items, words", [
    (["x"] * 33, "at most 32 items; 33 were given"),
    (["ok", "y" * 241], "item 2 is 241 characters; the limit is 240 per item"),
    (["ok", 7], "item 2 is a int"),
    ("one string", "a list of strings"),
    (None, "a list of strings"),
    (["bad \ud800"], "not valid UTF-8"),
])
async def test_a_write_over_the_limits_is_refused_whole(engine: Engine, items,
                                                        words: str) -> None:
    kept = await engine.write_scratchpad("s", ["kept"])
    with pytest.raises(InvalidInput, match=words) as refused:
        await engine.write_scratchpad("s", items)
    if isinstance(items, list) and len(items) <= 32 and all(isinstance(i, str) for i in items):
        assert "left as it was" in str(refused.value)
    assert await engine.read_scratchpad("s") == kept


async def test_configured_limits_apply(memory: str) -> None:
    config = {**DETERMINISTIC, "scratchpad": {"max_items": 2, "max_item_chars": 5}}
    async with Engine.open(memory, config=config) as engine:
        await engine.write_scratchpad("s", ["12345", "abcde"])
        with pytest.raises(InvalidInput, match="at most 2 items"):
            await engine.write_scratchpad("s", ["a", "b", "c"])
        with pytest.raises(InvalidInput, match="the limit is 5"):
            await engine.write_scratchpad("s", ["123456"])


async def test_sessions_have_their_own_and_other_state_is_kept(engine: Engine) -> None:
    await engine.store("s", 1, {"role": "user", "content": "hello"})
    await engine.write_scratchpad("s", ["mine"])
    await engine.write_scratchpad("t", ["theirs"])
    await engine.store("s", 2, {"role": "user", "content": "again"})
    state = await engine.session_state("s")
    assert state["last_sequence"] == 2 and state["scratchpad"]["items"] == ["mine"]
    assert (await engine.read_scratchpad("t")).items == ["theirs"]
    await engine.clear_scratchpad("s")
    assert (await engine.session_state("s"))["last_sequence"] == 2
    assert (await engine.read_scratchpad("t")).items == ["theirs"]


async def test_a_new_session_is_made_for_its_scratchpad_and_goes_with_it(
        engine: Engine) -> None:
    await engine.write_scratchpad("fresh", ["a"], agent="planner")
    (session,) = await engine.list_sessions(agent="planner")
    assert (session.session_id, session.event_count) == ("fresh", 0)
    assert await engine.forget("fresh") is True
    assert await engine.read_scratchpad("fresh") is None


async def test_refused_sessions(engine: Engine) -> None:
    for session_id in ("", "  ", None):
        with pytest.raises(InvalidInput, match="session_id"):
            await engine.write_scratchpad(session_id, ["x"])
    with pytest.raises(InvalidInput, match="holds a namespace's notes"):
        await engine.write_scratchpad("memory:default", ["x"])
    assert await engine.list_sessions() == []


async def test_it_persists_and_a_read_only_engine_reads_but_cannot_write(
        memory: str) -> None:
    async with Engine.open(memory, config=DETERMINISTIC) as engine:
        await engine.write_scratchpad("s", ["survives a restart"])
    async with Engine.open(memory, config=DETERMINISTIC, read_only=True) as engine:
        assert (await engine.read_scratchpad("s")).items == ["survives a restart"]
        with pytest.raises(ReadOnlyDatabase):
            await engine.write_scratchpad("s", [])
        with pytest.raises(ReadOnlyDatabase):
            await engine.clear_scratchpad("s")
