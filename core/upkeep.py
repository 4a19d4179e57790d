"""Upkeep while the memory is quiet: the write-ahead log copied in, the full-text index's
segments merged.

Every commit appends to SQLite's write-ahead log, and copying the log into the file (a
checkpoint) is work no write has to wait for either: :class:`Upkeep` runs it, on a connection
beside the writer's, once this engine has written nothing for :data:`LOG_QUIET_SECONDS` (an
agent's pause for its model between turns is enough), or after :data:`LOG_BUSY_SECONDS` of
writes that do not pause (an import), instead of the commit that crosses SQLite's threshold
(:data:`core.storage.sqlite.connection.WAL_AUTOCHECKPOINT_PAGES`).

Writes leave SQLite's full-text index in many segments, and every full-text query reads
each of its terms in each segment (see :mod:`core.storage.sqlite.fts_segments` for the figures).
Merging them is work no write has to wait for: :class:`Upkeep` runs it in small steps once
this engine has written nothing for :data:`QUIET_SECONDS`, starting with the file as it was
opened, and goes back to waiting when a write comes in the middle. Each step is one short
write transaction on the writer's lane, so a store that arrives meanwhile waits one step
at most. Another process's writes are tidied by that process's engine, or by this one
after its own next write.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from core.storage.backend import Backend

log = logging.getLogger(__name__)

QUIET_SECONDS = 2.0
"""How long after this engine's last write (or its opening) the merging starts."""

LOG_QUIET_SECONDS = 0.25
"""How long after this engine's last write the write-ahead log is copied in."""

LOG_BUSY_SECONDS = 0.5
"""How long writes that never pause go on before the log is copied in anyway: an import
writes some 6,000 pages a second, and a commit that finds 8,192 in the log copies them itself,
on the writer's thread."""


class Upkeep:
    """Copies the log in and merges the full-text index when the memory has been quiet;
    one task per engine."""

    def __init__(self, backend: Backend) -> None:
        self._backend = backend
        self._due: asyncio.Event | None = None
        self._last_write = time.monotonic()
        self._task: asyncio.Task[None] | None = None
        self.steps = 0
        """Merge steps that did work since the engine opened."""
        self.log_copies = 0
        """Times the write-ahead log was copied in since the engine opened."""

    def start(self) -> None:
        """Start waiting for a quiet moment (nothing on a read-only memory)."""
        if self._task is not None or self._backend.read_only:
            return
        self._due = asyncio.Event()
        self._due.set()  # the file as opened may hold unmerged segments
        self._task = asyncio.create_task(self._run(), name="index upkeep")

    def wrote(self) -> None:
        """A write happened: merging waits for the next quiet moment, then runs again."""
        self._last_write = time.monotonic()
        if self._due is not None:
            self._due.set()

    async def merge_now(self) -> int:
        """Merge until one segment is left, without waiting for quiet; the steps that did
        work (for benchmarks, which time queries on a tidy index)."""
        steps = 0
        while await self._backend.merge_full_text():
            steps += 1
        self.steps += steps
        return steps

    async def stop(self) -> None:
        """Stop the task; a step in hand finishes on the writer's lane first."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _quiet_for(self, seconds: float, at_most: float | None = None) -> None:
        """Wait until nothing was written for ``seconds`` (or ``at_most`` has passed)."""
        give_up = time.monotonic() + at_most if at_most is not None else float("inf")
        while (left := min(self._last_write + seconds, give_up) - time.monotonic()) > 0:
            await asyncio.sleep(left)

    async def _run(self) -> None:
        assert self._due is not None
        while True:
            await self._due.wait()
            self._due.clear()
            await self._quiet_for(LOG_QUIET_SECONDS, at_most=LOG_BUSY_SECONDS)
            try:
                await self._backend.checkpoint_log()
                self.log_copies += 1
            except Exception as exc:  # a full disk, a lock held past the busy timeout: later
                log.warning("copying the write-ahead log in stopped for now: %s", exc)
            if self._due.is_set():
                continue  # written meanwhile: its log first
            await self._quiet_for(QUIET_SECONDS)
            if self._due.is_set():
                continue
            try:
                merged = 0
                while not self._due.is_set() and await self._backend.merge_full_text():
                    merged += 1
                self.steps += merged
                if merged:
                    await self._backend.checkpoint_log()  # the merge's own writes
                    self.log_copies += 1
            except Exception as exc:  # a lock held past the busy timeout, a full disk: later
                log.warning("merging the full-text index stopped for now: %s", exc)
