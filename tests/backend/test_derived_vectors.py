"""The namespace vector leg from a matrix derived from the file, and the change log that keeps
it (and every derived index) in step with each writer, this process's or another's."""

from __future__ import annotations

import asyncio
import logging
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from core import Engine
from core.storage import vocabulary
from core.storage.derived.changes import changes_after, collapse
from core.storage.derived.vector_matrix import NamespaceVectors
from core.storage.sqlite import search, vectors
from core.storage.sqlite.connection import open_connection, select_in, sqlite_module
from core.storage.sqlite.sqlite_backend import DERIVED_VECTOR_LEG, SqliteBackend
from core.storage.sqlite.vectors import vectors_of
from core.storage.vocabulary import SESSION_VECTOR_LEG
from tests.conftest import DETERMINISTIC, execute, rows

WORDS = ("apple pie lisbon flight hotel river jazz piano tax invoice garden tomato rain "
         "bicycle museum ticket doctor tennis coffee violin winter harbour lamp").split()


def sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 9)))


def sqlite_backend(engine: Engine) -> SqliteBackend:
    backend = engine.backend
    assert isinstance(backend, SqliteBackend)
    return backend


async def built(engine: Engine) -> SqliteBackend:
    """The engine's backend with its namespace matrix built and in use."""
    backend = sqlite_backend(engine)
    await asyncio.to_thread(backend.derived.build_now, backend.namespace_vectors.name)
    await asyncio.to_thread(backend.derived.settle)  # its save caught up: nothing moves it
    return backend


async def namespace_ids(engine: Engine, namespace: str, query: str,
                        k: int = 10) -> tuple[list[str], str | None]:
    found = await engine.search(namespace=namespace, query=query, top_k=k, mode="vector")
    return [r.chunk_id for r in found.results], found.legs.vector_path


async def fill(engine: Engine, agents: dict[str, int], sessions_per_agent: int,
               seed: int = 7) -> None:
    rng = random.Random(seed)
    for agent, messages in agents.items():
        items = [(f"{agent}-s{n % sessions_per_agent}", None,
                  {"role": "user", "content": sentence(rng)}) for n in range(messages)]
        await engine.store_many(items, agent=agent)
    await engine.drain()


# --- the change log ----------------------------------------------------------------------------

def test_a_reused_rowid_is_deleted_before_it_is_read_again() -> None:
    entries = [(1, 5, "insert"), (2, 5, "delete"), (3, 5, "insert"), (4, 6, "insert"),
               (5, 7, "insert"), (6, 7, "delete"), (7, 8, "update"), (8, 9, "vector")]
    vectors = frozenset({"insert", "delete", "vector"})
    assert collapse(entries, vectors) == ([5, 6, 9], [5, 7, 9])
    text = frozenset({"insert", "delete", "update"})
    assert collapse(entries, text) == ([5, 6, 8], [5, 7, 8])


async def test_every_kind_of_write_is_logged_in_its_transaction(db_path: Path) -> None:
    async with Engine.open(db_path, config=DETERMINISTIC) as engine:
        await engine.store("s", 1, {"role": "user", "content": "apple pie"}, agent="ann")
        await engine.drain()
        await engine.forget("s")
        await engine.reindex()
    assert [op for _, op in rows(db_path, "SELECT fts_rowid, op FROM chunk_changes"
                                          " ORDER BY seq")] == ["insert", "vector", "delete",
                                                                "reset"]


def test_the_log_is_pruned_as_it_is_written(db_path: Path) -> None:
    async def make() -> None:
        async with Engine.open(db_path, config=DETERMINISTIC):
            pass
    asyncio.run(make())
    execute(db_path, "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n"
                     " WHERE i < 150000) INSERT INTO chunk_changes(fts_rowid, op)"
                     " SELECT i, 'insert' FROM n")
    (count, oldest, newest), = rows(db_path, "SELECT count(*), min(seq), max(seq)"
                                             " FROM chunk_changes")
    assert newest == 150000 and count <= 100000 + 1024 and oldest > 1


async def test_an_index_behind_the_pruned_log_is_rebuilt(db_path: Path) -> None:
    async with Engine.open(db_path, config=DETERMINISTIC) as engine:
        await engine.store("s", 1, {"role": "user", "content": "apple pie"}, agent="ann")
        await engine.drain()
        backend = await built(engine)
        await engine.store("s", 2, {"role": "user", "content": "jazz piano"}, agent="ann")
        await engine.drain()
        # What pruning does to an index that fell behind: its entries are gone.
        execute(db_path, "DELETE FROM chunk_changes WHERE seq < (SELECT max(seq)"
                         " FROM chunk_changes)")
        state = backend.derived.state(backend.namespace_vectors.name)
        rebuilds = state.rebuilds

        def behind(conn: Any) -> str | None:
            return changes_after(conn, state.watermark).rebuild
        assert await engine.backend._db.read(behind) is not None  # type: ignore[attr-defined]
        ids, path = await namespace_ids(engine, "ann", "jazz piano")
        assert path == "sqlite-vec" and len(ids) == 2  # the SQL path while it rebuilds
        backend = await built(engine)
        assert state.rebuilds == rebuilds + 1
        ids, path = await namespace_ids(engine, "ann", "jazz piano")
        assert path == DERIVED_VECTOR_LEG and len(ids) == 2


# --- the namespace matrix ----------------------------------------------------------------------

async def test_the_namespace_matrix_answers_as_sqlite_vec_does(db_path: Path) -> None:
    async with Engine.open(db_path, config=DETERMINISTIC) as engine:
        await fill(engine, {"ann": 1500, "bob": 600, "": 200}, sessions_per_agent=30)
        backend = await built(engine)
        model = engine.model.embedder.name
        rng = random.Random(11)
        queries = [sentence(rng) for _ in range(300)]
        embedded = engine.model.embedder.embed(queries)
        for query, vector in zip(queries, embedded, strict=True):
            for namespace in ("ann", "bob", ""):
                scope = vocabulary.Scope(namespace=namespace)
                ours, path = await backend.vector_leg(scope, np.asarray(vector), 10, model)
                theirs = await backend.vector_search(scope, np.asarray(vector), 10, model)
                assert path == DERIVED_VECTOR_LEG
                assert [cid for cid, _ in ours] == [cid for cid, _ in theirs], query
                assert np.allclose([d for _, d in ours], [d for _, d in theirs], atol=1e-5)


async def test_its_memory_stays_near_the_raw_vectors(db_path: Path) -> None:
    async with Engine.open(db_path, config=DETERMINISTIC) as engine:
        await fill(engine, {"ann": 3000}, sessions_per_agent=10)
        backend = await built(engine)
        index = backend.namespace_vectors
        assert index.rows() == 3000
        assert index.memory_bytes() <= 1.2 * index.raw_bytes()
        await fill(engine, {"ann": 2000}, sessions_per_agent=10, seed=8)  # grown by apply
        ids, path = await namespace_ids(engine, "ann", "apple pie")
        assert path == DERIVED_VECTOR_LEG and index.rows() == 5000
        assert index.memory_bytes() <= 1.2 * index.raw_bytes()
        for n in range(10):  # most rows deleted: the matrix shrinks with them
            await engine.forget(f"ann-s{n}")
        await namespace_ids(engine, "ann", "apple pie")
        assert index.rows() == 0 and index.memory_bytes() < 64 * 1024


async def test_explain_says_which_path_answered(db_path: Path) -> None:
    async with Engine.open(db_path, config=DETERMINISTIC) as engine:
        await fill(engine, {"ann": 50}, sessions_per_agent=5)
        # The build starts in the background with the first namespace query: on a quiet
        # machine it can be done before that query runs, so its path is either.
        first = await engine.search(namespace="ann", query="apple pie")
        assert first.explain()["legs"]["vector_path"] in ("sqlite-vec", DERIVED_VECTOR_LEG)
        await built(engine)
        second = await engine.search(namespace="ann", query="apple pie")
        assert second.explain()["legs"]["vector_path"] == DERIVED_VECTOR_LEG
        assert [r.chunk_id for r in first.results] == [r.chunk_id for r in second.results]
        session = await engine.search(session_id="ann-s1", query="apple pie")
        assert session.explain()["legs"]["vector_path"] == SESSION_VECTOR_LEG
        tagged = await engine.search(namespace="ann", query="apple pie", tags=["x"])
        assert tagged.legs.vector_path == "sqlite-vec"


# --- kept in step with every writer ------------------------------------------------------------

async def test_another_engines_writes_are_found_by_the_next_query(db_path: Path) -> None:
    async with Engine.open(db_path, config=DETERMINISTIC) as reader:
        await reader.store("r", 1, {"role": "user", "content": "apple pie"}, agent="ann")
        await reader.drain()
        await built(reader)
        async with Engine.open(db_path, config=DETERMINISTIC) as writer:
            await writer.store("w", 1, {"role": "user", "content": "violin winter harbour"},
                               agent="ann")
            await writer.drain()
            written = [row[0] for row in rows(db_path, "SELECT chunk_id FROM chunks"
                                                       " WHERE session_id = 'w'")]
            ids, path = await namespace_ids(reader, "ann", "violin winter harbour", k=1)
            assert path == DERIVED_VECTOR_LEG and ids == written
            await writer.forget("w")
            ids, _ = await namespace_ids(reader, "ann", "violin winter harbour")
            assert len(ids) == 1 and written[0] not in ids


async def test_a_rowid_handed_out_again_holds_its_new_chunk(db_path: Path) -> None:
    async with Engine.open(db_path, config=DETERMINISTIC) as engine:
        await engine.store("a", 1, {"role": "user", "content": "apple pie"}, agent="ann")
        await engine.store("b", 1, {"role": "user", "content": "tax invoice"}, agent="ann")
        await engine.drain()
        backend = await built(engine)
        await engine.forget("b")  # the highest fts_rowid: max + 1 hands it out again
        await engine.store("c", 1, {"role": "user", "content": "jazz piano"}, agent="bob")
        await engine.drain()
        assert rows(db_path, "SELECT fts_rowid FROM chunks WHERE session_id = 'c'") == [(2,)]
        ann, _ = await namespace_ids(engine, "ann", "tax invoice")
        bob, path = await namespace_ids(engine, "bob", "jazz piano")
        assert path == DERIVED_VECTOR_LEG
        assert len(ann) == 1 and len(bob) == 1 and backend.namespace_vectors.rows() == 2


async def test_a_reindex_rebuilds_the_matrix(db_path: Path) -> None:
    async with Engine.open(db_path, config=DETERMINISTIC) as engine:
        await fill(engine, {"ann": 40}, sessions_per_agent=4)
        backend = await built(engine)
        before, _ = await namespace_ids(engine, "ann", "apple pie")
        await engine.reindex()
        await engine.drain()
        await namespace_ids(engine, "ann", "apple pie")  # sees the reset: rebuilds
        backend = await built(engine)
        after, path = await namespace_ids(engine, "ann", "apple pie")
        assert path == DERIVED_VECTOR_LEG and after == before
        assert backend.namespace_vectors.rows() == 40


def test_an_empty_index_answers_nothing() -> None:
    index = NamespaceVectors()
    assert index.nearest("ann", np.ones(4, dtype=np.float32), 10) == []
    assert index.memory_bytes() == 0


class _SlowIndex:
    """An index whose build is one very long SQL statement."""

    name = "slow"
    follows = frozenset({"insert"})

    def __init__(self) -> None:
        import threading
        self.started = threading.Event()

    def build(self, conn: Any) -> None:
        self.started.set()  # close() may land before the statement below starts
        conn.execute("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n"
                     " WHERE i < 10000000000) SELECT count(*) FROM n").fetchone()

    def apply(self, conn: Any, inserted: Any, deleted: Any) -> None:
        raise AssertionError("never built, never applied")

    def memory_bytes(self) -> int:
        return 0


async def test_closing_interrupts_a_build_in_flight(db_path: Path) -> None:
    from core.storage.derived.holder import DerivedIndexes

    async with Engine.open(db_path, config=DETERMINISTIC) as engine:
        slow = _SlowIndex()
        holder = DerivedIndexes([slow], sqlite_backend(engine)._db.connect_reader)
        holder.start_build("slow")
        assert await asyncio.to_thread(slow.started.wait, 30)
        await asyncio.to_thread(holder.close)  # returns: the statement was interrupted
        state = holder.state("slow")
        assert not state.ready and not state.building and "interrupt" in (state.problem or "")


async def test_vectors_copied_after_their_chunks_reach_the_matrix(tmp_path: Path) -> None:
    from core.storage.sqlite import copying
    from core.storage.sqlite.connection import open_connection

    source, copy = tmp_path / "source.db", tmp_path / "copy.db"
    async with Engine.open(source, config=DETERMINISTIC) as engine:
        await fill(engine, {"ann": 20}, sessions_per_agent=2)
    conn = open_connection(source, read_only=True, busy_timeout_ms=5000)
    try:
        pages = {name: copying.read_rows(conn, name, None, 1000).rows
                 for name in ("sessions", "chunks", "chunks_vec")}
    finally:
        conn.close()
    async with Engine.open(copy, config=DETERMINISTIC) as engine:
        backend = await built(engine)
        db = backend._db
        await db.write(copying.write_rows, "sessions", pages["sessions"])
        await db.write(copying.write_rows, "chunks", pages["chunks"])
        ids, _ = await namespace_ids(engine, "ann", "apple pie")
        assert ids == []  # the chunks are there, their vectors not yet
        await db.write(copying.write_rows, "chunks_vec", pages["chunks_vec"])
        ids, path = await namespace_ids(engine, "ann", "apple pie", k=50)
        assert path == DERIVED_VECTOR_LEG and len(ids) == 20


class _GatedIndex:
    """An index whose apply waits at a gate halfway, so a test can look at it mid-apply."""

    follows = frozenset({"insert"})

    def __init__(self, name: str, gated: bool) -> None:
        import threading
        self.name = name
        self.applied = 0
        self.half_applied = False
        self.gate_reached = threading.Event()
        self.gate = threading.Event()
        if not gated:
            self.gate.set()

    def build(self, conn: Any) -> None:
        self.applied = 0

    def apply(self, conn: Any, inserted: Any, deleted: Any) -> None:
        self.half_applied = True
        self.gate_reached.set()
        assert self.gate.wait(30)
        self.applied += len(inserted)
        self.half_applied = False

    def memory_bytes(self) -> int:
        return 0


async def test_applying_one_index_holds_up_no_query_of_another(db_path: Path) -> None:
    import threading

    from core.storage.derived.holder import DerivedIndexes
    from core.storage.sqlite.connection import open_connection

    def connect() -> Any:
        return open_connection(db_path, read_only=True, busy_timeout_ms=5000)

    async with Engine.open(db_path, config=DETERMINISTIC) as engine:
        slow, quick = _GatedIndex("slow", gated=True), _GatedIndex("quick", gated=False)
        holder = DerivedIndexes([slow, quick], connect)
        holder.build_now("slow")
        holder.build_now("quick")
        await fill(engine, {"ann": 5}, sessions_per_agent=1)
    seen: dict[str, Any] = {}

    def read(index: _GatedIndex, label: str) -> None:
        conn = connect()
        try:
            with holder.reading(conn, index.name) as ready:
                seen[label] = (ready, index.half_applied, index.applied)
        finally:
            conn.close()

    applying = threading.Thread(target=read, args=(slow, "first"))
    applying.start()
    assert slow.gate_reached.wait(30)
    # The quick index is brought up to date and read while the slow one is mid-apply.
    read(quick, "quick")
    assert seen["quick"] == (True, False, 5)
    # A query of the slow index waits for the apply to finish: it never sees it half done.
    waiting = threading.Thread(target=read, args=(slow, "second"))
    waiting.start()
    waiting.join(0.2)
    assert waiting.is_alive() and "second" not in seen
    slow.gate.set()
    applying.join(30)
    waiting.join(30)
    assert seen["first"] == seen["second"] == (True, False, 5)
    holder.close()


async def test_a_namespace_query_reads_its_chunks_in_its_legs(
        db_path: Path, monkeypatch: Any) -> None:
    """Once both derived indexes answer, each leg reads its chunks by rowid in its own hop:
    no fetch by id follows, and the answer is the one legs-then-fetch gives."""
    import functools

    from core.storage.derived import vector_matrix
    from core.storage.shared_operations import SharedOperations

    async with Engine.open(db_path, config=DETERMINISTIC) as engine:
        # Enough rows that the scan runs (a small space is scored exactly, row by row).
        await fill(engine, {"ann": 600, "bob": 20}, sessions_per_agent=6)
        backend = await built(engine)
        await asyncio.to_thread(backend.derived.build_now, backend.full_text_index.name)
        queries = ["apple pie lisbon", "jazz piano winter", "tax invoice doctor"]
        fetched: list[int] = []
        real_fetch = search.fetch_chunks
        monkeypatch.setattr(search, "fetch_chunks", lambda conn, ids: (
            fetched.append(len(ids)), real_fetch(conn, ids))[1])
        scans: list[bool] = []
        real_scan = vector_matrix._scan
        monkeypatch.setattr(vector_matrix, "_scan", lambda m, q, all_cores=False: (
            scans.append(all_cores), real_scan(m, q, all_cores))[1])
        ours = [await engine.search(namespace="ann", query=q, top_k=10) for q in queries]
        assert fetched == []
        # Both legs from memory run one after the other, the scan on BLAS's every thread.
        assert scans == [True] * len(queries)
        scans.clear()  # a vector-only query has no other leg: its scan takes every thread
        await engine.search(namespace="ann", query=queries[0], top_k=10, mode="vector")
        assert scans == [True]
        for found in ours:
            legs = found.explain()["legs"]
            assert (legs["fts_path"], legs["vector_path"]) == ("derived index",
                                                              DERIVED_VECTOR_LEG)
            assert found.results and all(r.text for r in found.results)
        monkeypatch.setattr(backend, "namespace_legs",
                            functools.partial(SharedOperations.namespace_legs, backend))
        theirs = [await engine.search(namespace="ann", query=q, top_k=10) for q in queries]
        assert fetched  # the shared way: legs, then one fetch by id
        for mine, other in zip(ours, theirs, strict=True):
            assert [(r.chunk_id, r.score, r.text, r.metadata) for r in mine.results] == [
                (r.chunk_id, r.score, r.text, r.metadata) for r in other.results]


def _through_vec0(path: Path, rowids: list[int]) -> list[tuple[int, str | None, bytes]]:
    conn = open_connection(path, read_only=True, busy_timeout_ms=5000)
    try:
        return sorted(select_in(
            conn, "SELECT c.fts_rowid, v.agent_identity, v.embedding_blob FROM chunks c"
                  " JOIN chunks_vec v ON v.chunk_id = c.chunk_id"
                  " WHERE c.embedding_status = 'done' AND c.fts_rowid IN", rowids))
    finally:
        conn.close()


def _vectors_of(path: Path, rowids: list[int], dimension: int,
                ) -> list[tuple[int, str | None, bytes]]:
    conn = open_connection(path, read_only=True, busy_timeout_ms=5000)
    try:
        return sorted(vectors_of(conn, rowids, dimension))
    finally:
        conn.close()


async def test_vectors_read_a_block_at_a_time_are_the_ones_vec0_reads(db_path: Path) -> None:
    async with Engine.open(db_path, config=DETERMINISTIC) as engine:
        await fill(engine, {"ann": 400, "bob": 300}, 5)
        await engine.forget("ann-s1")  # holes in vec0's blocks
        await fill(engine, {"ann": 50}, 2, seed=3)  # and rows after them
        await engine.store("pending", 0, {"role": "user", "content": "no vector yet"},
                           agent="ann")  # its worker is not waited for
    (top,) = rows(db_path, "SELECT max(fts_rowid) FROM chunks")[0]
    every = list(range(top + 3))  # a deleted rowid, one never used, one past the end
    expected = _through_vec0(db_path, every)
    assert len(expected) > 600 and {row[1] for row in expected} == {"ann", "bob"}
    assert _vectors_of(db_path, every, 64) == expected
    conn = open_connection(db_path, read_only=True, busy_timeout_ms=5000)
    try:  # read from the blocks indeed, not through vec0 after a failed check
        ids = dict(select_in(conn, "SELECT chunk_id, fts_rowid FROM chunks WHERE fts_rowid IN",
                             every))
        from_blocks = vectors._from_blocks(conn, ids, 64)
    finally:
        conn.close()
    assert from_blocks is not None and sorted(from_blocks) == expected
    some = every[::7]
    assert _vectors_of(db_path, some, 64) == _through_vec0(db_path, some)
    assert _vectors_of(db_path, [], 64) == []


async def test_vectors_not_where_the_block_layout_says_are_read_through_vec0(
        db_path: Path, caplog: pytest.LogCaptureFixture,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Another sqlite-vec may lay its blocks out otherwise: the first row read both ways
    must agree (here, a wrong width makes them differ), else vec0 reads every row."""
    async with Engine.open(db_path, config=DETERMINISTIC) as engine:
        await fill(engine, {"ann": 200}, 3)
    (top,) = rows(db_path, "SELECT max(fts_rowid) FROM chunks")[0]
    every = list(range(top + 1))
    expected = _through_vec0(db_path, every)
    for width in (32, 63, 4096):
        assert _vectors_of(db_path, every, width) == expected

    def renamed(*args: Any) -> None:  # as a newer vec0 without these tables would answer
        raise sqlite_module().OperationalError("no such table: chunks_vec_rowids")

    monkeypatch.setattr(vectors, "_from_blocks", renamed)
    with caplog.at_level(logging.INFO, logger=vectors.__name__):
        assert _vectors_of(db_path, every, 64) == expected
    assert "no such table: chunks_vec_rowids" in caplog.text
