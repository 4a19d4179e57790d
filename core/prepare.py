"""A message validated and cut into the rows it is stored as, off every lock.

The single store, the framework adapters, the bulk path and the bulk path's helper process
(:mod:`core.embeddings.process`, which prepares and embeds an import's batches on a core of its
own) all prepare messages here, from the configuration alone, so a message prepared in the
helper is the one this process would have prepared.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from core import indexing, inputs
from core.errors import InvalidInput
from core.storage.fts_rows import prefixed, session_prefix
from core.storage.messages import (
    PreparedChunk,
    PreparedMessage,
    chunk_id_for,
    chunk_metadata_json,
)
from core.storage.vocabulary import MEMORY_PREFIX
from core.types import Rejected

if TYPE_CHECKING:
    from core.config import Config


def prepare_message(config: Config, session_id: str, sequence: int | None, payload: object,
                    agent: str | None, created_at: str, bound: bool = False,
                    words: bool = False) -> PreparedMessage:
    """Validate a message and compute its rows (text, chunks, hashes, metadata).

    ``bound``: the write is refused (``OutOfNamespace``) unless the session is ``agent``'s
    or new. ``words``: its full-text words glued to the session's prefix are worked out too
    (the bulk path; the writer's thread did it, 1.2 s of a 100k import). Raises
    ``InvalidInput`` (``InvalidMessage`` for a bad payload); writes nothing.
    """
    inputs.session_id(session_id)
    if agent is not None:
        inputs.utf8_text(agent, "agent")
    if session_id.startswith(MEMORY_PREFIX):
        raise InvalidInput(f"session {inputs.shown(session_id)} holds a namespace's notes (its "
                           f"name begins with {MEMORY_PREFIX!r}); write notes with add_note "
                           "or save_memory, and messages to another session")
    if sequence is not None:
        inputs.int64(sequence, "sequence")
    message = indexing.validate_message(payload)
    payload_json = inputs.within_size(
        json.dumps(message, ensure_ascii=False, allow_nan=False), "message",
        config.storage.max_content_kb)
    role = message["role"]
    importance = message.get("importance")
    if importance is None:
        importance = indexing.default_importance(role, config.importance)
    text = indexing.normalize_text(indexing.extract_indexable_text(message))
    chunking = config.chunking
    pieces = indexing.chunk_text(text, chunking.max_chars, chunking.overlap_chars)
    part_words = None
    if words:
        prefix = session_prefix(session_id)
        chunks = tuple(PreparedChunk(piece, indexing.content_hash(piece),
                                     prefixed(prefix, piece)) for piece in pieces)
        if chunks:
            part_words = prefixed(prefix, pieces[0][:chunking.context_chars])
    else:
        chunks = tuple(PreparedChunk(piece, indexing.content_hash(piece)) for piece in pieces)
    event_metadata = message.get("metadata") or {}
    chunk_metadata: dict[str, Any] = dict(event_metadata)
    if "tags" in event_metadata:
        notes = config.notes
        chunk_metadata["tags"] = indexing.normalize_tags(
            event_metadata["tags"], notes.max_tags, notes.max_tag_chars)
    chunk_metadata["role"] = role
    for key in ("tool_name", "tool_call_id", "name"):
        if message.get(key):
            chunk_metadata[key] = message[key]
    return PreparedMessage(
        session_id=session_id, sequence=sequence,
        payload_json=payload_json,
        role=role, importance=float(importance), chunks=chunks,
        chunk_metadata=chunk_metadata, agent_identity=agent or config.agent,
        created_at=created_at, bound=bound,
        chunk_ids=tuple(chunk_id_for(session_id, chunk.content_hash) for chunk in chunks),
        metadata_json=None if sequence is None else chunk_metadata_json(chunk_metadata,
                                                                        sequence),
        part_words=part_words)


# ``(index, (session_id, sequence or None, payload[, created_at]))``: a bulk item and its place.
IndexedItem = tuple[int, tuple[Any, ...]]


def prepare_batch(config: Config, items: Sequence[IndexedItem], agent: str | None,
                  batch_time: str) -> tuple[list[tuple[int, PreparedMessage]], list[Rejected]]:
    """A bulk batch prepared: its messages with their places, and the items refused (an
    invalid message, or a ``created_at`` that :func:`core.inputs.message_time` refuses).
    ``batch_time`` (:func:`core.clock.utc_now` where the import runs) stamps the messages
    given no time of their own."""
    batch: list[tuple[int, PreparedMessage]] = []
    refused: list[Rejected] = []
    for index, item in items:
        try:
            if len(item) == 3:
                session_id, sequence, payload = item
                created_at = batch_time
            else:
                session_id, sequence, payload, given = item
                created_at = inputs.message_time(given) or batch_time
            batch.append((index, prepare_message(config, session_id, sequence, payload, agent,
                                                 created_at, words=True)))
        except InvalidInput as exc:
            refused.append(Rejected(index, str(session_id),
                                    sequence if isinstance(sequence, int) else None, str(exc)))
    return batch, refused


def texts_to_embed(batch: Sequence[tuple[int, PreparedMessage]], context_messages: int,
                   context_chars: int) -> list[str]:
    """What a batch embeds: its chunks' texts in order, then, with context on, the first
    chunks longer than a context part, cut as a part is (a later message's context)."""
    texts = [chunk.text for _, prepared in batch for chunk in prepared.chunks]
    if context_messages > 0:
        texts += [prepared.chunks[0].text[:context_chars] for _, prepared in batch
                  if prepared.chunks and len(prepared.chunks[0].text) > context_chars]
    return texts
