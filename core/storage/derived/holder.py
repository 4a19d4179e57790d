"""The derived indexes of one open file, and how they are kept in step with it.

An index is built from the file in the background the first time a query wants it; until
then (and while it is rebuilt) :meth:`DerivedIndexes.reading` says no and the query takes the
SQL path. Before each query that uses it, the reading connection opens a read transaction,
checks the change log's newest seq (one index lookup) and, when the file moved, applies the
entries after the index's watermark; the query then reads the index, and any rows it needs,
in that same snapshot. Every writer logs through triggers, so another process's writes are
found by the next query.

Each index has a lock of its own, held while it is brought up to date and while a query
reads it: a query never sees an index half applied, and applying one index (or building
it) never holds up a query of another.

With a :class:`Saving` (a file on disk), an index is saved beside the file
(:mod:`core.storage.derived.persisted`) once built, after quiet periods and at close, on a
thread of its own; the next process loads it (mapped), catches it up from the change log,
and answers from it instead of building. A query arriving while a load is under way waits
for it (a load is a fraction of a second); one arriving during a build takes SQL.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeGuard

from core.storage.derived import persisted
from core.storage.derived.changes import (
    changes_after,
    collapse,
    lineage_mark,
    lineage_mismatch,
    newest_seq,
)

log = logging.getLogger(__name__)

_LOAD_WAIT_S = 30.0  # a query waits this long at most for a load under way


class DerivedIndex(Protocol):
    """An index rebuildable from the file and kept in step through the change log."""

    name: str
    follows: frozenset[str]
    """The log ops it reads (of ``insert``, ``delete``, ``update``, ``vector``)."""

    def build(self, conn: Any) -> None:
        """Replace everything held by what the file holds (inside a read transaction)."""

    def apply(self, conn: Any, inserted: Sequence[int], deleted: Sequence[int]) -> None:
        """Drop the ``deleted`` fts_rowids' rows, then read the ``inserted`` ones from the
        file (see :func:`core.storage.derived.changes.collapse`)."""

    def memory_bytes(self) -> int:
        """The bytes its arrays hold."""


class SavedIndex(DerivedIndex, Protocol):
    """A derived index that can be saved and read back (:mod:`.persisted`)."""

    def export(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """Its arrays and what places them, to save (under its lock)."""

    def restore(self, conn: Any, arrays: dict[str, Any], meta: dict[str, Any]) -> None:
        """Hold what :meth:`export` gave, read back (mapped)."""

    def learned(self) -> int:
        """How much it learned from queries alone (a count: the full-text
        index's phrases): a quiet period saves it when this moved, though the file did not."""


@dataclass
class Saving:
    """Where and as what a file's indexes are saved."""

    folder: Path
    database: str
    """The file's random id (``memory_meta.database_id``): a copy of another file's indexes
    beside it is refused."""
    fingerprint: Callable[[Any, DerivedIndex], dict[str, Any]]
    """What an index was built from, read in a read transaction of the file."""
    quiet_s: float = 5.0
    """Saved once the file and the queries were this long still (and at close)."""
    close_after: int = 1000
    """At close, saved only when built here or this many changes past the saved copy."""
    writable: bool = True
    """False for a file opened read-only: its saved copies are loaded, never written."""


@dataclass
class IndexState:
    """Where one index stands: ready or not, its watermark, its last build."""

    index: DerivedIndex
    ready: bool = False
    building: bool = False
    watermark: int = 0
    build_seconds: float | None = None
    rebuilds: int = 0
    problem: str | None = None
    lock: threading.RLock = field(default_factory=threading.RLock)
    """Held while the index is applied to and while a query reads it."""
    origin: str | None = None
    """"loaded" (from a saved copy) or "built" (from the file), once ready."""
    caught_up: int = 0
    """Changes applied to the loaded copy to bring it to the file's commit."""
    refused: str | None = None
    """Why a saved copy was not used (None: used, or none saved)."""
    saved_at: int | None = None
    """The change-log position of the copy on disk (None: none known)."""
    saved_learned: int = 0
    """The index's :meth:`SavedIndex.learned` when the copy on disk was exported."""
    loading: threading.Event | None = None
    """Set once a load under way is over (used or refused)."""
    last_read: float = 0.0

    def describe(self) -> str:
        """How the index came to be, for explain."""
        if self.origin == "loaded":
            return f"loaded from disk, caught up {self.caught_up:,} changes"
        if self.origin == "built":
            seconds = f" in {self.build_seconds:.1f} s" if self.build_seconds else ""
            return f"built from the file{seconds}" + (
                f" (saved copy not used: {self.refused})" if self.refused
                and self.refused != "none saved" else "")
        return "not built"


class DerivedIndexes:
    """The derived indexes of one backend; thread-safe (queries run on a reader pool).

    ``connect`` opens a read connection of its own for a background build.
    """

    def __init__(self, indexes: Sequence[DerivedIndex], connect: Callable[[], Any],
                 saving: Saving | None = None) -> None:
        self._states = {index.name: IndexState(index) for index in indexes}
        self._connect = connect
        self._lock = threading.Lock()  # the builds' bookkeeping, never held by a query
        self._threads: list[threading.Thread] = []
        self._closed = False
        self.saving = saving
        self._stop = threading.Event()
        self._saver: threading.Thread | None = None
        # One save of an index at a time (the saver thread's, a build's, close's); the
        # indexes apart save at once, as an import's follower does at its end.
        self._save_locks = {name: threading.Lock() for name in self._states}

    def load_saved(self) -> None:
        """Start loading every index that has a saved copy (at open: the first query then
        waits for a load, not for SQL), and the saver thread."""
        if self.saving is None:
            return
        for name in self._states:
            if (self.saving.folder / f"{name}.json").exists():
                self.start_build(name)
        if self._saver is None:
            self._saver = threading.Thread(target=self._save_when_quiet, name="derived-saver",
                                           daemon=True)
            self._saver.start()

    def answers_from_memory(self, name: str) -> bool:
        """Whether a query of ``name`` now reads it from memory: it is ready, or its saved
        copy is loading (:meth:`reading` waits for that load, and answers from SQL only if
        the copy is refused)."""
        state = self._states[name]
        return state.ready or state.loading is not None

    def state(self, name: str) -> IndexState:
        """One index's state (read it under no lock: for reports)."""
        return self._states[name]

    def names(self) -> list[str]:
        """The indexes held, by name."""
        return list(self._states)

    def catch_up(self, conn: Any) -> None:
        """Bring every ready index up to the file's last commit, as a query would, on
        ``conn`` (another process's import, followed: :mod:`core.storage.sqlite.index_follower`)."""
        for name in self._states:
            with self.reading(conn, name):
                pass

    def take_saved(self, name: str) -> None:
        """Load ``name`` again from its saved copy, which another process saved further on
        than this one holds (an import's follower): held here, the index would otherwise
        apply the whole import change by change on the next query. An index not held here
        is left to load when a query wants it; one building goes on."""
        state = self._states[name]
        with state.lock, self._lock:
            if not state.ready or state.building or self._closed or self.saving is None:
                return
            state.ready, state.origin = False, None
        self.start_build(name)

    @contextlib.contextmanager
    def reading(self, conn: Any, name: str) -> Iterator[bool]:
        """Inside, ``name`` is up to the file's last commit and locked, and ``conn`` reads in
        the snapshot it was brought up to; yields True when the index is ready, False when
        the caller must answer from SQL (an index not built yet starts building in the
        background)."""
        state = self._states[name]
        state.last_read = time.monotonic()
        if not state.ready:
            self.start_build(name)
            loading = state.loading
            if loading is not None:
                loading.wait(_LOAD_WAIT_S)
        if not state.ready:
            yield False
            return
        with state.lock:
            began = not conn.in_transaction
            if began:
                conn.execute("BEGIN")  # the log and the rows it names read in one snapshot
            try:
                if state.ready:
                    self._catch_up(conn, state)
                yield state.ready
            finally:
                if began and conn.in_transaction:
                    conn.execute("COMMIT")

    def lock(self, name: str) -> threading.RLock:
        """``name``'s lock: hold it to read the index outside :meth:`reading` (reports)."""
        return self._states[name].lock

    def _catch_up(self, conn: Any, state: IndexState) -> None:
        changes = changes_after(conn, state.watermark, state.index.follows)
        if changes.rebuild is not None:
            log.info("derived index %s: rebuilding: %s", state.index.name, changes.rebuild)
            state.ready = False
            state.rebuilds += 1
            self.start_build(state.index.name)
            return
        if changes.entries:
            inserted, deleted = collapse(changes.entries, state.index.follows)
            if inserted or deleted:
                state.index.apply(conn, inserted, deleted)
        state.watermark = changes.newest

    def start_build(self, name: str) -> None:
        """Build ``name`` on a thread of its own unless it is built, building or closed."""
        with self._lock:
            state = self._states[name]
            if state.ready or state.building or self._closed:
                return
            state.building = True
            if self.saving is not None and state.rebuilds == 0 and state.origin is None:
                state.loading = threading.Event()
            thread = threading.Thread(target=self._build, args=(state,),
                                      name=f"derived-{name}", daemon=True)
            self._threads = [t for t in self._threads if t.is_alive()] + [thread]
            thread.start()  # under the lock: close() never joins a thread not started yet

    def build_now(self, name: str) -> None:
        """Build ``name`` on this thread and wait for it (benchmarks, tests, warm-up)."""
        with self._lock:
            state = self._states[name]
            if state.ready:
                return
            waiting = state.building
            if not waiting:
                state.building = True
        if waiting:
            while state.building:
                time.sleep(0.01)
            return
        self._build(state)

    def settle(self) -> None:
        """Wait for the builds and saves in flight (tests, benchmarks: a save catches its
        index up to the file, so a test that wants an index behind waits for it first)."""
        with self._lock:
            threads = [t for t in self._threads if t.is_alive()]
        for thread in threads:
            thread.join()

    def _build(self, state: IndexState) -> None:
        started = time.perf_counter()
        try:
            conn = self._connect()
            # Checked by SQLite every few thousand steps of any statement: a close() that
            # lands between two statements still stops the next one (interrupt() would not).
            conn.set_progress_handler(lambda: int(self._closed), 10_000)
            try:
                conn.execute("BEGIN")
                try:
                    watermark = self._load(conn, state)
                    if watermark is None:
                        watermark = newest_seq(conn)
                        state.index.build(conn)
                        state.origin = "built"
                finally:
                    if conn.in_transaction:  # an interrupted read was rolled back already
                        conn.execute("COMMIT")
            finally:
                conn.close()
        except Exception as exc:  # the driver's errors: the SQL path keeps answering
            if not self._closed:  # else: stopped by close(), as it asked
                log.warning("derived index %s could not be built: %s", state.index.name, exc)
            state.problem = str(exc)
            with self._lock:
                state.building = False
            self._loaded(state)
            return
        with state.lock, self._lock:
            state.watermark = watermark
            state.build_seconds = time.perf_counter() - started
            state.problem = None
            state.ready = not self._closed
            state.building = False
        self._loaded(state)
        if state.origin == "built" and state.ready:
            self._in_background(self.save, state.index.name)

    def _in_background(self, work: Callable[[str], object], name: str) -> None:
        """Run ``work(name)`` on a thread that close() waits for; its failure is logged (a
        save that fails leaves the next process to build, as at close)."""
        def run() -> None:
            try:
                work(name)
            except Exception as exc:  # the disk's and the driver's errors
                log.warning("derived index %s could not be saved: %s", name, exc)

        with self._lock:
            if self._closed:
                return
            thread = threading.Thread(target=run, name=f"derived-save-{name}", daemon=True)
            self._threads = [t for t in self._threads if t.is_alive()] + [thread]
            thread.start()  # under the lock, as in start_build

    @staticmethod
    def _loaded(state: IndexState) -> None:
        if state.loading is not None:
            state.loading.set()
            state.loading = None

    def _load(self, conn: Any, state: IndexState) -> int | None:
        """Restore ``state``'s saved copy and apply the log since it (in ``conn``'s read
        transaction); its watermark, or None (and why, in ``refused``) to build instead."""
        if self.saving is None or state.rebuilds or not _saveable(state.index):
            return None
        index = state.index
        found = persisted.load(self.saving.folder, index.name,
                               fingerprint=self.saving.fingerprint(conn, index),
                               database=self.saving.database, mmap_mode="c")
        if isinstance(found, str):
            state.refused = found
        else:
            state.saved_at = found.position
            state.refused = _log_mismatch(conn, found.position, found.entry)
        if state.refused is None:
            assert not isinstance(found, str)
            changes = changes_after(conn, found.position, index.follows)
            state.refused = changes.rebuild
        if state.refused is not None:
            if state.refused != "none saved":
                log.info("derived index %s: saved copy not used: %s", index.name, state.refused)
            self._loaded(state)
            return None
        assert not isinstance(found, str)
        try:
            index.restore(conn, found.arrays, found.meta)
            state.saved_learned = index.learned()
            inserted, deleted = collapse(changes.entries, index.follows)
            if inserted or deleted:
                index.apply(conn, inserted, deleted)
        except (KeyError, ValueError, TypeError, IndexError) as exc:  # arrays that checked
            # out but do not fit together: built afresh (build() replaces all it holds)
            state.refused = f"its arrays do not fit together ({exc})"
            log.warning("derived index %s: saved copy not used: %s", index.name, state.refused)
            self._loaded(state)
            return None
        state.caught_up = len(changes.entries)
        state.origin = "loaded"
        return changes.newest

    def save(self, name: str, *, at_close: bool = False) -> bool:
        """Bring ``name`` up to the file and save it (on the caller's thread; the index's
        lock is held only to catch up and copy its arrays); False when there was nothing
        to save (not built, no saving, or the copy on disk is current)."""
        saving, state = self.saving, self._states[name]
        if (saving is None or not saving.writable or not state.ready
                or not _saveable(state.index)):
            return False
        with self._save_locks[name]:
            conn = self._connect()
            try:
                with state.lock:
                    conn.execute("BEGIN")
                    try:
                        self._catch_up(conn, state)
                        if not state.ready:
                            return False
                        position = state.watermark
                        behind = (position - state.saved_at if state.saved_at is not None
                                  else None)
                        learned = state.index.learned()
                        if behind == 0 and (at_close or learned == state.saved_learned):
                            return False
                        if at_close and behind is not None and behind < saving.close_after:
                            return False
                        fingerprint = saving.fingerprint(conn, state.index)
                        entry = {"at": _entry(conn, position), "lineage": lineage_mark(conn)}
                        arrays, meta = state.index.export()
                    finally:
                        if conn.in_transaction:
                            conn.execute("COMMIT")
            finally:
                conn.close()
            try:
                written = persisted.save(saving.folder, name, fingerprint=fingerprint,
                                         database=saving.database, position=position,
                                         entry=entry, meta=meta, arrays=arrays)
            except OSError as exc:  # a full or read-only disk: the index still answers
                log.warning("derived index %s could not be saved in %s: %s", name,
                            saving.folder, exc)
                return False
            if written is None:  # another process is saving it: tried again when quiet
                return False
            state.saved_at, state.saved_learned = position, learned
            return True

    def check_saved(self) -> list[dict[str, Any]]:
        """Each index's saved copy: where, its bytes, and whether it is current, behind the
        file by some changes (caught up on load), or invalid and why (rebuilt on load)."""
        saving = self.saving
        if saving is None:
            return []
        found: list[dict[str, Any]] = []
        conn = self._connect()
        try:
            conn.execute("BEGIN")
            for name, state in self._states.items():
                saved = persisted.describe(saving.folder, name)
                if saved is None:
                    continue
                loaded = persisted.load(saving.folder, name,
                                        fingerprint=saving.fingerprint(conn, state.index),
                                        database=saving.database)
                if isinstance(loaded, str):
                    status = f"invalid: {loaded}"
                else:
                    why = _log_mismatch(conn, loaded.position, loaded.entry) or changes_after(
                        conn, loaded.position, state.index.follows).rebuild
                    behind = newest_seq(conn) - loaded.position
                    status = (f"invalid: {why}" if why else "current" if behind == 0
                              else f"behind by {behind:,} changes")
                found.append({"index": name, "folder": str(saving.folder),
                              "bytes": saved.bytes, "state": status})
            conn.execute("COMMIT")
        finally:
            conn.close()
        return found

    def _save_when_quiet(self) -> None:
        """Save each ready index once neither the file nor its queries moved for
        ``quiet_s``."""
        assert self.saving is not None
        quiet = self.saving.quiet_s
        seen: int | None = None
        while not self._stop.wait(quiet):
            try:
                conn = self._connect()
                try:
                    newest = newest_seq(conn)
                finally:
                    conn.close()
            except Exception as exc:  # the driver's errors: tried again next period
                log.debug("derived indexes: the change log could not be read: %s", exc)
                continue
            moved, seen = newest != seen, newest
            if moved:
                continue
            for name, state in self._states.items():
                if (state.ready and time.monotonic() - state.last_read >= quiet
                        and (state.saved_at != newest or _learned_since_saved(state))):
                    try:
                        self.save(name)
                    except Exception as exc:  # the driver's errors: tried again later
                        log.warning("derived index %s could not be saved: %s", name, exc)

    def close(self) -> None:
        """Stop building: a build in flight is interrupted (a short-lived process that
        asked one namespace query does not wait for a whole file to be read)."""
        with self._lock:
            self._closed = True
            threads = list(self._threads)
        self._stop.set()
        for thread in threads:
            thread.join()
        if self._saver is not None:
            self._saver.join()
        for name in self._states:
            try:
                self.save(name, at_close=True)
            except Exception as exc:  # the driver's errors: the next process builds
                log.warning("derived index %s could not be saved at close: %s", name, exc)


def _learned_since_saved(state: IndexState) -> bool:
    return _saveable(state.index) and state.index.learned() != state.saved_learned


def _saveable(index: DerivedIndex) -> TypeGuard[SavedIndex]:
    return hasattr(index, "export") and hasattr(index, "restore")


def _entry(conn: Any, seq: int) -> list[Any] | None:
    """The log's entry at ``seq`` as [fts_rowid, op] (None when pruned or 0)."""
    row = conn.execute("SELECT fts_rowid, op FROM chunk_changes WHERE seq = ?",
                       (seq,)).fetchone()
    return None if row is None else [row[0], row[1]]


def _log_mismatch(conn: Any, position: int, entry: Any) -> str | None:
    """Why the log at ``position`` is not the one the copy was saved at (a copy of the file
    that went on alone), or None."""
    if not isinstance(entry, dict):
        return "its change-log mark is missing"
    why = lineage_mismatch(conn, position, entry.get("lineage"))
    if why is not None:
        return why
    found = _entry(conn, position)
    if entry.get("at") is not None and found is not None and found != entry["at"]:
        return "the change log differs from the one it was saved at"
    return None
