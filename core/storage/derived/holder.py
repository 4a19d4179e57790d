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
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from core.storage.derived.changes import changes_after, collapse, newest_seq

log = logging.getLogger(__name__)


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


class DerivedIndexes:
    """The derived indexes of one backend; thread-safe (queries run on a reader pool).

    ``connect`` opens a read connection of its own for a background build.
    """

    def __init__(self, indexes: Sequence[DerivedIndex], connect: Callable[[], Any]) -> None:
        self._states = {index.name: IndexState(index) for index in indexes}
        self._connect = connect
        self._lock = threading.Lock()  # the builds' bookkeeping, never held by a query
        self._threads: list[threading.Thread] = []
        self._closed = False

    def state(self, name: str) -> IndexState:
        """One index's state (read it under no lock: for reports)."""
        return self._states[name]

    @contextlib.contextmanager
    def reading(self, conn: Any, name: str) -> Iterator[bool]:
        """Inside, ``name`` is up to the file's last commit and locked, and ``conn`` reads in
        the snapshot it was brought up to; yields True when the index is ready, False when
        the caller must answer from SQL (an index not built yet starts building in the
        background)."""
        state = self._states[name]
        if not state.ready:
            self.start_build(name)
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
            thread = threading.Thread(target=self._build, args=(state,),
                                      name=f"derived-{name}", daemon=True)
            self._threads = [t for t in self._threads if t.is_alive()] + [thread]
        thread.start()

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
                    watermark = newest_seq(conn)
                    state.index.build(conn)
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
            return
        with state.lock, self._lock:
            state.watermark = watermark
            state.build_seconds = time.perf_counter() - started
            state.problem = None
            state.ready = not self._closed
            state.building = False

    def close(self) -> None:
        """Stop building: a build in flight is interrupted (a short-lived process that
        asked one namespace query does not wait for a whole file to be read)."""
        with self._lock:
            self._closed = True
            threads = list(self._threads)
        for thread in threads:
            thread.join()
