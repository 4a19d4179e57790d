"""PostgreSQL: TO BE WRITTEN — core/storage/search.py's operations on an async connection."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from core.storage.pg.connection import Conn
from core.storage.search import LegRequest, LegRows, Scope


async def fts_search(
    conn: Conn,
    scope: Scope,
    terms: Sequence[str],
    k: int,
    tags: Sequence[str] = (),
    context_weight: float = 0.5,
) -> list[tuple[str, float]]:
    """Top ``k`` chunks holding any of ``terms``: (chunk_id, -bm25, higher is better)."""
    raise NotImplementedError("PostgreSQL: fts_search")


async def vector_search(
    conn: Conn, scope: Scope, query: np.ndarray, k: int, model: str, tags: Sequence[str] = ()
) -> list[tuple[str, float]]:
    """The ``k`` nearest chunks by cosine distance: (chunk_id, distance)."""
    raise NotImplementedError("PostgreSQL: vector_search")


async def full_text_leg(
    conn: Conn, request: LegRequest
) -> tuple[list[tuple[str, float]], str | None]:
    """The full-text leg: bm25 over the terms (or raw syntax), else the LIKE fallback."""
    raise NotImplementedError("PostgreSQL: full_text_leg")


async def run_legs(conn: Conn, request: LegRequest, *, full_text: bool) -> LegRows:
    """Both legs and the chunks they found, one after the other on this connection."""
    raise NotImplementedError("PostgreSQL: run_legs")


async def fetch_chunks(conn: Conn, chunk_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Chunk rows by id: text, session, sequence range, metadata, context."""
    raise NotImplementedError("PostgreSQL: fetch_chunks")
