"""The derived indexes of one open file, and how they are kept in step with it.

An index is built from the file in the background the first time a query wants it; until
then (and while it is rebuilt) :meth:`DerivedIndexes.synced` says no and the query takes the
SQL path. Before each query that uses it, the reading connection checks the change log's
newest seq (one index lookup) and, when the file moved, applies the entries after the
index's watermark in one read transaction, so the rows read match the log read. Every
writer logs through triggers, so another process's writes are found by the next query.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from core.storage.derived.changes import Changes, changes_after, collapse, newest_seq

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


class DerivedIndexes:
    """The derived indexes of one backend; thread-safe (queries run on a reader pool).

    ``connect`` opens a read connection of its own for a background build.
    """

    def __init__(self, indexes: Sequence[DerivedIndex], connect: Callable[[], Any]) -> None:
        self._states = {index.name: IndexState(index) for index in indexes}
        self._connect = connect
        self._lock = threading.RLock()
        self._threads: list[threading.Thread] = []
        self._closed = False

    def state(self, name: str) -> IndexState:
        """One index's state (read it under no lock: for reports)."""
        return self._states[name]

    def synced(self, conn: Any, name: str) -> bool:
        """Bring every ready index up to the file on ``conn``; True when ``name`` is ready
        (the caller holds :meth:`locked` around the sync and its use of the index).

        An index not built yet starts building in the background and the answer is False.
        """
        state = self._states[name]
        if not state.ready:
            self.start_build(name)
            return False
        if newest_seq(conn) == min(s.watermark for s in self._states.values() if s.ready):
            return True
        conn.execute("BEGIN")  # the log and the rows it names are read in one snapshot
        try:
            for other in self._states.values():
                if other.ready:
                    self._catch_up(conn, other, changes_after(conn, other.watermark))
        finally:
            conn.execute("COMMIT")
        return state.ready

    def locked(self) -> threading.RLock:
        """The lock a query holds while it syncs and reads an index."""
        return self._lock

    def _catch_up(self, conn: Any, state: IndexState, changes: Changes) -> None:
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
        with self._lock:
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
