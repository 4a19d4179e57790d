"""PostgreSQL: the namespaces' indexes each engine process derives in memory, and how they
are kept in step with every writer through the change log (migration 0003).

A namespace query on the server costs its HNSW search and the postings of its common words
(129.8 ms p95 at 20k chunks, workbench bench query); the same vectors as a matrix and the
same postings as arrays answer in memory, so a query costs memory speed plus the round trip
that syncs them. Each namespace this process queries gets its own, built in the background
on its first query (the SQL path answers until then), from the database itself and through
this engine's connections: a role bound to a namespace by row-level security loads only
what the database shows it.

Keeping in step (the seq of an entry is not in commit order on PostgreSQL, so "entries
after the last seq applied" could skip a transaction that committed late): a sync reads, in
one REPEATABLE READ snapshot, the entries of the transactions the previous sync's snapshot
could not see (those it listed as in progress, and those at or above its xmax), and the rows
they name; then it remembers this snapshot's list and xmax. Any other transaction had ended
before the previous snapshot, so its entries were read then (or were in the build's tables).
The entries are applied idempotently: each named chunk is dropped and read again as the
snapshot holds it (gone, or with its text and vector). A sync with nothing new is one indexed
query. Entries pruned before a reader read them make it rebuild.

With a :class:`~core.storage.pg.derived_saved.PgSaving`, each index is saved to a local
cache folder once built, after quiet periods and at close (:mod:`.derived_saved`); the next
process's first query of the namespace loads it (mapped) and catches it up with the sync
above from the saved snapshot position, instead of reading the namespace from the server.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import MutableMapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from core.storage.derived import persisted
from core.storage.derived.vector_matrix import NamespaceVectors
from core.storage.index_cache import newest_saved
from core.storage.pg import derived_saved
from core.storage.pg.connection import Conn, PgDatabase
from core.storage.pg.derived_saved import PgSaving
from core.storage.pg.postings_index import NamespacePostings

log = logging.getLogger(__name__)

_BATCH = 4096
RETRY_AFTER_S = 30.0
LOAD_WAIT_S = 30.0  # a query waits this long at most for a saved copy's load
# Never dropped for the memory budget when queried this recently: two namespaces queried in
# turn that do not fit together would otherwise each rebuild on every query.
KEPT_AFTER_USE_S = 60.0
# What one chunk's entry in ``NamespaceIndex.chunk_ids`` takes (int key, 36-character id and
# the dict's slot): 165 bytes by sys.getsizeof over 100,000 of them.
_CHUNK_ID_BYTES = 165
# Rebuilt (in the background) once a quarter of what it holds was written since its build:
# postings added since sit in lists, and deleted chunks' postings stay until then.
REBUILD_CHURN = 0.25
# The snapshot's xmax and the transactions it sees in progress, as a row of the sync's query.
_SNAPSHOT = ("SELECT 'snapshot', pg_snapshot_xmax(pg_current_snapshot())::text::bigint,"
             " ARRAY(SELECT x::text::bigint FROM pg_snapshot_xip(pg_current_snapshot()) x)")
_NAMESPACE_SESSIONS = ("SELECT session_id FROM sessions"
                       " WHERE coalesce(agent_identity, '') = %(ns)s")


@dataclass
class NamespaceIndex:
    """One namespace's derived indexes and where they stand in the change log."""

    namespace: str
    vectors: NamespaceVectors = field(default_factory=NamespaceVectors)
    postings: NamespacePostings = field(default_factory=NamespacePostings)
    chunk_ids: MutableMapping[int, str] = field(default_factory=dict)
    ready: bool = False
    xmax: int = 0
    """The xmax of the snapshot of the last sync (or of the build)."""
    in_progress: list[int] = field(default_factory=list)
    """The transactions that snapshot saw in progress (its xip list)."""
    build_seconds: float | None = None
    problem: str | None = None
    failed_at: float | None = None
    rebuilds: int = 0
    requests: int = 0
    covered: int = 0
    last_used: float = field(default_factory=time.monotonic)
    built_bytes: int = 0
    """What it held once built (syncs add little before a rebuild: ``REBUILD_CHURN``)."""
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    origin: str | None = None
    """"loaded" (from a saved copy) or "built" (from the database), once ready."""
    caught_up: int = 0
    """Chunks read again to bring a loaded copy to the database's last commit."""
    refused: str | None = None
    """Why a saved copy was not used (None: used, or none saved)."""
    unsaved: int | None = None
    """Chunks changed since the copy on disk (None: none saved from this index)."""
    changed_at: float = 0.0

    def describe(self) -> str:
        """How the index came to be, for explain."""
        if self.origin == "loaded":
            return f"loaded from disk, caught up {self.caught_up:,} changes"
        seconds = f" in {self.build_seconds:.1f} s" if self.build_seconds else ""
        return f"built from the database{seconds}" + (
            f" (saved copy not used: {self.refused})" if self.refused
            and self.refused != "none saved" else "")

    @property
    def xmin(self) -> int:
        """The oldest transaction whose entries may not have been read yet."""
        return min([*self.in_progress, self.xmax])

    def memory_bytes(self) -> int:
        """What it holds: the matrix, the postings and the chunk ids."""
        return (self.vectors.memory_bytes() + self.postings.memory_bytes()
                + _CHUNK_ID_BYTES * len(self.chunk_ids))


class PgDerivedIndexes:
    """The derived indexes of the namespaces this process queries, over one database."""

    def __init__(self, db: PgDatabase, budget_bytes: int = 0) -> None:
        self._db = db
        self.budget_bytes = budget_bytes
        """What the built indexes may hold together (0: no limit), see :meth:`_fit`."""
        self._held: dict[str, NamespaceIndex] = {}
        self._builds: dict[str, asyncio.Task[None]] = {}
        self._closed = False
        self.dropped = 0
        """How many indexes were dropped to keep within the budget."""
        self.saving: PgSaving | None = None
        """Where the indexes are saved (set at open; None: never saved)."""
        self.saving_problem: str | None = None
        """Why they are not (for doctor)."""
        self._saves: set[asyncio.Task[bool]] = set()
        self._loading: dict[str, asyncio.Event] = {}
        """Namespaces whose saved copy is being loaded: their queries wait for it."""
        self._saver: asyncio.Task[None] | None = None

    def index(self, namespace: str) -> NamespaceIndex | None:
        """The namespace's index, built or building; None before its first use."""
        return self._held.get(namespace)

    async def synced(self, namespace: str) -> NamespaceIndex | None:
        """The namespace's index brought up to every commit made before this call; None
        while it is not built (its build starts in the background)."""
        held = self._held.get(namespace)
        if held is None or not held.ready:
            self.start_build(namespace)
            loading = self._loading.get(namespace)
            if loading is not None:  # a saved copy is being loaded: a fraction of a second
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(loading.wait(), LOAD_WAIT_S)
            held = self._held.get(namespace)
            if held is None or not held.ready:
                return None
        held.requests += 1
        held.last_used = time.monotonic()
        ticket = held.requests
        # One turn of the event loop first: a query's other leg, started in the same turn,
        # asks too, and the sync below (whose snapshot follows both asks) covers both.
        await asyncio.sleep(0)
        async with held.lock:
            # A sync that began after this call was made covers it.
            if held.covered < ticket and held.ready:
                covers = held.requests
                await self._db.read(self._catch_up, held)
                held.covered = covers
        return held if held.ready else None

    def start_build(self, namespace: str) -> None:
        """Build the namespace's index on a task of its own unless built or building."""
        if self._closed or "\x00" in namespace:
            return  # PostgreSQL text holds no NUL: no such namespace has a row to index
        task = self._builds.get(namespace)
        held = self._held.get(namespace)
        if (held is not None and held.ready) or (task is not None and not task.done()):
            return
        if (held is not None and held.failed_at is not None
                and time.monotonic() - held.failed_at < RETRY_AFTER_S):
            return  # a build that failed is not tried again by every query
        if (held is None and self.saving is not None and (
                self.saving.folder / f"{derived_saved.index_name(namespace)}.json").exists()):
            self._loading[namespace] = asyncio.Event()
        self._builds[namespace] = asyncio.create_task(self._build(namespace))

    def _load_over(self, namespace: str) -> None:
        """Let the queries waiting for a load go on (it was used, or refused)."""
        loading = self._loading.pop(namespace, None)
        if loading is not None:
            loading.set()

    async def build_now(self, namespace: str) -> NamespaceIndex:
        """Build the namespace's index (or wait for the build in flight) and return it."""
        self.start_build(namespace)
        task = self._builds.get(namespace)
        if task is not None:
            await asyncio.shield(task)
        return self._held[namespace]

    async def _build(self, namespace: str) -> None:
        started = time.perf_counter()
        fresh = NamespaceIndex(namespace)
        old = self._held.get(namespace)
        if old is not None:
            fresh.rebuilds = old.rebuilds + 1
        self._held.setdefault(namespace, fresh)
        try:
            if old is None and await self._load_saved(fresh):
                fresh.origin = "loaded"
            else:
                self._load_over(namespace)  # the queries go to SQL while it is built
                if old is None:  # a copy refused: start from nothing
                    fresh = NamespaceIndex(namespace, refused=fresh.refused)
                await self._db.read(_load, fresh)
                fresh.origin = "built"
        except Exception as exc:  # the driver's errors: the SQL path keeps answering
            log.warning("derived index of namespace %r could not be built: %s", namespace, exc)
            failed = self._held.setdefault(namespace, fresh)
            failed.problem, failed.failed_at = str(exc), time.monotonic()
            self._load_over(namespace)
            return
        fresh.build_seconds = time.perf_counter() - started
        fresh.ready = not self._closed
        fresh.last_used = time.monotonic()
        fresh.built_bytes = fresh.memory_bytes()
        self._held[namespace] = fresh
        self._load_over(namespace)
        self._fit(namespace)
        if fresh.origin == "built" and fresh.ready:
            self._save_in_background(namespace)

    async def _load_saved(self, held: NamespaceIndex) -> bool:
        """Fill ``held`` from its saved copy and catch it up to the database's last commit;
        False (and why, in ``refused``) to build instead."""
        saving = self.saving
        if saving is None:
            return False
        fingerprint = await self._db.read(_fingerprint)
        found = await asyncio.to_thread(derived_saved.load, saving, held.namespace,
                                        fingerprint)
        if isinstance(found, str):
            held.refused = found
        else:
            try:
                await asyncio.to_thread(derived_saved.restore, held, found.arrays, found.meta)
                held.xmax = int(found.position["xmax"])
                held.in_progress = [int(x) for x in found.position["in_progress"]]
            except (KeyError, ValueError, TypeError, IndexError) as exc:
                held.refused = f"its arrays do not fit together ({str(exc)[:100]})"
            else:
                held.refused = await self._db.read(self._sync, held)
        if held.refused is not None:
            if held.refused != "none saved":
                log.info("derived index of namespace %r: saved copy not used: %s",
                         held.namespace, held.refused)
            return False
        held.unsaved = held.caught_up
        return True

    def held_bytes(self) -> int:
        """What the built indexes held together once built (what the budget counts)."""
        return sum(held.built_bytes for held in self._held.values() if held.ready)

    def _fit(self, built: str) -> None:
        """Drop the least recently queried indexes while those built hold more than the
        budget; never ``built`` (just built, for a query that asked), nor one queried in the
        last ``KEPT_AFTER_USE_S`` seconds. A dropped namespace's next query is answered by
        the SQL path while its index is built again."""
        if self.budget_bytes <= 0:
            return
        sizes = {name: held.built_bytes for name, held in self._held.items() if held.ready}
        total = sum(sizes.values())
        if total <= self.budget_bytes:
            return
        now = time.monotonic()
        idle = sorted((self._held[name].last_used, name) for name in sizes
                      if name != built and now - self._held[name].last_used >= KEPT_AFTER_USE_S)
        for _, name in idle:
            if total <= self.budget_bytes:
                break
            del self._held[name]
            total -= sizes[name]
            self.dropped += 1
            log.info("derived index of namespace %r dropped (%.0f MiB): the namespaces' indexes"
                     " held more than storage.derived_memory_mb; rebuilt on its next query",
                     name, sizes[name] / 2**20)
        if total > self.budget_bytes:
            log.warning("the namespaces' derived indexes hold %.0f MiB, more than"
                        " storage.derived_memory_mb (%.0f): those queried in the last %.0f s"
                        " are kept", total / 2**20, self.budget_bytes / 2**20, KEPT_AFTER_USE_S)

    async def _catch_up(self, conn: Conn, held: NamespaceIndex) -> None:
        why = await self._sync(conn, held)
        if why is not None:
            log.info("derived index of namespace %r: rebuilding: %s", held.namespace, why)
            held.ready = False
            self.start_build(held.namespace)
            return
        if held.postings.churn() > REBUILD_CHURN:
            self._refresh(held.namespace)

    async def _sync(self, conn: Conn, held: NamespaceIndex) -> str | None:
        """Apply the entries ``held``'s last snapshot could not see (see the module's
        docstring); why it must be rebuilt instead, or None."""
        cursor = await conn.execute(
            "SELECT 'entry', fts_rowid, NULL::bigint[] FROM chunk_changes"
            " WHERE (xid >= %(xmax)s::text::xid8"
            "  OR xid = ANY(%(in_progress)s::text[]::xid8[]))"
            "  AND (namespace = %(ns)s OR namespace IS NULL)"
            f" UNION ALL {_SNAPSHOT}"
            " UNION ALL SELECT 'pruned', max_xid::text::bigint, NULL FROM chunk_changes_pruned",
            {"xmax": str(held.xmax), "in_progress": [str(x) for x in held.in_progress],
             "ns": held.namespace})
        rows = await cursor.fetchall()
        pruned = next(int(value) for kind, value, _ in rows if kind == "pruned")
        if pruned >= held.xmin:
            return "the changes since its last sync were pruned"
        touched = sorted({int(value) for kind, value, _ in rows if kind == "entry"})
        if touched and not await _reread(conn, held, touched):
            return "its vectors changed size (reindexed to another model)"
        _remember_snapshot(held, rows)
        if touched:
            if held.origin is None:
                held.caught_up += len(touched)
            if held.unsaved is not None:
                held.unsaved += len(touched)
            held.changed_at = time.monotonic()
        return None

    def _refresh(self, namespace: str) -> None:
        """Build the namespace's index again while the one held keeps answering (the new
        one replaces it once built, and catches up from its own snapshot)."""
        task = self._builds.get(namespace)
        if not self._closed and (task is None or task.done()):
            self._builds[namespace] = asyncio.create_task(self._build(namespace))

    # -- saving ----------------------------------------------------------------------------

    def start_saving(self, saving: PgSaving) -> None:
        """Load and save the indexes in ``saving``'s folder from now on (at open), and
        start loading the copies saved there (:meth:`_load_saved_copies`)."""
        self.saving = saving
        if saving.writable and self._saver is None:
            self._saver = asyncio.create_task(self._save_when_quiet())
        self._load_saved_copies()

    def _load_saved_copies(self) -> None:
        """Start loading the namespaces saved in this database's folder, the most recently
        saved first, as many as :data:`~core.storage.index_cache.LOADED_AT_OPEN` and the
        memory budget allow.

        A process's first query of its namespace then waits for a load that began with the
        open, while the rest of the open ran, instead of starting one: at 100k chunks the
        load (its checks, its lookup tables) was 372 ms of the first query's time. The
        folder is this database's and this role's (:func:`derived_saved.pg_saving`): a role
        bound to one namespace finds only that namespace's copy here.
        """
        assert self.saving is not None
        folder = self.saving.folder
        room = self.budget_bytes or None
        for name in newest_saved(folder):
            meta = persisted.saved_meta(folder, name)
            namespace = None if meta is None else meta.get("namespace")
            if not isinstance(namespace, str):
                continue
            if room is not None:
                described = persisted.describe(folder, name)
                room -= described.bytes if described is not None else 0
                if room < 0:
                    break
            self.start_build(namespace)

    def _save_in_background(self, namespace: str) -> None:
        if self._closed or self.saving is None or not self.saving.writable:
            return
        task = asyncio.create_task(self.save(namespace))
        self._saves.add(task)
        task.add_done_callback(self._saves.discard)

    async def save(self, namespace: str, *, at_close: bool = False) -> bool:
        """Bring the namespace's index up to the database and save it; False when there was
        nothing to save (not built, no saving, the copy on disk current, another process
        saving it, or no chunk in the namespace). The index's lock is held while it is
        synced and its arrays copied (a query's sync waits for that); the write is a
        thread's.

        A namespace without chunks (one a query named, maybe mistyped) is built by one
        query that finds nothing: a copy would save nothing, and every later open would
        start loading it (``LOADED_AT_OPEN``) in place of a namespace that has chunks."""
        saving, held = self.saving, self._held.get(namespace)
        if saving is None or not saving.writable or held is None or not held.ready:
            return False
        async with held.lock:
            fingerprint = await self._db.read(self._synced_fingerprint, held)
            unsaved = held.unsaved
            if not held.ready or not held.chunk_ids or unsaved == 0 or (
                    at_close and unsaved is not None and unsaved < saving.close_after):
                return False
            arrays, meta = await asyncio.to_thread(derived_saved.export, held)
            position = {"xmax": held.xmax, "in_progress": list(held.in_progress)}
            held.unsaved = 0  # what syncs apply from now on is unsaved
        try:
            written = await asyncio.to_thread(derived_saved.save, saving, held, fingerprint,
                                              arrays, meta, position)
        except OSError as exc:  # a full or read-only disk: the index still answers
            log.warning("derived index of namespace %r could not be saved in %s: %s",
                        namespace, saving.folder, exc)
            written = None
        if written is None:  # not saved (or another process was saving it)
            held.unsaved = None if unsaved is None else held.unsaved + unsaved
            return False
        return True

    async def _synced_fingerprint(self, conn: Conn, held: NamespaceIndex) -> dict[str, Any]:
        """Catch ``held`` up and read the fingerprint, in one snapshot."""
        why = await self._sync(conn, held)
        if why is not None:
            held.ready = False
            self.start_build(held.namespace)
        return await _fingerprint(conn)

    async def _save_when_quiet(self) -> None:
        """Save each index changed since its copy once it was neither changed nor queried
        for ``quiet_s``."""
        assert self.saving is not None
        quiet = self.saving.quiet_s
        while not self._closed:
            await asyncio.sleep(quiet)
            now = time.monotonic()
            for namespace, held in list(self._held.items()):
                if (held.ready and held.unsaved and now - held.changed_at >= quiet
                        and now - held.last_used >= quiet):
                    try:
                        await self.save(namespace)
                    except Exception as exc:  # the driver's errors: tried again later
                        log.warning("derived index of namespace %r could not be saved: %s",
                                    namespace, exc)

    async def check_saved(self) -> list[dict[str, Any]]:
        """Each saved copy in this database's folder: where, its bytes, and whether it is
        current, behind the database by some changes (caught up on load), or invalid and
        why (rebuilt on load)."""
        saving = self.saving
        if saving is None or not saving.folder.exists():
            return []
        fingerprint = await self._db.read(_fingerprint)
        found = []
        for manifest in sorted(saving.folder.glob("ns-*.json")):
            described = persisted.describe(saving.folder, manifest.stem)
            if described is None:
                continue
            loaded = await asyncio.to_thread(persisted.load, saving.folder, manifest.stem,
                                             fingerprint=fingerprint,
                                             database=saving.database)
            if isinstance(loaded, str):
                state, name = f"invalid: {loaded}", manifest.stem
            else:
                name = f"namespace {str(loaded.meta.get('namespace'))[:60]!r}"
                behind = await self._db.read(_behind, str(loaded.meta.get("namespace")),
                                             loaded.position)
                state = (f"invalid: {behind}" if isinstance(behind, str) else "current"
                         if behind == 0 else f"behind by {behind:,} changes")
            found.append({"index": name, "folder": str(saving.folder),
                          "bytes": described.bytes, "state": state})
        return found

    async def close(self) -> None:
        """Stop the builds in flight; save what changed enough since its copy."""
        self._closed = True
        tasks = [task for task in self._builds.values() if not task.done()]
        if self._saver is not None:
            tasks.append(self._saver)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await asyncio.gather(*self._saves, return_exceptions=True)
        for namespace in list(self._held):
            try:
                await self.save(namespace, at_close=True)
            except Exception as exc:  # the driver's errors: the next process builds
                log.warning("derived index of namespace %r could not be saved at close: %s",
                            namespace, exc)


async def _fingerprint(conn: Conn) -> dict[str, Any]:
    return await derived_saved.fingerprint(conn)


async def _behind(conn: Conn, namespace: str, position: dict[str, Any]) -> int | str:
    """The change-log entries a copy saved at ``position`` has not seen, or why it can no
    longer be caught up."""
    xmax, in_progress = int(position["xmax"]), [int(x) for x in position["in_progress"]]
    cursor = await conn.execute(
        "SELECT (SELECT max_xid::text::bigint FROM chunk_changes_pruned),"
        " (SELECT count(*) FROM chunk_changes WHERE (xid >= %(xmax)s::text::xid8"
        "  OR xid = ANY(%(in_progress)s::text[]::xid8[]))"
        "  AND (namespace = %(ns)s OR namespace IS NULL))",
        {"xmax": str(xmax), "in_progress": [str(x) for x in in_progress], "ns": namespace})
    row = await cursor.fetchone()
    assert row is not None
    if row[0] is not None and int(row[0]) >= min([*in_progress, xmax]):
        return "the changes since it was saved were pruned"
    return int(row[1])


async def _load(conn: Conn, held: NamespaceIndex) -> None:
    """Fill ``held`` from the database (in the read snapshot of ``conn``)."""
    params = {"ns": held.namespace}
    cursor = await conn.execute(_SNAPSHOT)
    _remember_snapshot(held, await cursor.fetchall())
    cursor = await conn.execute(
        "SELECT fts_rowid, chunk_id, fts_length FROM chunks"
        f" WHERE session_id IN ({_NAMESPACE_SESSIONS}) ORDER BY fts_rowid", params)
    for rowid, chunk_id, length in await cursor.fetchall():
        held.chunk_ids[int(rowid)] = str(chunk_id)
        held.postings.add_chunk(int(rowid), int(length))
    async with conn.cursor(name="derived_postings") as postings:
        await postings.execute(
            "SELECT lexeme, array_agg(fts_rowid), array_agg(f_text), array_agg(f_context)"
            f" FROM chunk_terms WHERE lexeme <> '' AND session_id IN ({_NAMESPACE_SESSIONS})"
            " GROUP BY lexeme", params)
        while batch := await postings.fetchmany(256):
            for lexeme, rowids, f_text, f_context in batch:
                held.postings.load_lexeme(str(lexeme), rowids, f_text, f_context)
    async with conn.cursor(name="derived_vectors") as vectors:
        await vectors.execute(
            "SELECT c.fts_rowid, vector_send(v.embedding_blob) FROM chunks_vec v"
            " JOIN chunks c ON c.chunk_id = v.chunk_id WHERE v.agent_identity = %(ns)s",
            params)
        while batch := await vectors.fetchmany(_BATCH):
            dimension, rows = _vector_rows(held.namespace, batch)
            if rows:
                held.vectors.load(dimension, rows)


async def _reread(conn: Conn, held: NamespaceIndex, rowids: Sequence[int]) -> bool:
    """Drop the chunks ``rowids`` and read again those the snapshot holds in the namespace:
    their ids, postings (as the postings trigger computes them) and vectors; False (and
    nothing of the vectors changed) when a vector is not the matrix's size."""
    params = {"rowids": list(rowids), "ns": held.namespace}
    for rowid in rowids:
        held.chunk_ids.pop(rowid, None)
        held.postings.remove(rowid)
    cursor = await conn.execute(
        "SELECT c.fts_rowid, c.chunk_id, p.lexeme, p.f_text, p.f_context, p.doc_length"
        " FROM chunks c, memory_chunk_postings(c.session_id, c.fts_rowid, c.fts,"
        "  c.fts_length) p"
        f" WHERE c.fts_rowid = ANY(%(rowids)s) AND c.session_id IN ({_NAMESPACE_SESSIONS})",
        params)
    found: dict[int, list[tuple[str, int, int]]] = {}
    for rowid, chunk_id, lexeme, f_text, f_context, length in await cursor.fetchall():
        if lexeme == "":
            held.chunk_ids[int(rowid)] = str(chunk_id)
            held.postings.add_chunk(int(rowid), int(length))
        else:
            found.setdefault(int(rowid), []).append((str(lexeme), int(f_text), int(f_context)))
    for rowid, postings in found.items():
        held.postings.add_postings(rowid, postings)
    cursor = await conn.execute(
        "SELECT c.fts_rowid, vector_send(v.embedding_blob) FROM chunks c"
        " JOIN chunks_vec v ON v.chunk_id = c.chunk_id"
        " WHERE c.fts_rowid = ANY(%(rowids)s) AND v.agent_identity = %(ns)s", params)
    dimension, rows = _vector_rows(held.namespace, await cursor.fetchall())
    if rows and held.vectors.dimension not in (None, dimension):
        return False
    held.vectors.replace(dimension, rowids, rows)
    return True


def _vector_rows(namespace: str, batch: Sequence[tuple[Any, Any]],
                 ) -> tuple[int, list[tuple[int, str | None, bytes]]]:
    """pgvector's binary form (int16 dimension, int16 unused, big-endian float4s) as the
    matrix's rows: (fts_rowid, namespace, native float32 bytes)."""
    rows: list[tuple[int, str | None, bytes]] = []
    dimension = 0
    for rowid, blob in batch:
        data = bytes(blob)
        dimension = int.from_bytes(data[:2], "big")
        rows.append((int(rowid), namespace,
                     np.frombuffer(data, dtype=">f4", offset=4).astype(np.float32).tobytes()))
    return dimension, rows


def _remember_snapshot(held: NamespaceIndex, rows: Sequence[Sequence[Any]]) -> None:
    """Keep the snapshot's xmax and in-progress list from its row among ``rows``."""
    _, xmax, in_progress = next(row for row in rows if row[0] == "snapshot")
    held.xmax, held.in_progress = int(xmax), [int(xid) for xid in in_progress or []]
