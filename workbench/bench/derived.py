"""What ``bench query`` measures of a SQLite memory's derived namespace index.

The namespace matrix (:mod:`core.storage.derived.vector_matrix`) is built once, timed, and
its memory set against the raw vector bytes; then the namespace vector leg is timed from
the matrix and from sqlite-vec's scan of the same vectors, on the same query vectors in the
same run, and the two answers' top 10 are compared.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from workbench.bench.measure import percentile, resident_mb

if TYPE_CHECKING:
    from core.engine import Engine

MEMORY_GOAL_RATIO = 1.2


@dataclass
class DerivedFigures:
    """The derived namespace matrix: its build, its memory, its leg against sqlite-vec."""

    build_seconds: float
    vectors: int
    index_bytes: int
    raw_bytes: int
    rss_growth_mb: float  # resident memory after the build less before it
    matrix_p50_ms: float
    matrix_p95_ms: float
    sqlite_vec_p50_ms: float
    sqlite_vec_p95_ms: float
    same_top: int  # queries whose top 10 is the same from both
    queries: int
    depth: int

    @property
    def memory_ratio(self) -> float:
        return self.index_bytes / self.raw_bytes if self.raw_bytes else 0.0

    def lines(self, top_k: int) -> list[str]:
        """The figures as the lines ``bench query`` prints."""
        ratio = self.memory_ratio
        met = "goal met" if ratio <= MEMORY_GOAL_RATIO else "goal missed"
        return [
            f"derived index         namespace matrix of {self.vectors:,} vectors built in "
            f"{self.build_seconds:,.2f} s; {self.index_bytes:,} bytes "
            f"({self.index_bytes / 2**20:,.1f} MiB), {ratio:.3f}x the raw vector bytes "
            f"(goal <= {MEMORY_GOAL_RATIO:g}x: {met}); resident memory "
            f"+{self.rss_growth_mb:,.0f} MiB",
            f"namespace vector leg  matrix p50 {self.matrix_p50_ms:.3f} ms, p95 "
            f"{self.matrix_p95_ms:.3f} ms; sqlite-vec p50 {self.sqlite_vec_p50_ms:.3f} ms, "
            f"p95 {self.sqlite_vec_p95_ms:.3f} ms (top {self.depth}, query embedded before)",
            f"  exactness           top {top_k} equal to sqlite-vec's in {self.same_top} of "
            f"{self.queries} queries",
        ]


async def measure_derived(engine: Engine, vectors: Any, namespace: str, depth: int, top_k: int,
                          say: Any) -> DerivedFigures | None:
    """Build the namespace matrix and time its leg against sqlite-vec's (None: not SQLite)."""
    from core.storage import SqliteBackend
    from core.storage.derived.vector_matrix import DERIVED_VECTOR_LEG
    from core.storage.vocabulary import Scope

    backend = engine.backend
    if not isinstance(backend, SqliteBackend):
        return None
    say("building the derived namespace matrix …")
    rss_before = resident_mb()
    index = backend.namespace_vectors
    await asyncio.to_thread(backend.derived.build_now, index.name)
    state = backend.derived.state(index.name)
    if not state.ready:
        raise RuntimeError(f"the derived namespace matrix was not built: {state.problem}")
    rss_growth = resident_mb() - rss_before
    scope, model = Scope(namespace=namespace), engine.embedder.name

    say("timing the namespace vector leg: matrix, then sqlite-vec …")
    matrix_ms, sqlite_ms, same = [], [], 0
    for vector in vectors:
        began = time.perf_counter()
        ours, path = await backend.vector_leg(scope, vector, depth, model)
        matrix_ms.append((time.perf_counter() - began) * 1000)
        if path != DERIVED_VECTOR_LEG:
            raise RuntimeError(f"the namespace vector leg was answered by {path}")
        began = time.perf_counter()
        theirs = await backend.vector_search(scope, vector, depth, model)
        sqlite_ms.append((time.perf_counter() - began) * 1000)
        same += [cid for cid, _ in ours[:top_k]] == [cid for cid, _ in theirs[:top_k]]
    return DerivedFigures(
        build_seconds=state.build_seconds or 0.0, vectors=index.rows(),
        index_bytes=index.memory_bytes(), raw_bytes=index.raw_bytes(),
        rss_growth_mb=rss_growth,
        matrix_p50_ms=percentile(matrix_ms, 0.5), matrix_p95_ms=percentile(matrix_ms, 0.95),
        sqlite_vec_p50_ms=percentile(sqlite_ms, 0.5),
        sqlite_vec_p95_ms=percentile(sqlite_ms, 0.95),
        same_top=same, queries=len(matrix_ms), depth=depth)
