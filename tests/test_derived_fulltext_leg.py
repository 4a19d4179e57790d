"""The namespace full-text leg answered from the derived index: built in the background,
equal to FTS5's answer, in step with other writers, and named by ``explain``."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest

from core import Engine
from core.storage.derived.fulltext import FullTextIndex
from core.storage.sqlite.connection import Lane, sqlite_module
from core.storage.vocabulary import LegRequest, Scope
from tests.conftest import DETERMINISTIC

TEXTS = ["the garlic bread in lisbon", "a flight to lisbon on friday", "garlic and oven",
         "budget for the hotel", "search_web found the hotel", "nothing to see"]


async def _fill(engine: Engine) -> None:
    await engine.store_many([(f"s{n % 3}", n // 3 + 1, {"role": "user", "content": text})
                             for n, text in enumerate(TEXTS * 5)])


def hold_full_text_build(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """Hold every build of the derived full-text index until the event returned is set (a
    query's SQL path is checked before a build of a few rows can finish)."""
    released = threading.Event()
    build = FullTextIndex.build

    def held_build(index: FullTextIndex, conn: Any) -> None:
        assert released.wait(60), "the build was never released"
        build(index, conn)

    monkeypatch.setattr(FullTextIndex, "build", held_build)
    return released


async def test_namespace_queries_switch_to_the_index_once_it_is_built(
        db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The build is held until the first query has answered: on a busy machine a build of
    # thirty rows could otherwise finish before the query that started it looks again.
    released = hold_full_text_build(monkeypatch)
    async with Engine.open(db_path, config={**DETERMINISTIC, "agent": "ana"}) as engine:
        await _fill(engine)
        holder = engine.backend.derived  # type: ignore[attr-defined]
        assert not holder.state(FullTextIndex.name).ready
        first = await engine.search(namespace="ana", query="garlic lisbon", mode="keyword")
        assert first.explain()["legs"]["fts_path"] == "database"  # FTS5 while it builds
        released.set()
        assert await _built(engine)
        second = await engine.search(namespace="ana", query="garlic lisbon", mode="keyword")
        explained = second.explain()
        assert explained["legs"]["fts_path"] == "derived index"
        assert any("derived in-memory index" in note for note in explained["notes"])
        assert _ranked([(h.chunk_id, h.raw) for h in second.legs.fts]) == _ranked(
            [(h.chunk_id, h.raw) for h in first.legs.fts])
        # A phrase (search_web is "search web" to FTS5) is answered too.
        phrase = await engine.search(namespace="ana", query="search_web", mode="keyword")
        assert phrase.explain()["legs"]["fts_path"] == "derived index"
        assert {r.text for r in phrase.results} == {"search_web found the hotel"}
        # Tags, FTS5 syntax and a session's query stay in SQL.
        for found in (
                await engine.search(namespace="ana", query="garlic", tags=["x"], mode="keyword"),
                await engine.search(namespace="ana", query="garlic OR oven", raw_fts=True,
                                    mode="keyword"),
                await engine.search(session_id="s0", query="garlic", mode="keyword")):
            assert found.explain()["legs"]["fts_path"] == "database"


async def _built(engine: Engine) -> bool:
    """Wait for the full-text index's build (started by a query); True when it is ready."""
    holder = engine.backend.derived  # type: ignore[attr-defined]
    await asyncio.to_thread(holder.build_now, FullTextIndex.name)
    return bool(holder.state(FullTextIndex.name).ready)


def _ranked(rows: list[tuple[str, float]]) -> list[tuple[float, str]]:
    """Rows by score (to 1e-9), ties by id: equal scores may come in either order."""
    return sorted((-round(score, 9), chunk_id) for chunk_id, score in rows)


async def test_another_writers_chunks_are_found_by_the_next_query(db_path: Path) -> None:
    async with Engine.open(db_path, config={**DETERMINISTIC, "agent": "ana"}) as reader:
        await _fill(reader)
        await reader.search(namespace="ana", query="garlic", mode="keyword")
        assert await _built(reader)
        async with Engine.open(db_path, config={**DETERMINISTIC, "agent": "ana"}) as writer:
            await writer.store("s9", 1, {"role": "user", "content": "a zanzibar holiday"})
            await writer.forget("s1")
        found = await reader.search(namespace="ana", query="zanzibar garlic", mode="keyword",
                                    top_k=50)
        assert found.explain()["legs"]["fts_path"] == "derived index"
        sessions = {r.session_id for r in found.results}
        assert "s9" in sessions and "s1" not in sessions
        request = LegRequest(scope=Scope(namespace="ana"), depth=50, terms=("zanzibar", "garlic"))
        sql = await reader.backend.fts_search(request.scope, list(request.terms), 50)
        assert _ranked([(h.chunk_id, h.raw) for h in found.legs.fts]) == _ranked(sql)


def test_a_lane_job_that_outlives_its_event_loop_ends_quietly(
        monkeypatch: pytest.MonkeyPatch) -> None:
    failures: list[object] = []
    monkeypatch.setattr(threading, "excepthook", failures.append)
    lane = Lane(lambda: sqlite_module().connect(":memory:"), "test-lane")
    lane.start()
    gate = threading.Event()

    async def leave_early() -> None:
        job = asyncio.ensure_future(lane.run(lambda conn: gate.wait(5)))
        await asyncio.sleep(0.05)
        job.cancel()

    asyncio.run(leave_early())  # the loop is closed before the job finishes
    gate.set()
    lane.close()
    assert failures == []


async def test_queries_while_another_writer_stores_and_forgets(db_path: Path) -> None:
    """Both derived indexes applied to while queries read them: every answer is FTS5's
    and sqlite-vec's at some commit, and the last equals theirs at the end."""
    async with Engine.open(db_path, config={**DETERMINISTIC, "agent": "ana"}) as reader:
        await _fill(reader)
        await reader.drain()
        await reader.search(namespace="ana", query="garlic", top_k=5)
        assert await _built(reader)
        holder = reader.backend.derived  # type: ignore[attr-defined]
        await asyncio.to_thread(holder.build_now, "namespace-vectors")
        async with Engine.open(db_path, config={**DETERMINISTIC, "agent": "ana"}) as writer:

            async def write() -> None:
                for round_ in range(8):
                    await writer.store_many([(f"w{round_}", n + 1, {
                        "role": "user", "content": f"garlic zanzibar round {round_} {n}"})
                        for n in range(6)])
                    await writer.drain()
                    if round_ % 2:
                        await writer.forget(f"w{round_ - 1}")

            async def read() -> list[str]:
                paths = []
                for _ in range(12):
                    found = await reader.search(namespace="ana", query="garlic zanzibar",
                                                top_k=50)
                    legs = found.explain()["legs"]
                    paths.append(f"{legs['fts_path']} / {legs['vector_path']}")
                return paths

            _, *answers = await asyncio.gather(write(), read(), read())
        assert {path for paths in answers for path in paths} == {
            "derived index / namespace matrix (int8 scan, exact)"}
        found = await reader.search(namespace="ana", query="garlic zanzibar", top_k=50,
                                    mode="keyword")
        sql = await reader.backend.fts_search(Scope(namespace="ana"), ["garlic", "zanzibar"], 50)
        assert _ranked([(h.chunk_id, h.raw) for h in found.legs.fts]) == _ranked(sql)
        sessions = {r.session_id for r in found.results}
        assert {"w1", "w3", "w5", "w7"} <= sessions and not sessions & {"w0", "w2", "w4", "w6"}
