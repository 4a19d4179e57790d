"""The background embedding worker: turns the chunk backlog into vectors, in batches.

A chunk is stored without a vector (the FTS leg sees it at once) and marked ``pending``;
this worker embeds pending chunks in batches and saves each batch's vectors and ``done``
marks in one transaction, so a process killed mid-batch loses nothing: the next open finds
the same chunks still pending. Embedding a batch (in a thread) overlaps with saving the
previous one (on the writer lane). Failures are recorded per chunk and retried with
back-off until ``max_attempts``, after which the chunk is ``failed`` and stops the backlog
from draining no longer.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from core.embeddings.context import embed_with_context

if TYPE_CHECKING:
    from core.embeddings import Embedder
    from core.storage.sqlite_backend import SqliteBackend

log = logging.getLogger(__name__)

ProgressCallback = Callable[[int, int], None]  # (embedded so far, backlog left)


class EmbeddingWorker:
    """Embeds the backlog of one backend with one embedder, in the background."""

    def __init__(self, backend: SqliteBackend, embedder: Embedder, *, batch_size: int,
                 max_attempts: int, poll_interval: float = 2.0) -> None:
        self._backend = backend
        self._embedder = embedder
        self._batch_size = batch_size
        self._max_attempts = max_attempts
        self._poll_interval = poll_interval
        self._wake = asyncio.Event()
        self._idle = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._failures_in_a_row = 0
        self.embedded = 0
        self.last_error: str | None = None
        self.on_progress: ProgressCallback | None = None

    def start(self) -> None:
        """Start the worker task on the running loop."""
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="embedding-worker")

    def wake(self) -> None:
        """Tell the worker there is new work (a store just added chunks)."""
        self._idle.clear()
        self._wake.set()

    async def drain(self, timeout: float | None = None) -> None:
        """Wait until no chunk is pending (failed chunks do not hold it up)."""
        if self._task is None:
            return
        self.wake()
        waiter = asyncio.ensure_future(self._idle.wait())
        done, _ = await asyncio.wait({waiter, self._task}, timeout=timeout,
                                     return_when=asyncio.FIRST_COMPLETED)
        if waiter not in done:
            waiter.cancel()
            if self._task in done:
                self._task.result()  # re-raise what killed the worker
            raise TimeoutError(f"embedding backlog not drained within {timeout} s")

    async def stop(self) -> None:
        """Stop after the batch in hand is saved."""
        if self._task is None:
            return
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        self._task = None

    async def _run(self) -> None:
        cursor = 0
        saving: asyncio.Task[int] | None = None
        try:
            while True:
                self._wake.clear()
                batch = await self._backend.pending_chunks(self._batch_size, cursor)
                if not batch:
                    if saving is not None:
                        await saving
                        saving = None
                    if cursor:
                        cursor = 0  # wrap round for retried chunks and other writers' chunks
                        continue
                    if self._wake.is_set():
                        continue  # a store woke us while that read ran: it may have missed it
                    self._idle.set()
                    # asyncio.timeout, not wait_for: 3.11's wait_for can swallow the
                    # cancellation that stop() sends and hang shutdown.
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout(self._poll_interval):
                            await self._wake.wait()
                    continue
                cursor = batch[-1][3]
                try:
                    matrix = await asyncio.to_thread(
                        embed_with_context, self._embedder, [row[2] for row in batch],
                        [row[5] for row in batch])
                except Exception as exc:  # any backend failure is recorded, never fatal
                    if saving is not None:
                        await saving
                        saving = None
                    await self._failed([row[0] for row in batch], exc)
                    continue
                if saving is not None:
                    await saving
                rows = [(row[0], row[1], row[4]) for row in batch]
                saving = asyncio.create_task(
                    self._backend.save_vectors(rows, matrix, self._embedder.name))
                saving.add_done_callback(self._saved)
                self._failures_in_a_row = 0
        except asyncio.CancelledError:
            if saving is not None and not saving.done():
                with contextlib.suppress(Exception):
                    await saving
            raise

    def _saved(self, task: asyncio.Task[int]) -> None:
        if task.cancelled() or task.exception() is not None:
            return
        self.embedded += task.result()
        if self.on_progress is not None:
            self.on_progress(self.embedded, -1)

    async def _failed(self, chunk_ids: list[str], exc: Exception) -> None:
        self._failures_in_a_row += 1
        self.last_error = f"{type(exc).__name__}: {exc}"
        log.warning("embedding %d chunks failed: %s", len(chunk_ids), self.last_error)
        await self._backend.record_embedding_failure(chunk_ids, self.last_error,
                                                     self._max_attempts)
        # Back off so an endpoint that is down is not hammered; a success resets it.
        await asyncio.sleep(min(30.0, 0.05 * 2 ** self._failures_in_a_row))
