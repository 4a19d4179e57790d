"""The background embedding worker: turns the chunk backlog into vectors, in batches.

A chunk is stored without a vector (the FTS leg sees it at once) and marked ``pending``;
this worker embeds pending chunks in batches and saves each batch's vectors and ``done``
marks in one transaction, so a process killed mid-batch loses nothing: the next open finds
the same chunks still pending. Embedding a batch (in a thread) overlaps with saving the
previous one (on the writer lane). Failures are recorded per chunk and retried with
back-off until ``max_attempts``, after which the chunk is ``failed`` and stops the backlog
from draining no longer. A file that refuses the save (disk full, file gone read-only)
costs the chunks nothing: they stay pending, the worker says why in ``storage_error``,
backs off, and saves them once the file takes writes again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from core.embeddings.context import embed_with_context
from core.errors import EmbeddingError, ReadOnlyDatabase, StorageFull, WorkbenchError
from core.tasks import cancel_and_wait, mark_as_upkeep

if TYPE_CHECKING:
    import numpy as np

    from core.embeddings import Embedder
    from core.storage.backend import Backend

log = logging.getLogger(__name__)

ProgressCallback = Callable[[int, int], None]  # (embedded so far, backlog left)

GATHER_SECONDS = 0.1
"""How long the worker, woken from idle, waits for stores to pause before it embeds: a
store a turn woke it for every turn, and each wake was a backlog read, an embedding call
and a vector write beside the agent's next turn (its p50 doubled in ``workbench bench
frameworks``). Gathered, a burst of stores is embedded in a batch, in the pause after it."""

GATHER_AT_MOST_SECONDS = 1.0
"""How long stores that never pause hold the worker back at most."""


class EmbeddingWorker:
    """Embeds the backlog of one backend with one embedder, in the background."""

    def __init__(self, backend: Backend, embedder: Embedder, *, batch_size: int,
                 max_attempts: int, poll_interval: float = 2.0) -> None:
        self._backend = backend
        self._embedder = embedder
        self._batch_size = batch_size
        self._max_attempts = max_attempts
        self._poll_interval = poll_interval
        self._wake = asyncio.Event()
        self._woken_at = 0.0
        self._hurry = asyncio.Event()  # a drain is waiting: no gathering
        self._idle = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._failures_in_a_row = 0
        self.embedded = 0
        self.last_error: str | None = None
        self.storage_error: WorkbenchError | None = None
        """Why the file refused the last save (``StorageFull``, ``ReadOnlyDatabase``, or an
        ``EmbeddingError`` carrying the driver's error); None once a save succeeds."""
        self.on_progress: ProgressCallback | None = None
        self._refused = asyncio.Event()

    def start(self) -> None:
        """Start the worker task on the running loop."""
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="embedding-worker")

    def wake(self, *, hurry: bool = False) -> None:
        """Tell the worker there is new work (a store just added chunks); it starts once
        stores pause (:data:`GATHER_SECONDS`), at once with ``hurry``."""
        self._idle.clear()
        self._woken_at = time.monotonic()
        if hurry:
            self._hurry.set()
        self._wake.set()

    async def drain(self, timeout: float | None = None) -> None:
        """Wait until no chunk is pending (failed chunks do not hold it up); raises what
        the file refused a save with meanwhile when waiting cannot help (``StorageFull`` on
        a full disk, ``ReadOnlyDatabase``). A passing refusal ("database is locked" past
        the busy timeout) is retried and waited out."""
        if self._task is None:
            return
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        self.wake(hurry=True)
        while True:
            self._refused.clear()
            waiter = asyncio.ensure_future(self._idle.wait())
            refused = asyncio.ensure_future(self._refused.wait())
            left = None if deadline is None else max(0.0, deadline - loop.time())
            done, _ = await asyncio.wait({waiter, refused, self._task}, timeout=left,
                                         return_when=asyncio.FIRST_COMPLETED)
            refused.cancel()
            if waiter in done:
                return
            waiter.cancel()
            if self._task in done:
                self._task.result()  # re-raise what killed the worker
            if refused in done:
                if isinstance(self.storage_error, StorageFull | ReadOnlyDatabase):
                    raise self.storage_error
                continue
            raise TimeoutError(f"embedding backlog not drained within {timeout} s")

    async def stop(self) -> None:
        """Stop after the batch in hand is saved."""
        if self._task is None:
            return
        (error,) = await cancel_and_wait(self._task)
        if isinstance(error, Exception):  # it died earlier: said here, and close goes on
            log.error("the embedding worker had stopped with an error", exc_info=error)
        self._task = None

    async def _run(self) -> None:
        mark_as_upkeep()
        cursor = 0
        saving: asyncio.Task[bool] | None = None
        try:
            while True:
                self._wake.clear()
                try:
                    batch = await self._backend.pending_chunks(self._batch_size, cursor)
                except Exception as exc:  # e.g. "database is locked" past busy_timeout
                    self._refuse(exc if isinstance(exc, WorkbenchError) else EmbeddingError(
                        f"backlog not read ({type(exc).__name__}: {exc}); the worker retries"))
                    await self._back_off()
                    continue
                if not batch:
                    if saving is not None:
                        refused = not await saving
                        saving = None
                        if refused:
                            cursor = 0
                            await self._back_off()
                            continue
                    if cursor:
                        cursor = 0  # wrap round for retried chunks and other writers' chunks
                        continue
                    if self._wake.is_set():
                        continue  # a store woke us while that read ran: it may have missed it
                    self.storage_error = None  # nothing is pending: nothing is paused
                    self._hurry.clear()
                    self._idle.set()
                    # asyncio.timeout, not wait_for: 3.11's wait_for can swallow the
                    # cancellation that stop() sends and hang shutdown.
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout(self._poll_interval):
                            await self._wake.wait()
                    if self._wake.is_set():
                        await self._gather()
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
                if saving is not None and not await saving:
                    saving, cursor = None, 0  # this batch and the refused one: again later
                    await self._back_off()
                    continue
                rows = [(row[0], row[1], row[4]) for row in batch]
                saving = asyncio.create_task(self._save(rows, matrix))
                if self.storage_error is None:  # a refused save keeps its back-off growing
                    self._failures_in_a_row = 0
        except asyncio.CancelledError:
            if saving is not None and not saving.done():
                with contextlib.suppress(Exception):
                    await saving
            raise

    async def _gather(self) -> None:
        """Wait until stores pause for :data:`GATHER_SECONDS` (at most
        :data:`GATHER_AT_MOST_SECONDS`), or a drain hurries the worker."""
        at_most = time.monotonic() + GATHER_AT_MOST_SECONDS
        while not self._hurry.is_set():
            left = min(self._woken_at + GATHER_SECONDS, at_most) - time.monotonic()
            if left <= 0:
                return
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(left):
                    await self._hurry.wait()

    async def _save(self, rows: list[tuple[str, str, str]], matrix: np.ndarray) -> bool:
        """Save one batch; False when the file refused it (the chunks stay pending).

        Any failure is a refusal, never the end of the worker: a worker that died would
        leave the backlog growing with nobody saying why.
        """
        try:
            saved = await self._backend.save_vectors(rows, matrix, self._embedder.name)
        except WorkbenchError as exc:
            self._refuse(exc)
            return False
        except Exception as exc:  # the driver's own error: kept, shown, retried
            self._refuse(EmbeddingError(
                f"vectors not saved ({type(exc).__name__}: {exc}); the worker retries"))
            return False
        self.storage_error = None
        self.embedded += saved
        if self.on_progress is not None:
            self.on_progress(self.embedded, -1)
        return True

    def _refuse(self, exc: WorkbenchError) -> None:
        if self.storage_error is None:  # once per outage, not once per retry
            log.warning("embedding worker: vectors not saved, will retry: %s", exc)
        self.storage_error = exc
        self._refused.set()

    async def _back_off(self) -> None:
        """Wait before trying again (doubling to 30 s), or until a store or drain wakes us."""
        self._failures_in_a_row += 1
        # The wake is not cleared here: a drain that woke us just before must not be lost.
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(min(30.0, 0.05 * 2 ** self._failures_in_a_row)):
                await self._wake.wait()

    async def _failed(self, chunk_ids: list[str], exc: Exception) -> None:
        self._failures_in_a_row += 1
        self.last_error = f"{type(exc).__name__}: {exc}"
        log.warning("embedding %d chunks failed: %s", len(chunk_ids), self.last_error)
        try:
            await self._backend.record_embedding_failure(chunk_ids, self.last_error,
                                                         self._max_attempts)
        except WorkbenchError as refused:
            self._refuse(refused)
        except Exception as exc:  # the driver's own error ("database is locked"): retried
            self._refuse(EmbeddingError(f"failure not recorded ({type(exc).__name__}: {exc})"))
        # Back off so an endpoint that is down is not hammered; a success resets it.
        await asyncio.sleep(min(30.0, 0.05 * 2 ** self._failures_in_a_row))
