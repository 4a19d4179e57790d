"""What a derived index costs, as ``bench query`` prints it: build time, size, memory."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from workbench.bench.measure import resident_anon_mb


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


async def build_derived_full_text(engine: Any, namespace: str) -> FullTextFigures | None:
    """Start the namespace full-text index's build with one query and wait for it; None
    when the backend keeps no such index (PostgreSQL) or its build failed."""
    backend = engine.backend
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
