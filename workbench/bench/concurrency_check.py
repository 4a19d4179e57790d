"""What ``workbench bench concurrency`` checks after its run: that nothing acknowledged was lost.

Both sides record every write they were acknowledged for in a :class:`Ledger`; a fresh engine
then reads the file back (:func:`verify`). A note or scratchpad written by both sides is a
register: it must hold its last acknowledged value, or, where the last writes overlapped in
time, one of them (:func:`last_writes`).
"""

from __future__ import annotations

import contextlib
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

AGENT = "agent"
DEVELOPER = "developer"
SIDES = (AGENT, DEVELOPER)


@dataclass
class Write:
    """One acknowledged write of a value: who, and its window on this process's clock."""

    side: str
    started: float
    acked: float
    value: Any


@dataclass
class Ledger:
    """What both sides did: latencies, errors, refusals, and every acknowledged write."""

    latencies: dict[str, dict[str, list[float]]] = field(
        default_factory=lambda: {side: defaultdict(list) for side in SIDES})
    errors: dict[str, list[str]] = field(default_factory=lambda: {side: [] for side in SIDES})
    refusals: Counter[str] = field(default_factory=Counter)
    done: Counter[str] = field(default_factory=Counter)
    # (session_id, sequence) -> (op id, role, content) of every acknowledged append
    appends: dict[tuple[str, int], tuple[str, str, Any]] = field(default_factory=dict)
    # ("note", namespace, note_id) or ("scratchpad", session_id) -> its acknowledged writes
    registers: dict[tuple[str, ...], list[Write]] = field(default_factory=lambda: defaultdict(list))
    removed: set[tuple[str, str]] = field(default_factory=set)  # (namespace, note_id)
    keys: dict[str, str] = field(default_factory=dict)  # agent memory key -> its note_id

    def timing(self, side: str, kind: str, seconds: float) -> None:
        self.latencies[side][kind].append(seconds)

    def error(self, side: str, kind: str, text: str) -> None:
        self.errors[side].append(f"{kind}: {text}")


def last_writes(writes: list[Write]) -> list[Write]:
    """The writes that may have committed last: those no other write started after the
    acknowledgement of (a write that began after W was acknowledged certainly came after W)."""
    latest_start = max(write.started for write in writes)
    return [write for write in writes if write.acked >= latest_start]


@dataclass
class Verdict:
    """What the fresh engine found."""

    appends_checked: int = 0
    lost_appends: int = 0
    unacknowledged_events: int = 0
    registers_checked: int = 0
    lost_notes: int = 0
    lost_scratchpads: int = 0
    races: int = 0
    removed_back: int = 0
    keys_moved: int = 0
    integrity: list[str] = field(default_factory=list)
    embedding_failed: int = 0
    examples: list[str] = field(default_factory=list)

    @property
    def lost(self) -> int:
        return (self.lost_appends + self.unacknowledged_events + self.lost_notes
                + self.lost_scratchpads + self.removed_back + self.keys_moved)

    def miss(self, text: str) -> None:
        if len(self.examples) < 10:
            self.examples.append(text)


async def verify(path: Path, config: Any, ledger: Ledger) -> Verdict:
    """Open the file afresh and check every acknowledged write against it."""
    from core import Engine
    from core.errors import NotFound

    verdict = Verdict()
    async with Engine.open(path, config=config, start_worker=False) as engine:
        by_session: dict[str, dict[int, tuple[str, str, Any]]] = defaultdict(dict)
        for (session_id, sequence), expected in ledger.appends.items():
            by_session[session_id][sequence] = expected
        for session_id, wanted in by_session.items():
            stored = {record.sequence: record.payload for record in
                      await engine.recall(session_id)}
            for sequence, (op, role, content) in wanted.items():
                verdict.appends_checked += 1
                payload = stored.get(sequence)
                if (payload is None or payload.get("role") != role
                        or payload.get("content") != content
                        or (payload.get("metadata") or {}).get("op") != op):
                    verdict.lost_appends += 1
                    verdict.miss(f"append {op} at {session_id}#{sequence}: found {payload!r:.120}")
            extra = sorted(set(stored) - set(wanted))
            verdict.unacknowledged_events += len(extra)
            if extra:
                verdict.miss(f"{session_id}: events nobody acknowledged at {extra[:5]}")
        for register, writes in ledger.registers.items():
            if register[0] == "note" and (register[1], register[2]) in ledger.removed:
                continue  # checked below: it must stay removed
            verdict.registers_checked += 1
            allowed = last_writes(writes)
            if len({write.side for write in allowed}) > 1:
                verdict.races += 1
            if register[0] == "note":
                _, namespace, note_id = register
                try:
                    found: Any = (await engine.get_note(note_id, namespace=namespace)).content
                except NotFound:
                    found = None
            else:
                state = await engine.read_scratchpad(register[1])
                found = None if state is None else list(state.items)
            if all(found != write.value for write in allowed):
                if register[0] == "note":
                    verdict.lost_notes += 1
                else:
                    verdict.lost_scratchpads += 1
                verdict.miss(f"{'/'.join(register)} holds {found!r:.80}; acknowledged last: "
                             f"{[w.value for w in allowed]!r:.160}")
        for namespace, note_id in ledger.removed:
            with contextlib.suppress(NotFound):
                await engine.get_note(note_id, namespace=namespace)
                verdict.removed_back += 1
                verdict.miss(f"removed note {note_id} is back")
        for key, note_id in ledger.keys.items():
            note = await engine.get_note(key, namespace=AGENT)
            if note.note_id != note_id:
                verdict.keys_moved += 1
                verdict.miss(f"memory key {key!r} names {note.note_id}, not {note_id}")
        verdict.integrity = await engine.backend.integrity_check()
        verdict.embedding_failed = (await engine.embedding_status()).failed
    return verdict
