"""``bench peers``: this engine and LanceDB built from the same data, every path timed on
both; without the ``peers`` extra, one line saying how to install it."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.conftest import DETERMINISTIC
from tests.tiny_model import build_tiny_model
from workbench.bench import peers_lancedb, synthetic
from workbench.bench.peers import (
    INSTALL_HINT,
    PATHS,
    NothingToMeasure,
    PeersFigures,
    run_peers_bench,
)
from workbench.cli.root import main


def test_without_lancedb_it_says_how_to_install_it(runner: CliRunner,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "lancedb", None)  # makes `import lancedb` fail
    result = runner.invoke(main, ["bench", "peers", "--chunks", "100", "--queries", "10"])
    assert result.exit_code == 2
    assert result.output.strip() == INSTALL_HINT
    assert "pip install -e '.[peers]'" in result.output


def test_a_url_is_refused_with_the_command_that_measures_it(runner: CliRunner) -> None:
    result = runner.invoke(main, ["bench", "peers", "--db", "postgresql://u@h/db", "--reuse"])
    assert result.exit_code == 2
    assert "compares a SQLite file with LanceDB" in result.output
    assert "bench query --db URL" in result.output


def test_bench_peers_times_both_systems_on_the_same_data(tmp_path: Path) -> None:
    pytest.importorskip("lancedb")
    # A tiny real model2vec model that knows the bench's words, so its queries have vectors.
    words = {word.strip(".,!?").lower() for _, _, payload in synthetic.messages(600, 6)
             for word in (payload.get("content") or "").split()}
    model = build_tiny_model(tmp_path / "bench-m2v", words=sorted(words))
    config = {"embedding": {"backend": "model2vec", "model": str(model)}}
    said: list[str] = []
    figures = asyncio.run(run_peers_bench(config, 600, 6, queries=12, say=said.append))
    assert isinstance(figures, PeersFigures)
    assert 600 <= figures.chunks < 700 and figures.sessions == 6 and figures.queries == 12
    for path in PATHS:
        assert len(figures.ours_ms[path]) == len(figures.theirs_ms[path]) == 12, path
        assert min(figures.ours_ms[path]) > 0 and min(figures.theirs_ms[path]) > 0, path
    # The same vectors, ranked exactly on both sides: the same top 10.
    assert figures.overlap["vector only"] >= 0.95
    assert 0 < figures.overlap["full text only"] <= 1
    assert figures.ours_ingest_per_s > 0 and figures.theirs_ingest_per_s > 0
    assert figures.theirs_encode_seconds > 0 and figures.theirs_index_seconds > 0
    # LanceDB embeds through model2vec's own encode, as its users run it; the same texts
    # through our embedding path are timed beside it.
    assert figures.theirs_encode_ours_seconds is not None
    assert figures.theirs_encode_ours_seconds > 0
    assert any("ours:" in line and "chunks from" in line for line in said)
    assert any("derived namespace indexes" in line for line in said)  # built before timing
    # End to end: store_many, drain and the derived indexes, until both legs answer from them.
    parts = figures.ours_parts
    assert set(parts) == {"store_many", "drain", "derived indexes", "matrix", "full text"}
    assert parts["store_many"] > 0 and parts["matrix"] > 0 and parts["full text"] > 0
    assert parts["derived indexes"] >= max(parts["matrix"], parts["full text"]) * 0.5
    assert figures.ours_end_to_end_per_s is not None
    assert figures.ours_end_to_end_per_s < figures.ours_ingest_per_s
    assert any("searchable from the derived indexes" in line for line in said)

    text = "\n".join(figures.lines())
    for label in ("session hybrid", "namespace hybrid", "vector only", "full text only",
                  "bulk ingest", "ours/LanceDB", "top-10 overlap", "peak RSS",
                  "from nothing to searchable", "ours' share", "LanceDB's share",
                  "model2vec's own encode", "through our word cache",
                  "LanceDB given our word cache:"):
        assert label in text, label
    assert text.count("goal met") + text.count("goal missed") == 3


def test_bench_peers_measures_a_reused_file_as_it_is(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("lancedb")
    monkeypatch.setattr(peers_lancedb, "STREAM_ROWS", 64)  # several batches from the file
    path = tmp_path / "memory.db"
    built = asyncio.run(run_peers_bench(DETERMINISTIC, 300, 3, queries=10, db=path,
                                        say=lambda _: None))
    assert built.ours_built_chunks == built.chunks and built.ours_ingest_per_s

    with pytest.raises(FileExistsError):  # a memory with chunks is only measured on --reuse
        asyncio.run(run_peers_bench(DETERMINISTIC, 300, 3, queries=10, db=path,
                                    say=lambda _: None))
    said: list[str] = []
    # Other sizes asked: a reused file is measured as it holds, nothing added to it.
    again = asyncio.run(run_peers_bench(DETERMINISTIC, 5000, 50, queries=10, db=path,
                                        reuse=True, say=said.append))
    assert (again.chunks, again.sessions, again.messages) == (
        built.chunks, built.sessions, built.messages)
    assert again.ours_built_chunks == 0 and again.ours_ingest_per_s is None
    assert again.theirs_rows == again.chunks  # LanceDB got every chunk, streamed from the file
    assert again.overlap["vector only"] >= 0.95
    assert not any("ours:" in line for line in said)
    assert again.ours_parts == {} and again.ours_end_to_end_per_s is None
    assert "ours not measured" in "\n".join(again.lines())


def test_bench_peers_reuse_refuses_an_empty_memory(tmp_path: Path, runner: CliRunner) -> None:
    pytest.importorskip("lancedb")
    with pytest.raises(NothingToMeasure):
        asyncio.run(run_peers_bench(DETERMINISTIC, 300, 3, queries=10,
                                    db=tmp_path / "empty.db", reuse=True, say=lambda _: None))
    result = runner.invoke(main, ["bench", "peers", "--reuse", "--queries", "10"])
    assert result.exit_code != 0 and "--reuse needs --db" in result.output

