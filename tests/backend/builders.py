"""Inputs for the backend contract suite, built as the engine's pipelines build them."""

from __future__ import annotations

import json
import uuid
from typing import Any

import numpy as np

from core import indexing
from core.storage.backend import Backend
from core.storage.messages import PreparedChunk, PreparedMessage
from core.storage.vocabulary import NoteDraft

DIMENSION = 8
MODEL = "contract-model"
NOW = "2026-01-01T00:00:00.000Z"
AGENT = "ana"


def chunks(text: str, max_chars: int = 640) -> tuple[PreparedChunk, ...]:
    """The chunks the engine would make of ``text``."""
    pieces = indexing.chunk_text(indexing.normalize_text(text), max_chars, 96)
    return tuple(PreparedChunk(piece, indexing.content_hash(piece)) for piece in pieces)


def message(session_id: str, sequence: int | None, text: str, *, agent: str = AGENT,
            role: str = "user", importance: float = 0.5, tags: tuple[str, ...] = (),
            created_at: str = NOW, bound: bool = False) -> PreparedMessage:
    """A prepared user message, as ``Conversations.prepare_message`` makes one."""
    metadata: dict[str, Any] = {"role": role}
    if tags:
        metadata["tags"] = list(tags)
    return PreparedMessage(
        session_id=session_id, sequence=sequence,
        payload_json=json.dumps({"role": role, "content": text}), role=role,
        importance=importance, chunks=chunks(text), chunk_metadata=metadata,
        agent_identity=agent, created_at=created_at, bound=bound)


async def store(backend: Backend, session_id: str, sequence: int | None, text: str,
                **fields: Any) -> None:
    """Store one message all-or-nothing, as ``Engine.store`` does."""
    await backend.write_messages([message(session_id, sequence, text, **fields)],
                                 all_or_nothing=True)


def unit(*values: float) -> np.ndarray:
    """A unit float32 vector of the test dimension starting with ``values``."""
    vector = np.zeros(DIMENSION, dtype=np.float32)
    vector[: len(values)] = values
    return vector / np.linalg.norm(vector)


async def embed_backlog(backend: Backend, vectors: dict[str, np.ndarray]) -> int:
    """Give every pending chunk a vector: ``vectors[text]``, else one along the last axis."""
    pending = await backend.pending_chunks(1000)
    rows = [(chunk_id, session_id, agent) for chunk_id, session_id, _, _, agent, _ in pending]
    fallback = unit(*([0.0] * (DIMENSION - 1)), 1.0)
    matrix = np.stack([vectors.get(text, fallback) for _, _, text, _, _, _ in pending]) \
        if pending else np.zeros((0, DIMENSION), dtype=np.float32)
    return await backend.save_vectors(rows, matrix, MODEL)


def note(namespace: str, name: str, content: str, *, aliases: tuple[str, ...] = (),
         kind: str = "Note", category: str = "core", tags: tuple[str, ...] = ()) -> NoteDraft:
    """A note draft, as the notes service makes one."""
    return NoteDraft(note_id=f"note-{uuid.uuid4()}", namespace=namespace, name=name,
                     aliases=aliases, content=content, kind=kind, category=category,
                     tags=tags, source="test", importance=0.5,
                     chunks=chunks(content))
