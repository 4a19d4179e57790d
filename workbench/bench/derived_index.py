"""What a derived index costs, as ``bench query`` prints it: build time, size, memory."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from workbench.bench.measure import resident_anon_mb

if TYPE_CHECKING:
    from core.engine import Engine


@dataclass(frozen=True)
class FullTextFigures:
    """The derived full-text index of the measured memory."""

    build_seconds: float
    rows: int
    arrays_mb: float  # its numpy arrays (postings, row lengths)
    rss_growth_mb: float  # private resident memory before the build and after it

    def line(self) -> str:
        """The figures as the line the command prints."""
        return (f"derived full text     {self.rows:,} rows indexed in {self.build_seconds:,.1f} s"
                f" (in the background; FTS5 answers until then); {self.arrays_mb:,.0f} MiB of"
                f" arrays, resident memory +{self.rss_growth_mb:,.0f} MiB")


@dataclass(frozen=True)
class PgDerivedFigures:
    """A PostgreSQL namespace's derived indexes (its matrix and its postings) in memory."""

    build_seconds: float
    chunks: int
    vectors: int
    postings: int
    vector_mb: float
    postings_mb: float
    rss_growth_mb: float

    def line(self) -> str:
        """The figures as the line the command prints."""
        return (f"derived indexes       {self.vectors:,} vectors and {self.postings:,} postings"
                f" of {self.chunks:,} chunks loaded in {self.build_seconds:,.1f} s (in the"
                " background; the SQL path answers until then); arrays: matrix"
                f" {self.vector_mb:,.0f} MiB, postings {self.postings_mb:,.0f} MiB;"
                f" resident memory +{self.rss_growth_mb:,.0f} MiB")


async def merged_full_text(engine: Engine, say: Callable[[str], None]) -> None:
    """Merge the full-text index's segments now, as the engine does once the memory has
    been quiet (core/upkeep.py), so queries are timed on a tidy index; say how long."""
    began = time.perf_counter()
    steps = await engine.upkeep.merge_now()
    say(f"full-text segments merged: {steps:,} steps in {time.perf_counter() - began:,.1f} s")


async def build_derived_full_text(engine: Engine, namespace: str,
                                  ) -> FullTextFigures | PgDerivedFigures | None:
    """Start the namespace full-text index's build with one query and wait for it; None
    when the backend keeps no such index or its build failed. On PostgreSQL the namespace's
    matrix and postings are one build."""
    from core.storage.pg.backend import PostgresBackend

    if isinstance(engine.backend, PostgresBackend):
        before = resident_anon_mb()
        held = await engine.backend.derived.indexes.build_now(namespace)
        if not held.ready:
            return None
        return PgDerivedFigures(
            build_seconds=held.build_seconds or 0.0, chunks=held.postings.chunk_count(),
            vectors=held.vectors.rows(), postings=held.postings.postings_count(),
            vector_mb=held.vectors.memory_bytes() / 2**20,
            postings_mb=held.postings.memory_bytes() / 2**20,
            rss_growth_mb=resident_anon_mb() - before)
    backend: Any = engine.backend  # the SQLite backend's own derived indexes
    derived = getattr(backend, "derived_full_text", None)
    if derived is None:
        return None
    before = resident_anon_mb()
    await engine.search(namespace=namespace, query="derived index warm-up", mode="keyword",
                        top_k=1)
    index = derived.index
    await asyncio.to_thread(backend.derived.build_now, index.name)  # waits for that build
    state = backend.derived.state(index.name)
    if not state.ready:
        return None
    with backend.derived.lock(index.name):
        arrays = index.memory_bytes()
    return FullTextFigures(build_seconds=state.build_seconds or 0.0, rows=index.row_count,
                          arrays_mb=arrays / (1024 * 1024),
                          rss_growth_mb=resident_anon_mb() - before)
