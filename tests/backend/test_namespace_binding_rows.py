"""The tests of tests/test_namespace_binding.py that read or stage the memory's tables directly
(where each row landed)."""

from __future__ import annotations

import json

import pytest

from core import Engine
from core.errors import InvalidInput, OutOfNamespace
from tests.conftest import DETERMINISTIC, rows


async def test_a_bound_append_or_scratchpad_write_never_lands_in_another_namespace(
        memory: str) -> None:
    async with Engine.open(memory, config=DETERMINISTIC) as engine:
        await engine.append("chat", {"role": "user", "content": "bob's words"}, namespace="bob")
        await engine.write_scratchpad("chat", ["bob's plan"], namespace="bob")
        with pytest.raises(OutOfNamespace) as refused:
            await engine.append("chat", {"role": "user", "content": "alice"}, namespace="alice")
        assert "bob" not in str(refused.value).replace("'chat'", "")
        with pytest.raises(OutOfNamespace):
            await engine.store("chat", 9, {"role": "user", "content": "alice"},
                               namespace="alice")
        with pytest.raises(OutOfNamespace):
            await engine.write_scratchpad("chat", ["alice's plan"], namespace="alice")
        for call in (engine.read_scratchpad("chat", namespace="alice"),
                     engine.clear_scratchpad("chat", namespace="alice"),
                     engine.get_context("chat", "words", namespace="alice")):
            with pytest.raises(OutOfNamespace):
                await call
        # A new session is made in the namespace that names it.
        stored = await engine.append("mine", {"role": "user", "content": "hi"},
                                     namespace="alice")
        assert stored.sequence == 1
        await engine.write_scratchpad("pad-only", ["x"], namespace="alice")
        # Unbound calls keep working as before.
        assert (await engine.read_scratchpad("chat")).items == ["bob's plan"]

    assert rows(memory, "SELECT session_id, agent_identity FROM sessions ORDER BY 1") == [
        ("chat", "bob"), ("mine", "alice"), ("pad-only", "alice")]
    assert rows(memory, "SELECT count(*) FROM conversation_events WHERE session_id = 'chat'"
                ) == [(1,)]


async def test_memory_save_and_search_one_hit_per_note_with_tags(memory: str) -> None:
    async with Engine.open(memory, config=DETERMINISTIC) as engine:
        long_text = " ".join(f"Paragraph {n} about the quarterly deploy plan." for n in range(60))
        big = await engine.notes.memory_save(long_text, tags=["Plan", "plan", " ops "],
                                       namespace="alice")
        small = await engine.notes.memory_save("The deploy window is Friday.", namespace="alice")
        await engine.notes.memory_save("The deploy window is Friday.", namespace="bob")
        await engine.drain()

        assert big.name == f"Paragraph 0 about the quarterly deploy ({big.note_id[5:13]})"
        assert big.tags == ["plan", "ops"] and big.source == "memory_save"
        assert sum(json.loads(meta or "{}").get("note_id") == big.note_id for (meta,) in
                   rows(memory, "SELECT metadata_json FROM chunks")) > 1

        hits = await engine.notes.memory_search("deploy", namespace="alice", top_k=10)
        assert sorted(hit.note_id for hit in hits) == sorted([big.note_id, small.note_id])
        tagged = await engine.notes.memory_search("deploy", tags=["ops"], namespace="alice")
        assert [hit.note_id for hit in tagged] == [big.note_id]
        assert tagged[0].tags == ["plan", "ops"] and tagged[0].content == long_text
        assert len(await engine.notes.memory_search("deploy", namespace="alice", top_k=1)) == 1
        with pytest.raises(InvalidInput, match="top_k"):
            await engine.notes.memory_search("deploy", namespace="alice", top_k=0)
        # The search is logged under the caller it names.
        await engine.notes.memory_search("window", namespace="alice", caller="agent")
    async with Engine.open(memory, config=DETERMINISTIC) as engine:
        logged = await engine.retrieval_log(5, caller="agent")
        assert [entry["query"] for entry in logged] == ["window"]


async def test_text_the_driver_cannot_bind_is_refused_by_every_read_and_write(
        memory: str) -> None:
    async with Engine.open(memory, config=DETERMINISTIC) as engine:
        await engine.append("chat", {"role": "user", "content": "hello"})
        for call in (engine.session_state("\ud800chat"), engine.summary_state("\ud800chat"),
                     engine.list_archives("\ud800chat"), engine.list_sessions("\ud800a"),
                     engine.schedules.search_schedules("\ud800u"),
                     engine.write_scratchpad("\ud800chat", ["x"])):
            with pytest.raises(InvalidInput, match="not valid UTF-8"):
                await call
    assert rows(memory, "SELECT session_id FROM sessions") == [("chat",)]
