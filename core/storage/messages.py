"""A message as the write path takes it, and what a write decides before any SQL.

Both backends store messages the same way (oxydra's storage pipeline): sequences checked
against each session's last, one session row per session stamped with its messages' span,
each chunk either new or a content hash the session already holds (dedup: its
``sequence_end`` moves on), each new chunk indexed with the context of the messages before
it. The decisions live here, as functions of what the transaction read; the SQL that reads
and writes is each backend's (:mod:`core.storage.sqlite.events`, :mod:`core.storage.pg.events`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from core.errors import OutOfNamespace, SequenceError
from core.inputs import shown
from core.storage.fts_rows import context_text


@dataclass(frozen=True)
class PreparedChunk:
    """One chunk of a message, hashed and ready to insert."""

    text: str
    content_hash: str
    # Its words glued to its session's prefix (chunks_fts's session_text, see
    # core.storage.fts_rows), when worked out with the rest; None: the write does it.
    session_words: str | None = None


@dataclass(frozen=True)
class PreparedMessage:
    """A validated message with everything the write transaction needs, computed off-lock."""

    session_id: str
    sequence: int | None  # None: allocate the next sequence inside the transaction
    payload_json: str
    role: str
    importance: float
    chunks: tuple[PreparedChunk, ...]
    chunk_metadata: dict[str, Any]
    agent_identity: str | None
    created_at: str
    # The conversational context its chunks are indexed with, when the caller worked it out
    # already (the bulk path, which embeds before writing); None: the write path reads it.
    context: str | None = None
    # True: the session must belong to ``agent_identity`` (a namespace-bound caller); a
    # session another agent created is refused inside the write transaction.
    bound: bool = False
    # Worked out off the writer's lock with the rest (None: by the write): its chunks' ids,
    # and their metadata_json at its given ``sequence``. In the write they were 1.7 s of a
    # 100k-chunk import's 12 s on the writer's lane, where every other step waits for it.
    chunk_ids: tuple[str, ...] | None = None
    metadata_json: str | None = None
    # The bulk path's full-text words, worked out off the writer's thread too (None: the
    # write does it): its first chunk as a later message's context part, and its context,
    # each glued to the session's prefix (session_context, see core.storage.fts_rows).
    part_words: str | None = None
    context_words: str | None = None

    def with_context(self, context: str, context_words: str | None = None) -> PreparedMessage:
        """This message with its chunks' context (and that context's prefixed words, when
        known) worked out.

        ``dataclasses.replace`` would run every field through the frozen ``__setattr__``
        again; the bulk path calls this once per message on the event loop's thread.
        """
        copy = object.__new__(PreparedMessage)
        copy.__dict__.update(self.__dict__, context=context, context_words=context_words)
        return copy


class WriteOutcome(NamedTuple):
    """Per message: its sequence and how many chunks were new or deduplicated (a tuple:
    an import makes two per message on the writer's lane)."""

    sequence: int | None
    inserted: int
    deduplicated: int
    error: str | None = None


def chunk_id_for(session_id: str, content_hash: str) -> str:
    """A chunk's id: stable for a session and content, so dedup is a primary-key upsert."""
    digest = hashlib.sha256(f"{session_id}\x00{content_hash}".encode()).hexdigest()
    return f"chk-{digest[:32]}"


def chunk_metadata_json(metadata: Mapping[str, Any], sequence: int) -> str:
    """A new chunk's ``metadata_json``: its message's chunk metadata, and its sequence."""
    fields = dict(metadata)
    fields["sequence"] = sequence
    return json.dumps(fields, ensure_ascii=False)


def out_of_namespace(session_id: str, namespace: str) -> str:
    """The refusal of a namespace-bound call on another namespace's session (whose owner it
    does not name)."""
    return (f"session {shown(session_id)} belongs to another namespace, not to {namespace!r}; "
            "nothing was read or written (use a session id of your own)")


def allocate_sequences(messages: Sequence[PreparedMessage],
                       last_by_session: dict[str, int | None], all_or_nothing: bool,
                       ) -> tuple[list[WriteOutcome], list[tuple[PreparedMessage, int]]]:
    """Each message's sequence (the next one when it has none) checked against its
    session's last, which ``last_by_session`` holds and is moved on as messages are taken;
    the outcomes in order and the accepted messages. A sequence not above the last is a
    ``SequenceError`` with ``all_or_nothing``, else that message's outcome says why."""
    outcomes: list[WriteOutcome] = []
    accepted: list[tuple[PreparedMessage, int]] = []
    for message in messages:
        sid = message.session_id
        last = last_by_session[sid]
        sequence = message.sequence
        if sequence is None:
            sequence = 1 if last is None else last + 1
        elif last is not None and sequence <= last:
            error = (f"sequence {sequence} for session {shown(sid)} is not greater than "
                     f"its last sequence {last}")
            if all_or_nothing:
                raise SequenceError(error)
            outcomes.append(WriteOutcome(message.sequence, 0, 0, error))
            continue
        last_by_session[sid] = sequence
        accepted.append((message, sequence))
        outcomes.append(WriteOutcome(sequence, 0, 0))
    return outcomes, accepted


def session_spans(accepted: Sequence[tuple[PreparedMessage, int]],
                  ) -> tuple[dict[str, PreparedMessage], dict[str, tuple[str, str]]]:
    """Per session written: its last accepted message, and the earliest and latest
    ``created_at`` of its messages (a session row is made at the one and stamped with the
    other; messages may carry older times, so ``updated_at`` never moves back)."""
    touched: dict[str, PreparedMessage] = {}
    spans: dict[str, tuple[str, str]] = {}
    for message, _ in accepted:
        sid, at = message.session_id, message.created_at
        touched[sid] = message
        span = spans.get(sid)
        spans[sid] = (at, at) if span is None else (min(span[0], at), max(span[1], at))
    return touched, spans


def check_owners(touched: Mapping[str, PreparedMessage], agents: Mapping[str, str]) -> None:
    """``OutOfNamespace`` when a namespace-bound message names a session another agent
    created (``agents``: each session's agent identity, '' for none)."""
    for message in touched.values():
        if message.bound and agents[message.session_id] != (message.agent_identity or ""):
            raise OutOfNamespace(out_of_namespace(message.session_id,
                                                  message.agent_identity or ""))


class PlannedChunk(NamedTuple):
    """One chunk of an accepted message: its id, its row in the given vectors and, once
    :func:`plan_chunks` found it new, its message's metadata as JSON."""

    message: PreparedMessage
    sequence: int
    chunk_id: str
    chunk: PreparedChunk
    vector_row: int
    metadata_json: str = ""


class ChunkPlan(NamedTuple):
    """What the chunks of a write come to."""

    new: list[PlannedChunk]
    extended: dict[str, int]
    """Stored chunks whose content came again: chunk id -> its new ``sequence_end``."""
    counts: dict[int, list[int]]
    """Per message ``id``: [chunks inserted, chunks deduplicated]."""


def planned_chunks(messages: Sequence[PreparedMessage],
                   accepted: Sequence[tuple[PreparedMessage, int]]) -> list[PlannedChunk]:
    """Every chunk of the accepted messages; vectors rows count the chunks of all
    ``messages`` (refused ones too), in message and chunk order."""
    first_row: dict[int, int] = {}
    row = 0
    for message in messages:
        first_row[id(message)] = row
        row += len(message.chunks)
    planned = []
    for m, seq in accepted:
        ids = m.chunk_ids
        if ids is None:
            ids = tuple(chunk_id_for(m.session_id, c.content_hash) for c in m.chunks)
        row = first_row[id(m)]
        planned += [PlannedChunk(m, seq, chunk_id, c, row + position)
                    for position, (c, chunk_id) in enumerate(zip(m.chunks, ids, strict=True))]
    return planned


def plan_chunks(planned: Sequence[PlannedChunk], stored: dict[str, int]) -> ChunkPlan:
    """Which chunks are new (with their metadata) and which extend a stored one, given
    ``stored``: the ``sequence_end`` of those of ``planned`` already in the session (moved
    on in place; a content met twice in one write is stored once)."""
    new: list[PlannedChunk] = []
    extended: dict[str, int] = {}
    counts: dict[int, list[int]] = {}
    metadata_by_message: dict[int, str] = {}
    for chunk in planned:
        message, sequence, chunk_id = chunk.message, chunk.sequence, chunk.chunk_id
        tally = counts.setdefault(id(message), [0, 0])
        if chunk_id in stored:
            stored[chunk_id] = max(stored[chunk_id], sequence)
            extended[chunk_id] = stored[chunk_id]
            tally[1] += 1
            continue
        metadata = metadata_by_message.get(id(message))
        if metadata is None:
            metadata = (message.metadata_json if message.metadata_json is not None
                        and message.sequence == sequence
                        else chunk_metadata_json(message.chunk_metadata, sequence))
            metadata_by_message[id(message)] = metadata
        new.append(PlannedChunk(message, sequence, chunk_id, chunk.chunk, chunk.vector_row,
                                metadata))
        stored[chunk_id] = sequence
        tally[0] += 1
    return ChunkPlan(new, extended, counts)


def sessions_wanting_context(accepted: Sequence[tuple[PreparedMessage, int]],
                             count: int) -> list[str]:
    """The sessions whose last messages' texts :func:`contexts` needs read from storage."""
    if count <= 0:
        return []
    return list(dict.fromkeys(m.session_id for m, _ in accepted if m.context is None))


def contexts(accepted: Sequence[tuple[PreparedMessage, int]], tails: Mapping[str, list[str]],
             count: int, max_chars: int) -> dict[int, str]:
    """Each accepted message's context (keyed by ``id``): its own when the caller worked it
    out, else the first chunk texts of the ``count`` messages before it in its session, from
    ``tails`` (each session's stored ones, oldest first) and the messages before it here."""
    found: dict[int, str] = {}
    running = {sid: list(texts) for sid, texts in tails.items()}
    for message, _ in accepted:
        if message.context is not None or count <= 0:
            found[id(message)] = message.context or ""
            continue
        tail = running[message.session_id]
        found[id(message)] = context_text(tail[-count:], max_chars)
        if message.chunks:
            tail.append(message.chunks[0].text)
    return found


def with_counts(messages: Sequence[PreparedMessage], outcomes: Sequence[WriteOutcome],
                counts: Mapping[int, list[int]]) -> list[WriteOutcome]:
    """The outcomes, each stored message's with its chunks inserted and deduplicated."""
    return [outcome if outcome.error is not None else WriteOutcome(
                outcome.sequence, *counts.get(id(message), (0, 0)))
            for message, outcome in zip(messages, outcomes, strict=True)]
