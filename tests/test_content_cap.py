"""A message or a note larger than ``storage.max_content_kb`` is refused in one line that gives
its size and the limit, before either backend writes anything; importers skip such rows
with that reason."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core import Engine
from core.config import load_config
from core.errors import InvalidInput
from core.importers import import_file
from tests.conftest import DETERMINISTIC

CONFIG = {**DETERMINISTIC, "summary": {"auto": False}, "consolidation": {"enabled": False},
          "storage": {"max_content_kb": 1}}


@pytest.fixture
async def engine(memory: str):
    async with Engine.open(memory, config=CONFIG) as opened:
        yield opened


def assert_one_line_with_size_and_limit(error: InvalidInput, size: str) -> None:
    message = str(error)
    assert "\n" not in message
    assert size in message and "1 KB" in message and "storage.max_content_kb" in message


def test_the_default_limit_is_256_kb() -> None:
    assert load_config({}).storage.max_content_kb == 256


async def test_a_message_over_the_limit_is_refused_and_nothing_is_written(
        engine: Engine) -> None:
    await engine.append("s", {"role": "user", "content": "small"})
    with pytest.raises(InvalidInput) as refused:
        await engine.append("s", {"role": "user", "content": "x" * 2000})
    assert_one_line_with_size_and_limit(refused.value, "bytes")
    assert "message" in str(refused.value)
    # Bytes of UTF-8, not characters: 600 two-byte characters are over 1 KB.
    with pytest.raises(InvalidInput, match=r"message is 1,2\d\d bytes"):
        await engine.store("s", 5, {"role": "user", "content": "é" * 600})
    # Tool-call arguments and metadata count too: what is stored is bounded, not one field.
    with pytest.raises(InvalidInput):
        await engine.append("s", {"role": "user", "content": "hi",
                                  "metadata": {"blob": "y" * 2000}})
    assert [r.payload["content"] for r in await engine.recall("s")] == ["small"]
    await engine.append("s", {"role": "user", "content": "z" * 900})  # under the limit


async def test_the_bulk_path_refuses_it_too(engine: Engine) -> None:
    result = await engine.store_many([("s", 1, {"role": "user", "content": "fine"}),
                                      ("s", 2, {"role": "user", "content": "x" * 5000})])
    (rejected,) = result.rejected
    assert rejected.sequence == 2 and "storage.max_content_kb" in rejected.reason
    assert [r.sequence for r in await engine.recall("s")] == [1]


async def test_a_note_over_the_limit_is_refused_by_every_way_in(engine: Engine) -> None:
    big = "word " * 400
    note = await engine.add_note("n", "small")
    for attempt in (lambda: engine.add_note("m", big),
                    lambda: engine.write_note(note.note_id, big),
                    lambda: engine.edit_note(note.note_id, content=big),
                    lambda: engine.notes.save_memory("k", big),
                    lambda: engine.notes.save_memory("n", big),
                    lambda: engine.notes.memory_save(big)):
        with pytest.raises(InvalidInput) as refused:
            await attempt()
        assert_one_line_with_size_and_limit(refused.value, "2,000 bytes")
        assert "note content" in str(refused.value)
    assert (await engine.get_note("n")).content == "small"
    assert await engine.notes.list_memories() == ["n"]


async def test_importers_skip_rows_over_the_limit_with_the_reason(
        engine: Engine, tmp_path: Path) -> None:
    source = tmp_path / "chats.jsonl"
    source.write_text("\n".join(json.dumps(line) for line in [
        {"session_id": "s", "role": "user", "content": "fine"},
        {"session_id": "s", "role": "user", "content": "x" * 3000}]) + "\n")
    report = await import_file("jsonl", engine, source)
    counts = report.counts["messages"]
    assert (counts.added, counts.skipped) == (1, 1)
    (skip,) = report.skipped
    assert "storage.max_content_kb" in skip.reason and "line 2" in skip.where
    assert any("storage.max_content_kb" in line for line in report.lines())


async def test_a_query_and_a_fact_value_have_the_same_limit(engine: Engine) -> None:
    await engine.append("s", {"role": "user", "content": "small"})
    with pytest.raises(InvalidInput) as refused:
        await engine.hybrid_query(session_id="s", query="word " * 400)
    assert_one_line_with_size_and_limit(refused.value, "2,000 bytes")
    with pytest.raises(InvalidInput) as refused:
        await engine.get_context("s", "word " * 400)
    with pytest.raises(InvalidInput) as refused:
        await engine.upsert_fact("user", "bio", "word " * 400)
    assert_one_line_with_size_and_limit(refused.value, "2,000 bytes")
    assert await engine.list_facts() == []


async def test_a_session_id_is_an_identifier_of_bounded_length(engine: Engine) -> None:
    from core.inputs import MAX_SESSION_ID_CHARS

    with pytest.raises(InvalidInput, match=f"the limit is {MAX_SESSION_ID_CHARS}"):
        await engine.append("s" * (MAX_SESSION_ID_CHARS + 1), {"role": "user", "content": "x"})
    long_enough = "s" * MAX_SESSION_ID_CHARS
    await engine.append(long_enough, {"role": "user", "content": "x"})
    assert [s.session_id for s in await engine.list_sessions()] == [long_enough]
