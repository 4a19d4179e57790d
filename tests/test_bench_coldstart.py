"""``bench coldstart``: a tiny run warms a memory, then a fresh process loads its saved
indexes and answers from them."""

from __future__ import annotations

import asyncio
from pathlib import Path

from click.testing import CliRunner

from tests.conftest import DETERMINISTIC
from workbench.bench.coldstart import ColdstartFigures, run_coldstart


def test_a_fresh_process_answers_from_the_saved_indexes(tmp_path: Path) -> None:
    said: list[str] = []
    target = tmp_path / "cold.db"
    figures = asyncio.run(run_coldstart(DETERMINISTIC, 600, 12, db=str(target),
                                        say=said.append))
    assert isinstance(figures, ColdstartFigures)
    assert 600 <= figures.chunks < 700
    assert figures.backend == "SqliteBackend"
    assert set(figures.origins) == {"namespace-vectors", "full-text"}
    assert all(how == "loaded from disk, caught up 0 changes"
               for how in figures.origins.values()), figures.origins
    assert figures.open_s > 0 and figures.first_query_ms > 0
    assert figures.first_p95_ms >= figures.first_p50_ms > 0
    assert figures.warm_p95_ms >= figures.warm_p50_ms > 0
    assert figures.saved_bytes > figures.raw_vector_bytes > 0
    assert figures.full_text_bytes > 0
    assert (tmp_path / "cold.db-index" / "full-text.json").exists()
    text = "\n".join(figures.lines())
    assert "first 100 queries" in text and "saved indexes" in text


def test_the_command_is_registered() -> None:
    from workbench.bench.commands import bench

    result = CliRunner().invoke(bench, ["coldstart", "--help"])
    assert result.exit_code == 0 and "--chunks" in result.output
