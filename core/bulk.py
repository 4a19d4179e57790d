"""The bulk ingest path: many messages per transaction, embedded before they are written.

A pipeline over batches: batch N is validated and chunked in a thread and embedded (in a
helper process from the second batch on, see :mod:`core.embed_process`) while batch N-1 is
written on the writer's lane, chunks and vectors in one transaction. Writes stay in input
order, because sequences are checked in order.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

from core.clock import utc_now
from core.embed_process import EmbeddingProcess, worth_a_process
from core.embeddings import embed_checked
from core.errors import InvalidInput
from core.storage.events import PreparedMessage
from core.types import BulkStoreResult, Rejected

if TYPE_CHECKING:
    from core.engine import Engine

log = logging.getLogger(__name__)


class BulkIngest:
    """The engine's bulk path, and the embedding helper process it starts when it pays."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self.process: EmbeddingProcess | None = None

    async def close(self) -> None:
        """Stop the helper process, if one was started."""
        if self.process is not None:
            await self.process.close()

    async def store_many(self, items: Iterable[tuple[str, int | None, dict[str, Any]]], *,
                         agent: str | None = None, batch_size: int = 1000) -> BulkStoreResult:
        """The importers' bulk path: many messages per transaction, refusals reported.

        Each item is ``(session_id, sequence or None, payload)``. A message that is invalid
        or out of sequence is listed in ``rejected`` with its reason; the others are stored.
        It runs as a pipeline: while one batch is prepared and embedded the one before it is
        written, chunks and vectors together, so nothing waits in the backlog afterwards.
        From the second batch on, embedding runs in a helper process (see
        :mod:`core.embed_process`) so that it has a core of its own. If embedding a batch
        fails, its chunks are stored unembedded and the worker retries them.
        """
        engine = self._engine
        stored = inserted = deduplicated = 0
        rejected: list[Rejected] = []
        embed_inline = engine.worker is not None and engine.vectors_usable

        def prepare(chunk_of_items: list[tuple[int, tuple[str, int | None, dict[str, Any]]]],
                    ) -> tuple[list[tuple[int, PreparedMessage]], list[Rejected]]:
            """Validate and chunk one batch; runs in a worker thread."""
            created_at = utc_now()
            batch: list[tuple[int, PreparedMessage]] = []
            refused: list[Rejected] = []
            for index, (session_id, sequence, payload) in chunk_of_items:
                try:
                    batch.append((index, engine.prepare_message(
                        session_id, sequence, payload, agent, created_at)))
                except InvalidInput as exc:
                    refused.append(Rejected(index, str(session_id),
                                            sequence if isinstance(sequence, int) else None,
                                            str(exc)))
            return batch, refused

        def embed_here(texts: list[str]) -> np.ndarray | None:
            try:
                return embed_checked(engine.embedder, texts)
            except Exception as exc:  # the worker will retry these chunks and record errors
                log.warning("bulk embedding failed, leaving %d chunks to the worker: %s",
                            len(texts), exc)
                return None

        async def stage(chunk_of_items: list[tuple[int, tuple[str, int | None, dict[str, Any]]]],
                        previous: asyncio.Task[None] | None) -> None:
            nonlocal stored, inserted, deduplicated
            batch, refused = await asyncio.to_thread(prepare, chunk_of_items)
            texts = [chunk.text for _, p in batch for chunk in p.chunks]
            matrix = None
            if embed_inline and texts:
                if self.process is not None:
                    matrix = await self.process.embed(texts)
                if matrix is None:
                    matrix = await asyncio.to_thread(embed_here, texts)
            rejected.extend(refused)
            if previous is not None:
                await previous  # writes stay in input order: sequences are checked in order
            if not batch:
                return
            outcomes = await engine.backend.write_messages(
                [p for _, p in batch], all_or_nothing=False, vectors=matrix,
                vector_model=engine.embedder.name)
            for (index, prepared), outcome in zip(batch, outcomes, strict=True):
                if outcome.error is not None:
                    rejected.append(Rejected(index, prepared.session_id, prepared.sequence,
                                             outcome.error))
                    continue
                stored += 1
                inserted += outcome.inserted
                deduplicated += outcome.deduplicated
                engine.working_memory.drop(prepared.session_id)
            if engine.worker is not None:
                engine.worker.wake()

        # A pipeline: batch N is prepared and embedded in a thread while batch N-1 is written
        # on the writer's thread; at most two batches are in flight.
        in_flight: list[asyncio.Task[None]] = []
        pending_items: list[tuple[int, tuple[str, int | None, dict[str, Any]]]] = []

        def launch() -> None:
            nonlocal pending_items
            previous = in_flight[-1] if in_flight else None
            if previous is not None and embed_inline and self.process is None and \
                    worth_a_process(engine.config.embedding):
                # A second batch means a real import: give the model a core of its own.
                self.process = EmbeddingProcess(
                    engine.config.embedding, engine.embedder.name, engine.embedder.dimension)
                self.process.start()
            in_flight.append(asyncio.create_task(stage(pending_items, previous)))
            pending_items = []

        try:
            for index, item in enumerate(items):
                pending_items.append((index, item))
                if len(pending_items) >= batch_size:
                    launch()
                    if len(in_flight) > 2:
                        await in_flight.pop(0)
            if pending_items:
                launch()
            for task in in_flight:
                await task
        finally:
            unfinished = [task for task in in_flight if not task.done()]
            if unfinished:
                await asyncio.wait(unfinished)
        rejected.sort(key=lambda r: r.index)
        return BulkStoreResult(stored, inserted, deduplicated, rejected)
