"""The retrieval log's writes: batched, and made in a quiet moment between queries.

Each query's entry is ready to bind when it is logged (:func:`core.storage.log_rows.log_row`);
this buffer writes them in one transaction on the backend's writer. A write that lands in the
middle of a query slows it: the two share two cores, and a matrix scan split over every core
waits for its slowest part. Measured at 100k chunks, 200 namespace queries back to back with
a write every 0.25 s: about one query in forty spent 7-13 ms waiting beside a write of the
log, and the vector leg's tail doubled. So a write waits, after :data:`FLUSH_DELAY`, for a
moment with no query in flight and none for :data:`QUIET`; in a burst that never pauses, it
is made anyway after :data:`FLUSH_LATEST` or once :data:`FLUSH_MOST` entries wait. A crash
loses at most those entries (the log is a diagnostic: nothing else waits on it).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING

from core.errors import InvalidInput, OutOfNamespace
from core.retrieval.log_warnings import ThrottledWarning
from core.storage.log_rows import LogRow
from core.tasks import cancel_and_wait

if TYPE_CHECKING:
    from core.storage.backend import Backend

log = logging.getLogger(__name__)

FLUSH_DELAY = 0.25  # seconds an entry waits to be written with others
QUIET = 0.02  # seconds without a query that make a moment quiet
FLUSH_LATEST = 2.0  # seconds after which entries are written, quiet or not
FLUSH_MOST = 500  # entries waiting that are written at once, quiet or not


class LogWriter:
    """Retrieval log entries waiting to be written, and the task that writes them."""

    def __init__(self, backend: Backend) -> None:
        self._backend = backend
        self._rows: list[LogRow] = []
        self._failed = ThrottledWarning(log)
        self._flusher: asyncio.Task[None] | None = None
        self._in_flight = 0
        self._last_query = time.monotonic()

    @contextlib.contextmanager
    def query(self) -> Iterator[None]:
        """Around a query: no write of the log starts while one runs, if it can wait."""
        self._in_flight += 1
        try:
            yield
        finally:
            self._in_flight -= 1
            self._last_query = time.monotonic()

    def add(self, row: LogRow) -> None:
        """An entry to write soon; the caller does not wait for it."""
        self._rows.append(row)
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.create_task(self._flush_soon())

    async def flush(self) -> None:
        """Write every waiting entry now (reads of the log and close call it)."""
        flusher = self._flusher
        if flusher is not None and not flusher.done():
            await cancel_and_wait(flusher)
        await self._write()

    async def _flush_soon(self) -> None:
        # Waiting a moment makes a burst of queries one transaction, not one each: a commit
        # per query took a third of a session query's time on two cores.
        started = time.monotonic()
        await asyncio.sleep(FLUSH_DELAY)
        while len(self._rows) < FLUSH_MOST:
            now = time.monotonic()
            quiet_for = now - self._last_query
            if self._in_flight == 0 and quiet_for >= QUIET:
                break
            left = started + FLUSH_LATEST - now
            if left <= 0:
                break
            await asyncio.sleep(min(left, QUIET if self._in_flight else QUIET - quiet_for))
        await self._write()

    async def _write(self) -> None:
        rows, self._rows = self._rows, []
        if not rows:
            return
        try:
            await self._backend.append_logs(rows)
        except (OutOfNamespace, InvalidInput):
            # A database that enforces namespaces (row-level security) refused an entry
            # scoped outside this role's namespace, or one holds what the database cannot
            # store (NUL in PostgreSQL text): keep the others, drop only that one.
            for row in rows:
                try:
                    await self._backend.append_logs([row])
                except Exception as exc:  # as below: a diagnostic never fails a query
                    self._failed.warn("could not write a retrieval log entry: %s", exc)
        except Exception as exc:  # the log is a diagnostic: a failure never fails a query
            self._failed.warn("could not write %d retrieval log entries: %s", len(rows), exc)
