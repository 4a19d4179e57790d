"""The two sides of ``workbench bench concurrency``: the agent, calling MCP tools one at a
time, and the developer, doing in the app's engine what a person does in the app. Each
records every operation (its kind, latency, and for writes what it acknowledged) in the
shared :class:`~workbench.bench.concurrency_check.Ledger`.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from workbench.bench.concurrency_check import AGENT, DEVELOPER, Ledger, Write

if TYPE_CHECKING:
    from core.engine import Engine

POLL_SECONDS = 0.5  # the app's default AppSettings.poll_interval
AGENT_SESSIONS = 4
DEVELOPER_SESSIONS = 3
MEMORY_KEYS = 16
CALL_TIMEOUT_S = 60.0
# What an expected refusal says; anything else refused is an error.
OVERFULL = "at most 32 items"
QUERY_WORDS = ("flight", "hotel", "recipe", "deploy", "database", "budget", "birthday",
               "marathon", "invoice", "schema", "garden", "train", "latency", "sleep")
# Operation kinds and their weights per side; writes are the kinds that change the file.
AGENT_MIX = {"conversation_append": 55, "save_memory": 8, "memory_save": 4,
             "memory_update": 8, "scratchpad_write": 8, "scratchpad_overfull": 1,
             "recall_memories": 5, "memory_search": 5, "conversation_get_context": 6}
DEVELOPER_MIX = {"append": 12, "append_agent_session": 3, "write_agent_memory": 8,
                 "edit_agent_note": 6, "add_agent_note": 2, "add_note": 6, "write_note": 6,
                 "edit_note": 4, "remove_note": 3, "add_note_taken": 1,
                 "write_scratchpad": 4, "write_agent_scratchpad": 5, "search": 6,
                 "hybrid_query": 4, "recall": 6, "list_notes": 4, "list_sessions": 2,
                 "read_scratchpad": 2}
READS = {"recall_memories", "memory_search", "conversation_get_context", "search",
         "hybrid_query", "recall", "list_notes", "list_sessions", "read_scratchpad", "pulse"}
REFUSED = {"scratchpad_overfull", "add_note_taken"}  # provoked refusals: they write nothing


def _messages(rng: random.Random) -> Iterator[dict[str, Any]]:
    from workbench.bench import synthetic

    return synthetic.conversation(rng, 10**9)


def _pick(rng: random.Random, mix: dict[str, int], possible: Callable[[str], bool]) -> str:
    kinds = [kind for kind in mix if possible(kind)]
    return rng.choices(kinds, weights=[mix[kind] for kind in kinds])[0]


def _items(rng: random.Random, tag: str, count: int | None = None) -> list[str]:
    count = rng.randint(1, 8) if count is None else count
    steps = ("goal", "done", "pending", "blocked on", "next")
    return [f"{rng.choice(steps)}: {rng.choice(QUERY_WORDS)} {tag}.{i}" for i in range(count)]


def keep_going(ledger: Ledger, ops: int) -> bool:
    return ledger.done[AGENT] < ops or ledger.done[DEVELOPER] < ops


# -- side A: the agent over MCP ------------------------------------------------------------

class AgentSide:
    """The agent: one MCP tool call at a time."""

    def __init__(self, session: Any, ledger: Ledger, seed: int) -> None:
        self.session = session
        self.ledger = ledger
        self.rng = random.Random(seed)
        self.streams = {f"agent-chat-{i}": _messages(random.Random(seed * 100 + i))
                        for i in range(AGENT_SESSIONS)}
        self.live_sessions: set[str] = set()
        self.note_ids: list[str] = []
        self.counter = 0

    async def call(self, kind: str, tool: str, arguments: dict[str, Any],
                   refusal: str | None = None) -> tuple[dict[str, Any], float, float] | None:
        """Call a tool; its answer and window, or None when it failed (an error, or the
        refusal the call was made to provoke)."""
        started = time.perf_counter()
        try:
            result = await self.session.call_tool(tool, arguments,
                                                  read_timeout_seconds=CALL_TIMEOUT_S)
        except Exception as exc:  # a protocol failure, a dead server, a timeout: all errors
            self.ledger.error(AGENT, kind, f"{type(exc).__name__}: {exc}")
            return None
        acked = time.perf_counter()
        self.ledger.timing(AGENT, kind, acked - started)
        text = result.content[0].text if result.content else ""
        if result.is_error:
            if refusal is not None and refusal in text:
                self.ledger.refusals[AGENT] += 1
            else:
                self.ledger.error(AGENT, kind, text)
            return None
        if refusal is not None:
            self.ledger.error(AGENT, kind, f"expected a refusal ({refusal!r}), it succeeded")
            return None
        return result.structured_content, started, acked

    def possible(self, kind: str) -> bool:
        if kind == "memory_update":
            return bool(self.note_ids)
        if kind in ("scratchpad_write", "conversation_get_context"):
            return bool(self.live_sessions)
        return True

    async def step(self) -> None:
        rng, ledger = self.rng, self.ledger
        self.counter += 1
        op = f"A{self.counter}"
        kind = _pick(rng, AGENT_MIX, self.possible)
        if kind == "conversation_append":
            session_id = rng.choice(list(self.streams))
            message = dict(next(self.streams[session_id]))
            message["metadata"] = {**message.get("metadata", {}), "op": op}
            got = await self.call(kind, kind, {"session_id": session_id, **message})
            if got is not None:
                answer = got[0]
                ledger.appends[(session_id, answer["sequence"])] = (
                    op, message["role"], message.get("content"))
                self.live_sessions.add(session_id)
        elif kind == "save_memory":
            key = f"agent key {rng.randrange(MEMORY_KEYS)}"
            content = f"The agent remembers {rng.choice(QUERY_WORDS)} for {key} ({op})."
            got = await self.call(kind, kind, {"key": key, "content": content})
            if got is not None:
                answer, started, acked = got
                ledger.keys[key] = answer["note_id"]
                ledger.registers[("note", AGENT, answer["note_id"])].append(
                    Write(AGENT, started, acked, content))
        elif kind == "memory_save":
            content = f"Note from the agent about the {rng.choice(QUERY_WORDS)} ({op})."
            got = await self.call(kind, kind, {"content": content, "tags": ["agent", op]})
            if got is not None:
                answer, started, acked = got
                self.note_ids.append(answer["note_id"])
                ledger.registers[("note", AGENT, answer["note_id"])].append(
                    Write(AGENT, started, acked, answer["content"]))
        elif kind == "memory_update":
            note_id = rng.choice(self.note_ids)
            content = f"Updated by the agent: {rng.choice(QUERY_WORDS)} ({op})."
            got = await self.call(kind, kind, {"note_id": note_id, "content": content})
            if got is not None:
                answer, started, acked = got
                ledger.registers[("note", AGENT, note_id)].append(
                    Write(AGENT, started, acked, answer["content"]))
        elif kind == "scratchpad_write":
            session_id = rng.choice(sorted(self.live_sessions))
            items = _items(rng, op)
            got = await self.call(kind, kind, {"session_id": session_id, "items": items})
            if got is not None:
                _, started, acked = got
                ledger.registers[("scratchpad", session_id)].append(
                    Write(AGENT, started, acked, items))
        elif kind == "scratchpad_overfull":
            session_id = rng.choice(list(self.streams))
            await self.call(kind, "scratchpad_write",
                            {"session_id": session_id, "items": _items(rng, op, 33)},
                            refusal=OVERFULL)
        elif kind == "recall_memories":
            await self.call(kind, kind, {"query": rng.choice(QUERY_WORDS)})
        elif kind == "memory_search":
            await self.call(kind, kind, {"query": " ".join(rng.sample(QUERY_WORDS, 2)),
                                         "top_k": 5})
        else:  # conversation_get_context
            await self.call(kind, kind, {"session_id": rng.choice(sorted(self.live_sessions)),
                                         "query": rng.choice(QUERY_WORDS)})
        ledger.done[AGENT] += 1


# -- side B: the developer in the app ------------------------------------------------------

class DeveloperSide:
    """The developer: what the app's panes do to the engine, one action at a time."""

    def __init__(self, engine: Engine, agent: AgentSide, ledger: Ledger, seed: int) -> None:
        self.engine = engine
        self.agent = agent  # what the agent has been acknowledged to have (the app lists it)
        self.ledger = ledger
        self.rng = random.Random(seed)
        self.streams = {f"dev-chat-{i}": _messages(random.Random(seed * 100 + i))
                        for i in range(DEVELOPER_SESSIONS)}
        self.live_sessions: set[str] = set()  # own sessions that hold a message
        self.notes: dict[str, str] = {}  # the developer's live notes: note_id -> name
        self.agent_notes: list[str] = []  # notes the developer added in the agent's namespace
        self.counter = 0

    async def call(self, kind: str, run: Callable[[], Any],
                   refusal: type[Exception] | None = None) -> tuple[Any, float, float] | None:
        started = time.perf_counter()
        try:
            result = await run()
        except Exception as exc:
            self.ledger.timing(DEVELOPER, kind, time.perf_counter() - started)
            if refusal is not None and isinstance(exc, refusal):
                self.ledger.refusals[DEVELOPER] += 1
            else:
                self.ledger.error(DEVELOPER, kind, f"{type(exc).__name__}: {exc}")
            return None
        acked = time.perf_counter()
        self.ledger.timing(DEVELOPER, kind, acked - started)
        if refusal is not None:
            self.ledger.error(DEVELOPER, kind, f"expected {refusal.__name__}, it succeeded")
            return None
        return result, started, acked

    def possible(self, kind: str) -> bool:
        if kind in ("append_agent_session", "write_agent_scratchpad", "hybrid_query",
                    "recall"):
            return bool(self.agent.live_sessions)
        if kind == "write_agent_memory":
            return bool(self.ledger.keys)
        if kind == "edit_agent_note":
            return bool(self.agent.note_ids or self.agent_notes)
        if kind in ("write_note", "edit_note", "remove_note", "add_note_taken"):
            return bool(self.notes)
        if kind in ("write_scratchpad", "read_scratchpad"):
            return bool(self.live_sessions)
        return True

    def _write(self, register: tuple[str, ...], got: tuple[Any, float, float] | None,
               value: Any) -> None:
        if got is not None:
            self.ledger.registers[register].append(Write(DEVELOPER, got[1], got[2], value))

    async def step(self) -> None:
        from core.errors import NameTaken

        engine, rng, ledger = self.engine, self.rng, self.ledger
        self.counter += 1
        op = f"B{self.counter}"
        kind = _pick(rng, DEVELOPER_MIX, self.possible)
        word = rng.choice(QUERY_WORDS)
        if kind in ("append", "append_agent_session"):
            if kind == "append":
                session_id, namespace = rng.choice(list(self.streams)), DEVELOPER
                message = dict(next(self.streams[session_id]))
            else:
                session_id, namespace = rng.choice(sorted(self.agent.live_sessions)), AGENT
                message = {"role": "system", "content": f"Developer's note: mind the {word}."}
            message["metadata"] = {**message.get("metadata", {}), "op": op}
            got = await self.call(kind, lambda: engine.append(session_id, message,
                                                              namespace=namespace))
            if got is not None:
                ledger.appends[(session_id, got[0].sequence)] = (
                    op, message["role"], message.get("content"))
                if kind == "append":
                    self.live_sessions.add(session_id)
        elif kind == "write_agent_memory":
            key = rng.choice(sorted(ledger.keys))
            content = f"The developer corrected {key}: {word} ({op})."
            got = await self.call(kind, lambda: engine.write_note(key, content,
                                                                  namespace=AGENT))
            if got is not None:
                self._write(("note", AGENT, got[0].note_id), got, content)
        elif kind == "edit_agent_note":
            note_id = rng.choice(self.agent.note_ids + self.agent_notes)
            content = f"Hand-edited by the developer: {word} ({op})."
            got = await self.call(kind, lambda: engine.edit_note(
                note_id, namespace=AGENT, content=content, tags=["edited", word]))
            self._write(("note", AGENT, note_id), got, content)
        elif kind == "add_agent_note":
            content = f"A hint the developer left for the agent about the {word} ({op})."
            got = await self.call(kind, lambda: engine.add_note(
                f"developer hint {op}", content, namespace=AGENT, tags=["hint"]))
            if got is not None:
                self.agent_notes.append(got[0].note_id)
                self._write(("note", AGENT, got[0].note_id), got, content)
        elif kind == "add_note":
            name, content = f"dev note {op}", f"The developer's own note on {word} ({op})."
            got = await self.call(kind, lambda: engine.add_note(name, content,
                                                                namespace=DEVELOPER))
            if got is not None:
                self.notes[got[0].note_id] = name
                self._write(("note", DEVELOPER, got[0].note_id), got, content)
        elif kind == "write_note":
            note_id = rng.choice(sorted(self.notes))
            content = f"Rewritten: {word} ({op})."
            got = await self.call(kind, lambda: engine.write_note(note_id, content,
                                                                  namespace=DEVELOPER))
            self._write(("note", DEVELOPER, note_id), got, content)
        elif kind == "edit_note":
            note_id = rng.choice(sorted(self.notes))
            name, content = f"dev note renamed {op}", f"Renamed and rewritten: {word} ({op})."
            got = await self.call(kind, lambda: engine.edit_note(
                note_id, namespace=DEVELOPER, name=name, aliases=[f"alias {op}"],
                content=content))
            if got is not None:
                self.notes[note_id] = name
                self._write(("note", DEVELOPER, note_id), got, content)
        elif kind == "remove_note":
            note_id = rng.choice(sorted(self.notes))
            got = await self.call(kind, lambda: engine.remove_note(note_id,
                                                                   namespace=DEVELOPER))
            if got is not None:
                if got[0] is not True:
                    ledger.error(DEVELOPER, kind, f"{note_id} was not there to remove")
                del self.notes[note_id]
                ledger.removed.add((DEVELOPER, note_id))
        elif kind == "add_note_taken":  # a name another note holds: NameTaken, on purpose
            taken = rng.choice(sorted(self.notes.values()))
            await self.call(kind, lambda: engine.add_note(taken, "refused", namespace=DEVELOPER),
                            refusal=NameTaken)
        elif kind in ("write_scratchpad", "write_agent_scratchpad"):
            # The app's scratchpad pane writes without a namespace, whoever owns the session.
            session_id = rng.choice(sorted(self.live_sessions if kind == "write_scratchpad"
                                           else self.agent.live_sessions))
            items = _items(rng, op)
            got = await self.call(kind, lambda: engine.write_scratchpad(session_id, items))
            self._write(("scratchpad", session_id), got, items)
        elif kind == "search":
            await self.call(kind, lambda: engine.search(namespace=AGENT, query=word, top_k=10,
                                                        caller="playground"))
        elif kind == "hybrid_query":
            session_id = rng.choice(sorted(self.agent.live_sessions))
            await self.call(kind, lambda: engine.hybrid_query(
                session_id=session_id, query=word, top_k=10, caller="playground"))
        elif kind == "recall":
            session_id = rng.choice(sorted(self.agent.live_sessions))
            await self.call(kind, lambda: engine.recall(session_id, limit=50))
        elif kind == "list_notes":
            await self.call(kind, lambda: engine.list_notes(namespace=AGENT, order="updated"))
        elif kind == "list_sessions":
            await self.call(kind, lambda: engine.list_sessions(limit=50))
        else:  # read_scratchpad
            session_id = rng.choice(sorted(self.live_sessions))
            await self.call(kind, lambda: engine.read_scratchpad(session_id))
        ledger.done[DEVELOPER] += 1

    async def poll(self, stop: asyncio.Event) -> None:
        """The app header's poll: ``pulse()`` every half second until the run stops."""
        while not stop.is_set():
            started = time.perf_counter()
            try:
                await self.engine.pulse()
            except Exception as exc:
                self.ledger.error(DEVELOPER, "pulse", f"{type(exc).__name__}: {exc}")
            else:
                self.ledger.timing(DEVELOPER, "pulse", time.perf_counter() - started)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), POLL_SECONDS)
