"""``bench query``: a small run builds its file, times every query path and prints figures."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from core import Engine
from tests.conftest import DETERMINISTIC
from workbench.bench.query import QueryFigures, run_query_bench


def test_bench_query_measures_every_path(tmp_path: Path) -> None:
    said: list[str] = []
    keep = tmp_path / "bench.db"
    figures = asyncio.run(run_query_bench(DETERMINISTIC, 1500, 30, queries=40, keep=keep,
                                          say=said.append))
    assert isinstance(figures, QueryFigures)
    assert 1500 <= figures.chunks < 1600
    assert figures.sessions == 30 and figures.queries == 40
    assert figures.dimension == 64
    for name in ("embed_p50_ms", "session_p50_ms", "session_p95_ms", "namespace_p50_ms",
                 "namespace_p95_ms", "refusion_p50_ms", "refusion_p95_ms", "numpy_p50_ms",
                 "numpy_p95_ms", "numpy_alone_p50_ms", "numpy_alone_p95_ms",
                 "session_fts_p50_ms", "session_vector_p50_ms",
                 "session_fetch_p50_ms", "namespace_fts_p50_ms", "namespace_vector_p50_ms",
                 "peak_rss_mb",
                 "file_mb", "build_seconds", "matrix_mb", "rss_before_matrix_mb"):
        assert getattr(figures, name) > 0, name
    # SQLite's namespace legs read the chunks they found themselves: no fetch follows.
    assert figures.namespace_fetch_p50_ms == 0
    assert "each reading the chunks it found" in "\n".join(figures.lines())
    assert figures.session_p95_ms >= figures.session_p50_ms
    assert 0 <= figures.file_rss_mb <= figures.rss_before_matrix_mb
    assert figures.namespace_p95_ms >= figures.namespace_p50_ms
    assert any("chunks from" in line for line in said)  # progress while building
    # The namespace full-text leg's derived index was built before the timings, all of it.
    full_text = figures.derived_full_text
    assert full_text is not None and full_text.rows == figures.chunks
    assert full_text.build_seconds > 0 and full_text.arrays_mb > 0

    text = "\n".join(figures.lines())
    for label in ("model", "database", "queries", "query embedding", "session hybrid",
                  "namespace hybrid", "numpy brute force", "namespace / numpy",
                  "re-fusion (rerank)", "peak RSS", "legs p50", "derived full text"):
        assert label in text, label
    assert text.count("goal met") + text.count("goal missed") == 4
    # The derived namespace matrix: built, within its memory goal, exact.
    derived = figures.derived
    assert derived is not None and derived.vectors == figures.chunks
    assert derived.build_seconds > 0 and derived.index_bytes <= 1.2 * derived.raw_bytes
    assert derived.same_top == derived.queries == 40
    for label in ("derived index", "namespace vector leg", "exactness"):
        assert label in text, label
    assert "1,5" in text and "30 sessions" in text

    # Kept on request: every chunk is embedded, all under the one agent identity.
    async def check() -> None:
        async with Engine.open(keep, config=DETERMINISTIC) as engine:
            status = await engine.embedding_status()
            assert status.backlog == 0 and status.embedded == figures.chunks
            listed = await engine.list_sessions()
            assert len(listed) == 30
            assert {s.agent_identity for s in listed} == {"bench-agent"}
    asyncio.run(check())


def test_bench_query_refuses_an_existing_keep_path(tmp_path: Path) -> None:
    keep = tmp_path / "bench.db"
    keep.write_bytes(b"")
    with pytest.raises(FileExistsError):
        asyncio.run(run_query_bench(DETERMINISTIC, 100, 2, queries=5, keep=keep,
                                    say=lambda _: None))
