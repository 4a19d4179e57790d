"""PostgreSQL: TO BE WRITTEN — core/storage/vectors.py's operations on an async connection."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from core.storage.pg.connection import Conn


async def get_meta(conn: Conn, key: str) -> str | None:
    """A value from memory_meta."""
    raise NotImplementedError("PostgreSQL: get_meta")


async def vector_dimension(conn: Conn) -> int | None:
    """The dimension the file's vector index was made with (None before the first open)."""
    raise NotImplementedError("PostgreSQL: vector_dimension")


async def ensure_vector_table(conn: Conn, dimension: int, model: str) -> None:
    """Create the vector index for ``dimension``, or refuse a file made for another size."""
    raise NotImplementedError("PostgreSQL: ensure_vector_table")


async def reset_vectors(conn: Conn, dimension: int, model: str) -> int:
    """Drop every vector, remake the index for ``dimension`` and queue every chunk again."""
    raise NotImplementedError("PostgreSQL: reset_vectors")


async def pending_chunks(
    conn: Conn, limit: int, after_rowid: int = 0
) -> list[tuple[str, str, str, int, str, str]]:
    """Chunks waiting for a vector: (chunk_id, session_id, text, fts_rowid, agent_identity,"""
    raise NotImplementedError("PostgreSQL: pending_chunks")


async def save_vectors(
    conn: Conn, rows: Sequence[tuple[str, str, str]], vectors: np.ndarray, model: str
) -> int:
    """Store vectors for (chunk_id, session_id, agent) rows and mark them done, in one go."""
    raise NotImplementedError("PostgreSQL: save_vectors")


async def record_failure(
    conn: Conn, chunk_ids: Sequence[str], error: str, max_attempts: int
) -> int:
    """Count a failed attempt on each chunk; a chunk out of attempts becomes 'failed'."""
    raise NotImplementedError("PostgreSQL: record_failure")


async def embedding_counts(conn: Conn) -> dict[str, Any]:
    """Backlog, failures, embedded count and vectors per model."""
    raise NotImplementedError("PostgreSQL: embedding_counts")


async def pulse(conn: Conn) -> tuple[int, int, int]:
    """The connection's data_version, the backlog and the failures, each by an index."""
    raise NotImplementedError("PostgreSQL: pulse")


async def backlog_count(conn: Conn) -> int:
    """Chunks still waiting for a vector."""
    raise NotImplementedError("PostgreSQL: backlog_count")
