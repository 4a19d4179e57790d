"""A namespace's indexes derived in memory on PostgreSQL (core/storage/pg/derived.py): the
SQL path's rankings, kept in step with other engines' writes through the change log
(migration 0003), including transactions that commit out of their log order."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import psycopg
import pytest

from core import Engine
from core.errors import InvalidInput
from core.storage.derived.vector_matrix import DERIVED_VECTOR_LEG
from core.storage.pg import derived as pg_derived
from core.storage.pg.postings_index import NamespacePostings
from core.storage.vocabulary import Scope
from tests.conftest import DETERMINISTIC
from tests.pg.test_pg_fts_postings import QUERIES, fill, same_ranking


async def built(engine: Engine, namespace: str) -> Any:
    backend: Any = engine.backend
    return await backend.derived.indexes.build_now(namespace)


@pytest.mark.parametrize("context_weight", [0.5, 0.0])
async def test_derived_full_text_ranks_as_the_sql_path(pg_url: str,
                                                       context_weight: float) -> None:
    await fill(pg_url)
    async with Engine.open(pg_url, config=DETERMINISTIC) as engine:
        backend: Any = engine.backend
        await built(engine, "a")
        await built(engine, "b")
        for namespace in ("a", "b"):
            for query in [*QUERIES, "the good", "deploying deployed", "good_deploy cache",
                          "think-today quokka", "good_good", "today_the_think"]:
                for k in (1, 5, 10):
                    terms = query.split()
                    found = await backend.derived.full_text_rows(namespace, terms, k,
                                                                 context_weight)
                    expected = await backend.fts_search(Scope(namespace=namespace), terms, k,
                                                        (), context_weight)
                    assert found is not None and same_ranking(found, expected), (
                        namespace, query, k)


async def test_derived_vectors_rank_exactly(pg_url: str) -> None:
    await fill(pg_url)
    async with Engine.open(pg_url, config=DETERMINISTIC) as engine:
        await engine.drain()
        backend: Any = engine.backend
        await built(engine, "a")
        for query in QUERIES:
            vector = await engine.embed_query(query)
            found = await backend.derived.vector_rows("a", vector, 10)
            async with await psycopg.AsyncConnection.connect(pg_url) as conn:
                cursor = await conn.execute(
                    "SELECT chunk_id, embedding_blob <=> %s::vector FROM chunks_vec"
                    " WHERE agent_identity = 'a' ORDER BY 2, chunk_id LIMIT 10",
                    ("[" + ",".join(map(repr, map(float, vector))) + "]",))
                exact = await cursor.fetchall()
            assert [round(d, 5) for _, d in found] == [round(d, 5) for _, d in exact]
            assert {c for c, _ in found} == {c for c, _ in exact}
        explained = (await engine.search(namespace="a", query="quokka good")).explain()
        assert explained["legs"]["vector_path"] == DERIVED_VECTOR_LEG
        assert explained["legs"]["fts_path"] == "derived index"
        assert not any("approximate" in note for note in explained["notes"])


async def test_another_engines_writes_and_deletes_reach_both_legs(pg_url: str) -> None:
    await fill(pg_url)
    async with Engine.open(pg_url, config=DETERMINISTIC) as reader, \
            Engine.open(pg_url, config=DETERMINISTIC) as writer:
        await reader.drain()
        backend: Any = reader.backend
        await built(reader, "a")
        await writer.store("late", 1, {"role": "user", "content": "a narwhal sang"},
                           namespace="a")
        await writer.drain()
        rows = await backend.derived.full_text_rows("a", ["narwhal"], 5, 0.5)
        assert rows is not None and len(rows) == 1
        new_chunk = rows[0][0]
        nearest = await backend.derived.vector_rows(
            "a", await reader.embed_query("a narwhal sang"), 1)
        assert nearest is not None and nearest[0][0] == new_chunk
        found = await reader.search(namespace="a", query="narwhal")
        assert [r.chunk_id for r in found.results][:1] == [new_chunk]
        await writer.forget("late")
        assert await backend.derived.full_text_rows("a", ["narwhal"], 5, 0.5) == []
        nearest = await backend.derived.vector_rows(
            "a", await reader.embed_query("a narwhal sang"), 5)
        assert nearest is not None and new_chunk not in {c for c, _ in nearest}
        # Another namespace's writes stay out of this one's index.
        await writer.store("elsewhere", 1, {"role": "user", "content": "narwhal"},
                           namespace="b")
        assert await backend.derived.full_text_rows("a", ["narwhal"], 5, 0.5) == []


def insert_chunk(conn: psycopg.Connection[Any], chunk_id: str, text: str) -> None:
    conn.execute(
        "INSERT INTO chunks(chunk_id, session_id, chunk_text, content_hash, sequence_start,"
        " sequence_end, scope_token) VALUES (%s, 's1', %s, %s, 1, 1, 's1')",
        (chunk_id, text, chunk_id))


async def test_a_transaction_committing_after_a_later_one_is_not_missed(pg_url: str) -> None:
    await fill(pg_url)
    async with Engine.open(pg_url, config=DETERMINISTIC) as engine:
        backend: Any = engine.backend
        await built(engine, "a")
        with psycopg.connect(pg_url) as early, psycopg.connect(pg_url) as late:
            insert_chunk(early, "early", "pelican")  # its log entry takes the lower seq
            insert_chunk(late, "late", "pelican")
            late.commit()
            rows = await backend.derived.full_text_rows("a", ["pelican"], 5, 0.5)
            assert rows is not None and [c for c, _ in rows] == ["late"]
            early.commit()
            seqs = dict(early.execute(
                "SELECT c.chunk_id, l.seq FROM chunk_changes l JOIN chunks c"
                " ON c.fts_rowid = l.fts_rowid WHERE c.chunk_id IN ('early', 'late')"
            ).fetchall())
            assert seqs["early"] < seqs["late"], "the case: committed out of seq order"
        rows = await backend.derived.full_text_rows("a", ["pelican"], 5, 0.5)
        assert rows is not None and sorted(c for c, _ in rows) == ["early", "late"]


async def test_pruned_entries_make_the_index_rebuild(pg_url: str) -> None:
    await fill(pg_url)
    async with Engine.open(pg_url, config=DETERMINISTIC) as engine:
        backend: Any = engine.backend
        held = await built(engine, "a")
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute("UPDATE chunk_changes_pruned SET max_xid = pg_current_xact_id()")
        assert await backend.derived.full_text_rows("a", ["good"], 5, 0.5) is None
        rebuilt = await built(engine, "a")
        assert rebuilt is not held and rebuilt.ready and rebuilt.rebuilds == 1
        assert await backend.derived.full_text_rows("a", ["good"], 5, 0.5)


def test_postings_forget_a_removed_chunk_and_take_it_back() -> None:
    postings = NamespacePostings()
    for rowid, length in ((1, 3), (2, 2), (3, 4)):
        postings.add_chunk(rowid, length)
    postings.load_lexeme("owl", [1, 3], [1, 2], [0, 0])
    postings.load_lexeme("fox", [2], [1], [1])
    assert [r for r, _ in postings.top_k(["owl"], 5, 0.5)] == [3, 1]
    postings.remove(3)
    assert [r for r, _ in postings.top_k(["owl"], 5, 0.5)] == [1]
    postings.add_chunk(3, 1)
    postings.add_postings(3, [("owl", 5, 0)])
    # fox, in one chunk of three, outweighs owl, in two (idf clamped); the new owl ranks
    # above the old one (more positions, shorter)
    assert [r for r, _ in postings.top_k(["owl", "fox"], 5, 0.5)] == [2, 3, 1]


LOCOMO = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "locomo-dev"


@pytest.mark.skipif(not LOCOMO.is_dir(), reason="the LoCoMo dev data is not beside the worktree")
async def test_derived_full_text_ranks_as_the_sql_path_on_the_locomo_dev_questions(
        pg_url: str) -> None:
    from core.evaluation import convert_locomo_file
    from core.retrieval.fts_query import query_terms

    conversions = [c for path in sorted(LOCOMO.glob("*.json")) for c in convert_locomo_file(path)]
    async with Engine.open(pg_url, config={**DETERMINISTIC, "agent": "ana"}) as engine:
        for conversion in conversions:
            await engine.store_many([(m.session_id, m.sequence, m.message)
                                     for messages in conversion.dataset.messages.values()
                                     for m in messages])
        backend: Any = engine.backend
        await built(engine, "ana")
        questions = [q.query for c in conversions for q in c.dataset.queries]
        assert len(questions) > 100
        for question in questions:
            terms = query_terms(question)
            found = await backend.derived.full_text_rows("ana", terms, 10, 0.5)
            expected = await backend.fts_search(Scope(namespace="ana"), terms, 10, (), 0.5)
            assert found is not None and same_ranking(found, expected), question


async def test_a_bound_roles_derived_index_holds_what_the_database_shows_it(
        pg_url: str) -> None:
    from tests.pg.test_pg_roles import alpha_bound

    async with alpha_bound(pg_url, DETERMINISTIC) as url, \
            Engine.open(url, config=DETERMINISTIC) as agent, \
            Engine.open(pg_url, config=DETERMINISTIC) as owner:
        backend: Any = agent.backend
        own = await built(agent, "alpha")
        other = await built(agent, "beta")
        assert len(own.chunk_ids) == 1 and own.vectors.rows() == 1
        assert len(other.chunk_ids) == 0
        assert other.vectors.rows() == 0 and other.postings.postings_count() == 0
        await owner.append("beta-2", {"role": "user", "content": "beta hides a key"},
                           namespace="beta")
        await owner.append("alpha-2", {"role": "user", "content": "alpha finds a key"},
                           namespace="alpha")
        await owner.drain()
        assert await backend.derived.full_text_rows("beta", ["key"], 5, 0.5) == []
        assert len(await backend.derived.full_text_rows("alpha", ["key"], 5, 0.5)) == 2
        found = await agent.search(namespace="beta", query="key")
        assert found.results == []


async def test_a_namespace_postgresql_cannot_hold_gets_no_index(
        pg_url: str, caplog: pytest.LogCaptureFixture) -> None:
    async with Engine.open(pg_url, config=DETERMINISTIC) as engine:
        backend: Any = engine.backend
        with pytest.raises(InvalidInput, match="NUL"):  # as the SQL path refuses it
            await engine.hybrid_query(namespace="a\x00b", query="key")
        assert backend.derived.indexes.index("a\x00b") is None
        assert "could not be built" not in caplog.text


async def test_an_index_written_to_enough_is_rebuilt_while_it_answers(
        pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from core.storage.pg import derived

    await fill(pg_url)
    monkeypatch.setattr(derived, "REBUILD_CHURN", 0.0)  # any write is enough
    async with Engine.open(pg_url, config=DETERMINISTIC) as engine:
        backend: Any = engine.backend
        held = await built(engine, "a")
        await engine.store("late", 1, {"role": "user", "content": "a narwhal sang"},
                           namespace="a")
        rows = await backend.derived.full_text_rows("a", ["narwhal"], 5, 0.5)
        assert rows is not None and len(rows) == 1  # the index held answered, caught up
        assert held.postings.churn() > 0
        rebuilt = await built(engine, "a")
        assert rebuilt is not held and rebuilt.rebuilds == 1
        assert rebuilt.postings.churn() == 0
        assert await backend.derived.full_text_rows("a", ["narwhal"], 5, 0.5) == rows


async def test_a_namespace_querys_two_legs_share_one_sync(pg_url: str) -> None:
    await fill(pg_url)
    async with Engine.open(pg_url, config=DETERMINISTIC) as engine:
        await engine.drain()
        indexes: Any = engine.backend.derived.indexes  # type: ignore[attr-defined]
        await built(engine, "a")
        syncs = 0
        real = indexes._catch_up

        async def counted(conn: Any, held: Any) -> None:
            nonlocal syncs
            syncs += 1
            await real(conn, held)

        indexes._catch_up = counted
        found = await engine.search(namespace="a", query="quokka good")
        assert found.legs.vector_path == DERIVED_VECTOR_LEG and found.legs.fts_derived
        assert syncs == 1


async def test_the_log_is_pruned_as_written_and_a_reader_behind_it_rebuilds(
        pg_url: str) -> None:
    await fill(pg_url)
    async with Engine.open(pg_url, config=DETERMINISTIC) as engine:
        backend: Any = engine.backend
        held = await built(engine, "a")
        with psycopg.connect(pg_url) as conn:
            old = conn.execute("SELECT count(*), max(seq) FROM chunk_changes").fetchone()
            assert old is not None and old[0] > 0
            insert_chunk(conn, "x1", "pelican")  # logged after the index was built
            conn.commit()
            # The next statement's two entries end on a multiple of 4,096: the entries more
            # than 200,000 seqs older go, in the writer's transaction.
            conn.execute("ALTER TABLE chunk_changes ALTER COLUMN seq RESTART WITH 303103")
            conn.execute("INSERT INTO chunks(chunk_id, session_id, chunk_text, content_hash,"
                         " sequence_start, sequence_end, scope_token) VALUES"
                         " ('x2', 's1', 'pelican', 'x2', 1, 1, 's1'),"
                         " ('x3', 's1', 'pelican', 'x3', 1, 1, 's1')")
            conn.commit()
            kept = conn.execute("SELECT min(seq), count(*) FROM chunk_changes").fetchone()
            assert kept == (303103, 2)
        # This reader had not read the pruned entries (x1's among them):
        # it rebuilds rather than miss them, and the rebuilt index holds every chunk.
        assert await backend.derived.full_text_rows("a", ["pelican"], 5, 0.5) is None
        rebuilt = await built(engine, "a")
        assert rebuilt is not held
        rows = await backend.derived.full_text_rows("a", ["pelican"], 5, 0.5)
        assert rows is not None and sorted(c for c, _ in rows) == ["x1", "x2", "x3"]


async def test_vectors_of_another_size_make_the_index_rebuild(pg_url: str) -> None:
    await fill(pg_url)
    async with Engine.open(pg_url, config=DETERMINISTIC) as engine:
        await engine.drain()
        backend: Any = engine.backend
        held = await built(engine, "a")
        assert held.vectors.dimension == 64
        with psycopg.connect(pg_url, autocommit=True) as conn:  # as a reindex leaves it
            conn.execute("DROP INDEX IF EXISTS chunks_vec_hnsw")
            conn.execute("DELETE FROM chunks_vec WHERE agent_identity = 'a'")
            conn.execute("ALTER TABLE chunks_vec ALTER COLUMN embedding_blob TYPE vector")
            conn.execute("INSERT INTO chunks_vec(chunk_id, agent_identity, session_id,"
                         " embedding_blob, embedding_model) SELECT chunk_id, 'a', session_id,"
                         " '[1,0,0]', 'other' FROM chunks WHERE session_id = 's1'"
                         " ORDER BY fts_rowid LIMIT 1")
        query = np.array([1.0, 0.0, 0.0], dtype=np.float32)
        assert await backend.derived.vector_rows("a", query, 5) is None  # rebuilding
        rebuilt = await built(engine, "a")
        assert rebuilt.vectors.dimension == 3 and rebuilt.vectors.rows() == 1
        nearest = await backend.derived.vector_rows("a", query, 5)
        assert nearest is not None and len(nearest) == 1 and nearest[0][1] < 1e-6


async def test_namespaces_beyond_the_memory_budget_are_dropped_and_rebuilt(
        pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    await fill(pg_url)
    async with Engine.open(pg_url, config=DETERMINISTIC) as engine:
        await engine.drain()
        indexes = engine.backend.derived.indexes  # type: ignore[attr-defined]
        assert indexes.budget_bytes == 4096 * 2**20  # storage.derived_memory_mb's default
        indexes.saving = None  # no saved copy: a dropped index is built again from SQL
        before = {q: [r.chunk_id for r in (await engine.search(namespace="a", query=q)).results]
                  for q in QUERIES}
        await built(engine, "a")
        indexes.budget_bytes = indexes.held_bytes() + 1  # room for "a" alone
        monkeypatch.setattr(pg_derived, "KEPT_AFTER_USE_S", 0.0)
        await built(engine, "b")
        assert indexes.index("a") is None and indexes.dropped == 1
        assert indexes.index("b").ready
        paths = []
        for query in QUERIES:  # the SQL path answers while "a" is built again
            search = await engine.search(namespace="a", query=query)
            paths.append(search.explain()["legs"]["fts_path"])
            assert [r.chunk_id for r in search.results] == before[query]
        assert paths[0] == "database"
        await built(engine, "a")  # the first query started it; "b" goes in turn
        assert indexes.index("b") is None and indexes.dropped == 2
        for query in QUERIES:
            search = await engine.search(namespace="a", query=query)
            assert search.explain()["legs"]["fts_path"] == "derived index"
            assert [r.chunk_id for r in search.results] == before[query]


async def test_a_namespace_queried_in_the_last_minute_is_kept_over_the_budget(
        pg_url: str, caplog: pytest.LogCaptureFixture) -> None:
    await fill(pg_url)
    async with Engine.open(pg_url, config={**DETERMINISTIC,
                                           "storage": {"derived_memory_mb": 0}}) as engine:
        indexes = engine.backend.derived.indexes  # type: ignore[attr-defined]
        assert indexes.budget_bytes == 0
        await built(engine, "a")
        await built(engine, "b")  # no limit: both held
        assert indexes.index("a").ready and indexes.dropped == 0
        indexes.budget_bytes = 1
        await engine.search(namespace="a", query="quokka")
        await engine.search(namespace="b", query="quokka")
        indexes.start_build("c")  # a namespace with nothing in it builds in an instant
        await built(engine, "c")
        assert indexes.index("a").ready and indexes.index("b").ready and indexes.dropped == 0
        assert "storage.derived_memory_mb" in caplog.text
