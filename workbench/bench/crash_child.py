"""The child process of ``workbench bench crash``: a workload that writes without pause.

``python -m workbench.bench.crash_child WORKLOAD DB ACKS CONFIG_JSON SEED`` opens the memory
file and runs one workload (ingest, notes, compact or recall; see :mod:`workbench.bench.crash`),
appending a *begin* line to the acknowledgement file before each operation and a *done* (or
*refused*) line after the engine returns, until it is killed. What an acknowledgement names
(:func:`payload_digest`, :func:`note_state`) is shared with the parent's checks.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import random
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from core.engine import Engine

NOTES_NAMESPACE = "crash-notes"
CHAT_SESSIONS = ("chat-1", "chat-2", "chat-3")
CONVERSATIONS = ("conv-1", "conv-2", "conv-3")
RECALL_NAMESPACE = "crash-recall"
RECALL_SESSIONS = ("recall-1", "recall-2", "recall-3")
SUMMARY_BUDGET = 300  # tokens: small enough that summarize() fires on a few messages
CHILD_LIFETIME_S = 300.0  # a child nobody kills stops by itself
MARKER_KEY = "compact_marker"


# -- what an acknowledgement names (the parent checks against these too) ----------------


def payload_digest(message: dict[str, Any]) -> str:
    """A stored message's identity: its normalised payload, hashed."""
    return hashlib.sha256(json.dumps(message, sort_keys=True, ensure_ascii=False)
                          .encode("utf-8")).hexdigest()[:24]


def note_state(note: Any) -> dict[str, Any]:
    """What a note operation is checked against: names, content (hashed) and tags."""
    return {"name": note.name, "aliases": sorted(note.aliases),
            "content": hashlib.sha256(note.content.encode("utf-8")).hexdigest()[:24],
            "tags": sorted(note.tags)}


def is_marker(payload: dict[str, Any]) -> bool:
    return MARKER_KEY in (payload.get("metadata") or {})


# -- the child ------------------------------------------------------------------------------


class _Acks:
    """The acknowledgement file: one JSON line per begin, done or refused."""

    def __init__(self, path: Path) -> None:
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def write(self, kind: str, **fields: Any) -> None:
        os.write(self._fd, (json.dumps({"k": kind, **fields}) + "\n").encode("utf-8"))


class _Messages:
    """Synthetic messages per session, with an earlier text repeated now and then."""

    def __init__(self, rng: random.Random, sessions: tuple[str, ...]) -> None:
        from workbench.bench import synthetic

        self._rng = rng
        self._streams = {sid: synthetic.conversation(rng, 10**9) for sid in sessions}
        self._seen: dict[str, list[dict[str, Any]]] = {sid: [] for sid in sessions}

    def next(self, session_id: str) -> dict[str, Any]:
        seen = self._seen[session_id]
        if seen and self._rng.random() < 0.1:
            return dict(self._rng.choice(seen))
        message = next(self._streams[session_id])
        seen.append(message)
        return message


async def _store_one(engine: Engine, acks: _Acks, rng: random.Random, messages: _Messages,
                     sessions: tuple[str, ...], last: dict[str, int],
                     agent: str | None = None) -> None:
    from core.indexing import validate_message

    session_id = rng.choice(sessions)
    payload = messages.next(session_id)
    digest = payload_digest(validate_message(payload))
    if rng.random() < 0.5:
        acks.write("begin", op="store", session=session_id, sequence=None, digest=digest)
        result = await engine.append(session_id, payload, agent=agent)
    else:
        sequence = last[session_id] + rng.choice((1, 1, 2))
        acks.write("begin", op="store", session=session_id, sequence=sequence, digest=digest)
        result = await engine.store(session_id, sequence, payload, agent=agent)
    last[session_id] = result.sequence
    acks.write("done", op="store", session=session_id, sequence=result.sequence, digest=digest)


async def _last_sequences(engine: Engine, sessions: tuple[str, ...]) -> dict[str, int]:
    tails = {sid: await engine.recall(sid, limit=1) for sid in sessions}
    return {sid: tail[-1].sequence if tail else 0 for sid, tail in tails.items()}


async def _ingest(engine: Engine, acks: _Acks, rng: random.Random,
                  ready: Callable[[], None]) -> None:
    messages = _Messages(rng, CHAT_SESSIONS)
    last = await _last_sequences(engine, CHAT_SESSIONS)
    ready()
    while True:
        await _store_one(engine, acks, rng, messages, CHAT_SESSIONS, last)


async def _recall(engine: Engine, acks: _Acks, rng: random.Random,
                  ready: Callable[[], None]) -> None:
    """Messages in one namespace, each followed by a namespace query: the query brings the
    engine's derived matrix up to the file, so a kill after a done line and before the
    next *synced* line lands between a commit and the index update that follows it."""
    messages = _Messages(rng, RECALL_SESSIONS)
    last = await _last_sequences(engine, RECALL_SESSIONS)
    backend: Any = engine.backend  # the SQLite backend's own derived indexes
    await asyncio.to_thread(backend.derived.build_now, backend.namespace_vectors.name)
    ready()
    while True:
        await _store_one(engine, acks, rng, messages, RECALL_SESSIONS, last,
                         agent=RECALL_NAMESPACE)
        found = await engine.search(namespace=RECALL_NAMESPACE, query="what did we say")
        acks.write("synced", path=found.legs.vector_path)


async def _compact(engine: Engine, acks: _Acks, rng: random.Random,
                   ready: Callable[[], None]) -> None:
    from core.errors import InvalidInput, SummaryConflict

    messages = _Messages(rng, CONVERSATIONS)
    last = await _last_sequences(engine, CONVERSATIONS)
    ready()
    while True:
        roll, session_id = rng.random(), rng.choice(CONVERSATIONS)
        if roll < 0.6 or not last[session_id]:
            await _store_one(engine, acks, rng, messages, CONVERSATIONS, last)
        elif roll < 0.85:
            acks.write("begin", op="compact", session=session_id)
            try:
                result = await engine.compact(session_id)
            except (SummaryConflict, InvalidInput) as exc:
                acks.write("refused", op="compact", session=session_id, reason=str(exc))
                continue
            last[session_id] = result.marker_sequence
            acks.write("done", op="compact", session=session_id,
                       marker=result.marker_sequence, name=result.archive_name,
                       note_id=result.note_id)
        else:
            acks.write("begin", op="summarize", session=session_id)
            outcome = await engine.summarize(session_id, token_budget=SUMMARY_BUDGET)
            if outcome.applied:
                acks.write("done", op="summarize", session=session_id, epoch=outcome.epoch)
            else:
                acks.write("refused", op="summarize", session=session_id, reason=outcome.reason)


_TAGS = ("work", "home", "todo", "idea", "ref", "later")


async def _notes(engine: Engine, acks: _Acks, rng: random.Random, run: int,
                 ready: Callable[[], None]) -> None:
    messages = _Messages(rng, ("notes",))
    page = await engine.list_notes(namespace=NOTES_NAMESPACE, limit=1000)
    notes = {note.note_id: note_state(note) for note in page.notes}
    counter = 0

    def content() -> str:
        parts = [messages.next("notes").get("content") or "" for _ in range(rng.randint(1, 5))]
        return "\n\n".join(part for part in parts if part.strip()) or "an empty thought"

    def fresh(prefix: str) -> str:
        nonlocal counter
        counter += 1
        return f"{prefix} {run}.{counter}"

    def digest(text: str) -> str:
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:24]

    ready()
    while True:
        roll = rng.random()
        aliased = [(nid, alias) for nid, state in notes.items() for alias in state["aliases"]]
        if len(notes) < 6 or (roll < 0.25 and len(notes) < 30):
            text, tags = content(), sorted(rng.sample(_TAGS, rng.randint(0, 3)))
            name, aliases = fresh("topic"), [fresh("aka")] if rng.random() < 0.3 else []
            after: dict[str, Any] = {"name": name, "aliases": sorted(aliases),
                                     "content": digest(text), "tags": tags}
            op = "add"
            acks.write("begin", op=op, note_id=None, after=after)
            note = await engine.add_note(name, text, namespace=NOTES_NAMESPACE, tags=tags,
                                         aliases=aliases)
            note_id = note.note_id
        else:
            note_id = rng.choice(sorted(notes))
            after = dict(notes[note_id])
            if roll < 0.55:
                text, tags = content(), sorted(rng.sample(_TAGS, rng.randint(0, 3)))
                after.update(content=digest(text), tags=tags)
                op = "write"
                acks.write("begin", op=op, note_id=note_id, after=after)
                note = await engine.write_note(note_id, text, namespace=NOTES_NAMESPACE,
                                               tags=tags)
            elif roll < 0.7:
                after["name"] = fresh("topic")
                op = "rename"
                acks.write("begin", op=op, note_id=note_id, after=after)
                note = await engine.rename_note(note_id, after["name"],
                                                namespace=NOTES_NAMESPACE)
            elif roll < 0.82 or not aliased:
                alias = fresh("aka")
                after["aliases"] = sorted([*after["aliases"], alias])
                op = "alias"
                acks.write("begin", op=op, note_id=note_id, after=after)
                note = await engine.alias_note(note_id, alias, namespace=NOTES_NAMESPACE)
            elif roll < 0.88:
                note_id, alias = rng.choice(aliased)
                after = dict(notes[note_id])
                after["aliases"] = [a for a in after["aliases"] if a != alias]
                op = "unalias"
                acks.write("begin", op=op, note_id=note_id, after=after)
                note = await engine.unalias_note(alias, namespace=NOTES_NAMESPACE)
            else:
                acks.write("begin", op="remove", note_id=note_id, after=None)
                if not await engine.remove_note(note_id, namespace=NOTES_NAMESPACE):
                    raise SystemExit(f"remove_note({note_id}) found no note")
                notes.pop(note_id)
                acks.write("done", op="remove", note_id=note_id, after=None)
                continue
        returned = note_state(note)
        if returned != after:
            raise SystemExit(f"note {note_id}: the engine returned {returned}, expected {after}")
        notes[note_id] = returned
        acks.write("done", op=op, note_id=note_id, after=returned)


async def _child(workload: str, db: str, acks_path: Path, config: dict[str, Any],
                 seed: int) -> None:
    from core import Engine
    from core.indexing import validate_message  # noqa: F401  (imported before "ready")
    from workbench.bench import synthetic  # noqa: F401

    rng = random.Random(seed)
    acks = _Acks(acks_path)

    def ready() -> None:  # the engine is open and the next line is the first write
        print("ready", flush=True)

    async with Engine.open(db, config=config) as engine:
        work = {"ingest": lambda: _ingest(engine, acks, rng, ready),
                "notes": lambda: _notes(engine, acks, rng, seed, ready),
                "compact": lambda: _compact(engine, acks, rng, ready),
                "recall": lambda: _recall(engine, acks, rng, ready)}[workload]
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(work(), CHILD_LIFETIME_S)


CRASH_DB_VARIABLE = "WORKBENCH_CRASH_DB"


def child_main(argv: list[str]) -> None:
    """``python -m workbench.bench.crash_child WORKLOAD ACKS CONFIG_JSON SEED``, the memory in
    ``$WORKBENCH_CRASH_DB``: a URL's password in the arguments would show in ``ps``."""
    workload, acks, config_path, seed = argv
    config = json.loads(Path(config_path).read_text(encoding="utf-8"))
    # The memory as given: a path, or a postgresql:// URL that Path would mangle.
    db = os.environ[CRASH_DB_VARIABLE]
    asyncio.run(_child(workload, db, Path(acks), config, int(seed)))


if __name__ == "__main__":
    child_main(sys.argv[1:])
