"""The namespace full-text leg from the derived index, once it is built.

The index is built in the background on a connection of its own (seconds at 1M chunks);
until it is ready the leg stays on FTS5's SQL path, so no query waits for it. Once ready,
every query first brings it up to the file's last commit (:meth:`FullTextIndex.sync`:
writes of this process and of others alike), then ranks in memory and reads the chunk ids
of the top ``k`` only, all in one read transaction.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from core.storage.connection import select_in
from core.storage.derived.fulltext import FullTextIndex, snapshot

log = logging.getLogger(__name__)


class DerivedFullText:
    """A backend's derived full-text index and its background build."""

    def __init__(self) -> None:
        self.index = FullTextIndex()
        self.ready = False
        self.failure: str | None = None
        self._task: asyncio.Task[None] | None = None

    def start(self, run_aside: Callable[[Callable[[Any], None]], Awaitable[None]]) -> None:
        """Build in the background (once) with ``run_aside(fn)``, which runs ``fn(conn)``
        on a read connection that no query is waiting for."""
        if self._task is None and self.failure is None:
            self._task = asyncio.get_running_loop().create_task(self._build(run_aside))

    async def _build(self, run_aside: Callable[[Callable[[Any], None]],
                                              Awaitable[None]]) -> None:
        started = time.perf_counter()
        try:
            await run_aside(self.index.build)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the SQL path keeps answering; say why the index did not
            self.failure = f"{type(exc).__name__}: {exc}"
            log.warning("the derived full-text index could not be built (%s); namespace"
                        " full-text queries stay on FTS5", self.failure)
            return
        self.ready = True
        log.info("derived full-text index: %d rows in %.1f s", self.index.row_count,
                 time.perf_counter() - started)

    async def wait_ready(self) -> bool:
        """Wait for a started build; True when the index is ready."""
        if self._task is not None:
            await asyncio.shield(self._task)
        return self.ready

    async def close(self) -> None:
        """Stop a build in progress (its connection closes when the work returns)."""
        if self._task is not None and not self._task.done():
            self.index.stop()
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    def rows(self, conn: Any, namespace: str, terms: Sequence[str], k: int,
             context_weight: float) -> list[tuple[str, float]] | None:
        """The namespace's top ``k`` (chunk_id, -bm25), or None when the index cannot answer
        (not built yet, or a word that is no token)."""
        if not self.ready:
            return None
        with snapshot(conn):
            self.index.sync(conn)
            top = self.index.search(namespace, terms, k, context_weight, conn)
            if top is None:
                return None
            ids = dict(select_in(conn, "SELECT fts_rowid, chunk_id FROM chunks"
                                       " WHERE fts_rowid IN", [rowid for rowid, _ in top]))
        return [(ids[rowid], score) for rowid, score in top if rowid in ids]
