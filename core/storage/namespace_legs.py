"""A namespace's two search legs at once, then the chunks they found: how a backend whose
legs name their rows by chunk id answers :meth:`core.storage.backend.Backend.namespace_legs`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Sequence
from typing import TYPE_CHECKING, Protocol

import numpy as np

from core.storage.executed import Executed
from core.storage.vocabulary import FullTextRows, LegRequest, LegRows, Scope

if TYPE_CHECKING:
    from core.storage.rows import ChunkRow


class Legs(Protocol):
    """The three operations the legs-then-fetch way needs of a backend."""

    async def full_text_leg(self, request: LegRequest) -> FullTextRows: ...

    async def vector_leg(self, scope: Scope, query: np.ndarray, k: int, model: str,
                         tags: Sequence[str] = ()) -> tuple[list[tuple[str, float]], str]: ...

    async def fetch_chunks(self, chunk_ids: Sequence[str]) -> dict[str, ChunkRow]: ...


async def legs_then_fetch(backend: Legs, request: LegRequest, *, full_text: bool,
                          query_vector: Awaitable[np.ndarray | None] | None) -> LegRows:
    """The legs side by side, each on a connection of its own (the vector leg once
    ``query_vector`` is ready, so the full-text leg runs while the query is embedded),
    then one read of the chunks they found."""
    timings: dict[str, float] = {}
    fts_rows: list[tuple[str, float]] = []
    vector_rows: list[tuple[str, float]] = []
    fallback: str | None = None
    path: str | None = None
    ran: list[Executed] = []

    async def fts_leg() -> None:
        nonlocal fts_rows, fallback, ran
        started = time.perf_counter()
        fts_rows, fallback, ran = await backend.full_text_leg(request)
        timings["fts"] = (time.perf_counter() - started) * 1000

    async def vector_leg() -> None:
        nonlocal vector_rows, path
        assert query_vector is not None
        started = time.perf_counter()
        vector = await query_vector
        if vector is not None:
            vector_rows, path = await backend.vector_leg(
                request.scope, vector, request.depth, request.model, list(request.tags))
        timings["vector"] = (time.perf_counter() - started) * 1000

    await asyncio.gather(*([fts_leg()] if full_text else []),
                         *([vector_leg()] if query_vector is not None else []))
    started = time.perf_counter()
    chunks = await backend.fetch_chunks(sorted({row[0] for row in fts_rows}
                                               | {row[0] for row in vector_rows}))
    timings["fetch"] = (time.perf_counter() - started) * 1000
    return LegRows(fts_rows, fallback, vector_rows, chunks, timings, path, ran)
