"""``workbench bench concurrency``: an agent over MCP and the app's engine write one file at once.

Side A is the agent: a real ``workbench mcp --db FILE --namespace agent`` subprocess driven
by the ``mcp`` client, mostly appending to its conversations, also saving memories and notes,
updating them, writing scratchpads and searching. Side B is the developer in the app: an
``Engine`` in this process, opened as the app opens one, hand-editing notes (its own and the
agent's), writing scratchpads (its own and the agent's), appending to its sessions (and now
and then to the agent's), searching, reading sessions, and polling ``pulse()`` as the app's
header does. Both sides run at once, one operation at a time each, as fast as they can, until
each has done ``--ops`` operations (the quicker side keeps going until the other is done, so
the two overlap for the whole run).

Every operation is timed (an agent's from the request sent to the answer read, so it
includes the MCP round trip over stdio). Anything that fails and was not provoked on purpose
is an error surfaced to a user: an exception, an MCP tool error, a warning the engine logs in
either process (a background write that hit "database is locked" shows up there). After the
run a fresh engine checks that nothing acknowledged was lost:

- every acknowledged append is at its sequence with its content, and no event is there
  that nobody acknowledged;
- every note and scratchpad holds a value some side acknowledged, and the right one: the
  last write, or, where writes of the two sides overlapped in time (both in flight at once,
  so either may have committed last), one of the writes no later write followed. A write's
  window is from its request to its acknowledgement, both read on this process's clock;
- every note the developer removed stays removed; every memory key names the note it named;
- ``PRAGMA integrity_check`` (and FTS5's own check) is ok, and no chunk failed to embed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import random
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from workbench.bench import _percentile
from workbench.bench_concurrency_check import (
    AGENT,
    DEVELOPER,
    SIDES,
    Ledger,
    Verdict,
    Write,
    verify,
)
from workbench.cli_support import _load_config, echo_json, json_option, model_option
from workbench.cli_support import _run as _run_cli

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


class _LogCatcher(logging.Handler):
    """Warnings and errors the engine logs in this process: background work that failed."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(f"{record.name}: {record.getMessage()}")


def _messages(rng: random.Random) -> Iterator[dict[str, Any]]:
    from workbench import synthetic

    return synthetic.conversation(rng, 10**9)


def _pick(rng: random.Random, mix: dict[str, int], possible: Callable[[str], bool]) -> str:
    kinds = [kind for kind in mix if possible(kind)]
    return rng.choices(kinds, weights=[mix[kind] for kind in kinds])[0]


def _items(rng: random.Random, tag: str, count: int | None = None) -> list[str]:
    count = rng.randint(1, 8) if count is None else count
    steps = ("goal", "done", "pending", "blocked on", "next")
    return [f"{rng.choice(steps)}: {rng.choice(QUERY_WORDS)} {tag}.{i}" for i in range(count)]


def _keep_going(ledger: Ledger, ops: int) -> bool:
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

    def __init__(self, engine: Any, agent: AgentSide, ledger: Ledger, seed: int) -> None:
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


# -- the run -------------------------------------------------------------------------------

def _stats(values: list[float]) -> dict[str, float]:
    if not values:
        return {"count": 0, "p50_ms": 0.0, "p95_ms": 0.0, "max_ms": 0.0}
    return {"count": len(values), "p50_ms": _percentile(values, 0.50) * 1000,
            "p95_ms": _percentile(values, 0.95) * 1000, "max_ms": max(values) * 1000}


@dataclass
class ConcurrencyFigures:
    """What one ``bench concurrency`` run measured and found."""

    model: str
    dimension: int
    ops_asked: int
    seconds: float
    ops: dict[str, int]
    pulses: int
    errors: dict[str, list[str]]
    background: list[str]
    refusals: dict[str, int]
    verdict: Verdict
    kinds: dict[str, dict[str, dict[str, float]]]  # side -> kind -> stats
    writes: dict[str, dict[str, float]]  # side -> stats over its write kinds
    warnings: list[str]

    @property
    def error_count(self) -> int:
        return sum(len(found) for found in self.errors.values()) + len(self.background)

    @property
    def ok(self) -> bool:
        return (self.error_count == 0 and self.verdict.lost == 0
                and self.verdict.integrity == ["ok"])

    def to_dict(self) -> dict[str, Any]:
        v = self.verdict
        return {
            "model": self.model, "dimension": self.dimension, "ops_per_side": self.ops_asked,
            "seconds": self.seconds, "ops": self.ops, "pulses": self.pulses,
            "errors": {side: len(found) for side, found in self.errors.items()},
            "background_errors": len(self.background), "refusals": self.refusals,
            "lost_writes": v.lost, "appends_checked": v.appends_checked,
            "lost_appends": v.lost_appends, "unacknowledged_events": v.unacknowledged_events,
            "registers_checked": v.registers_checked, "lost_notes": v.lost_notes,
            "lost_scratchpads": v.lost_scratchpads, "removed_notes_back": v.removed_back,
            "memory_keys_moved": v.keys_moved, "races": v.races, "integrity": v.integrity,
            "embedding_failed": v.embedding_failed, "write_latency": self.writes,
            "latency_by_kind": self.kinds, "ok": self.ok,
            "error_examples": [e for found in self.errors.values() for e in found[:5]]
            + self.background[:5], "lost_examples": v.examples}

    def lines(self) -> list[str]:
        v, ops = self.verdict, self.ops
        writes = {side: self.writes[side]["count"] for side in SIDES}
        lines = [
            f"model                 {self.model} ({self.dimension} dims)",
            f"run                   agent over MCP (`workbench mcp` subprocess) and the app's "
            f"engine (this process) on one file, at once, {self.seconds:.1f} s",
            f"operations            agent {ops[AGENT]:,} ({writes[AGENT]:,} writes), "
            f"developer {ops[DEVELOPER]:,} ({writes[DEVELOPER]:,} writes) "
            f"+ {self.pulses:,} pulse polls",
            f"errors surfaced       agent {len(self.errors[AGENT])}, developer "
            f"{len(self.errors[DEVELOPER])}, logged in the background {len(self.background)}"
            f"  (must be 0)",
            f"expected refusals     agent {self.refusals.get(AGENT, 0)} (scratchpad over 32 "
            f"items), developer {self.refusals.get(DEVELOPER, 0)} (name taken)",
            f"lost writes           {v.lost}  (must be 0): of {v.appends_checked:,} appends "
            f"{v.lost_appends} lost, {v.unacknowledged_events} unacknowledged events; of "
            f"{v.registers_checked:,} notes and scratchpads {v.lost_notes + v.lost_scratchpads}"
            f" wrong; {v.removed_back} removed notes back; {v.keys_moved} memory keys moved",
            f"overlapping writes    {v.races} notes or scratchpads whose last writes by the "
            f"two sides were in flight at once (either value accepted)",
            f"integrity             {', '.join(v.integrity)} (PRAGMA integrity_check, FTS5 "
            f"integrity-check); {v.embedding_failed} chunks failed to embed",
        ]
        for side, label in ((AGENT, "agent writes  "), (DEVELOPER, "developer writes")):
            s = self.writes[side]
            lines.append(f"{label:<22}p50 {s['p50_ms']:.2f} ms, p95 {s['p95_ms']:.2f} ms, "
                         f"max {s['max_ms']:.1f} ms"
                         + ("  (round trip over MCP stdio)" if side == AGENT else ""))
        total_writes = writes[AGENT] + writes[DEVELOPER]
        lines.append(f"throughput            agent {ops[AGENT] / self.seconds:,.0f} ops/s, "
                     f"developer {ops[DEVELOPER] / self.seconds:,.0f} ops/s; "
                     f"{total_writes / self.seconds:,.0f} writes/s together")
        lines.append("by kind               count, p50 / p95 / max ms")
        for side in SIDES:
            for kind, s in sorted(self.kinds[side].items(), key=lambda kv: -kv[1]["count"]):
                mark = ("" if kind in READS else "  refused on purpose" if kind in REFUSED
                        else "  write")
                lines.append(f"  {side:<9} {kind:<26}{s['count']:>6,}  {s['p50_ms']:7.2f} / "
                             f"{s['p95_ms']:7.2f} / {s['max_ms']:7.1f}{mark}")
        for text in [e for found in self.errors.values() for e in found[:5]] \
                + self.background[:5] + v.examples:
            lines.append(f"! {text}")
        return lines


async def _both_sides(session: Any, engine: Any, ledger: Ledger, ops: int, seed: int) -> float:
    """Run the agent, the developer and the app's poll at once; the seconds it took."""
    agent = AgentSide(session, ledger, seed)
    developer = DeveloperSide(engine, agent, ledger, seed + 1)
    stop = asyncio.Event()

    async def drive(side: AgentSide | DeveloperSide) -> None:
        while _keep_going(ledger, ops):
            await side.step()

    started = time.perf_counter()
    poller = asyncio.create_task(developer.poll(stop))
    try:
        await asyncio.gather(drive(agent), drive(developer))
    finally:
        stop.set()
        await poller
    return time.perf_counter() - started


async def _noting(failures: list[str], what: str, awaitable: Any) -> None:
    """Await, and note a failure instead of raising it: the run's figures still print."""
    try:
        await awaitable
    except Exception as exc:
        failures.append(f"{what}: {type(exc).__name__}: {exc}")


def _server_problems(stderr_text: str) -> list[str]:
    """Lines of the server's stderr that tell of a failure (its start-up lines excepted)."""
    bad = ("WARNING", "ERROR", "CRITICAL", "Traceback", "locked", "busy", "Exception")
    return [f"mcp server: {line}" for line in stderr_text.splitlines()
            if any(word in line for word in bad) and not line.startswith("warning: ")]


async def run_concurrency(config_path: Path | None, model: str | None, ops: int,
                          say: Callable[[str], None] = print,
                          folder: Path | None = None, seed: int = 11) -> ConcurrencyFigures:
    """Run both sides on a fresh file in ``folder`` (a temporary one by default)."""
    with contextlib.ExitStack() as stack:
        if folder is None:
            folder = Path(stack.enter_context(
                tempfile.TemporaryDirectory(prefix="workbench-bench-")))
        return await _run(config_path, model, ops, say, folder, seed)


async def _run(config_path: Path | None, model: str | None, ops: int,
               say: Callable[[str], None], folder: Path, seed: int) -> ConcurrencyFigures:
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    from core import Engine
    from core.config import load_config
    from workbench.cli_support import _with_model

    config = _with_model(load_config(config_path), model)
    path = folder / "memory.db"
    env = {k: v for k, v in os.environ.items() if k != "WORKBENCH_CONFIG"}
    if config_path is not None:
        env["WORKBENCH_CONFIG"] = str(Path(config_path).resolve())
    root = str(Path(__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
    args = ["-m", "workbench.cli", "mcp", "--db", str(path), "--namespace", AGENT]
    if model is not None:
        args += ["--model", model]
    params = StdioServerParameters(command=sys.executable, args=args, env=env, cwd=folder)

    ledger = Ledger()
    catcher = _LogCatcher()
    watched = [logging.getLogger(name) for name in ("core", "workbench")]
    loop = asyncio.get_running_loop()
    loop_errors: list[str] = []
    old_handler = loop.get_exception_handler()
    loop.set_exception_handler(lambda _loop, context: loop_errors.append(
        f"event loop: {context.get('message')} {context.get('exception')!r}"))
    for logger in watched:
        logger.addHandler(catcher)
    stderr_path = folder / "mcp-server-stderr.txt"
    say(f"starting `workbench mcp` and the app's engine on {path} …")
    failures: list[str] = []  # what broke outside an operation: a drain, a close, the session
    try:
        with stderr_path.open("w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write), \
                    ClientSession(read, write) as session:
                await session.initialize()
                engine = await Engine.open(path, config=config, defer_model=True)
                try:
                    await engine.model_ready()
                    model_name, dimension = engine.embedder.name, engine.embedder.dimension
                    warnings = list(engine.warnings)
                    say(f"running {ops:,} operations a side at once …")
                    seconds = await _both_sides(session, engine, ledger, ops, seed)
                    say("run done; waiting for the embedding backlog …")
                    await _noting(failures, "draining the embedding backlog",
                                  engine.drain(timeout=300))
                finally:
                    await _noting(failures, "closing the app's engine", engine.close())
    except Exception as exc:  # the MCP session or its server failed as it closed
        failures.append(f"mcp session: {type(exc).__name__}: {exc}")
    finally:
        for logger in watched:
            logger.removeHandler(catcher)
        loop.set_exception_handler(old_handler)
    background = (failures + catcher.records + loop_errors
                  + _server_problems(stderr_path.read_text()))

    say("checking every acknowledged write with a fresh engine …")
    verdict = await verify(path, config, ledger)
    kinds = {side: {kind: _stats(values) for kind, values in ledger.latencies[side].items()}
             for side in SIDES}
    writes = {side: _stats([value for kind, values in ledger.latencies[side].items()
                            if kind not in READS | REFUSED for value in values])
              for side in SIDES}
    return ConcurrencyFigures(
        model=model_name, dimension=dimension, ops_asked=ops, seconds=seconds,
        ops=dict(ledger.done), pulses=len(ledger.latencies[DEVELOPER].get("pulse", [])),
        errors=ledger.errors, background=background, refusals=dict(ledger.refusals),
        verdict=verdict, kinds=kinds, writes=writes, warnings=warnings)


# -- the command ---------------------------------------------------------------------------

@click.command("concurrency")
@click.option("--ops", default=3000, show_default=True, type=click.IntRange(min=10),
              help="Operations per side (the quicker side keeps going until both are done).")
@model_option
@json_option
@click.pass_context
def bench_concurrency(ctx: click.Context, ops: int, model: str | None, as_json: bool) -> None:
    """An agent over MCP and the app's engine write one file at once: errors, lost writes,
    write latency. Exits 1 when an error surfaced or a write was lost."""
    config_path = ctx.obj.get("config_path") if ctx.obj else None
    _load_config(ctx)  # a bad config file is refused here, in one line, before anything runs
    figures = _run_cli(run_concurrency(config_path, model, ops,
                                       say=lambda line: click.echo(line, err=True)))
    for warning in figures.warnings:
        click.echo(f"warning: {warning}", err=True)
    if as_json:
        echo_json(figures.to_dict())
    else:
        for line in figures.lines():
            click.echo(line)
    if not figures.ok:
        sys.exit(1)
