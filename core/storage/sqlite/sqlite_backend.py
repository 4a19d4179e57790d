"""The SQLite storage backend: the engine's only way to the database.

Everything above this class (pipelines, retrieval fusion, summaries, cadences) is plain
Python over its async methods, which implement :class:`core.storage.backend.Backend` (the
contract the PostgreSQL backend implements too). Writes go to the single writer lane, reads
to the pool. The operations both backends delegate alike are in
:mod:`core.storage.shared_operations`; this class holds what is SQLite's own.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import time
from collections.abc import Awaitable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from core.config import StorageConfig
from core.errors import SchemaTooNew, StorageFull
from core.locations import parse_location
from core.storage import vocabulary
from core.storage.agent_items_operations import AgentItemsOperations
from core.storage.backend import BackendFeatures
from core.storage.derived.fulltext import FullTextIndex
from core.storage.derived.fulltext_leg import DerivedFullText
from core.storage.derived.holder import DerivedIndexes
from core.storage.derived.saving import ensure_database_id, sqlite_saving
from core.storage.derived.vector_matrix import DERIVED_VECTOR_LEG, NamespaceVectors
from core.storage.executed import Executed
from core.storage.langgraph_operations import LangGraphOperations
from core.storage.operations import OperationModules
from core.storage.rows import ChunkRow, schema_too_new_message
from core.storage.shared_operations import SharedOperations
from core.storage.sqlite import (
    agent_items,
    chunk_rows,
    copying,
    events,
    facts,
    fts_segments,
    langgraph_rows,
    logbook,
    note_listing,
    notes,
    schedules,
    scratchpad,
    search,
    session_snapshot,
    summaries,
    vectors,
)
from core.storage.sqlite.connection import Database
from core.storage.sqlite.index_follower import IndexFollower, follow_imports
from core.storage.sqlite.migrations import current_version, latest_version, migrate
from core.storage.sqlite.refusals import storage_refusal
from core.storage.sqlite.session_vectors import SessionMatrix
from core.storage.vocabulary import VECTOR_IDENTITY_KEY

if TYPE_CHECKING:
    from core.storage.backend import Backend

log = logging.getLogger(__name__)

SQLITE_FEATURES = BackendFeatures(
    # vec0 answers a KNN by scanning the scope's partition; tagged queries rank exactly.
    exact_vector_search=True,
    full_text_ranking="bm25",
    raw_full_text_syntax="fts5",
    # PRAGMA data_version on a connection of its own moves with every other commit.
    change_counter=True,
    # One writer at a time per file (WAL), whichever process it is in.
    single_writer=True,
    # PRAGMA max_page_count.
    can_cap_size=True,
)


class SqliteBackend(SharedOperations, LangGraphOperations, AgentItemsOperations):
    """Async storage operations over one SQLite file."""

    features = SQLITE_FEATURES
    vector_leg_name = "sqlite-vec"
    _ops = OperationModules(
        copying=copying, events=events, facts=facts, logbook=logbook, note_listing=note_listing,
        notes=notes, schedules=schedules, scratchpad=scratchpad, search=search,
        session_snapshot=session_snapshot, summaries=summaries, vectors=vectors,
        langgraph_rows=langgraph_rows, agent_items=agent_items)

    def __init__(self, db: Database, warnings: list[str]) -> None:
        self._db = db
        self.path = db.path
        self.location = parse_location(db.path)
        self.read_only = db.read_only
        self.warnings = warnings
        self.schema_version = 0
        self._follower: IndexFollower | None = None
        self.read_only_reason: str | None = None
        """Why the file is read-only when nobody asked for it (the app's banner says it)."""
        self.namespace_vectors = NamespaceVectors()
        self.full_text_index = FullTextIndex()
        self.derived = DerivedIndexes([self.namespace_vectors, self.full_text_index],
                                      db.connect_reader)
        """Indexes derived from the file (:mod:`core.storage.derived`), built on first use."""
        self.derived_full_text = DerivedFullText(self.derived, self.full_text_index)
        """The namespace full-text leg from its in-memory index once that is built."""
        self.session_matrix = SessionMatrix(self.derived, self.namespace_vectors,
                                            self.full_text_index)
        """A session's vector leg from the namespace matrix once that is built, and its
        full-text leg from the full-text index once that one is too."""

    @classmethod
    def open(cls, path: str | Path, config: StorageConfig, *,
             read_only: bool = False) -> SqliteBackend:
        """Open (creating if needed) and migrate; fall back to read-only when it must.

        Blocking (it starts threads and runs migrations): call it via ``asyncio.to_thread``.
        """
        path = Path(path).expanduser()
        warnings: list[str] = []
        forced: str | None = None
        if not read_only:
            forced = _unwritable_reason(path)
            if forced:
                warnings.append(f"{path} is opened read-only: {forced}")
                read_only = True
        existed = path.exists()
        if not read_only:
            path.parent.mkdir(parents=True, exist_ok=True)
        elif not existed:
            raise FileNotFoundError(f"{path} does not exist (and cannot be created read-only)")
        db = _database(path, config, read_only)
        try:
            db.open_writer()
        except Exception as exc:
            db.close()
            refusal = None if read_only else storage_refusal(path, exc, opening=True)
            if refusal is None:
                raise
            if not existed:  # leave no empty file behind for the next open to trip on
                _remove_empty(path)
                raise refusal from exc
            # The file is there but cannot take a writer (no room for its -wal/-shm):
            # everything in it can still be read.
            forced = ("the disk is full; free some space and open it again"
                      if isinstance(refusal, StorageFull)
                      else f"it cannot be opened for writing ({exc})")
            warnings.append(f"{path} is opened read-only: {forced}")
            read_only = True
            db = _database(path, config, read_only)
            db.open_writer()
        writer = db.writer
        assert writer is not None
        known = latest_version()
        found = writer.run_sync(current_version)
        if found > known and not read_only:
            db.close()
            warnings.append(schema_too_new_message(path, found, known))
            forced = f"schema {found} is newer than this workbench ({known})"
            read_only = True
            db = _database(path, config, read_only)
            db.open_writer()
            assert db.writer is not None
        elif not read_only:
            try:
                writer.run_sync(migrate, str(path))
                # Every writable open records itself in the change log's lineage, so it is
                # refused (busy, full) as the schema step is, not with the driver's error.
                writer.run_sync(ensure_database_id)
            except Exception as exc:
                db.close()
                refusal = storage_refusal(path, exc, busy_timeout_ms=config.busy_timeout_ms)
                if refusal is None:
                    raise
                raise refusal from exc
            found = known
        elif found < known:
            warnings.append(f"{path} has schema version {found}, older than this workbench "
                            f"({known}); open it writable once to upgrade it")
        backend = cls(db, warnings)
        backend.schema_version = found
        backend.read_only_reason = forced
        if found == known:  # the saved indexes load while the readers open
            assert db.writer is not None
            backend.derived.saving = db.writer.run_sync(functools.partial(
                sqlite_saving, path, writable=not read_only))
            backend.derived.load_saved()
        db.open_readers()
        return backend

    async def close(self) -> None:
        """Close every connection (after a derived index's build in flight)."""
        if self._follower is not None:
            await self._follower.stop()
        await asyncio.to_thread(self.derived.close)
        self._db.close()

    async def vector_leg(self, scope: vocabulary.Scope, query: np.ndarray, k: int, model: str,
                         tags: Sequence[str] = ()) -> tuple[list[tuple[str, float]], str]:
        """A namespace's nearest chunks from its matrix in memory once that is built (the
        scan of the same vectors in sqlite-vec until then); a session's, and tagged ones,
        from sqlite-vec (a session's partition is already small)."""
        if scope.namespace is None or tags:
            return await self.vector_search(scope, query, k, model, tags), self.vector_leg_name
        return await self._db.read(self._namespace_vector_leg, scope, query, k, model)

    def _namespace_vector_leg(self, conn: Any, scope: vocabulary.Scope, query: np.ndarray, k: int,
                              model: str, chunks: dict[str, ChunkRow] | None = None,
                              *, all_cores: bool = False) -> tuple[list[tuple[str, float]], str]:
        """The namespace's nearest chunks; with ``chunks``, the matrix's rows are read whole
        into it, in the read that names them."""
        with self.derived.reading(conn, self.namespace_vectors.name) as ready:
            if not ready:
                return search.vector_search(conn, scope, query, k, model), self.vector_leg_name
            top = self.namespace_vectors.nearest(scope.value, query, k, all_cores=all_cores)
            chunk_ids = chunk_rows.chunk_ids_of(conn, [rowid for rowid, _ in top], chunks)
        # A chunk deleted since the sync is left out, as a later query would leave it.
        return ([(chunk_ids[rowid], distance) for rowid, distance in top if rowid in chunk_ids],
                DERIVED_VECTOR_LEG)

    async def saved_indexes(self) -> list[dict[str, Any]]:
        """The derived indexes saved beside the file: where, bytes, state (for doctor)."""
        return await asyncio.to_thread(self.derived.check_saved)

    def derived_origins(self, namespace: str) -> dict[str, str]:
        """How the file's derived indexes came to be (one per file, every namespace)."""
        return {name: self.derived.state(name).describe()
                for name in (self.namespace_vectors.name, self.full_text_index.name)
                if self.derived.state(name).ready}

    async def run_legs(self, request: vocabulary.LegRequest, *, full_text: bool,
                       ) -> vocabulary.LegRows:
        """A session's legs in one hop; its vector leg and fetch from the namespace matrix
        when a namespace query has built it (:mod:`core.storage.sqlite.session_vectors`)."""
        if not (search.session_vector_leg(request, full_text) and self.session_matrix.ready()):
            return await super().run_legs(request, full_text=full_text)
        return await self._db.read(functools.partial(
            search.run_legs, full_text=full_text, session_vectors=self.session_matrix.answer),
            request)

    async def namespace_legs(self, request: vocabulary.LegRequest, *, full_text: bool,
                             query_vector: Awaitable[np.ndarray | None] | None,
                             ) -> vocabulary.LegRows:
        """Each leg reads the chunks it found in its own hop, so no third read follows
        them: the full-text leg's hits (by rowid from the derived index, else by id), and
        the vector leg's (by rowid from the matrix, else by id). Each leg's time includes
        that read: there is no "fetch" timing."""
        timings: dict[str, float] = {}
        fts_rows: list[tuple[str, float]] = []
        vector_rows: list[tuple[str, float]] = []
        fallback: str | None = None
        path: str | None = None
        chunks: dict[str, ChunkRow] = {}
        ran: list[Executed] = []

        def fts_hop(conn: Any) -> tuple[vocabulary.FullTextRows, dict[str, ChunkRow]]:
            found: dict[str, ChunkRow] = {}
            answer = search.full_text_leg(conn, request, self.derived_full_text, found)
            return answer, _rest_of_chunks(conn, answer.rows, found)

        def vector_hop(conn: Any, vector: np.ndarray, all_cores: bool = False) -> tuple[
                list[tuple[str, float]], str, dict[str, ChunkRow]]:
            found: dict[str, ChunkRow] = {}
            if request.tags:
                rows = search.vector_search(conn, request.scope, vector, request.depth,
                                            request.model, request.tags)
                answered = self.vector_leg_name
            else:
                rows, answered = self._namespace_vector_leg(
                    conn, request.scope, vector, request.depth, request.model, found,
                    all_cores=all_cores)
            return rows, answered, _rest_of_chunks(conn, rows, found)

        async def fts_leg() -> None:
            nonlocal fts_rows, fallback, ran
            started = time.perf_counter()
            (fts_rows, fallback, ran), found = await self._db.read(fts_hop)
            chunks.update(found)
            timings["fts"] = (time.perf_counter() - started) * 1000

        async def vector_leg() -> None:
            nonlocal vector_rows, path
            assert query_vector is not None
            started = time.perf_counter()
            vector = await query_vector
            if vector is not None:
                # Alone (a vector-only query), the scan takes every core; beside the
                # full-text leg's thread, one.
                vector_rows, path, found = await self._db.read(vector_hop, vector,
                                                               not full_text)
                chunks.update(found)
            timings["vector"] = (time.perf_counter() - started) * 1000

        if full_text and query_vector is not None and not request.tags and all(
                self.derived.answers_from_memory(name)
                for name in (self.namespace_vectors.name, self.full_text_index.name)):
            # Both legs from memory: one after the other on one reader, the scan on every
            # core. Side by side, each leg's Python waited on the other's for the GIL, and
            # a query whose words are common took 9-14 ms where its legs alone took 6. A
            # fresh process's first query, asked while the saved copies load, waits for
            # them here too: split, its legs waited for the same loads on two readers.
            started = time.perf_counter()
            vector = await query_vector
            embedded = time.perf_counter()

            if vector is None:
                await fts_leg()
                return vocabulary.LegRows(fts_rows, fallback, [], chunks, timings, None, ran)
            query = vector

            def both_hops(conn: Any) -> tuple[Any, Any, float]:
                fts_found = fts_hop(conn)
                middle = time.perf_counter()
                return fts_found, vector_hop(conn, query, True), middle

            ((fts_rows, fallback, ran), fts_chunks), (vector_rows, path, vector_chunks), middle = (
                await self._db.read(both_hops))
            chunks.update(fts_chunks)
            chunks.update(vector_chunks)
            timings["fts"] = (middle - embedded) * 1000
            timings["vector"] = (time.perf_counter() - middle + embedded - started) * 1000
            return vocabulary.LegRows(fts_rows, fallback, vector_rows, chunks, timings, path, ran)
        # The vector leg first: the matrix scan is the longer leg, and a query embedded on
        # the event loop is dispatched before the full-text leg's thread starts competing
        # for the GIL (p50 -8 to -12 %, p95 -6 to -14 % in interleaved runs).
        await asyncio.gather(*([vector_leg()] if query_vector is not None else []),
                             *([fts_leg()] if full_text else []))
        return vocabulary.LegRows(fts_rows, fallback, vector_rows, chunks, timings, path, ran)

    async def full_text_leg(self, request: vocabulary.LegRequest) -> vocabulary.FullTextRows:
        """bm25 (or raw syntax) rows, which answered: "like" (the fallback), "derived" (a
        namespace's typed words, from the in-memory index once it is built) or None, and
        what ran."""
        return await self._db.read(self._ops.search.full_text_leg, request,
                                   self.derived_full_text)

    async def pulse(self) -> tuple[int, int, int]:
        """(``PRAGMA data_version``, backlog, failed) read on the watch connection."""
        return await self._db.watch(vectors.pulse)

    async def vector_meta(self) -> tuple[int | None, str | None]:
        """(dimension, model) the file's vector index was made for."""
        def read(conn: Any) -> tuple[int | None, str | None]:
            return vectors.vector_dimension(conn), vectors.get_meta(conn, "embedding_model")
        return await self._db.read(read)

    async def vector_identity(self) -> str | None:
        """The recorded identity of the vectors' model, or None."""
        return await self._db.read(vectors.get_meta, VECTOR_IDENTITY_KEY)

    async def ensure_vector_table(self, dimension: int, model: str,
                                  identity: str | None = None) -> None:
        """Create the vector index or refuse a file of another dimension."""
        if self.read_only:
            return
        await self._db.write(vectors.ensure_vector_table, dimension, model, identity)

    async def pending_chunks(self, limit: int,
                             after_rowid: int = 0) -> list[tuple[str, str, str, int, str, str]]:
        """Chunks waiting for vectors, in insertion order after ``after_rowid``."""
        return await self._db.read(vectors.pending_chunks, limit, after_rowid)

    # -- diagnostics -----------------------------------------------------------------------

    async def versions(self) -> dict[str, str]:
        """SQLite and sqlite-vec versions as the connection reports them."""
        def read(conn: Any) -> dict[str, str]:
            sqlite_version, vec_version = conn.execute(
                "SELECT sqlite_version(), vec_version()").fetchone()
            return {"sqlite": sqlite_version, "sqlite_vec": vec_version}
        return await self._db.read(read)

    async def cap_size(self, extra_pages: int | None) -> int:
        """Cap the file at its current size plus ``extra_pages`` (None lifts the cap) and
        return the cap in pages. A write that needs more fails with SQLITE_FULL exactly as
        on a full disk: what disk-full drills and tests use. Lasts until the engine closes
        (or the writer's connection is renewed after it was left unable to commit)."""
        def cap(conn: Any) -> int:
            pages = conn.execute("PRAGMA page_count").fetchone()[0]
            limit = 0xFFFFFFFE if extra_pages is None else pages + max(0, extra_pages)
            return int(conn.execute(f"PRAGMA max_page_count = {int(limit)}").fetchone()[0])
        self.require_writable()
        return await self._db.write(cap)

    async def bulk_writes(self, importing: bool, *, large: bool = False) -> None:
        """The full-text index tuned for large transactions while an import writes, set back
        after it (:func:`core.storage.sqlite.fts_segments.tune_for_import`); from when it is
        ``large``, the derived indexes followed by a helper process, and taken from its
        saved copies after it (:mod:`core.storage.sqlite.index_follower`)."""
        if self.read_only:
            return
        saving = self.derived.saving
        if not large:
            await self._db.write(fts_segments.tune_for_import, importing)
        elif (self._follower is None and saving is not None and saving.writable
              and follow_imports()):
            self._follower = IndexFollower(self.path, self._db.busy_timeout_ms)
            try:
                await self._follower.start()
            except OSError as exc:  # no helper: the next query builds them, as before
                log.warning("the import's index follower did not start: %s", exc)
                self._follower = None
        if not importing and self._follower is not None:
            follower, self._follower = self._follower, None
            for name in await follower.finish():
                self.derived.take_saved(name)

    async def checkpoint_log(self) -> int:
        """Copy the write-ahead log into the file (a passive checkpoint, beside the writer:
        :meth:`Database.checkpoint`); the log's frames left uncopied, 0 on a read-only file."""
        if self.read_only:
            return 0
        return await self._db.checkpoint()

    async def merge_full_text(self) -> bool:
        """One step of merging chunks_fts's segments (:mod:`core.storage.sqlite.fts_segments`);
        False when it is one segment, or the file is read-only."""
        if self.read_only:
            return False
        return await self._db.write(fts_segments.merge_step)

    async def integrity_check(self) -> list[str]:
        """PRAGMA integrity_check plus the FTS index's own check; ['ok'] when sound."""
        def check(conn: Any) -> list[str]:
            problems = [row[0] for row in conn.execute("PRAGMA integrity_check").fetchall()]
            try:
                conn.execute(
                    "INSERT INTO chunks_fts(chunks_fts, rank) VALUES ('integrity-check', 1)")
            except Exception as exc:  # the driver's own DatabaseError type
                problems.append(f"chunks_fts: {exc}")
            return problems
        return await self._db.read(check) if self.read_only else await self._db.write(check)


def _rest_of_chunks(conn: Any, rows: list[tuple[str, float]],
                    found: dict[str, ChunkRow]) -> dict[str, ChunkRow]:
    """``found`` with the chunks of ``rows`` it lacks read by id (a leg answered by SQL
    names its rows by id only)."""
    missing = [chunk_id for chunk_id, _ in rows if chunk_id not in found]
    if missing:
        found.update(search.fetch_chunks(conn, missing))
    return found


def _database(path: Path, config: StorageConfig, read_only: bool) -> Database:
    return Database(path, read_only=read_only, reader_pool_size=config.reader_pool_size,
                    busy_timeout_ms=config.busy_timeout_ms,
                    synchronous=config.synchronous.upper(), mmap_mb=config.mmap_mb)


def _unwritable_reason(path: Path) -> str | None:
    """Why a file cannot be opened for writing (None when it can).

    ``os.access`` answers for root too on a read-only mount or an immutable file (root's
    permission bits say nothing there), so this holds whoever runs it.
    """
    if (problem := _filesystem_problem(path)) is not None:
        return problem
    if path.exists():
        if not os.access(path, os.W_OK):
            return "the file is not writable"
        if not os.access(path.parent, os.W_OK):
            return "its folder is not writable (SQLite needs to create the -wal file there)"
        return None
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not os.access(parent, os.W_OK):
        return f"{parent} is not writable"
    return None


def _remove_empty(path: Path) -> None:
    """Remove what a failed first open created: the file while it is still empty, and the
    -wal/-shm it began (a file nothing was committed to needs neither)."""
    for name in (path.name, f"{path.name}-wal", f"{path.name}-shm"):
        leftover = path.with_name(name)
        with contextlib.suppress(OSError):
            if leftover.stat().st_size == 0 or name != path.name:
                leftover.unlink()


def _filesystem_problem(path: Path) -> str | None:
    """A read-only or completely full file system under an existing file, else None."""
    if not path.exists() or not hasattr(os, "statvfs"):  # no statvfs on Windows
        return None
    try:
        stats = os.statvfs(path)
    except OSError:
        return None
    if stats.f_flag & os.ST_RDONLY:
        return "it is on a read-only file system"
    # Root may write into the blocks kept back for it, so it counts them as free.
    free_blocks = stats.f_bfree if os.geteuid() == 0 else stats.f_bavail
    if free_blocks == 0:
        return "the disk is full (no space left); free some space and open it again"
    return None


if TYPE_CHECKING:
    def _conforms(backend: SqliteBackend) -> Backend:
        """Fails type-checking when SqliteBackend stops implementing the Backend protocol."""
        return backend


__all__ = ["SQLITE_FEATURES", "SqliteBackend", "SchemaTooNew"]
