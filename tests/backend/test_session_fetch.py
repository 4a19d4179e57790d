"""A session query reads its chunk rows from the index that clusters them by session: a
session little larger than what it wants in one range, a longer one by lookups; both give the
same answers."""

from __future__ import annotations

from pathlib import Path

import pytest

from core import Engine
from core.storage.sqlite import search
from tests.conftest import DETERMINISTIC, rows
from workbench.bench import synthetic


async def _fill(path: Path) -> None:
    async with Engine.open(path, config=DETERMINISTIC) as engine:
        # Two sessions written interleaved, as many conversations at once leave a file.
        data = synthetic.messages(240, 2)
        order = sorted(data, key=lambda item: (item[1], item[0]))
        await engine.store_many(order, agent="agent")
        await engine.drain()


def test_session_rows_are_read_through_the_clustering_index(db_path: Path) -> None:
    import asyncio

    asyncio.run(_fill(db_path))
    plan = " ".join(str(row[-1]) for row in rows(
        db_path, "EXPLAIN QUERY PLAN " + search.CHUNK_SELECT
        + " INDEXED BY chunks_session_rows WHERE session_id = ?", "session-00000"))
    assert "COVERING INDEX chunks_session_rows" in plan


@pytest.mark.parametrize("read_whole", [search.READ_WHOLE_RATIO, 100, 0])
async def test_both_ways_of_reading_a_session_answer_alike(
        db_path: Path, monkeypatch: pytest.MonkeyPatch, read_whole: int) -> None:
    await _fill(db_path)
    queries = ["remember the booking", "recipe garlic oven", "check the schedule",
               "flight hotel", "budget invoice"]
    async with Engine.open(db_path, config=DETERMINISTIC) as engine:
        expected = {query: [(r.chunk_id, round(r.score, 9), r.text, r.sequence_start)
                            for r in await engine.hybrid_query(
                                session_id="session-00001", query=query, top_k=10)]
                    for query in queries}
    monkeypatch.setattr(search, "READ_WHOLE_RATIO", read_whole)
    fetched: list[int] = []
    original = search.session_chunks

    def counting(*args):  # type: ignore[no-untyped-def]
        found = original(*args)
        fetched.append(len(found[1]))
        return found

    monkeypatch.setattr(search, "session_chunks", counting)
    async with Engine.open(db_path, config=DETERMINISTIC) as engine:
        for query in queries:
            found = await engine.hybrid_query(session_id="session-00001", query=query,
                                              top_k=10)
            assert [(r.chunk_id, round(r.score, 9), r.text, r.sequence_start)
                    for r in found] == expected[query]
            assert found
    assert len(fetched) == len(queries) and min(fetched) > 0
    owned = {row[0] for row in rows(db_path, "SELECT chunk_id FROM chunks"
                                    " WHERE session_id = 'session-00001'")}
    for query in queries:
        assert {chunk_id for chunk_id, *_ in expected[query]} <= owned
