"""Explain shows the full-text statements as they ran: pasted into SQL on the memory itself
(FTS5's MATCH with the reported ranking and filter, PostgreSQL's tsquery with its filter),
each gives the candidates the leg returned, for every path a query can take."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from core import Engine
from core.errors import InvalidInput
from core.retrieval.search import SearchResult
from core.storage.executed import DERIVED, FTS5, POSTGRESQL
from core.storage.pg import derived as pg_derived
from core.storage.vocabulary import LegRequest, Scope
from tests.conftest import DETERMINISTIC, rows
from tests.test_derived_fulltext_leg import hold_full_text_build

MESSAGES = [
    ("s1", "the db pool is exhausted again", ["ops"]),
    ("s1", "restarted the api, pool looks fine", []),
    ("s1", "lunch at the pool bar", ["food"]),
    ("s2", "db connections exhausted at noon", ["ops"]),
    ("s2", "a quiet day", []),
    ("s3", "our db pool limit is 20", ["ops"]),  # another namespace: never a candidate
]
QUERY = "db pool exhausted"


async def _fill(engine: Engine) -> None:
    for number, (session, text, tags) in enumerate(MESSAGES, 1):
        await engine.store(session, number, {"role": "user", "content": text,
                                             "metadata": {"tags": tags}},
                           namespace="bob" if session == "s3" else "ana")
    await engine.drain()


def _ranked(pairs: list[tuple[str, float]]) -> list[tuple[float, str]]:
    """Rows by score (to 1e-9), ties by id: equal scores may come in either order."""
    return sorted((-round(score, 9), chunk_id) for chunk_id, score in pairs)


def _rerun_fts5(memory: str, found: SearchResult) -> None:
    """The statement whose rows the leg kept, run again on the file as explain shows it."""
    executed = found.explain()["fts_executed"]
    assert executed, "explain shows no full-text statement"
    last = executed[-1]
    where = f" AND {last['filter']}" if last["filter"] else ""
    again = rows(memory, f"SELECT c.chunk_id, -{last['ranking']} AS score FROM chunks_fts"
                         " JOIN chunks c ON c.fts_rowid = chunks_fts.rowid"
                         f" WHERE chunks_fts MATCH ?{where} ORDER BY score DESC LIMIT ?",
                 last["expression"], found.legs.depth)
    assert again, "the re-run found nothing: the test would prove nothing"
    assert _ranked(again) == _ranked([(hit.chunk_id, hit.raw) for hit in found.legs.fts])
    assert found.explain()["fts_expression"] == found.legs.fts_ran[-1].describe()


def _rerun_tsquery(memory: str, found: SearchResult) -> None:
    """The tsquery as explain shows it, matched again on the chunks inside its filter."""
    last = found.explain()["fts_executed"][-1]
    assert last["engine"] in (POSTGRESQL, DERIVED)
    where = f" AND {last['filter']}" if last["filter"] else ""
    again = rows(memory, f"SELECT c.chunk_id FROM chunks c WHERE c.fts @@ ({last['expression']})"
                         f"{where}")
    assert again and len(again) < found.legs.depth  # every match is a candidate
    assert {row[0] for row in again} == {hit.chunk_id for hit in found.legs.fts}


async def test_explain_reruns_as_the_leg_ran_on_sqlite(db_path: Any,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    memory = str(db_path)
    # The namespace's full-text index is held unbuilt until the SQL legs were checked: on a
    # slow machine a build of a few rows finished before the namespace's first query.
    released = hold_full_text_build(monkeypatch)
    async with Engine.open(memory, config=DETERMINISTIC) as engine:
        await _fill(engine)
        backend: Any = engine.backend
        session = await engine.search(session_id="s1", query=QUERY, mode="keyword")
        assert [step.engine for step in session.legs.fts_ran] == [FTS5]
        assert "session_text session_context" in session.legs.fts_ran[0].expression
        _rerun_fts5(memory, session)
        # A namespace's first query: FTS5's MaxScore rounds (the index builds meanwhile).
        namespace = await engine.search(namespace="ana", query=QUERY, mode="keyword")
        assert not namespace.legs.fts_derived
        assert len(namespace.legs.fts_ran) > 1  # rarest word first, then the others join
        assert all("scope_token" in step.expression for step in namespace.legs.fts_ran)
        _rerun_fts5(memory, namespace)
        for tagged in (await engine.search(namespace="ana", query=QUERY, tags=["ops"],
                                           mode="keyword"),
                       await engine.search(session_id="s1", query=QUERY, tags=["ops"],
                                           mode="keyword")):
            assert "json_each" in tagged.legs.fts_ran[-1].filter
            _rerun_fts5(memory, tagged)
            assert {r.session_id for r in tagged.results} <= {"s1", "s2"}
        raw = await engine.search(session_id="s1", query='"db pool" OR exhausted',
                                  raw_fts=True, mode="keyword")
        assert raw.legs.fts_ran[-1].filter == "c.session_id = 's1'"
        _rerun_fts5(memory, raw)

        # The derived indexes: a namespace's full text, and a session's from the same index
        # once the namespace's vectors are in memory too.
        released.set()
        for name in (backend.full_text_index.name, backend.namespace_vectors.name):
            await asyncio.to_thread(backend.derived.build_now, name)
        for found in (await engine.search(namespace="ana", query=QUERY, mode="keyword"),
                      await engine.search(session_id="s1", query=QUERY, mode="hybrid")):
            assert found.legs.fts_derived
            (step,) = found.legs.fts_ran
            assert step.engine == DERIVED and step.parameters["words"] == ["db", "pool",
                                                                           "exhausted"]
            assert (step.parameters["k1"], step.parameters["b"]) == (1.2, 0.75)
            assert step.parameters["N"] == rows(memory, "SELECT count(*) FROM chunks_fts")[0][0]
            assert "derived index" in found.explain()["fts_expression"]
            _rerun_fts5(memory, found)


async def test_explain_reruns_as_the_leg_ran_on_postgresql(
        pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # The namespace's index is held unbuilt until its first query was checked (as above).
    released = asyncio.Event()
    load = pg_derived._load

    async def held_load(conn: Any, held: Any) -> None:
        await asyncio.wait_for(released.wait(), 60)
        await load(conn, held)

    monkeypatch.setattr(pg_derived, "_load", held_load)
    async with Engine.open(pg_url, config=DETERMINISTIC) as engine:
        await _fill(engine)
        backend: Any = engine.backend
        session = await engine.search(session_id="s1", query=QUERY, mode="keyword")
        assert session.legs.fts_ran[-1].filter == "c.session_id = 's1'"
        _rerun_tsquery(pg_url, session)
        raw = await engine.search(session_id="s1", query='"db pool" OR exhausted',
                                  raw_fts=True, mode="keyword")
        assert "websearch_to_tsquery" in raw.legs.fts_ran[-1].expression
        _rerun_tsquery(pg_url, raw)
        for tagged in (await engine.search(namespace="ana", query=QUERY, tags=["ops"],
                                           mode="keyword"),
                       await engine.search(session_id="s1", query=QUERY, tags=["ops"],
                                           mode="keyword")):
            assert "'tags'" in tagged.legs.fts_ran[-1].filter
            _rerun_tsquery(pg_url, tagged)
        # A namespace's first query: the postings' MaxScore in SQL (the index builds meanwhile).
        namespace = await engine.search(namespace="ana", query=QUERY, mode="keyword")
        assert not namespace.legs.fts_derived
        assert namespace.legs.fts_ran[-1].parameters["essential lexemes by round"]
        _rerun_tsquery(pg_url, namespace)
        released.set()
        await backend.derived.indexes.build_now("ana")
        derived = await engine.search(namespace="ana", query=QUERY, mode="keyword")
        assert derived.legs.fts_derived
        (step,) = derived.legs.fts_ran
        # bm25's N here is the namespace's chunks (as the SQL path counts them).
        assert step.engine == DERIVED and step.parameters["N"] == rows(
            pg_url, f"SELECT count(*) FROM chunks c WHERE {step.filter}")[0][0] == 5
        _rerun_tsquery(pg_url, derived)


async def test_raw_syntax_errors_are_worded_by_storage(db_path: Any) -> None:
    """The backend refuses a raw expression it cannot parse as the person's error, so
    retrieval never reads the database's wording."""
    async with Engine.open(str(db_path), config=DETERMINISTIC) as engine:
        await _fill(engine)
        request = LegRequest(scope=Scope(session_id="s1"), depth=10,
                             raw_expression='pool AND (')
        with pytest.raises(InvalidInput, match="FTS syntax error in raw mode"):
            await engine.backend.full_text_leg(request)
