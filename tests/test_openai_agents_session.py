"""WorkbenchSession on a SQLite file: parity with the SDK's own SQLiteSession on generated
operation sequences (byte-identical JSON), items as the session's events shown as a
conversation, removal marks, refusals that store nothing, and namespaces."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from agents.memory import SessionABC, SessionSettings, SQLiteSession

from core import Engine
from core.errors import InvalidInput, OutOfNamespace
from core.integrations.openai_agents import WorkbenchSession
from tests.agents_support import ENGINE_CONFIG, dumped, run_parity
from workbench.app.widgets.timeline import EventView, foldable, render_event
from workbench.text import tool_names

CONVERSATION: list[Any] = [
    {"role": "system", "content": "be brief"},
    {"role": "user", "content": [{"type": "input_text", "text": "weather in Paris?"}]},
    {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text",
                                                      "text": "need the weather tool"}]},
    {"type": "function_call", "call_id": "call_1", "name": "get_weather",
     "arguments": "{\"city\": \"Paris\"}", "id": "fc_1", "status": "completed"},
    {"type": "function_call_output", "call_id": "call_1", "output": "18°C, sunny"},
    {"id": "msg_1", "type": "message", "role": "assistant", "status": "completed",
     "content": [{"type": "output_text", "text": "It is 18°C and sunny.", "annotations": []}]},
    {"type": "web_search_call", "id": "ws_1", "status": "completed",
     "action": {"type": "search", "query": "paris events"}},
]


@pytest.mark.parametrize("seed", [11, 23, 47])
async def test_parity_with_the_sdks_sqlite_session_on_generated_operations(
        tmp_path: Path, seed: int) -> None:
    async with Engine.open(tmp_path / "memory.db", config=ENGINE_CONFIG) as engine:
        reference = {sid: SQLiteSession(sid, tmp_path / "sdk.db") for sid in ("chat-a", "b")}
        ours = {sid: WorkbenchSession(sid, engine) for sid in reference}
        counts = await run_parity(reference, ours, seed, 2000)
        print(seed, counts)
        assert min(counts.values()) > 0
        # And read by a session made afresh (nothing held in the object).
        for sid in reference:
            again = await WorkbenchSession(sid, engine).get_items()
            assert dumped(again) == dumped(await reference[sid].get_items())


async def test_items_become_the_sessions_events_as_a_conversation(tmp_path: Path) -> None:
    async with Engine.open(tmp_path / "memory.db", config=ENGINE_CONFIG) as engine:
        session = WorkbenchSession("trip", engine)
        assert isinstance(session, SessionABC)
        await session.add_items(CONVERSATION[:3])
        await session.add_items(CONVERSATION[3:])
        assert dumped(await session.get_items()) == dumped(CONVERSATION)
        records = await engine.recall("trip")
        payloads = [record.payload for record in records]
        assert [p["role"] for p in payloads] == ["system", "user", "assistant", "assistant",
                                                 "tool", "assistant", "assistant"]
        assert payloads[1]["content"] == "weather in Paris?"
        assert payloads[2]["content"] == "need the weather tool"
        assert payloads[2]["metadata"]["kind"] == "reasoning"
        assert payloads[3]["tool_calls"] == [{"id": "call_1", "type": "function", "function": {
            "name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]
        assert payloads[4]["tool_call_id"] == "call_1"
        assert payloads[4]["content"] == "18°C, sunny"
        assert payloads[5]["content"] == "It is 18°C and sunny."
        assert "paris events" in payloads[6]["content"]
        # The pane folds the call and names the tool on its output, as for our tool calls.
        names = tool_names(records)
        assert names == {"call_1": "get_weather"}
        assert foldable(records[3]) and foldable(records[4])
        shown = render_event(EventView(records[4], tool_name=names["call_1"])).plain
        assert "← get_weather: 18°C, sunny" in shown
        await engine.drain()
        hits = await engine.hybrid_query(session_id="trip", query="sunny", top_k=3)
        assert hits and "sunny" in hits[0].text


async def test_pop_item_and_clear_session_keep_the_events_marked_removed(
        tmp_path: Path) -> None:
    async with Engine.open(tmp_path / "memory.db", config=ENGINE_CONFIG) as engine:
        session = WorkbenchSession("s", engine)
        assert await session.pop_item() is None
        await session.add_items(CONVERSATION)
        popped = await session.pop_item()
        assert dumped(popped) == dumped(CONVERSATION[-1])
        assert dumped(await session.get_items()) == dumped(CONVERSATION[:-1])
        assert len(await engine.recall("s")) == len(CONVERSATION)
        assert await engine.backend.removed_sequences("s") == [len(CONVERSATION)]
        restored = await engine.restore("s", 100_000)  # the context replayed: as the SDK's
        assert restored.sequences == list(range(1, len(CONVERSATION)))
        await session.clear_session()
        assert (await engine.restore("s", 100_000)).messages == []
        assert await session.get_items() == []
        assert await session.pop_item() is None
        assert await engine.backend.removed_sequences("s") == list(
            range(1, len(CONVERSATION) + 1))
        await session.add_items([{"role": "user", "content": "again"}])
        assert await session.get_items() == [{"role": "user", "content": "again"}]
        await session.forget()
        assert await engine.recall("s") == []


async def test_a_refused_add_items_stores_nothing(tmp_path: Path) -> None:
    async with Engine.open(tmp_path / "memory.db", config=ENGINE_CONFIG) as engine:
        session = WorkbenchSession("s", engine)
        await session.add_items([{"role": "user", "content": "kept"}])
        bad: list[Any] = [[{"role": "user", "content": "first"}, {"role": "user", "x": object()}],
                          [{"role": "user", "content": "first"}, "not a dict"],
                          [{"role": "user", "content": "x" * 10_000_000}]]
        for items in bad:
            with pytest.raises(InvalidInput) as refused:
                await session.add_items(items)
            message = str(refused.value)
            assert "\n" not in message and "nothing was stored" in message
            assert len(message) < 300
        assert await session.get_items() == [{"role": "user", "content": "kept"}]
        assert len(await engine.recall("s")) == 1


async def test_another_namespaces_session_is_refused_and_reads_empty(tmp_path: Path) -> None:
    async with Engine.open(tmp_path / "memory.db", config=ENGINE_CONFIG) as engine:
        mine = WorkbenchSession("shared-id", engine, namespace="alice")
        await mine.add_items([{"role": "user", "content": "alice's"}])
        theirs = WorkbenchSession("shared-id", engine, namespace="bob")
        with pytest.raises(OutOfNamespace):
            await theirs.add_items([{"role": "user", "content": "bob's"}])
        assert await theirs.get_items() == []
        assert await theirs.pop_item() is None
        await theirs.clear_session()
        with pytest.raises(OutOfNamespace):
            await theirs.forget()
        assert await mine.get_items() == [{"role": "user", "content": "alice's"}]


async def test_settings_limit_and_the_compaction_replacement(tmp_path: Path) -> None:
    async with Engine.open(tmp_path / "memory.db", config=ENGINE_CONFIG) as engine:
        session = WorkbenchSession("s", engine, session_settings=SessionSettings(limit=2))
        await session.add_items(CONVERSATION)
        assert dumped(await session.get_items()) == dumped(CONVERSATION[-2:])
        assert len(await session.get_items(limit=5)) == 5
        compacted: list[Any] = [{"type": "compaction", "id": "cmp_1",
                                  "encrypted_content": "opaque"}]
        refused: list[Any] = [{"bad": object()}]
        with pytest.raises(InvalidInput):  # the history stays whole
            await session._atomic_replace_items(refused)
        assert len(await session.get_items(limit=100)) == len(CONVERSATION)
        assert await session._atomic_replace_items(compacted) is True
        assert await session.get_items(limit=100) == compacted
        assert len(await engine.recall("s")) == len(CONVERSATION) + 1

