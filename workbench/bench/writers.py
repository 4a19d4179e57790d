"""``workbench bench writers``: several processes store messages into one memory at once.

``processes`` writer processes open the same memory (a SQLite file or a ``postgresql://``
URL) and, once all are open, store ``messages`` messages between them into a few shared
sessions spread over a few namespaces, each message through ``Engine.append`` (the next
sequence, whatever the others wrote) or ``Engine.store`` at the sequence after the last one
this writer saw, which another writer may have taken meanwhile: the engine then refuses it
with ``SequenceError``, a defined refusal, counted and not retried.

Every message's text names its writer and its number, so each is unique. A writer records
each acknowledged write (session, sequence, payload digest). When all are done one reader
checks, through the engine:

- **lost**: an acknowledged write that is not there, at its sequence, with its payload;
- **duplicated**: a message stored more than once;
- **unasked**: a stored message no writer acknowledged;
- **order**: a session whose sequences, oldest first, do not strictly increase;
- **errors**: anything a writer got other than a ``SequenceError``.

All must be 0. Throughput is acknowledged writes per second of wall time, from the moment
every writer was open until the last one finished. The writers run no embedding worker
(the parent drains the backlog afterwards and checks it is empty), so the figure is the
write path's.
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import random
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbench.bench.crash_child import payload_digest

SESSIONS = 8
NAMESPACES = 2
READY_TIMEOUT_S = 120.0
WRITE_TIMEOUT_S = 600.0  # a writer still running then is killed and counted as failed
_WORDS = ("deploy", "cache", "invoice", "latency", "rollback", "ticket", "schema", "queue",
          "budget", "retry", "index", "shard", "review", "timeout", "migration", "alert")


def session_ids(sessions: int = SESSIONS) -> list[str]:
    return [f"writers-{index:02d}" for index in range(sessions)]


def namespace_of(session_id: str, namespaces: int = NAMESPACES) -> str:
    """The namespace a session belongs to (fixed, so no writer moves a session)."""
    return f"writers-ns-{int(session_id.rsplit('-', 1)[1]) % namespaces}"


@dataclass
class WritersFigures:
    """What one ``bench writers`` run measured."""

    backend: str
    processes: int
    messages: int  # asked for, over all writers
    sessions: int
    namespaces: int
    seconds: float  # wall time of the writing, all writers open to last one done
    acknowledged: int
    appended: int
    stored: int
    sequence_refusals: int  # SequenceError: another writer took the sequence first
    stored_rows: int  # messages the reader found
    lost: int
    duplicated: int
    unasked: int
    out_of_order: int  # sessions whose sequences do not strictly increase
    errors: int  # anything else a writer got
    backlog_after: int  # chunks still waiting for a vector after the drain
    problems: list[str] = field(default_factory=list)

    @property
    def throughput(self) -> float:
        return self.acknowledged / self.seconds if self.seconds > 0 else 0.0

    @property
    def passed(self) -> bool:
        return (self.acknowledged > 0 and not self.lost and not self.duplicated
                and not self.unasked and not self.out_of_order and not self.errors
                and not self.backlog_after)

    def lines(self) -> list[str]:
        verdict = ("pass: 0 lost, 0 duplicated, 0 unasked, sequences increasing, no error"
                   " but the defined refusal" if self.passed else "FAIL")
        return [
            f"backend               {self.backend}",
            f"writers               {self.processes} processes, {self.messages:,} messages "
            f"asked over {self.sessions} shared sessions in {self.namespaces} namespaces",
            f"acknowledged          {self.acknowledged:,} ({self.appended:,} append, "
            f"{self.stored:,} store at a chosen sequence)",
            f"refused               {self.sequence_refusals:,} SequenceError (another writer "
            "took the sequence first)",
            f"throughput            {self.throughput:,.0f} acknowledged writes/s "
            f"({self.seconds:,.2f} s wall, all writers at once)",
            f"reader found          {self.stored_rows:,} messages",
            f"lost                  {self.lost}",
            f"duplicated            {self.duplicated}",
            f"never acknowledged    {self.unasked}",
            f"sessions out of order {self.out_of_order}",
            f"other errors          {self.errors}",
            f"backlog after drain   {self.backlog_after}",
            f"verdict               {verdict}",
            *(f"  {problem}" for problem in self.problems[:20]),
        ]


# -- a writer process ---------------------------------------------------------------------


def _payload(rng: random.Random, writer: int, number: int) -> dict[str, Any]:
    words = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(4, 12)))
    return {"role": rng.choice(("user", "assistant")),
            "content": f"writer {writer} message {number}: {words}"}


async def _write(db: str, config: dict[str, Any], writer: int, count: int, seed: int,
                 sessions: int, namespaces: int, out: Path, ready: Any, go: Any) -> None:
    from core import Engine
    from core.errors import SequenceError
    from core.indexing import validate_message

    rng = random.Random(seed * 1000 + writer)
    names = session_ids(sessions)
    last = dict.fromkeys(names, 0)
    lines: list[str] = []
    async with Engine.open(db, config=config, start_worker=False) as engine:
        ready.put(writer)
        go.wait()
        started = time.time()
        for number in range(count):
            session_id = rng.choice(names)
            payload = _payload(rng, writer, number)
            digest = payload_digest(validate_message(payload))
            agent = namespace_of(session_id, namespaces)
            try:
                if rng.random() < 0.5:
                    result = await engine.append(session_id, payload, agent=agent)
                    kind = "append"
                else:
                    result = await engine.store(session_id, last[session_id] + 1, payload,
                                                agent=agent)
                    kind = "store"
            except SequenceError:
                # Another writer took the sequence; the next store starts past it.
                tail = await engine.recall(session_id, limit=1)
                last[session_id] = tail[-1].sequence if tail else last[session_id]
                lines.append(json.dumps({"k": "refused"}))
                continue
            except Exception as error:  # counted as a failure of the run, never hidden
                lines.append(json.dumps({"k": "error", "error": f"{type(error).__name__}: "
                                                               f"{error}"}))
                continue
            last[session_id] = max(last[session_id], result.sequence)
            lines.append(json.dumps({"k": kind, "session": session_id,
                                     "sequence": result.sequence, "digest": digest}))
        finished = time.time()
    lines.append(json.dumps({"k": "times", "started": started, "finished": finished}))
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _writer_main(db: str, config: dict[str, Any], writer: int, count: int, seed: int,
                 sessions: int, namespaces: int, out: str, ready: Any, go: Any) -> None:
    asyncio.run(_write(db, config, writer, count, seed, sessions, namespaces, Path(out),
                       ready, go))


# -- the parent -----------------------------------------------------------------------------


async def _prepare(db: str, config: dict[str, Any], sessions: int) -> None:
    """Make the schema once, and refuse a memory that already holds these sessions."""
    from core import Engine

    async with Engine.open(db, config=config, start_worker=False) as engine:
        for session_id in session_ids(sessions):
            if await engine.recall(session_id, limit=1):
                raise FileExistsError(f"{session_id} already holds messages; bench writers "
                                      "needs a memory without its sessions")


async def _read_back(db: str, config: dict[str, Any],
                     sessions: int) -> tuple[dict[str, list[tuple[int, str]]], int]:
    """Every bench session's (sequence, digest) oldest first, and the backlog after a
    drain."""
    from core import Engine

    async with Engine.open(db, config=config) as engine:
        await engine.drain(timeout=WRITE_TIMEOUT_S)
        backlog = (await engine.embedding_status()).backlog
        held = {session_id: [(record.sequence, payload_digest(record.payload))
                             for record in await engine.recall(session_id)]
                for session_id in session_ids(sessions)}
    return held, backlog


def run_writers_bench(config: Any, db: str | Path | None, processes: int = 4,
                      messages: int = 2000, *, sessions: int = SESSIONS,
                      namespaces: int = NAMESPACES, seed: int = 1,
                      say: Callable[[str], None] = print) -> WritersFigures:
    """Run ``processes`` writers storing ``messages`` messages between them into ``db``
    (a temporary SQLite file when None) and check what one reader finds afterwards."""
    from core.config import load_config
    from core.locations import parse_location

    if processes < 1 or messages < 1 or sessions < 1 or namespaces < 1:
        raise ValueError("processes, messages, sessions and namespaces must be positive")
    as_dict = load_config(config).to_dict()
    with tempfile.TemporaryDirectory(prefix="workbench-writers-") as name:
        folder = Path(name)
        target = str(db) if db is not None else str(folder / "memory.db")
        location = parse_location(target)
        asyncio.run(_prepare(target, as_dict, sessions))
        context = multiprocessing.get_context("spawn")
        ready, go = context.Queue(), context.Event()
        shares = [messages // processes + (index < messages % processes)
                  for index in range(processes)]
        outputs = [folder / f"writer-{index}.jsonl" for index in range(processes)]
        children = [context.Process(target=_writer_main, args=(
            target, as_dict, index, shares[index], seed, sessions, namespaces,
            str(outputs[index]), ready, go)) for index in range(processes)]
        for child in children:
            child.start()
        try:
            for _ in children:
                ready.get(timeout=READY_TIMEOUT_S)
            say(f"{processes} writers open; writing {messages:,} messages …")
            go.set()
            for child in children:
                child.join(timeout=WRITE_TIMEOUT_S)
        finally:
            for child in children:
                if child.is_alive():
                    child.kill()
                    child.join()
        failed = [index for index, child in enumerate(children) if child.exitcode != 0]
        say("reading back …")
        held, backlog = asyncio.run(_read_back(target, as_dict, sessions))
        records = [[json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
                   if out.exists() else [] for out in outputs]
    return _figures(location.kind, processes, messages, sessions, namespaces, records, held,
                    backlog, failed)


def _figures(backend: str, processes: int, messages: int, sessions: int, namespaces: int,
             records: list[list[dict[str, Any]]], held: dict[str, list[tuple[int, str]]],
             backlog: int, failed: list[int]) -> WritersFigures:
    problems = [f"writer {index} did not finish" for index in failed]
    acked = [entry for entries in records for entry in entries
             if entry["k"] in ("append", "store")]
    kinds = Counter(entry["k"] for entries in records for entry in entries)
    errors = [entry["error"] for entries in records for entry in entries if entry["k"] == "error"]
    problems += errors[:10]
    times = [entry for entries in records for entry in entries if entry["k"] == "times"]
    seconds = (max(t["finished"] for t in times) - min(t["started"] for t in times)
               if times else 0.0)

    found = {(session_id, sequence): digest for session_id, rows in held.items()
             for sequence, digest in rows}
    lost = 0
    for entry in acked:
        if found.get((entry["session"], entry["sequence"])) != entry["digest"]:
            lost += 1
            problems.append(f"lost: {entry['session']}#{entry['sequence']}")
    copies = Counter(found.values())
    duplicated = sum(count - 1 for count in copies.values() if count > 1)
    acked_digests = {entry["digest"] for entry in acked}
    unasked = sum(1 for digest in found.values() if digest not in acked_digests)
    out_of_order = 0
    for session_id, rows in held.items():
        sequences = [sequence for sequence, _ in rows]
        if any(b <= a for a, b in zip(sequences, sequences[1:], strict=False)):
            out_of_order += 1
            problems.append(f"{session_id}: sequences do not strictly increase")
    return WritersFigures(
        backend=backend, processes=processes, messages=messages, sessions=sessions,
        namespaces=namespaces, seconds=seconds, acknowledged=len(acked),
        appended=kinds["append"], stored=kinds["store"], sequence_refusals=kinds["refused"],
        stored_rows=len(found), lost=lost, duplicated=duplicated, unasked=unasked,
        out_of_order=out_of_order, errors=len(errors) + len(failed), backlog_after=backlog,
        problems=problems)


__all__ = ["WritersFigures", "run_writers_bench"]
