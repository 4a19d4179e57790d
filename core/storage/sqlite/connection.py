"""Extension-capable SQLite connections, each owned by one thread, and the pool around them.

Every connection lives on its own thread (a *lane*) and is only touched there; callers
``await lane.run(fn, *args)`` and ``fn(conn, *args)`` runs on that thread. Running a whole
operation per hop (rather than one statement per hop, as aiosqlite does) keeps a store to
one round trip, and means a cancelled caller can never leave a transaction half-open on the
shared writer: the function always runs to its COMMIT or ROLLBACK.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import queue
import threading
from collections.abc import Awaitable, Callable, Iterator, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

from core.errors import ExtensionMissing, ReadOnlyDatabase
from core.storage import rows
from core.storage.sqlite import refusals
from core.storage.sqlite.open_files import track, tracked_class
from core.tasks import in_upkeep

T = TypeVar("T")
log = logging.getLogger(__name__)

_INSTALL_HINT = "install it with: pip install 'sqlean.py' 'sqlite-vec'"


def sqlite_module() -> ModuleType:
    """The DB-API module to use: sqlean (extension loading, FTS5) else a capable stdlib sqlite3."""
    try:
        import sqlean

        return sqlean
    except ImportError:
        import sqlite3

        if hasattr(sqlite3.Connection, "enable_load_extension"):
            return sqlite3
        raise ExtensionMissing(
            "this Python's sqlite3 cannot load extensions and sqlean.py is not installed; "
            + _INSTALL_HINT
        ) from None


def _load_vec(conn: Any) -> None:
    try:
        import sqlite_vec
    except ImportError:
        raise ExtensionMissing(f"the sqlite-vec package is missing; {_INSTALL_HINT}") from None
    try:
        conn.enable_load_extension(True)
        sqlite_vec.load(conn)
        conn.enable_load_extension(False)
    except AttributeError:
        raise ExtensionMissing(
            "this SQLite build cannot load extensions, so sqlite-vec cannot be loaded; "
            + _INSTALL_HINT
        ) from None
    except Exception as exc:  # the driver raises its own OperationalError type
        raise ExtensionMissing(f"loading sqlite-vec failed ({exc}); {_INSTALL_HINT}") from None


def _check_fts5(conn: Any) -> None:
    try:
        conn.execute("CREATE VIRTUAL TABLE temp._fts5_probe USING fts5(x)")
        conn.execute("DROP TABLE temp._fts5_probe")
    except Exception as exc:
        raise ExtensionMissing(
            f"this SQLite has no FTS5 ({exc}); install sqlean.py (pip install 'sqlean.py'), "
            "whose SQLite includes it"
        ) from None


def capabilities() -> dict[str, Any]:
    """What this machine's SQLite offers a memory file (for ``workbench doctor``): the
    driver, SQLite's version, extension loading, sqlite-vec's version and FTS5, each failure
    as the error a person can act on; ``ok`` when a memory file can be opened here."""
    found: dict[str, Any] = {"ok": False}
    try:
        module = sqlite_module()
    except ExtensionMissing as exc:
        found["error"] = str(exc)
        return found
    found["driver"] = module.__name__
    raw = module.connect(":memory:")
    try:
        found["sqlite"] = raw.execute("SELECT sqlite_version()").fetchone()[0]
        found["extension_loading"] = hasattr(raw, "enable_load_extension")
        try:
            _load_vec(raw)
            found["sqlite_vec"] = raw.execute("SELECT vec_version()").fetchone()[0]
        except ExtensionMissing as exc:
            found["sqlite_vec_error"] = str(exc)
        try:
            _check_fts5(raw)
            found["fts5"] = True
        except ExtensionMissing as exc:
            found["fts5"] = False
            found["fts5_error"] = str(exc)
    finally:
        raw.close()
    found["ok"] = bool(found.get("sqlite_vec") and found.get("fts5"))
    return found


WAL_AUTOCHECKPOINT_PAGES = 8192
"""The write-ahead log's size (pages) at which a commit copies it into the file itself.

SQLite's default, 1,000 pages, made every thirteenth turn of a LangGraph agent (three
checkpoints of its growing message list a turn, about 75 pages) pay for that copy and its
fsync inside the turn: p95 24 ms against 12 ms without (``workbench bench frameworks``).
The copy is the index upkeep's work now, once writes pause (:mod:`core.upkeep`); this
larger threshold is the backstop for a writer that never pauses, and for processes that
run no upkeep (a CLI call: closing the last connection copies the log in as well)."""

WAL_SIZE_LIMIT_BYTES = 64 * 1024 * 1024
"""The write-ahead log file is cut back to this size when a checkpoint resets it, so one
large import does not leave it large on disk."""


def open_connection(path: str | Path, *, read_only: bool, busy_timeout_ms: int,
                    synchronous: str = "NORMAL", mmap_mb: int = 0) -> Any:
    """One configured connection: sqlite-vec loaded, FTS5 checked, WAL, FKs on, busy timeout.

    With ``mmap_mb`` the connection reads the file through a memory mapping of up to that
    size instead of copying each page into its own cache. A namespace-wide KNN reads every
    vector block of the agent (100 MB at 100k chunks): 74 ms through the page cache, 52 ms
    mapped. Mapped pages are the operating system's file cache, shared by every connection
    and process, so they count in RSS without being private memory.
    """
    sqlite = sqlite_module()
    target = Path(path)
    conn = _connect(sqlite, target, "mode=ro" if read_only else "mode=rwc", busy_timeout_ms)
    if read_only:
        conn = _readable(sqlite, conn, target, busy_timeout_ms)
    else:
        try:  # the first read opens the -wal/-shm: a full disk says so here, plainly
            conn.execute("SELECT count(*) FROM sqlite_schema").fetchone()
        except BaseException:
            conn.close()
            raise
        track(conn, target)  # a file the read just created
    try:
        conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
        _load_vec(conn)
        _check_fts5(conn)
        conn.execute("PRAGMA foreign_keys = ON")
        if not read_only:
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute(f"PRAGMA synchronous = {synchronous}")
            conn.execute(f"PRAGMA wal_autocheckpoint = {WAL_AUTOCHECKPOINT_PAGES}")
            conn.execute(f"PRAGMA journal_size_limit = {WAL_SIZE_LIMIT_BYTES}")
        conn.execute("PRAGMA temp_store = MEMORY")
        conn.execute("PRAGMA cache_size = -32768")
        conn.execute(f"PRAGMA mmap_size = {int(mmap_mb) * 1024 * 1024}")
    except BaseException:
        conn.close()
        raise
    return conn


def _connect(sqlite: ModuleType, target: Path, params: str, busy_timeout_ms: int) -> Any:
    # Autocommit mode: transactions are explicit (BEGIN IMMEDIATE) so that a write never
    # starts as a read and fails to upgrade its lock under another writer.
    tracked = tracked_class(sqlite)
    extra = {} if tracked is None else {"factory": tracked}
    conn = sqlite.connect(f"file:{target.as_posix()}?{params}", uri=True,
                          isolation_level=None, check_same_thread=False,
                          timeout=busy_timeout_ms / 1000, **extra)
    if "immutable=1" not in params:
        track(conn, target)
    return conn


def _readable(sqlite: ModuleType, conn: Any, target: Path, busy_timeout_ms: int) -> Any:
    """A read-only connection that can read ``target``, or a clear refusal.

    A WAL file in a folder nobody may write (a read-only mount, an immutable folder) or on
    a full disk cannot get the ``-shm`` index SQLite reads it through, and SQLite says only
    "unable to open database file" (or "disk I/O error"; to a user who owns the file but
    not its folder, "attempt to write a readonly database"). An index that does not exist
    means no connection has the file open, and with no ``-wal`` beside it and no room for
    one nobody can start writing it, so it is opened as immutable: read straight from the
    file, no index needed.
    """
    try:
        conn.execute("SELECT count(*) FROM sqlite_schema").fetchone()
        return conn
    except sqlite.OperationalError as exc:
        if refusals.primary_code(exc) not in (refusals.SQLITE_CANTOPEN, refusals.SQLITE_IOERR,
                                              refusals.SQLITE_READONLY):
            conn.close()
            raise
        conn.close()
    wal = target.with_name(target.name + "-wal")
    if wal.exists() and wal.stat().st_size > 0:
        raise ReadOnlyDatabase(
            f"{target} cannot be read: its folder is read-only and it has a write-ahead log "
            f"({wal.name}) but no -shm index to read it through; copy the file with its "
            "-wal to a writable folder and open the copy")
    conn = _connect(sqlite, target, "mode=ro&immutable=1", busy_timeout_ms)
    try:
        conn.execute("SELECT count(*) FROM sqlite_schema").fetchone()
    except BaseException:
        conn.close()
        raise
    return conn


# How long a look at a file waits for a writer's lock (only a WAL recovery holds one).
_PEEK_TIMEOUT_MS = 5000


def peek_connection(path: Path) -> Any:
    """A connection that reads ``path`` and writes nothing beside it, to see what it holds.

    With no ``-wal`` beside the file nobody has it open in WAL mode, and it is read as
    immutable: a plain read-only connection would leave a ``-wal`` and ``-shm`` behind a WAL
    file. With one, the log holds pages the file lacks, so it is read through the log, the
    way :func:`open_connection` reads (its ``-shm`` is there already). A log that appears
    between the check and the read means a writer has just opened it: read again through it.
    """
    sqlite = sqlite_module()
    wal = path.with_name(path.name + "-wal")
    if wal.exists():
        return _readable(sqlite, _connect(sqlite, path, "mode=ro", _PEEK_TIMEOUT_MS), path,
                         _PEEK_TIMEOUT_MS)
    conn = _connect(sqlite, path, "mode=ro&immutable=1", _PEEK_TIMEOUT_MS)
    try:
        conn.execute("SELECT count(*) FROM sqlite_schema").fetchone()
    except sqlite.DatabaseError:
        conn.close()
        if not wal.exists():
            raise
        return _readable(sqlite, _connect(sqlite, path, "mode=ro", _PEEK_TIMEOUT_MS), path,
                         _PEEK_TIMEOUT_MS)
    return conn


@contextlib.contextmanager
def transaction(conn: Any) -> Iterator[Any]:
    """Run the block in one write transaction (BEGIN IMMEDIATE), or a savepoint when nested.

    A failure rolls back only what is still open: on SQLITE_FULL (or a failed COMMIT)
    SQLite may already have rolled the whole transaction back, and a ROLLBACK then would
    raise "no transaction is active" in place of the real error.
    """
    if conn.in_transaction:
        name = f"sp_{threading.get_ident()}_{id(conn)}"
        conn.execute(f"SAVEPOINT {name}")
        try:
            yield conn
        except BaseException:
            if conn.in_transaction:
                conn.execute(f"ROLLBACK TO {name}")
                conn.execute(f"RELEASE {name}")
            raise
        conn.execute(f"RELEASE {name}")
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def checkpoint_wal(conn: Any) -> int:
    """Copy the write-ahead log into the file as far as no reader still needs it (a
    ``PASSIVE`` checkpoint: it waits for nobody); the log's frames left uncopied (0: the
    file holds everything)."""
    _, frames, copied = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
    return max(0, int(frames) - int(copied))


# SQLite limits the number of ? in one statement; 500 stays far below every build's limit.
_IN_BATCH = 500


def select_in(conn: Any, sql: str, values: Sequence[Any],
              params: Sequence[Any] = ()) -> list[Any]:
    """Rows of ``sql`` (ending in ``IN``) for every value, asked in batches of at most 500.

    ``sql`` is completed with ``(?, ?, …)``; e.g. ``"SELECT a, b FROM t WHERE a IN"``.
    ``params`` bind the ``?`` that ``sql`` holds before its ``IN``.
    """
    values = list(values)
    rows: list[Any] = []
    for start in range(0, len(values), _IN_BATCH):
        part = values[start:start + _IN_BATCH]
        rows.extend(conn.execute(f"{sql} ({','.join('?' * len(part))})",
                                 [*params, *part]).fetchall())
    return rows


_STOP = object()


class Lane:
    """One SQLite connection and the single thread allowed to use it."""

    def __init__(self, connect: Callable[[], Any], name: str) -> None:
        self._connect = connect
        self._jobs: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self._ready = threading.Event()
        self._open_error: BaseException | None = None
        self.conn: Any = None

    def start(self) -> None:
        """Open the connection on the lane's thread; raises what opening raised."""
        self._thread.start()
        self._ready.wait()
        if self._open_error is not None:
            raise self._open_error

    def _serve(self) -> None:
        try:
            self.conn = self._connect()
        except BaseException as exc:
            self._open_error = exc
            self._ready.set()
            return
        self._ready.set()
        while True:
            job = self._jobs.get()
            if job is _STOP:
                break
            future, loop, fn, args = job
            try:
                result = fn(self.conn, *args)
            except BaseException as exc:
                if loop is None:
                    future.set_exception(exc)
                else:
                    _answer(loop, future, None, exc)
            else:
                if loop is None:
                    future.set_result(result)
                else:
                    _answer(loop, future, result, None)
        self.conn.close()

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn(conn, *args)`` on the lane's thread and return its result."""
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        self._jobs.put((future, loop, fn, args))
        # Shielded: the job runs to completion even if the caller is cancelled, so the
        # caller's cancellation never races the connection's state.
        return await asyncio.shield(future)

    def run_sync(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn(conn, *args)`` on the lane's thread from a non-async caller."""
        import concurrent.futures

        future: concurrent.futures.Future[T] = concurrent.futures.Future()
        self._jobs.put((future, None, fn, args))
        return future.result()

    def reconnect(self) -> None:
        """Replace the connection with a new one; only from a job running on this lane."""
        assert threading.current_thread() is self._thread, "reconnect from the lane's thread"
        old, self.conn = self.conn, self._connect()
        with contextlib.suppress(Exception):  # a handle left open keeps it a zombie; so be it
            old.close()

    def close(self, *, wait: bool = True) -> None:
        """Finish queued jobs, close the connection and end the thread (without ``wait``,
        the thread does so after its current job, and the caller does not wait for it)."""
        if self._thread.is_alive():
            self._jobs.put(_STOP)
            if wait:
                self._thread.join()


def _answer(loop: asyncio.AbstractEventLoop, future: asyncio.Future[Any], result: Any,
            exc: BaseException | None) -> None:
    """Hand a job's outcome to its loop; a loop closed meanwhile (a job that outlived its
    cancelled caller) has nobody left to take it."""
    try:
        loop.call_soon_threadsafe(_settle, future, result, exc)
    except RuntimeError:
        log.debug("a lane job finished after its event loop closed; its result is dropped")


def _settle(future: asyncio.Future[Any], result: Any, exc: BaseException | None) -> None:
    if future.cancelled():
        return
    if exc is not None:
        future.set_exception(exc)
    else:
        future.set_result(result)


class Database:
    """One writer lane and a pool of reader lanes over one SQLite file (WAL)."""

    def __init__(self, path: str | Path, *, read_only: bool, reader_pool_size: int,
                 busy_timeout_ms: int, synchronous: str = "NORMAL", mmap_mb: int = 0) -> None:
        self.path = Path(path)
        self._mmap_mb = mmap_mb
        self.read_only = read_only
        self._busy_timeout_ms = busy_timeout_ms
        self._synchronous = synchronous
        self._reader_pool_size = reader_pool_size
        self.writer: Lane | None = None
        self._readers: list[Lane] = []
        self._opening = 0  # reader lanes being opened (:meth:`_take_reader`)
        self._closed = False
        # Last in, first out: the reader used last is used next, so its page cache is warm;
        # the others only wake when queries overlap. (Round-robin spread each page over five
        # caches and cost a session query ~1 ms of page reads.)
        self._idle: asyncio.LifoQueue[Lane] | None = None
        self._watch: Lane | None = None
        self._checkpointer: Lane | None = None

    def _lane(self, name: str, read_only: bool) -> Lane:
        path, timeout, sync, mmap_mb = (self.path, self._busy_timeout_ms, self._synchronous,
                                        self._mmap_mb)
        return Lane(lambda: open_connection(path, read_only=read_only, busy_timeout_ms=timeout,
                                            synchronous=sync, mmap_mb=mmap_mb), name)

    @property
    def busy_timeout_ms(self) -> int:
        """How long a connection of this file waits for a lock."""
        return self._busy_timeout_ms

    def connect_reader(self) -> Any:
        """A read-only connection of the caller's own, for work on a thread of its own (a
        derived index's build); the caller closes it."""
        return open_connection(self.path, read_only=True, busy_timeout_ms=self._busy_timeout_ms,
                               synchronous=self._synchronous, mmap_mb=self._mmap_mb)

    def open_writer(self) -> None:
        """Open the single writer (or, read-only, the connection migrations are read through)."""
        self.writer = self._lane("sqlite-writer", self.read_only)
        self.writer.start()

    def open_readers(self) -> None:
        """Open the reader pool's first lane; call after migrations so readers see the final
        schema. The others open as reads overlap (:meth:`_take_reader`), up to the pool's
        size: a command that reads one thing at a time never pays for them (each is a thread
        and a connection, ~1 ms to open and to close)."""
        self._idle = asyncio.LifoQueue()
        lane = self._lane("sqlite-reader-0", True)
        lane.start()
        self._readers.append(lane)
        self._idle.put_nowait(lane)

    async def _take_reader(self) -> Lane:
        """An idle reader lane; a new one when none is idle and the pool has room, unless
        the read is background upkeep's (:func:`core.tasks.mark_as_upkeep`)."""
        assert self._idle is not None, "database is closed"
        if (not self._idle.empty() or in_upkeep()
                or len(self._readers) + self._opening >= self._reader_pool_size):
            return await self._idle.get()
        self._opening += 1
        try:
            lane = await self._open_reader(len(self._readers) + self._opening - 1)
        finally:
            self._opening -= 1
        return await self._idle.get() if lane is None else lane

    async def _open_reader(self, index: int) -> Lane | None:
        """A new reader lane in the pool; None when it did not open (out of threads or file
        handles: the lanes already open serve the reads)."""
        lane = self._lane(f"sqlite-reader-{index}", True)
        try:
            await asyncio.to_thread(lane.start)
        except Exception as exc:
            log.warning("%s: another reader connection did not open (%s); the %d open ones"
                        " serve the reads", self.path, exc, len(self._readers))
            return None
        if self._closed:
            lane.close()
            raise RuntimeError("database is closed")
        self._readers.append(lane)
        return lane

    async def write(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn(conn, *args)`` on the writer lane; a disk that is full or became
        read-only raises ``StorageFull`` or ``ReadOnlyDatabase``, and a write lock another
        process held past the busy timeout ``MemoryBusy``, never the driver's error."""
        assert self.writer is not None, "database is closed"
        return await self._refused(self.writer.run(self._guarded_write, fn, args))

    async def _refused(self, job: Awaitable[T]) -> T:
        """``job``'s result, a driver's error on the file raised as the engine's refusal."""
        try:
            return await job
        except UnicodeEncodeError:
            raise rows.not_text() from None
        except Exception as exc:
            refusal = refusals.storage_refusal(self.path, exc,
                                               busy_timeout_ms=self._busy_timeout_ms)
            if refusal is None:
                raise
            raise refusal from exc

    def _guarded_write(self, conn: Any, fn: Callable[..., T], args: tuple[Any, ...]) -> T:
        """``fn(conn, *args)`` on the writer's thread, and after a failure of the driver's:
        a plain SQLITE_ERROR raised with the file out of room becomes the SQLITE_FULL it
        stands for (checked in the same job, before another can free the room), and a
        connection left unable to commit is replaced, so one failure never stops every
        later write."""
        try:
            return fn(conn, *args)
        except Exception as exc:
            if refusals.primary_code(exc) is None:
                raise  # the engine's own refusals: nothing reached the driver's error paths
            full = refusals.vec_write_failed(exc) and refusals.out_of_room(conn, self.path)
            assert self.writer is not None
            if refusals.wedged(conn):
                log.warning("%s: the writer connection cannot commit any more after %s; "
                            "opening a new one", self.path, exc)
                self.writer.reconnect()
            if full:
                raise refusals.FullBehindVec(exc) from exc
            raise

    async def checkpoint(self) -> int:
        """Copy the write-ahead log into the file (a passive checkpoint) on a connection and
        thread of its own, beside the writer's: writes go on meanwhile, and the copy no
        longer holds the writer's lane (a 100k import spent 1.8 s of it there). The log's
        frames left uncopied, as :func:`checkpoint_wal`; refusals as :meth:`write`'s."""
        assert self.writer is not None, "database is closed"
        if self._checkpointer is None:
            self._checkpointer = self._lane("sqlite-checkpoint", False)
            self._checkpointer.start()
        return await self._refused(self._checkpointer.run(checkpoint_wal))

    async def read(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn(conn, *args)`` on an idle reader lane. A WAL reader waits for a lock only
        while another connection rebuilds the file's index (after a crash); past the busy
        timeout that is ``MemoryBusy`` too."""
        lane = await self._take_reader()
        try:
            return await lane.run(fn, *args)
        except UnicodeEncodeError:
            raise rows.not_text() from None
        except Exception as exc:
            if refusals.primary_code(exc) != refusals.SQLITE_BUSY:
                raise
            raise refusals.busy(self.path, self._busy_timeout_ms) from exc
        finally:
            assert self._idle is not None
            self._idle.put_nowait(lane)

    async def watch(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn(conn, *args)`` on the watch lane: one connection of its own, so
        ``PRAGMA data_version`` read on it moves whenever any other connection commits."""
        assert self.writer is not None, "database is closed"
        if self._watch is None:
            self._watch = self._lane("sqlite-watch", True)
            self._watch.start()
        return await self._watch.run(fn, *args)

    def close(self) -> None:
        """Close every lane, readers first so the writer's close can checkpoint the WAL."""
        self._closed = True
        for lane in (self._watch, self._checkpointer):
            if lane is not None:
                lane.close()
        self._watch = self._checkpointer = None
        for lane in self._readers:
            lane.close()
        self._readers.clear()
        if self.writer is not None:
            self.writer.close()
            self.writer = None
