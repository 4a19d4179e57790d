"""What a crash drill's memory should hold, from the acknowledgement file, against what it holds.

The child appends a *begin*, *done* or *refused* line around every operation
(:mod:`workbench.bench.crash_child`); the parent reads them back (:func:`read_acks`), works
out what the memory must hold after a kill (:func:`expected`), reads what it does hold
through a fresh engine (:func:`holdings`) and compares the two (:func:`compare`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench.bench.crash_child import (
    CHAT_SESSIONS,
    CONVERSATIONS,
    NOTES_NAMESPACE,
    RECALL_SESSIONS,
    is_marker,
    note_state,
    payload_digest,
)

if TYPE_CHECKING:
    from core.engine import Engine

# The sessions each workload writes (the notes workload's live under the notes' own).
WORKLOAD_SESSIONS = {"ingest": CHAT_SESSIONS, "notes": (), "compact": CONVERSATIONS,
                     "recall": RECALL_SESSIONS}


# -- the parent: what the file holds, and what it should --------------------------------------


@dataclass
class Holdings:
    """What a workload's file holds, as the checks compare it."""

    messages: dict[tuple[str, int], str] = field(default_factory=dict)  # -> payload digest
    notes: dict[str, dict[str, Any]] = field(default_factory=dict)  # note_id -> note_state
    archives: dict[tuple[str, int], tuple[str, str]] = field(default_factory=dict)
    epochs: dict[str, int] = field(default_factory=dict)  # session -> summary epoch

    def copy(self) -> Holdings:
        return Holdings(dict(self.messages), dict(self.notes), dict(self.archives),
                         dict(self.epochs))


async def holdings(engine: Engine, workload: str | None = None) -> Holdings:
    """Everything the checks compare, read through the engine's public API: the whole file,
    or with ``workload`` only what that workload writes (on PostgreSQL every workload shares
    one database)."""
    from core.errors import NotFound
    from core.storage.vocabulary import MEMORY_PREFIX

    held = Holdings()
    if workload is None:
        sessions = [s.session_id for s in await engine.list_sessions()
                    if not s.session_id.startswith(MEMORY_PREFIX)]
    else:
        sessions = list(WORKLOAD_SESSIONS[workload])
    for session_id in sessions:
        for record in await engine.recall(session_id):
            if not is_marker(record.payload):
                held.messages[(session_id, record.sequence)] = payload_digest(record.payload)
        if workload in (None, "compact"):
            try:
                held.epochs[session_id] = (await engine.summary_state(session_id)).epoch
            except NotFound:
                # A workload's session not yet made (its first child was killed early);
                # a file's whole listing holds only sessions that exist.
                continue
    if workload in (None, "notes"):
        page = await engine.list_notes(namespace=NOTES_NAMESPACE, limit=1000)
        held.notes = {note.note_id: note_state(note) for note in page.notes}
    if workload in (None, "compact"):
        held.archives = {(a.session_id, a.marker_sequence):
                         (a.archive_name, a.note_id) for a in await engine.list_archives()}
    return held


def read_acks(path: Path) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """The done lines in order, and the operation begun but neither done nor refused."""
    done: list[dict[str, Any]] = []
    open_op: dict[str, Any] | None = None
    if not path.exists():
        return done, None
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            continue  # a line the kill cut short: never an acknowledgement
        if entry["k"] == "synced":  # the recall workload's index update, no operation
            continue
        if entry["k"] == "begin":
            open_op = entry
        else:
            if entry["k"] == "done":
                done.append(entry)
            open_op = None
    return done, open_op


@dataclass
class Comparison:
    lost: int = 0
    phantom: int = 0
    problems: list[str] = field(default_factory=list)
    # The operation in flight at the kill: True committed (not acknowledged), False rolled
    # back, None when there was none or its effect cannot be told (summarize).
    open_committed: bool | None = None

    def lose(self, problem: str) -> None:
        self.lost += 1
        self.problems.append(f"lost: {problem}")

    def extra(self, problem: str) -> None:
        self.phantom += 1
        self.problems.append(f"never asked for: {problem}")


def expected(before: Holdings, done: list[dict[str, Any]]) -> Holdings:
    """What the file should hold: what it held before, with every acknowledged write."""
    expected = before.copy()
    for entry in done:
        op = entry["op"]
        if op == "store":
            expected.messages[(entry["session"], entry["sequence"])] = entry["digest"]
        elif op == "compact":
            expected.archives[(entry["session"], entry["marker"])] = (entry["name"],
                                                                      entry["note_id"])
        elif op == "summarize":
            expected.epochs[entry["session"]] = max(expected.epochs.get(entry["session"], 0),
                                                    entry["epoch"])
        elif entry["after"] is None:
            expected.notes.pop(entry["note_id"], None)
        else:
            expected.notes[entry["note_id"]] = entry["after"]
    return expected


def compare(expected: Holdings, held: Holdings, open_op: dict[str, Any] | None) -> Comparison:
    """Acknowledged writes missing (lost) and writes nobody asked for (phantom); the open
    operation may have committed or not."""
    found = Comparison()
    asked: dict[str, Any] = open_op or {}
    op = asked.get("op")
    spare = open_op is not None  # the open operation explains at most one difference
    for key, digest in expected.messages.items():
        if held.messages.get(key) != digest:
            found.lose(f"message {key[0]}#{key[1]}")
    for key in held.messages.keys() - expected.messages.keys():
        if (spare and op == "store" and asked["session"] == key[0]
                and asked["digest"] == held.messages[key]
                and asked["sequence"] in (None, key[1])):
            spare = False
        else:
            found.extra(f"message {key[0]}#{key[1]}")
    for note_id in expected.notes.keys() | held.notes.keys():
        want, have = expected.notes.get(note_id), held.notes.get(note_id)
        if want == have:
            continue
        if (spare and op in ("add", "write", "rename", "alias", "unalias", "remove")
                and asked["note_id"] in (None, note_id) and asked["after"] == have
                and (asked["note_id"] is not None or want is None)):
            spare = False
        elif want is not None:
            found.lose(f"note {note_id}: want {want}, file has {have}")
        else:
            found.extra(f"note {note_id}: {have}")
    for key, archive in expected.archives.items():
        if held.archives.get(key) != archive:
            found.lose(f"archive {archive[0]!r} at {key[0]}#{key[1]}")
    for key in held.archives.keys() - expected.archives.keys():
        if spare and op == "compact" and asked["session"] == key[0]:
            spare = False
        else:
            found.extra(f"archive {held.archives[key][0]!r}")
    for session_id, epoch in expected.epochs.items():
        if held.epochs.get(session_id, 0) < epoch:
            found.lose(f"summary of {session_id}: epoch {held.epochs.get(session_id)} < {epoch}")
    if open_op is not None and op != "summarize":
        found.open_committed = not spare
    return found
