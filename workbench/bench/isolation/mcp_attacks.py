"""Attacks through the MCP server: one real ``workbench mcp`` subprocess over stdio.

The server is bound to :data:`MCP_NAMESPACE`, ``VicN%``: the victim's name in other letter
case with a LIKE wildcard, so a comparison that ignored case or treated the namespace as a
pattern would reach the victim (its memory session ``memory:VicN%`` is such a pattern for
``memory:vicns`` too). No tool takes a namespace; the attacks are the arguments: the victim's
session ids and crafted ones, FTS syntax, JSON-path tags, the victim's note ids and keys,
schedule ids and names. One subprocess serves every case.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from workbench.bench.isolation.inputs import (
    crafted_note_refs,
    crafted_schedule_refs,
    crafted_sessions,
    crafted_tags,
    fts_queries,
)
from workbench.bench.isolation.probe import Probe
from workbench.bench.isolation.victim import (
    ATTACKER_MARK,
    BAIT,
    VICTIM,
    VICTIM_CHAT,
    VICTIM_MEMORY_KEY,
    VICTIM_NOTE_ALIAS,
    VICTIM_NOTE_NAME,
    VICTIM_OLD,
    VICTIM_SCHEDULE_NAME,
    VICTIM_TAG,
    Planted,
)

ENTRY = "MCP server"
MCP_NAMESPACE = "VicN%"
OWN_SESSION = "vicn-own"


def _sendable(value: Any) -> bool:
    """Whether JSON-RPC can carry a value: text must be valid UTF-8 (no lone surrogates)."""
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


class Agent:
    """An MCP client session whose every tool call is a case."""

    def __init__(self, session: Any, probe: Probe) -> None:
        self._session = session
        self._probe = probe
        self.given: list[Any] = [MCP_NAMESPACE]  # every input sent, for the server's stderr

    async def call(self, tool: str, *, writes: bool = False, **arguments: Any) -> str:
        given = [MCP_NAMESPACE, *arguments.values()]
        if not _sendable(arguments):
            return ""
        self.given += arguments.values()
        result = await self._session.call_tool(tool, arguments)
        text = "".join(getattr(part, "text", "") for part in result.content)
        if result.is_error and "internal error" in text:
            self._probe.crash(ENTRY, tool, given, text)
        self._probe.check(ENTRY, tool, given, text)
        if writes:
            self._probe.unchanged(ENTRY, tool, given)
        return text


async def attack_mcp(db_path: str | Path, config_path: Path, planted: Planted, probe: Probe,
                     workdir: Path) -> None:
    """Start one server and run every MCP attack through it; its stderr is checked last."""
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    root = Path(__file__).resolve().parents[3]
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "workbench.cli", "mcp", "--db", str(db_path), "--namespace", MCP_NAMESPACE],
        env={"WORKBENCH_CONFIG": str(config_path), "PYTHONPATH": str(root)}, cwd=workdir)
    stderr_path = workdir / "mcp-stderr.txt"
    with stderr_path.open("w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), \
                ClientSession(read, write) as session:
            await session.initialize()
            agent = Agent(session, probe)
            await _attacks(agent, planted)
    # What the server logged may quote what it was sent, never anything else of the victim's.
    probe.check(ENTRY, "(server stderr)", agent.given, stderr_path.read_text())


async def _attacks(agent: Agent, planted: Planted) -> None:
    await agent.call("conversation_append", writes=True, session_id=OWN_SESSION, role="user",
                     content=f"{ATTACKER_MARK} {BAIT} lantern")
    await agent.call("memory_save", writes=True, content=f"{ATTACKER_MARK} {BAIT} note",
                     tags=["shared"])
    exact = [VICTIM_CHAT, VICTIM_OLD, "memory:" + VICTIM]
    for sid in [*exact, *crafted_sessions(VICTIM_CHAT, VICTIM)]:
        await agent.call("scratchpad_read", session_id=sid)
        await agent.call("conversation_get_context", session_id=sid, query=BAIT)
        await agent.call("scratchpad_write", writes=True, session_id=sid, items=[ATTACKER_MARK])
        await agent.call("scratchpad_clear", writes=True, session_id=sid)
        await agent.call("conversation_append", writes=True, session_id=sid, role="user",
                         content=f"{ATTACKER_MARK} {BAIT}")
    for query in fts_queries(VICTIM_CHAT, VICTIM, BAIT):
        await agent.call("recall_memories", query=query)
        await agent.call("memory_search", query=query)
    for tags in crafted_tags(VICTIM_TAG):
        await agent.call("memory_search", query=BAIT, tags=tags)
        await agent.call("memory_save", writes=True, content=f"{ATTACKER_MARK} tagged",
                         tags=tags)
    for category in (None, "core", "daily", "conversation"):
        listing: dict[str, Any] = {} if category is None else {"category": category}
        await agent.call("list_memories", **listing)
    for status in (None, "active", "paused", "completed"):
        listed: dict[str, Any] = {} if status is None else {"status": status}
        await agent.call("schedule_list", **listed)
    names = [VICTIM_NOTE_NAME, VICTIM_NOTE_ALIAS, VICTIM_MEMORY_KEY, planted.archive_name]
    for ref in [*planted.note_ids[1:], *crafted_note_refs(planted.note_ids[0], names)]:
        await agent.call("memory_update", writes=True, note_id=ref, content=ATTACKER_MARK)
        await agent.call("memory_delete", writes=True, note_id=ref)
        await agent.call("forget_memory", writes=True, key=ref)
    for ref in crafted_schedule_refs(planted.schedule_id, VICTIM_SCHEDULE_NAME):
        await agent.call("schedule_update", writes=True, schedule=ref, goal=ATTACKER_MARK)
        await agent.call("schedule_update", writes=True, schedule=ref, status="paused")
        await agent.call("schedule_update", writes=True, schedule=ref, cadence_kind="interval",
                         cadence_value="2h")
        await agent.call("schedule_delete", writes=True, schedule=ref)
    # Last, as it leaves notes named like the victim's in the server's own namespace.
    for key in (VICTIM_MEMORY_KEY, VICTIM_NOTE_NAME, VICTIM_NOTE_ALIAS):
        await agent.call("save_memory", writes=True, key=key, content=ATTACKER_MARK)
