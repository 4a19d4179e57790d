"""`workbench mcp` driven by the `mcp` client over a real stdio subprocess.

One server process per test: the tool listing, every tool, bad arguments, and the namespace
binding, with a second connection (an Engine in this process) reading and writing the same
file while the server runs.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from core import Engine
from tests.conftest import DETERMINISTIC

pytest.importorskip("mcp")
from mcp.client.session import ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402

TOOL_NAMES = {
    "save_memory", "recall_memories", "forget_memory", "list_memories",
    "memory_save", "memory_search", "memory_update", "memory_delete",
    "scratchpad_read", "scratchpad_write", "scratchpad_clear",
    "conversation_append", "conversation_get_context",
    "schedule_create", "schedule_list", "schedule_update", "schedule_delete",
}
ROOT = Path(__file__).resolve().parents[1]


class Agent:
    """An MCP client session with a helper that unwraps a tool's answer."""

    def __init__(self, session: ClientSession) -> None:
        self.session = session

    async def ok(self, tool: str, **arguments: Any) -> dict[str, Any]:
        result = await self.session.call_tool(tool, arguments)
        assert not result.is_error, result.content[0].text
        assert result.structured_content == json.loads(result.content[0].text)
        return result.structured_content

    async def refused(self, tool: str, **arguments: Any) -> str:
        result = await self.session.call_tool(tool, arguments)
        assert result.is_error, f"{tool} was expected to fail: {result.content[0].text}"
        (content,) = result.content
        assert "\n" not in content.text and "Traceback" not in content.text
        return content.text


@asynccontextmanager
async def mcp_agent(db: Path, namespace: str, tmp_path: Path) -> AsyncIterator[Agent]:
    config = tmp_path / "mcp.toml"
    config.write_text('[embedding]\nbackend = "deterministic"\nfallback_dimensions = 64\n')
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "workbench.cli", "mcp", "--db", str(db), "--namespace", namespace],
        env={"WORKBENCH_CONFIG": str(config), "PYTHONPATH": str(ROOT)}, cwd=tmp_path)
    with (tmp_path / "server-stderr.txt").open("w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), \
                ClientSession(read, write) as session:
            await session.initialize()
            yield Agent(session)


async def test_the_tools_are_listed_with_descriptions_and_strict_schemas(
        tmp_path: Path) -> None:
    async with mcp_agent(tmp_path / "memory.db", "alice", tmp_path) as agent:
        listed = (await agent.session.list_tools()).tools
    assert {tool.name for tool in listed} == TOOL_NAMES
    for tool in listed:
        assert tool.description and len(tool.description) > 20
        schema = tool.input_schema
        assert schema["type"] == "object" and schema["additionalProperties"] is False
        assert "namespace" not in schema["properties"], tool.name
    save = next(tool for tool in listed if tool.name == "save_memory").input_schema
    assert set(save["required"]) == {"key", "content"}
    assert save["properties"]["category"]["anyOf"][0]["enum"] == ["core", "daily",
                                                                  "conversation"]


async def test_an_agent_saves_and_recalls_while_a_second_connection_reads(
        tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    async with mcp_agent(db, "alice", tmp_path) as agent:
        saved = await agent.ok("save_memory", key="favourite colour",
                               content="The user's favourite colour is teal.")
        assert saved["category"] == "core"
        await agent.ok("save_memory", key="deadline", content="The report is due on Friday.",
                       category="daily")
        recalled = await agent.ok("recall_memories", query="colour")
        assert [m["key"] for m in recalled["memories"]] == ["favourite colour"]

        # The developer's connection sees what the agent saved, while the server runs...
        async with Engine.open(db, config=DETERMINISTIC) as watcher:
            assert await watcher.notes.list_memories(namespace="alice") == ["deadline",
                                                                            "favourite colour"]
            note = await watcher.get_note("favourite colour", namespace="alice")
            assert note.content == "The user's favourite colour is teal."
            # ...and the agent sees what the developer writes.
            await watcher.notes.save_memory("timezone", "The user lives in Lisbon (WET).",
                                            namespace="alice")

        found = await agent.ok("recall_memories", query="Lisbon")
        assert [m["key"] for m in found["memories"]] == ["timezone"]
        # A substring no word matches falls back to LIKE (pynchy's second tier).
        partial = await agent.ok("recall_memories", query="isbo")
        assert partial["memories"][0]["matched_by"] == "like"
        keys = await agent.ok("list_memories")
        assert keys["keys"] == ["deadline", "favourite colour", "timezone"]
        assert (await agent.ok("list_memories", category="daily"))["keys"] == ["deadline"]
        assert (await agent.ok("forget_memory", key="deadline"))["forgotten"] is True
        assert (await agent.ok("forget_memory", key="deadline"))["forgotten"] is False

    async with Engine.open(db, config=DETERMINISTIC) as after:
        assert await after.notes.list_memories(namespace="alice") == ["favourite colour",
                                                                      "timezone"]
        # Every search the server ran is in the log, marked as the agent's (the log is
        # written behind the caller, so it is read once the server has closed).
        logged = await after.retrieval_log(10, caller="agent")
        assert [entry["query"] for entry in logged] == ["isbo", "Lisbon", "colour"]


async def test_notes_scratchpad_conversation_and_schedules(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    async with mcp_agent(db, "alice", tmp_path) as agent:
        note = await agent.ok("memory_save", content="Deploys run on Fridays after standup.",
                              tags=["Ops", "deploy", "ops"])
        assert note["note_id"].startswith("note-") and note["tags"] == ["ops", "deploy"]
        await agent.ok("memory_save", content="Fridays the office closes early.")
        tagged = await agent.ok("memory_search", query="Fridays", tags=["ops"])
        assert [hit["note_id"] for hit in tagged["results"]] == [note["note_id"]]
        both = await agent.ok("memory_search", query="Fridays")
        assert len(both["results"]) == 2
        updated = await agent.ok("memory_update", note_id=note["note_id"],
                                 content="Deploys run on Thursdays now.")
        assert updated["note_id"] == note["note_id"] and updated["tags"] == ["ops", "deploy"]
        moved = await agent.ok("memory_search", query="Thursdays", tags=["deploy"])
        assert moved["results"][0]["content"] == "Deploys run on Thursdays now."
        assert (await agent.ok("memory_delete", note_id=note["note_id"]))["deleted"] is True
        assert (await agent.ok("memory_search", query="Thursdays", tags=["deploy"])) == {
            "results": []}

        assert (await agent.ok("scratchpad_read", session_id="run-1"))["items"] == []
        await agent.ok("scratchpad_write", session_id="run-1", items=["goal: ship", "step 1"])
        assert (await agent.ok("scratchpad_read", session_id="run-1"))["items"] == [
            "goal: ship", "step 1"]
        too_many = await agent.refused("scratchpad_write", session_id="run-1",
                                       items=["x"] * 33)
        assert "at most 32 items" in too_many
        assert (await agent.ok("scratchpad_clear", session_id="run-1"))["cleared"] is True

        first = await agent.ok("conversation_append", session_id="run-1", role="user",
                               content="I moved to Lisbon last spring.")
        second = await agent.ok("conversation_append", session_id="run-1", role="assistant",
                                content="Noted.", importance=0.9,
                                metadata={"turn": 2})
        assert (first["sequence"], second["sequence"]) == (1, 2)
        await agent.ok("conversation_append", session_id="run-1", role="assistant",
                       content=None, tool_calls=[{"id": "c1", "type": "function", "function": {
                           "name": "weather", "arguments": "{\"city\": \"Lisbon\"}"}}])
        context = await agent.ok("conversation_get_context", session_id="run-1",
                                 query="where does the user live")
        assert [m["sequence"] for m in context["messages"]] == [1, 2, 3]
        assert "salience" in context["messages"][1]["reasons"]
        assert context["messages"][0]["message"]["content"] == "I moved to Lisbon last spring."

        created = await agent.ok("schedule_create", goal="Send the morning digest",
                                 cadence_kind="cron", cadence_value="0 9 * * mon-fri",
                                 timezone="Europe/Lisbon", name="digest")
        assert created["user_id"] == "alice" and len(created["next_runs"]) == 5
        too_often = await agent.refused("schedule_create", goal="spam", cadence_kind="cron",
                                        cadence_value="* * * * *")
        assert "minimum" in too_often
        bad_zone = await agent.refused("schedule_create", goal="x", cadence_kind="interval",
                                       cadence_value="1h", timezone="Mars/Olympus")
        assert "Mars/Olympus" in bad_zone
        paused = await agent.ok("schedule_update", schedule="digest", status="paused")
        assert paused["status"] == "paused"
        changed = await agent.ok("schedule_update", schedule="digest", cadence_kind="interval",
                                 cadence_value="2h", status="active")
        assert changed["cadence"]["kind"] == "interval" and changed["status"] == "active"
        assert changed["cadence"]["timezone"] == "Europe/Lisbon"
        listed = await agent.ok("schedule_list")
        assert [s["name"] for s in listed["schedules"]] == ["digest"]
        assert (await agent.ok("schedule_delete", schedule="digest"))["deleted"] is True
        assert (await agent.ok("schedule_list"))["total"] == 0

    async with Engine.open(db, config=DETERMINISTIC) as after:
        sessions = {s.session_id: s for s in await after.list_sessions()}
        assert sessions["run-1"].agent_identity == "alice"
        callers = {entry["caller"] for entry in await after.retrieval_log(50)}
        assert callers == {"agent"}


async def test_bad_arguments_come_back_as_one_line_tool_errors(tmp_path: Path) -> None:
    async with mcp_agent(tmp_path / "memory.db", "alice", tmp_path) as agent:
        assert await agent.refused("save_memory", key="k") == (
            "save_memory: 'content' is required")
        unknown = await agent.refused("save_memory", key="k", content="c", namespace="bob")
        assert unknown.startswith("save_memory: unknown argument 'namespace'")
        assert "key, content, category" in unknown
        assert "'limit'" in await agent.refused("recall_memories", query="x", limit=0)
        assert "'limit'" in await agent.refused("recall_memories", query="x", limit="5")
        assert "'category'" in await agent.refused("save_memory", key="k", content="c",
                                                   category="forever")
        assert "'role'" in await agent.refused("conversation_append", session_id="s",
                                               role="narrator", content="x")
        assert "not a note id" in await agent.refused("memory_delete", note_id="colour")
        assert "no note" in (await agent.refused(
            "memory_update", note_id="note-00000000-0000-4000-8000-000000000000",
            content="x")).lower()
        assert "tool_calls" in await agent.refused(
            "conversation_append", session_id="s", role="assistant",
            tool_calls=[{"id": "c1", "type": "function", "function": {"name": 3}}])
        assert "memory:" in await agent.refused("conversation_append",
                                                session_id="memory:alice", role="user",
                                                content="x")
        assert (await agent.refused("no_such_tool")).startswith("unknown tool 'no_such_tool'")
        # The server is still serving after all that.
        assert (await agent.ok("list_memories"))["keys"] == []


async def test_no_argument_reaches_another_namespace(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    async with Engine.open(db, config=DETERMINISTIC) as engine:
        await engine.notes.save_memory("secret", "Bob's launch code is 0000.", namespace="bob")
        bob_note = await engine.notes.memory_save("Bob's private note about launches",
                                                  tags=["launch"], namespace="bob")
        await engine.append("bob-chat", {"role": "user", "content": "launch code 0000"},
                            namespace="bob")
        await engine.write_scratchpad("bob-chat", ["bob's plan"], namespace="bob")
        bob_schedule = await engine.schedules.create_schedule(
            "bob", "launch", {"kind": "interval", "value": "1h", "timezone": "UTC"},
            name="launch")
        await engine.drain()

    async with mcp_agent(db, "alice", tmp_path) as agent:
        assert (await agent.ok("list_memories"))["keys"] == []
        assert (await agent.ok("recall_memories", query="launch code"))["memories"] == []
        assert (await agent.ok("recall_memories", query="0000"))["memories"] == []
        assert (await agent.ok("forget_memory", key="secret"))["forgotten"] is False
        # Saving under the same key makes alice's own memory; bob's is untouched.
        await agent.ok("save_memory", key="secret", content="alice's own secret")
        found = await agent.ok("memory_search", query="Bob's private note about launches")
        assert {hit["name"] for hit in found["results"]} <= {"secret"}
        assert "no note" in (await agent.refused(
            "memory_update", note_id=bob_note.note_id, content="hijacked")).lower()
        assert (await agent.ok("memory_delete", note_id=bob_note.note_id))["deleted"] is False

        for tool, args in [("scratchpad_read", {}), ("scratchpad_clear", {}),
                           ("scratchpad_write", {"items": ["alice was here"]}),
                           ("conversation_get_context", {"query": "launch code"}),
                           ("conversation_append", {"role": "user", "content": "hi bob"})]:
            refusal = await agent.refused(tool, session_id="bob-chat", **args)
            assert "belongs to another namespace" in refusal and "bob" not in refusal.replace(
                "bob-chat", "")

        assert (await agent.ok("schedule_list"))["total"] == 0
        for tool, args in [("schedule_update", {"goal": "hijack"}), ("schedule_delete", {})]:
            for ref in (bob_schedule.schedule_id, "launch"):
                assert "no schedule" in await agent.refused(tool, schedule=ref, **args)

    async with Engine.open(db, config=DETERMINISTIC) as engine:
        assert (await engine.get_note("secret", namespace="bob")).content == (
            "Bob's launch code is 0000.")
        assert (await engine.get_note("secret", namespace="alice")).content == (
            "alice's own secret")
        assert (await engine.get_note(bob_note.note_id, namespace="bob")).content == (
            "Bob's private note about launches")
        assert [r.payload["content"] for r in await engine.recall("bob-chat")] == [
            "launch code 0000"]
        assert (await engine.read_scratchpad("bob-chat")).items == ["bob's plan"]
        schedule = await engine.schedules.get_schedule(bob_schedule.schedule_id)
        assert (schedule.goal, schedule.status) == ("launch", "active")
