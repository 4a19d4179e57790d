"""A session's vector leg and fetch from the namespace matrix, and its full-text leg from the
derived full-text index: the same answers as the SQL path (FTS5's prefixed columns,
sqlite-vec's partition, then the clustered rows), which stays the fallback."""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
import pytest

from core import Engine
from core.retrieval.search import SearchResult
from core.storage.derived import session_text
from core.storage.derived.fulltext import FullTextIndex
from core.storage.derived.vector_matrix import NamespaceVectors
from core.storage.sqlite import session_vectors
from core.storage.sqlite.sqlite_backend import SqliteBackend
from core.storage.vocabulary import SESSION_VECTOR_LEG
from tests.conftest import DETERMINISTIC
from workbench.bench import synthetic

SESSIONS = ["session-00000", "session-00001", "session-00002"]
QUERIES = ["remember the booking", "recipe garlic oven", "check the schedule", "flight hotel",
           "budget invoice", "what did we decide", "zzzz unknown words"]


async def _fill(path: Path) -> None:
    async with Engine.open(path, config=DETERMINISTIC) as engine:
        data = synthetic.messages(300, len(SESSIONS))
        await engine.store_many(sorted(data, key=lambda item: (item[1], item[0])),
                                agent="agent")
        await engine.store_many([("other-agent-session", None,
                                  {"role": "user", "content": "the booking for the hotel"})],
                                agent="someone-else")
        await engine.drain()


def _backend(engine: Engine) -> SqliteBackend:
    backend = engine.backend
    assert isinstance(backend, SqliteBackend)
    return backend


async def _ask(engine: Engine) -> list[SearchResult]:
    """Hybrid queries, and vector-only ones (get_context's relevance search)."""
    return [await engine.search(session_id=session_id, query=query, top_k=top_k, mode=mode)
            for session_id in SESSIONS for query in QUERIES
            for mode, top_k in (("hybrid", 10), ("vector", 20))]


def _assert_alike(sql: list[SearchResult], matrix: list[SearchResult]) -> None:
    for old, new in zip(sql, matrix, strict=True):
        assert [r.chunk_id for r in new.results] == [r.chunk_id for r in old.results]
        for a, b in zip(old.results, new.results, strict=True):
            assert b.score == pytest.approx(a.score, abs=1e-6)
            assert b.vector_score == pytest.approx(a.vector_score, abs=1e-6)
            assert b.fts_score == a.fts_score
            assert (b.text, b.context, b.metadata, b.sequence_start) == (
                a.text, a.context, a.metadata, a.sequence_start)
        assert {h.chunk_id: h.raw for h in new.legs.fts} == {
            h.chunk_id: h.raw for h in old.legs.fts}
        assert {h.chunk_id for h in new.legs.vector} == {h.chunk_id for h in old.legs.vector}
        distances = {h.chunk_id: h.raw for h in old.legs.vector}
        for hit in new.legs.vector:
            assert hit.raw == pytest.approx(distances[hit.chunk_id], abs=1e-6)
        assert new.legs.chunks == old.legs.chunks


async def test_a_session_query_answers_alike_from_the_matrix(db_path: Path) -> None:
    await _fill(db_path)
    async with Engine.open(db_path, config=DETERMINISTIC) as engine:
        backend = _backend(engine)
        sql = await _ask(engine)
        assert {found.legs.vector_path for found in sql} == {"sqlite-vec"}
        # A session query never starts the matrix's build (it is a namespace query's).
        state = backend.derived.state(backend.namespace_vectors.name)
        assert not state.ready and not state.building
        await asyncio.to_thread(backend.derived.build_now, backend.namespace_vectors.name)
        matrix = await _ask(engine)
    assert {found.legs.vector_path for found in matrix} == {SESSION_VECTOR_LEG}
    assert sum(bool(found.results) for found in matrix) >= 2 * len(SESSIONS) * (len(QUERIES) - 1)
    _assert_alike(sql, matrix)


async def test_a_session_ranks_its_full_text_from_the_derived_index_once_built(
        db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    await _fill(db_path)
    ranked: list[list[str]] = []
    session_search = session_text.session_search

    def spy(index: FullTextIndex, rowids: list[int], terms: list[str], k: int,
            context_weight: float = 0.5, texts: dict[int, tuple[str, str]] | None = None,
            ) -> list[tuple[int, float]] | None:
        ranked.append(list(terms))
        return session_search(index, rowids, terms, k, context_weight, texts)

    monkeypatch.setattr(session_text, "session_search", spy)
    async with Engine.open(db_path, config=DETERMINISTIC) as engine:
        backend = _backend(engine)
        await asyncio.to_thread(backend.derived.build_now, backend.namespace_vectors.name)
        fts5 = await _ask(engine)
        assert ranked == []  # the full-text index is not built: FTS5 ranks
        await asyncio.to_thread(backend.derived.build_now, backend.full_text_index.name)
        derived = await _ask(engine)
        # A word of several tokens is a phrase to FTS5, which ranks it.
        phrase = [await engine.search(session_id=SESSIONS[0], query=query, top_k=10)
                  for query in ("snake_case booking", "the booking", "search_web flight")]
        monkeypatch.setattr(backend.session_matrix, "full_text", None)
        phrase_fts5 = [await engine.search(session_id=SESSIONS[0], query=query, top_k=10)
                       for query in ("snake_case booking", "the booking", "search_web flight")]
        # A message stored since: both indexes catch up in the query's snapshot.
        await engine.append(SESSIONS[1], {"role": "user",
                                          "content": "quokka marmalade on the ferry"})
        await engine.drain()
        found = await engine.search(session_id=SESSIONS[1], query="quokka ferry", top_k=10)
    hybrid = [q for q in QUERIES if q != "zzzz unknown words"]
    assert len([terms for terms in ranked if terms]) >= len(SESSIONS) * len(hybrid)
    _assert_alike(fts5, derived)
    assert not any(found.legs.fts_derived for found in fts5)
    assert all(found.legs.fts_derived for found in derived if found.legs.mode == "hybrid"
               and found.legs.fts and found.legs.fts_fallback is None)
    assert "derived index" in derived[0].explain()["legs"]["fts_path"]
    assert phrase[0].legs.fts and phrase[1].legs.fts and phrase[2].legs.fts
    _assert_alike(phrase_fts5, phrase)
    assert ["search_web", "flight"] in ranked
    assert found.results[0].text == "quokka marmalade on the ferry"
    assert found.results[0].fts_rank == 1 and found.results[0].vector_rank == 1


async def test_a_session_the_prefix_splits_otherwise_is_ranked_by_fts5_in_one_read(
        db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    await _fill(db_path)
    reads: list[str] = []
    whole_session = session_vectors.whole_session

    def counted(conn: object, session_id: str, most: int) -> object:
        reads.append(session_id)
        return whole_session(conn, session_id, most)

    async with Engine.open(db_path, config=DETERMINISTIC) as engine:
        # FTS5 keeps "emoji🙂ok" one token; the session's prefixed copy has two words.
        await engine.append(SESSIONS[2], {"role": "user", "content": "the emoji🙂ok booking"})
        await engine.drain()
        backend = _backend(engine)
        await asyncio.to_thread(backend.derived.build_now, backend.namespace_vectors.name)
        await asyncio.to_thread(backend.derived.build_now, backend.full_text_index.name)
        monkeypatch.setattr(session_vectors, "whole_session", counted)
        found = await engine.search(session_id=SESSIONS[2], query="booking hotel", top_k=10)
        monkeypatch.setattr(backend.session_matrix, "full_text", None)
        fts5 = await engine.search(session_id=SESSIONS[2], query="booking hotel", top_k=10)
    assert reads == [SESSIONS[2], SESSIONS[2]]  # one read of the session per query
    assert found.legs.vector_path == SESSION_VECTOR_LEG and not found.legs.fts_derived
    assert found.legs.fts
    _assert_alike([fts5], [found])


async def test_a_session_too_long_to_read_whole_takes_the_sql_path(
        db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    await _fill(db_path)
    async with Engine.open(db_path, config=DETERMINISTIC) as engine:
        backend = _backend(engine)
        await asyncio.to_thread(backend.derived.build_now, backend.namespace_vectors.name)
        matrix = await _ask(engine)
        monkeypatch.setattr(session_vectors, "READ_WHOLE_RATIO", 0)
        sql = await _ask(engine)
    assert {found.legs.vector_path for found in sql} == {"sqlite-vec"}
    _assert_alike(sql, matrix)


async def test_a_message_stored_after_the_build_is_found_by_both_legs(db_path: Path) -> None:
    await _fill(db_path)
    async with Engine.open(db_path, config=DETERMINISTIC) as engine:
        backend = _backend(engine)
        await asyncio.to_thread(backend.derived.build_now, backend.namespace_vectors.name)
        await engine.append(SESSIONS[1], {"role": "user",
                                          "content": "quokka marmalade on the ferry"})
        await engine.drain()
        found = await engine.search(session_id=SESSIONS[1], query="quokka marmalade ferry",
                                    top_k=10)
        await engine.forget(SESSIONS[2])
        gone = await engine.search(session_id=SESSIONS[2], query="flight hotel", top_k=10)
    assert found.legs.vector_path == SESSION_VECTOR_LEG
    best = found.results[0]
    assert best.text == "quokka marmalade on the ferry"
    assert best.vector_rank == 1 and best.fts_rank == 1
    assert gone.results == [] and gone.legs.vector == []


def test_the_rows_of_a_session_rank_as_their_namespace_ranks_them() -> None:
    rng = np.random.default_rng(5)
    index = NamespaceVectors()
    vectors = rng.normal(size=(300, 8)).astype(np.float32)
    vectors[7] = vectors[3]  # a tie: broken by rowid, as a namespace's is
    index.load(8, [(rowid + 1, "ann" if rowid % 3 else "bob", vectors[rowid].tobytes())
                   for rowid in range(300)])
    query = rng.normal(size=8).astype(np.float32)
    ann = [rowid for rowid in range(1, 301) if (rowid - 1) % 3]
    assert index.nearest_of(ann, query, 25) == index.nearest("ann", query, 25)
    # Rowids of two namespaces, and some the index does not hold (no vector, or unknown).
    mixed = [*range(1, 301), 0, 999, 10**9]
    best = sorted(index.nearest("ann", query, 300) + index.nearest("bob", query, 300),
                  key=lambda pair: (pair[1], pair[0]))
    assert index.nearest_of(mixed, query, 40) == best[:40]
    assert [rowid for rowid, _ in index.nearest_of([8, 4], query, 5)] == [4, 8]  # the tie
    assert index.nearest_of([], query, 5) == [] and index.nearest_of(ann, query, 0) == []
    assert NamespaceVectors().nearest_of(ann, query, 5) == []
