"""Landing imported conversation messages: idempotently, in one namespace, every one counted.

An importer turns its source into :class:`PlannedMessage` items (session, sequence, the
validated payload, its original time, where it came from) and hands them to
:func:`land_messages`, which decides for each one, against what the target holds:

- the target holds the very same payload at that session and sequence: **already**;
- the session belongs to another namespace, or holds *other* messages than the source at
  some sequence, or has grown past a sequence the source still lacks: **skipped**, with the
  reason (a conversation is never interleaved with another one);
- otherwise it is stored through ``Engine.store_many`` (the bulk path: many messages a
  transaction, embedded as they are written), under ``agent=namespace``, each event
  keeping the source's time as its ``created_at``.

Sequences are the identity: importing a file a second time finds every message at its
sequence and adds nothing; a source that grew since is imported from where it stopped.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from core.bulk import IMPORT_BATCH
from core.clock import normalise_timestamp
from core.errors import InvalidInput
from core.importers.report import ImportReport, Progress
from core.storage.vocabulary import MEMORY_PREFIX

if TYPE_CHECKING:
    from core.engine import Engine

KIND = "messages"
@dataclass(frozen=True)
class PlannedMessage:
    """One message to import: where it goes, what it is, where the source holds it."""

    session_id: str
    sequence: int
    payload: dict[str, Any]  # as indexing.validate_message returns it
    where: str               # "line 12", "messages row 'uuid'", ...
    created_at: str | None = None  # the engine's text (see source_time); None: when stored


def source_time(value: Any) -> str | None:
    """A source message's time as the engine writes times (None when it has none);
    ``InvalidInput`` naming the value when it is not a timestamp string that
    :func:`core.clock.normalise_timestamp` reads."""
    if value is None:
        return None
    try:
        return normalise_timestamp(value)
    except ValueError as exc:
        raise InvalidInput(f"created_at {exc}") from None


async def session_owners(engine: Engine) -> dict[str, str | None]:
    """Every session of the target file and the agent identity it belongs to."""
    return {s.session_id: s.agent_identity for s in await engine.list_sessions()}


async def land_messages(engine: Engine, planned: Sequence[PlannedMessage], report: ImportReport,
                        *, namespace: str, owners: dict[str, str | None] | None = None,
                        progress: Progress | None = None, done: int = 0,
                        total: int | None = None) -> int:
    """Store what the target lacks of ``planned`` (see the module docstring).

    ``done``/``total`` place these messages within a larger import for ``progress``;
    returns ``done`` moved past them.
    """
    total = len(planned) if total is None else total
    report.kind(KIND)
    if owners is None:
        owners = await session_owners(engine)
    by_session: dict[str, list[PlannedMessage]] = {}
    for item in planned:
        by_session.setdefault(item.session_id, []).append(item)
    to_store: list[PlannedMessage] = []
    for session_id, items in by_session.items():
        items.sort(key=lambda m: m.sequence)
        settled = await _settle_session(engine, session_id, items, report, namespace, owners)
        to_store.extend(settled)
        done += len(items) - len(settled)
    if progress is not None:
        progress(done, total)
    if not to_store:
        return done
    first = done

    def stored_so_far(settled: int) -> None:
        if progress is not None:
            progress(first + settled, total)

    # One call: one pipeline from the first batch to the last (core.bulk.BulkIngest).
    result = await engine.store_many(
        [(m.session_id, m.sequence, m.payload, m.created_at) for m in to_store],
        agent=namespace, batch_size=IMPORT_BATCH, progress=stored_so_far)
    refused = {r.index: r.reason for r in result.rejected}
    for index, item in enumerate(to_store):
        if index in refused:
            report.skip(KIND, item.where, refused[index])
        else:
            report.added(KIND)
            owners.setdefault(item.session_id, namespace)
    return done + len(to_store)


async def _settle_session(engine: Engine, session_id: str, items: list[PlannedMessage],
                          report: ImportReport, namespace: str,
                          owners: dict[str, str | None]) -> list[PlannedMessage]:
    """Count what the target holds of one session's messages (or why none can land);
    return the ones to store, in sequence order."""
    if session_id.startswith(MEMORY_PREFIX):
        for item in items:
            report.skip(KIND, item.where, f"session {session_id!r} is a namespace's notes "
                        "session; messages cannot be stored in it")
        return []
    if session_id in owners and owners[session_id] != namespace:
        for item in items:
            report.skip(KIND, item.where, f"session {session_id!r} belongs to another "
                        f"namespace in the target, not to {namespace!r}")
        return []
    held = ({r.sequence: r.payload for r in await engine.recall(session_id)}
            if session_id in owners else {})
    clash = next((m for m in items if m.sequence in held and held[m.sequence] != m.payload),
                 None)
    last = max(held, default=None)
    fresh: list[PlannedMessage] = []
    for item in items:
        if item.sequence in held and held[item.sequence] == item.payload:
            report.already(KIND)
        elif clash is not None:
            report.skip(KIND, item.where, f"session {session_id!r} in the target holds other "
                        f"messages (its #{clash.sequence} differs from {clash.where}); forget "
                        "that session or import into another file")
        elif last is not None and item.sequence < last:
            report.skip(KIND, item.where, f"session {session_id!r} in the target goes on to "
                        f"#{last} without this message (#{item.sequence}); a message cannot be "
                        "inserted into the middle of a conversation")
        else:
            fresh.append(item)
    return fresh
