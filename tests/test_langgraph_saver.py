"""WorkbenchSaver on a SQLite file: LangGraph's own conformance suite, messages becoming the
thread's events, removal marks, and the sync methods."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage, ToolMessage
from langgraph.checkpoint.conformance.capabilities import BASE_CAPABILITIES, EXTENDED_CAPABILITIES
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.graph.message import REMOVE_ALL_MESSAGES

from core import Engine
from core.errors import InvalidInput, OutOfNamespace
from core.integrations.background import open_engine_in_background
from core.integrations.langgraph import WorkbenchSaver
from core.integrations.langgraph.messages import content_text
from tests.langgraph_support import ENGINE_CONFIG, run_conformance


async def test_the_saver_passes_langgraphs_conformance_suite_on_sqlite(tmp_path: Path) -> None:
    report = await run_conformance(str(tmp_path / "memory.db"), "WorkbenchSaver (SQLite)")
    assert report.passed_all_base()
    for capability in BASE_CAPABILITIES | EXTENDED_CAPABILITIES:
        result = report.results[capability.value]
        assert result.detected and result.passed, (capability.value, result.failures)


# -- a real graph: its conversation as the thread's session ------------------------------

def chat_graph(saver: Any) -> Any:
    """A graph whose one node answers the last message (tool call and all) and drops
    the message a user's ``forget:<id>`` names."""

    def answer(state: MessagesState) -> dict[str, list[Any]]:
        last = state["messages"][-1]
        text = content_text(last.content)
        if text.startswith("forget:"):
            return {"messages": [RemoveMessage(id=text.split(":", 1)[1])]}
        if text == "forget everything":
            return {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES),
                                 AIMessage("fresh start", id="fresh")]}
        return {"messages": [
            AIMessage([{"type": "text", "text": f"about {text}"}, {"type": "text", "text": "ok"}],
                      id=f"ai-{text}", tool_calls=[{"name": "lookup", "args": {"q": text},
                                                    "id": f"call-{text}"}]),
            ToolMessage(f"found {text}", tool_call_id=f"call-{text}", name="lookup",
                        id=f"tool-{text}")]}

    builder = StateGraph(MessagesState)
    builder.add_node("answer", answer)
    builder.add_edge(START, "answer")
    return builder.compile(checkpointer=saver)


async def test_a_graphs_messages_become_its_threads_events_once_each(tmp_path: Path) -> None:
    async with Engine.open(tmp_path / "memory.db", config=ENGINE_CONFIG) as engine:
        graph = chat_graph(WorkbenchSaver(engine))
        thread = {"configurable": {"thread_id": "t-1"}}
        await graph.ainvoke({"messages": [HumanMessage("Lisbon", id="u-1")]}, thread)
        await graph.ainvoke({"messages": [HumanMessage("Porto", id="u-2")]}, thread)
        records = await engine.recall("t-1")
        assert [(r.payload["role"], r.payload["content"]) for r in records] == [
            ("user", "Lisbon"), ("assistant", "about Lisbon\nok"), ("tool", "found Lisbon"),
            ("user", "Porto"), ("assistant", "about Porto\nok"), ("tool", "found Porto")]
        assistant, tool = records[1].payload, records[2].payload
        assert assistant["tool_calls"] == [{"id": "call-Lisbon", "type": "function", "function": {
            "name": "lookup", "arguments": '{"q": "Lisbon"}'}}]
        assert (tool["tool_call_id"], tool["tool_name"]) == ("call-Lisbon", "lookup")
        assert assistant["metadata"] == {"langgraph_id": "ai-Lisbon", "langgraph_type": "ai"}
        assert (await engine.list_sessions())[0].agent_identity == "default"
        found = await engine.hybrid_query(session_id="t-1", query="Porto")
        assert found and "Porto" in found[0].text


async def test_a_removed_message_is_marked_and_its_event_kept(tmp_path: Path) -> None:
    async with Engine.open(tmp_path / "memory.db", config=ENGINE_CONFIG) as engine:
        graph = chat_graph(WorkbenchSaver(engine))
        thread = {"configurable": {"thread_id": "t-2"}}
        await graph.ainvoke({"messages": [HumanMessage("Lisbon", id="u-1")]}, thread)
        await graph.ainvoke({"messages": [HumanMessage("forget:tool-Lisbon", id="u-2")]},
                            thread)
        state = await graph.aget_state(thread)
        assert "tool-Lisbon" not in [m.id for m in state.values["messages"]]
        assert len(await engine.recall("t-2")) == 4
        assert await engine.backend.removed_sequences("t-2") == [3]
        # The context replayed for the thread is the graph's: the removed message is not in.
        restored = await engine.restore("t-2", 100_000)
        assert restored.sequences == [1, 2, 4]
        assert len(restored.messages) == len(state.values["messages"])
        await graph.ainvoke({"messages": [HumanMessage("forget everything", id="u-3")]},
                            thread)
        records = await engine.recall("t-2")
        assert [r.payload["content"] for r in records][-2:] == ["forget everything",
                                                                "fresh start"]
        # REMOVE_ALL took every message before the fresh answer, the asking one too.
        assert await engine.backend.removed_sequences("t-2") == [1, 2, 3, 4, 5]


async def test_sync_calls_run_on_the_engines_loop_and_are_refused_on_it(
        tmp_path: Path) -> None:
    async with Engine.open(tmp_path / "memory.db", config=ENGINE_CONFIG) as engine:
        saver = WorkbenchSaver(engine)
        graph = chat_graph(saver)
        thread = {"configurable": {"thread_id": "t-3"}}
        await asyncio.to_thread(graph.invoke, {"messages": [HumanMessage("Faro", id="u-1")]},
                                thread)
        assert [r.payload["content"] for r in await engine.recall("t-3")] == [
            "Faro", "about Faro\nok", "found Faro"]
        listed = await asyncio.to_thread(lambda: list(saver.list(thread)))
        assert len(listed) == 3  # input, loop step 0, loop step 1
        with pytest.raises(asyncio.InvalidStateError, match="event loop thread"):
            saver.get_tuple(thread)


async def test_another_namespaces_thread_is_refused(tmp_path: Path) -> None:
    async with Engine.open(tmp_path / "memory.db", config=ENGINE_CONFIG) as engine:
        await engine.append("theirs", {"role": "user", "content": "hi"}, namespace="other")
        graph = chat_graph(WorkbenchSaver(engine))
        with pytest.raises(OutOfNamespace):
            await graph.ainvoke({"messages": [HumanMessage("x", id="u")]},
                                {"configurable": {"thread_id": "theirs"}})
        assert len(await engine.recall("theirs")) == 1
        assert await WorkbenchSaver(engine).aget_tuple(
            {"configurable": {"thread_id": "theirs"}}) is None


def test_a_program_without_an_event_loop_runs_a_graph_on_a_background_engine(
        tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="needs the event loop the engine runs on"):
        WorkbenchSaver(object())  # type: ignore[arg-type]  # refused before the engine is read
    with open_engine_in_background(tmp_path / "memory.db", ENGINE_CONFIG) as opened:
        graph = chat_graph(WorkbenchSaver(opened.engine, loop=opened.loop))
        graph.invoke({"messages": [HumanMessage("Faro", id="u-1")]},
                     {"configurable": {"thread_id": "sync"}})
        records = opened.run(opened.engine.recall("sync"))
    assert [r.payload["content"] for r in records] == ["Faro", "about Faro\nok", "found Faro"]
    assert opened.loop.is_closed()


async def test_a_graphs_conversation_is_summarized_as_it_grows(tmp_path: Path) -> None:
    from tests.test_summaries import config

    async with Engine.open(tmp_path / "memory.db",
                           config=config(auto=True, token_budget=300)) as engine:
        graph = chat_graph(WorkbenchSaver(engine))
        thread = {"configurable": {"thread_id": "long"}}
        for turn in range(6):
            words = f"order {turn} ships to Lisbon in May, as we said before " * 4
            await graph.ainvoke({"messages": [HumanMessage(words, id=f"u-{turn}")]}, thread)
        await engine.drain()
        state = await engine.summary_state("long")
        assert state.text and state.upper_sequence >= 4
