"""The PostgreSQL benchmarks and drills on small sizes: ``bench query --db URL``, ``bench
writers`` (PostgreSQL and a SQLite file), ``bench crash --db URL`` and the database check
the crash drill reads. They assert the zeros, never a timing."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from core import Engine
from tests.conftest import DETERMINISTIC
from workbench.bench.crash import run_crash_bench
from workbench.bench.crash_child import NOTES_NAMESPACE
from workbench.bench.crash_ledger import holdings as _holdings
from workbench.bench.query import run_query_bench
from workbench.bench.writers import run_writers_bench


def test_bench_query_fills_an_empty_postgres_database_and_measures_recall(pg_url: str) -> None:
    figures = asyncio.run(run_query_bench(DETERMINISTIC, 600, 10, queries=12, db=pg_url,
                                          say=lambda _: None))
    assert figures.backend == "postgresql" and 600 <= figures.chunks < 700
    assert figures.sessions == 10 and figures.queries == 12
    assert figures.recall_at_10 is not None and 0.0 < figures.recall_at_10 <= 1.0
    text = "\n".join(figures.lines())
    assert "vector recall@10" in text and "postgresql" in text
    # Session, namespace and recall goals, and the two older SQLite ones.
    assert text.count("goal met") + text.count("goal missed") == 5

    with pytest.raises(FileExistsError, match="already holds"):
        asyncio.run(run_query_bench(DETERMINISTIC, 600, 10, queries=12, db=pg_url,
                                    say=lambda _: None))
    again = asyncio.run(run_query_bench(DETERMINISTIC, 600, 10, queries=12, db=pg_url,
                                        reuse=True, say=lambda _: None))
    assert again.chunks == figures.chunks and again.messages == figures.messages


def test_bench_query_keeps_sqlite_exact_with_no_recall(tmp_path: Path) -> None:
    figures = asyncio.run(run_query_bench(DETERMINISTIC, 300, 5, queries=10,
                                          db=str(tmp_path / "m.db"), say=lambda _: None))
    assert figures.backend == "sqlite" and figures.recall_at_10 is None
    assert "recall" not in "\n".join(figures.lines())


def _assert_zeros(figures: object) -> None:
    for name in ("lost", "duplicated", "unasked", "out_of_order", "errors", "backlog_after"):
        assert getattr(figures, name) == 0, (name, getattr(figures, "problems", None))


def test_bench_writers_on_postgres_loses_and_duplicates_nothing(pg_url: str) -> None:
    figures = run_writers_bench(DETERMINISTIC, pg_url, processes=3, messages=150,
                                say=lambda _: None)
    _assert_zeros(figures)
    assert figures.passed and figures.backend == "postgresql"
    assert figures.acknowledged + figures.sequence_refusals == 150
    assert figures.stored_rows == figures.acknowledged > 0
    assert figures.appended > 0 and figures.stored > 0


def test_bench_writers_on_a_sqlite_file(tmp_path: Path) -> None:
    figures = run_writers_bench(DETERMINISTIC, tmp_path / "m.db", processes=2, messages=80,
                                say=lambda _: None)
    _assert_zeros(figures)
    assert figures.passed and figures.backend == "sqlite"
    assert figures.acknowledged + figures.sequence_refusals == 80
    with pytest.raises(FileExistsError):  # its sessions are there now
        run_writers_bench(DETERMINISTIC, tmp_path / "m.db", processes=1, messages=5,
                          say=lambda _: None)


def test_bench_crash_on_postgres(pg_url: str) -> None:
    figures = asyncio.run(run_crash_bench(DETERMINISTIC, 3, 2, say=lambda _: None,
                                          window=(0.1, 0.4), early_share=0.0, db=pg_url))
    total = figures.total
    assert [w.workload for w in figures.workloads] == ["ingest", "notes", "compact"]
    assert all(w.kills == 1 for w in figures.workloads)
    assert total.kills == 3 and total.acknowledged > 0
    assert figures.passed, (figures.workloads, figures.problems)
    assert total.lost == total.phantom == total.half_stored == total.orphans == 0
    assert total.backlog_after == total.failed_after == total.child_failures == 0


def test_a_workload_whose_sessions_do_not_exist_yet_holds_nothing(pg_url: str) -> None:
    async def held() -> Any:
        async with Engine.open(pg_url, config=DETERMINISTIC) as engine:
            return await _holdings(engine, "compact")
    holdings = asyncio.run(held())
    assert holdings.messages == {} and holdings.epochs == {} and holdings.archives == {}


def test_bench_crash_refuses_a_database_whose_notes_namespace_holds_notes(pg_url: str) -> None:
    async def add() -> None:
        async with Engine.open(pg_url, config=DETERMINISTIC) as engine:
            await engine.add_note("already here", "a note", namespace=NOTES_NAMESPACE)
    asyncio.run(add())
    with pytest.raises(FileExistsError, match="already holds notes"):
        asyncio.run(run_crash_bench(DETERMINISTIC, 1, 2, say=lambda _: None, db=pg_url,
                                    workloads=("notes",)))
