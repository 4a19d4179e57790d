"""The PostgreSQL storage backend (pgvector for vectors, ``tsvector`` for full text): the same
:class:`core.storage.backend.Backend` contract as the SQLite file, over a server that several
agents' processes, on several machines, share.

Each operation is a function of an async connection in :mod:`core.storage.pg` (one module per
capability, named as the SQLite backend's are), run by :class:`PgDatabase` in a read snapshot
or a write transaction that is retried whole after a conflict with another writer. The
delegations both backends share are in :mod:`core.storage.shared_operations`; this class
holds what is PostgreSQL's own.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import socket
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import psycopg

from core.config import StorageConfig
from core.errors import InvalidInput, NotFound, SchemaTooNew
from core.locations import Location
from core.storage import index_cache
from core.storage.agent_items_operations import AgentItemsOperations
from core.storage.backend import BackendFeatures
from core.storage.derived.vector_matrix import DERIVED_VECTOR_LEG
from core.storage.executed import Executed
from core.storage.langgraph_operations import LangGraphOperations
from core.storage.operations import OperationModules
from core.storage.pg import (
    agent_items,
    copying,
    derived_saved,
    events,
    facts,
    langgraph_rows,
    logbook,
    note_listing,
    notes,
    schedules,
    scratchpad,
    search,
    session_snapshot,
    summaries,
    vector_index,
    vectors,
)
from core.storage.pg.connection import Conn, PgDatabase
from core.storage.pg.derived_legs import DerivedLegs
from core.storage.pg.migrations import current_version, latest_version
from core.storage.rows import schema_too_new_message
from core.storage.shared_operations import SharedOperations
from core.storage.vocabulary import (
    VECTOR_IDENTITY_KEY,
    FullTextRows,
    LegRequest,
    Scope,
    derived_answers,
)

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from core.storage.backend import Backend

POSTGRES_FEATURES = BackendFeatures(
    # Inside a session the scan is exact; a namespace goes through the HNSW index until its
    # derived matrix is built (core/storage/pg/derived.py), which is exact.
    exact_vector_search=False,
    # bm25 computed in SQL from the tsvectors (raw syntax: ts_rank_cd); see pg/search.py.
    full_text_ranking="bm25",
    raw_full_text_syntax="websearch",
    # LISTEN/NOTIFY: every commit that changes the memory notifies the watchers.
    change_counter=True,
    single_writer=False,
    can_cap_size=False,
)


def _new_claimer() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}"


class PostgresBackend(SharedOperations, LangGraphOperations, AgentItemsOperations):
    """Async storage operations over one PostgreSQL database."""

    features = POSTGRES_FEATURES
    vector_leg_name = "pgvector"
    _ops = OperationModules(
        copying=copying, events=events, facts=facts, logbook=logbook, note_listing=note_listing,
        notes=notes, schedules=schedules, scratchpad=scratchpad, search=search,
        session_snapshot=session_snapshot, summaries=summaries, vectors=vectors,
        langgraph_rows=langgraph_rows, agent_items=agent_items)

    def __init__(self, db: PgDatabase, warnings: list[str], derived_memory_mb: int = 0) -> None:
        self._db = db
        self.location = db.location
        self.read_only = db.read_only
        self.warnings = warnings
        self.schema_version = 0
        self.read_only_reason: str | None = None
        # Who holds the embedding backlog's claims this backend makes (one per process's
        # engine, as there is one embedding worker per engine).
        self._claimer = _new_claimer()
        self._liveness: Conn | None = None  # holds the claimer's lock (vectors.py)
        self._liveness_lock = asyncio.Lock()
        self.derived = DerivedLegs(db, derived_memory_mb * 1024 * 1024)
        """The namespaces' indexes derived in memory (:mod:`core.storage.pg.derived`)."""

    @classmethod
    async def open(cls, location: Location, config: StorageConfig, *,
                   read_only: bool = False) -> PostgresBackend:
        """Connect, migrate (under an advisory lock, so two processes starting at once do not
        race) and return the backend; a schema newer than the code opens read-only."""
        warnings: list[str] = []
        forced: str | None = None
        db = PgDatabase(location, read_only=read_only, pool_size=config.reader_pool_size + 1)
        await db.open()
        known = latest_version()
        try:
            found = await db.read(current_version)
            if found > known and not read_only:
                forced = f"schema {found} is newer than this workbench ({known})"
                warnings.append(schema_too_new_message(location, found, known))
                read_only = True
            elif not read_only:
                try:
                    await db.migrate()
                except SchemaTooNew as exc:  # another process migrated past us meanwhile
                    forced = str(exc)
                    warnings.append(str(exc))
                    read_only = True
                found = max(found, known) if not read_only else found
            elif found == 0:
                # Read-only and nothing there yet: as a SQLite file that does not exist.
                raise NotFound(f"{location} holds no memory yet; open it once without "
                               "read-only (any command that writes, or the app) to create it")
            elif found < known:
                warnings.append(f"{location} has schema version {found}, older than this "
                                f"workbench ({known}); open it writable once to upgrade it")
        except BaseException:
            await db.close()
            raise
        db.read_only = read_only
        backend = cls(db, warnings, config.derived_memory_mb)
        backend.schema_version = found
        backend.read_only_reason = forced
        if found == known:
            await backend._start_saving()
        if not read_only:
            try:
                await backend._keep_claimer_alive()
            except BaseException:
                await backend.close()
                raise
        return backend

    async def _start_saving(self) -> None:
        """Load and save the namespaces' derived indexes in the local cache folder (see
        :mod:`core.storage.pg.derived_saved`); a database whose identity this role cannot
        read builds them in each process, as before."""
        indexes = self.derived.indexes
        if not self.read_only:
            try:
                await self._db.write(derived_saved.ensure_database_id)
            except Exception as exc:  # a bound role may not write the key: no id, no cache
                log.debug("the memory's id could not be written: %s", exc)
        found = await self._db.read(functools.partial(derived_saved.pg_saving,
                                                      writable=not self.read_only))
        if isinstance(found, str):
            indexes.saving_problem = found
        else:
            indexes.start_saving(found)
            index_cache.remember_folder(self._db.location.display, found.folder)

    async def close(self) -> None:
        """Close every connection of the pool, and the one holding the claimer's lock (after
        stopping a derived index's build in flight)."""
        await self.derived.close()
        if self._liveness is not None:
            with contextlib.suppress(psycopg.Error):  # a broken connection holds no lock
                await vectors.release_claimer_lock(self._liveness, self._claimer)
            await self._liveness.close()
            self._liveness = None
        await self._db.close()

    async def pulse(self) -> tuple[int, int, int]:
        """(change counter, backlog, failed), read on the connection that LISTENs for
        every process's commits (:meth:`PgDatabase.watch`)."""
        changes, (backlog, failed) = await self._db.watch(vectors.backlog_and_failures)
        return changes, backlog, failed

    # -- the search legs --------------------------------------------------------------------

    def derived_origins(self, namespace: str) -> dict[str, str]:
        """How the namespace's derived indexes came to be (a matrix and postings, together):
        loaded from a saved copy and caught up, or built from the database."""
        held = self.derived.indexes.index(namespace)
        if held is None or not held.ready:
            return {}
        return {"namespace": held.describe()}

    async def saved_indexes(self) -> list[dict[str, Any]]:
        """The namespaces' indexes saved in this database's cache folder: where, bytes,
        state (for doctor)."""
        return await self.derived.indexes.check_saved()

    async def vector_leg(self, scope: Scope, query: np.ndarray, k: int, model: str,
                         tags: Sequence[str] = ()) -> tuple[list[tuple[str, float]], str]:
        """A namespace's nearest chunks from its matrix in memory once that is built (the
        HNSW index until then); a session's, and tagged ones, ranked exactly in SQL."""
        if scope.namespace is not None and not tags:
            rows = await self.derived.vector_rows(scope.namespace, query, k)
            if rows is not None:
                return rows, DERIVED_VECTOR_LEG
        return await self.vector_search(scope, query, k, model, tags), self.vector_leg_name

    async def full_text_leg(self, request: LegRequest) -> FullTextRows:
        """bm25 (or raw syntax) rows, which answered: "derived" (a namespace's typed words,
        from its postings in memory once built), "like" (the fallback) or None; and what
        ran."""
        ran: list[Executed] = []
        if derived_answers(request):
            rows = await self.derived.full_text_rows(
                request.scope.namespace or "", request.terms, request.depth,
                request.context_weight, ran)
            if rows:  # none found: the SQL path finds none either, and tries LIKE
                return FullTextRows(rows, "derived", ran)
            ran.clear()
        return await self._db.read(self._ops.search.full_text_leg, request, ran)

    # -- vectors ---------------------------------------------------------------------------

    async def pending_chunks(self, limit: int,
                             after_rowid: int = 0) -> list[tuple[str, str, str, int, str, str]]:
        """Chunks waiting for vectors, in insertion order after ``after_rowid``, claimed for
        this backend's worker so no other process's embeds them too (a read-only memory's
        are only read: nothing of it may be written, a claim included)."""
        if self.read_only:
            return await self._db.read(vectors.pending_chunks, limit, after_rowid)
        await self._keep_claimer_alive()
        return await self._db.write(vectors.claim_pending_chunks, self._claimer, limit,
                                    after_rowid)

    async def _keep_claimer_alive(self) -> None:
        """Take the claimer's liveness lock again on a new connection when the server closed
        the one holding it (a restart, a failover, an idle timeout): without the lock, other
        workers take this one's leases, and the chunks are embedded twice."""
        async with self._liveness_lock:
            if self._liveness is not None:
                try:
                    await self._liveness.execute("SELECT 1")
                    return
                except psycopg.OperationalError:
                    with contextlib.suppress(psycopg.Error):
                        await self._liveness.close()
            self._liveness = await self._db.dedicated()
            while not await vectors.hold_claimer_lock(self._liveness, self._claimer):
                self._claimer = _new_claimer()  # a live claimer's hash: another name

    async def vector_meta(self) -> tuple[int | None, str | None]:
        """(dimension, model) the database's vector column was fixed for."""
        async def read(conn: Conn) -> tuple[int | None, str | None]:
            return (await vector_index.vector_dimension(conn),
                    await vector_index.get_meta(conn, "embedding_model"))
        return await self._db.read(read)

    async def vector_identity(self) -> str | None:
        """The recorded identity of the vectors' model (a shared key), or None."""
        return await self._db.read(vector_index.get_meta, VECTOR_IDENTITY_KEY)

    async def ensure_vector_table(self, dimension: int, model: str,
                                  identity: str | None = None) -> None:
        """Fix the vector column's dimension and index it, or refuse another dimension."""
        if self.read_only:
            return
        await self._db.write(vector_index.ensure_vector_dimension, dimension, model, identity)

    async def versions(self) -> dict[str, str]:
        """PostgreSQL and pgvector versions as the server reports them."""
        async def read(conn: Conn) -> dict[str, str]:
            cursor = await conn.execute(
                "SELECT current_setting('server_version'),"
                " (SELECT extversion FROM pg_extension WHERE extname = 'vector')")
            row = await cursor.fetchone()
            assert row is not None
            return {"postgresql": str(row[0]), "pgvector": str(row[1])}
        return await self._db.read(read)

    async def cap_size(self, extra_pages: int | None) -> int:
        """Not offered: a server's storage is the administrator's (``features.can_cap_size``)."""
        raise InvalidInput("a PostgreSQL memory cannot be capped in size from here")

    async def bulk_writes(self, importing: bool, *, large: bool = False) -> None:
        """Nothing to tune: each batch's GIN entries go to its pending list, merged by
        PostgreSQL itself."""

    async def checkpoint_log(self) -> int:
        """Nothing to copy: PostgreSQL checkpoints its own write-ahead log."""
        return 0

    async def merge_full_text(self) -> bool:
        """Nothing to merge here: PostgreSQL keeps its GIN index's pending entries itself
        (``gin_pending_list_limit`` and autovacuum)."""
        return False

    async def integrity_check(self) -> list[str]:
        """The invariants the schema does not enforce by itself; ['ok'] when sound."""
        return await self._db.read(events.integrity_problems)


if TYPE_CHECKING:
    def _conforms(backend: PostgresBackend) -> Backend:
        return backend
