"""A message's own time: ``store``, ``append``, ``store_many``, the CLI and MCP take a
``created_at`` (ISO-8601 with a UTC offset, or an aware datetime), store it in UTC as the
engine writes times, refuse anything else writing nothing, and the date boost reads it when
the message's metadata names no date. Every engine test runs on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from core import Engine
from core.clock import frozen
from core.errors import InvalidInput
from core.importers import import_file
from core.inputs import message_time
from core.retrieval.dates import message_date
from core.storage.rows import ChunkRow
from tests.cli_helpers import FIXTURE_CONFIG, invoke, memory_file, ok_json
from tests.conftest import DETERMINISTIC
from tests.test_importers import make_seed000, make_seed001, write_jsonl
from workbench.mcp.server import call
from workbench.mcp.tools import MemoryTools

CONFIG = {**DETERMINISTIC, "summary": {"auto": False}, "consolidation": {"enabled": False}}
NOW = datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)
NOW_TEXT = "2030-01-02T03:04:05.000Z"
ENGINE_TIME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z")


@pytest.fixture
async def engine(memory: str):
    async with Engine.open(memory, config=CONFIG) as opened:
        yield opened


def message(text: str, **extra: Any) -> dict[str, Any]:
    return {"role": "user", "content": text, **extra}


# -- what is taken, and how it is stored ------------------------------------------------------


BAD_TIMES = [
    pytest.param("2024-05-01T12:00:00", "has no UTC offset", id="naive-text"),
    pytest.param("2024-05-01 12:00:00", "has no UTC offset", id="sqlite-text"),
    pytest.param(datetime(2024, 5, 1, 12), "has no UTC offset", id="naive-datetime"),
    pytest.param("2024-05-01", "is not an ISO-8601 date and time", id="date-alone"),
    pytest.param("yesterday", "is not an ISO-8601 date and time", id="words"),
    pytest.param("2024-05-01T12:00:00+25:00", "is not an ISO-8601", id="offset-too-big"),
    pytest.param("2024-02-30T12:00:00Z", "is not an ISO-8601", id="no-such-day"),
    pytest.param(1714564800, "is a int, not a time", id="epoch-number"),
    pytest.param("2024-05-01T12:00:00Z" + "x" * 5000, "is not an ISO-8601", id="long"),
]


@pytest.mark.parametrize(("bad", "said"), BAD_TIMES[:4])
async def test_store_many_refuses_only_the_item_without_an_offset(
        engine: Engine, bad: object, said: str) -> None:
    result = await engine.store_many([
        ("s", 1, message("one"), "2024-05-01T12:00:00Z"),
        ("s", 2, message("two"), bad),
        ("s", 3, message("three"), datetime(2024, 5, 1, 12, 2, tzinfo=UTC))])
    assert result.stored == 2
    (refused,) = result.rejected
    assert (refused.index, refused.sequence) == (1, 2) and said in refused.reason
    assert [(r.sequence, r.created_at) for r in await engine.recall("s")] == [
        (1, "2024-05-01T12:00:00.000Z"), (3, "2024-05-01T12:02:00.000Z")]


def test_the_parser_quotes_at_most_about_a_hundred_characters() -> None:
    with pytest.raises(InvalidInput) as refused:
        message_time("2024-05-01T12:00:00" + "\n" * 3000)
    assert "\n" not in str(refused.value) and len(str(refused.value)) < 260
    assert message_time(None) is None
    assert message_time(" 2024-05-01T12:00:00,5z ") == "2024-05-01T12:00:00.500Z"


# -- the date boost reads the message's time -------------------------------------------------

async def ranked_dates(engine: Engine, query: str, **scope: Any) -> dict[int, float]:
    """Each result's sequence -> the date boost it gained."""
    found = await engine.search(query=query, top_k=10, date_boost=0.5, **scope)
    explained = found.explain()
    return {result["sequence_start"]: result["boosts"]["date"]
            for result in explained["results"]}


@pytest.mark.parametrize("scope", [{"session_id": "s"}, {"namespace": "default"}])
async def test_the_date_boost_reads_a_messages_own_time_unless_its_metadata_names_one(
        engine: Engine, scope: dict[str, str]) -> None:
    await engine.store_many([
        ("s", 1, message("we cooked a risotto"), "2023-06-10T20:00:00+02:00"),
        ("s", 2, message("we cooked a risotto again"), "2023-07-02T09:00:00Z"),
        # Metadata that names a date wins over the time the message was stored at.
        ("s", 3, message("we cooked risotto once more", metadata={"date": "2023-07-20"}),
         "2023-06-15T09:00:00Z"),
    ])
    await engine.drain()
    june = await ranked_dates(engine, "What risotto did we cook in June 2023?", **scope)
    assert june == {1: 0.5, 2: 0.0, 3: 0.0}
    july = await ranked_dates(engine, "What risotto did we cook in July 2023?", **scope)
    assert july == {1: 0.0, 2: 0.5, 3: 0.5}
    # "last week" counts back from the latest dated candidate: 2023-07-20.
    assert await ranked_dates(engine, "risotto last week", **scope) == {1: 0.0, 2: 0.0, 3: 0.5}


def test_a_chunk_is_dated_by_its_time_and_a_notes_chunk_by_its_metadata_only() -> None:
    plain = ChunkRow("chk-1", "s", "text", 1, 1, "{}", "", "2023-06-30T23:30:00.000Z")
    assert str(message_date(plain)) == "2023-06-30"
    unreadable = plain._replace(metadata_json='{"date": "soon"}')
    assert str(message_date(unreadable)) == "2023-06-30"
    assert message_date(plain._replace(created_at=None)) is None
    # A note's chunk is stamped when it is indexed, not when the note was written.
    assert message_date(plain._replace(session_id="memory:default")) is None


# -- importers: the source's times are the messages' own -------------------------------------

def _jsonl(path: Path) -> Path:
    return write_jsonl(path, [
        {"session_id": "trip", "created_at": "2024-04-02T08:15:00+00:00", "role": "user",
         "content": "Where does the deploy pipeline run?"},
        {"session_id": "trip", "created_at": "2024-04-02T08:16:00Z", "role": "assistant",
         "content": "The deploy pipeline runs on the gravel runner."}])


def _aidaemon(path: Path) -> Path:
    return make_seed000(path, [
        {"id": "a", "session_id": "trip", "role": "user", "created_at": "2024-04-02T08:15:00Z",
         "content": "Where does the deploy pipeline run?"},
        {"id": "b", "session_id": "trip", "role": "assistant",
         "created_at": "2024-04-02T10:16:00+02:00",
         "content": "The deploy pipeline runs on the gravel runner."}])


# make_seed001 stamps every event '2024-04-02 08:15:00' (UTC, as SQLite writes it), in "s1".
SOURCES = {"jsonl": (_jsonl, "trip"), "aidaemon": (_aidaemon, "trip"),
           "oxydra": (make_seed001, "s1")}


@pytest.mark.parametrize("source_format", sorted(SOURCES))
async def test_imported_messages_are_dated_by_their_source_times(
        engine: Engine, tmp_path: Path, source_format: str) -> None:
    make, session_id = SOURCES[source_format]
    with frozen(NOW):
        await import_file(source_format, engine, make(tmp_path / "source"))
    await engine.drain()
    assert {r.created_at[:10] for r in await engine.recall(session_id)} == {"2024-04-02"}
    april = await ranked_dates(engine, "deploy pipeline in April 2024", session_id=session_id)
    assert april and set(april.values()) == {0.5}
    # Imported at NOW: a question about that month finds nothing dated in it.
    january = await ranked_dates(engine, "deploy pipeline in January 2030",
                                 session_id=session_id)
    assert january and set(january.values()) == {0.0}


# -- the front ends: `sessions append --created-at`, MCP's conversation_append ---------------

def test_sessions_append_takes_created_at(runner: CliRunner, tmp_path: Path) -> None:
    db = memory_file(tmp_path / "memory.db")
    stored = ok_json(runner, "sessions", "append", "trip", "--db", db, "--role", "user",
                     "--content", "hi", "--created-at", "2024-05-01T14:00:00+02:00")
    assert stored["sequence"] == 1

    async def times() -> list[str]:
        async with Engine.open(db, config=FIXTURE_CONFIG) as engine:
            return [r.created_at for r in await engine.recall("trip")]

    assert asyncio.run(times()) == ["2024-05-01T12:00:00.000Z"]
    before = db.read_bytes()
    bad = invoke(runner, "sessions", "append", "trip", "--db", db, "--role", "user",
                 "--content", "later", "--created-at", "2024-05-01 14:00")
    assert bad.exit_code == 2
    assert "'2024-05-01 14:00' is not an ISO-8601 date and time" in bad.stderr
    assert db.read_bytes() == before
    assert asyncio.run(times()) == ["2024-05-01T12:00:00.000Z"]


async def test_mcp_conversation_append_takes_created_at(tmp_path: Path) -> None:
    async with Engine.open(tmp_path / "m.db", config=CONFIG) as engine:
        tools = MemoryTools(engine, "alice")
        stored, error = await call(tools, "conversation_append", {
            "session_id": "run", "role": "user", "content": "hi",
            "created_at": "2024-05-01T14:00:00+02:00"})
        assert error is None and stored is not None and stored["sequence"] == 1
        assert [r.created_at for r in await engine.recall("run")] == [
            "2024-05-01T12:00:00.000Z"]
        assert [r.payload for r in await engine.recall("run")] == [
            {"role": "user", "content": "hi"}]
        _, error = await call(tools, "conversation_append", {
            "session_id": "run", "role": "user", "content": "hi",
            "created_at": "2024-05-01T14:00:00"})
        assert error is not None and "\n" not in error and "has no UTC offset" in error
        assert len(await engine.recall("run")) == 1
