"""``bench peers``: this engine and LanceDB built from the same data, every path timed on
both; without the ``peers`` extra, one line saying how to install it."""

from __future__ import annotations

import asyncio
import sys

import pytest
from click.testing import CliRunner

from tests.conftest import DETERMINISTIC
from workbench.bench.peers import INSTALL_HINT, PATHS, PeersFigures, run_peers_bench
from workbench.cli.root import main


def test_without_lancedb_it_says_how_to_install_it(runner: CliRunner,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "lancedb", None)  # makes `import lancedb` fail
    result = runner.invoke(main, ["bench", "peers", "--chunks", "100", "--queries", "10"])
    assert result.exit_code == 2
    assert result.output.strip() == INSTALL_HINT
    assert "pip install -e '.[peers]'" in result.output


def test_bench_peers_times_both_systems_on_the_same_data() -> None:
    pytest.importorskip("lancedb")
    said: list[str] = []
    figures = asyncio.run(run_peers_bench(DETERMINISTIC, 600, 6, queries=12,
                                          say=said.append))
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
    assert any("ours:" in line and "chunks from" in line for line in said)

    text = "\n".join(figures.lines())
    for label in ("session hybrid", "namespace hybrid", "vector only", "full text only",
                  "bulk ingest", "ours/LanceDB", "top-10 overlap", "peak RSS"):
        assert label in text, label
    assert text.count("goal met") + text.count("goal missed") == 2
