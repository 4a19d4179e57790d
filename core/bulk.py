"""The bulk ingest path: many messages per transaction, embedded before they are written.

A pipeline over batches: batch N is validated, chunked and embedded (the first in a thread of
this process, the next ones in a helper process, see :mod:`core.embeddings.process`) while
batch N-1 is written on the writer's lane, chunks and vectors in one transaction. Writes stay
in input order, because sequences are checked in order.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np

from core.clock import utc_now
from core.collector import collector_spared
from core.embeddings import embed_or_leave
from core.embeddings.import_contexts import ImportContexts, Part
from core.embeddings.process import EmbeddingProcess, worth_a_process
from core.prepare import prepare_batch, texts_to_embed
from core.storage.messages import PreparedMessage
from core.types import BulkStoreResult, Rejected

if TYPE_CHECKING:
    from core.config import Config
    from core.embeddings.current_model import CurrentModel
    from core.embeddings.process import Prepared
    from core.storage.backend import Backend
    from core.working_memory import WorkingMemory

log = logging.getLogger(__name__)

MessageTime = str | datetime | None
"""A message's own time as callers give it: ISO-8601 text with a UTC offset, an aware
datetime, or None for the time it is stored (see :func:`core.inputs.message_time`)."""

# ``(session_id, sequence or None, payload)``, or with the message's ``created_at`` after it.
BulkItem = (tuple[str, int | None, dict[str, Any]]
            | tuple[str, int | None, dict[str, Any], MessageTime])


# Messages per transaction by default: a call of a few thousand still makes several
# batches, so its writes overlap embedding and the helper process starts.
BATCH_MESSAGES = 1000
# Messages from which an import has its derived indexes kept in step as it writes (by a helper
# process, see Backend.bulk_writes): for fewer, building them after it takes under a second.
FOLLOW_FROM_MESSAGES = 10_000
# Messages from which an import's transactions hold GROWN_BATCHES times as many: past
# ~100k chunks the chunk-id and vec0 id indexes take random keys in more pages than the cache
# holds, and each commit rewrites thousands of them whatever its size.
GROW_FROM_MESSAGES = 100_000
GROWN_BATCHES = 4
# Messages per transaction an import asks for, handing over several times as many a call:
# 4,000 wrote 30k chunks in 10.7 s of writes where 1,000 took 16.7 (automerge off both).
IMPORT_BATCH = 4000


class BulkIngest:
    """The engine's bulk path, and the embedding helper process it starts when it pays."""

    def __init__(self, backend: Backend, config: Config, model: CurrentModel,
                 working_memory: WorkingMemory, wake: Callable[[], None]) -> None:
        self._backend = backend
        self._config = config
        self._model = model
        self._working_memory = working_memory
        self._wake = wake
        self.process: EmbeddingProcess | None = None

    async def close(self) -> None:
        """Stop the helper process, if one was started."""
        if self.process is not None:
            await self.process.close()

    async def store_many(self, items: Iterable[BulkItem], *, agent: str | None = None,
                         batch_size: int = BATCH_MESSAGES,
                         progress: Callable[[int], None] | None = None) -> BulkStoreResult:
        """The importers' bulk path: many messages per transaction, refusals reported.

        Each item is ``(session_id, sequence or None, payload)`` or, to keep a message's
        original time, ``(session_id, sequence or None, payload, created_at)``; a
        ``created_at`` of None, or none given, is the time of the batch. It is read by
        :func:`core.inputs.message_time` (ISO-8601 with ``Z`` or an offset, or an aware
        datetime; a time without a zone is refused) and stored as the engine writes times,
        in UTC. A message that is invalid, out of sequence or has an unreadable or zoneless
        ``created_at`` is listed in ``rejected`` with its reason; the others are stored.
        It runs as a pipeline: while one batch is prepared and embedded the one before it is
        written, chunks and vectors together, so nothing waits in the backlog afterwards.
        From the second batch on, embedding runs in a helper process (see
        :mod:`core.embeddings.process`) so that it has a core of its own. If embedding a batch
        fails, its chunks are stored unembedded and the worker retries them.

        An import hands over everything in one call (``items`` may be a generator) and
        follows it through ``progress``, called with how many items are settled (written
        or refused, in input order) after each batch: one pipeline then runs from the first
        batch to the last, where a call per few batches started it, and the helper's model,
        again each time (at 100k messages in calls of 10k: 44.7 s of store_many on a loaded
        machine, a third of it batches waiting for the pipeline to fill and empty).
        """
        model, backend, config = self._model, self._backend, self._config
        stored = inserted = deduplicated = settled = 0
        rejected: list[Rejected] = []
        embed_inline = model.worker is not None and model.vectors_usable

        chunking = config.chunking
        count, max_chars = chunking.context_messages, chunking.context_chars
        # The sessions' latest messages as context parts: here for the batches this process
        # prepares; a session's move to the helper once it prepares one of its messages.
        contexts = ImportContexts(count, max_chars)
        helper_holds: set[str] = set()
        import_key = uuid.uuid4().hex

        async def embed(texts: list[str], *, wait_for_helper: bool = True) -> np.ndarray | None:
            if not (embed_inline and texts):
                return None
            matrix = None
            if self.process is not None:
                if wait_for_helper:
                    # A batch embedded here while the helper starts costs this process the
                    # model's work (and the tokenizer's threads), on the core the writes need;
                    # the helper is ready within about a second, and then has a core of its own.
                    await self.process.started()
                matrix = await self.process.embed(texts)
            if matrix is None:
                matrix = await asyncio.to_thread(embed_or_leave, model.embedder, texts)
            return matrix

        async def in_context(batch: list[tuple[int, PreparedMessage]], raw: np.ndarray | None,
                             ) -> tuple[list[tuple[int, PreparedMessage]], np.ndarray | None]:
            """Each message's context, and its chunks' vectors blended with it, in input order
            (:meth:`ImportContexts.apply`). Sessions met for the first time start from what
            the file holds. Contexts are known before writing, so chunks are stored with
            their final vectors and nothing is left to the worker.
            """
            if count <= 0:
                return batch, raw
            sessions = list(dict.fromkeys(p.session_id for _, p in batch))
            unseen = contexts.unseen(sessions)
            if unseen:
                contexts.from_file(unseen, await backend.session_tails(unseen, count))
            if raw is not None and not await vectors_for_tails(sessions):
                raw = None
            return contexts.apply(batch, raw)

        async def vectors_for_tails(sessions: list[str]) -> bool:
            """Embed the context parts that have no vector yet (read from the file, or left
            by a batch whose embedding failed); False when embedding failed again."""
            missing = contexts.without_vectors(sessions)
            if not missing:
                return True
            # Never waits: a batch's own embedding has waited for the helper already, and the
            # first batch's (from an earlier import in the file) should not.
            vectors = await embed(missing, wait_for_helper=False)
            if vectors is None:
                return False
            contexts.give_vectors(sessions, missing, vectors)
            return True

        async def hand_over(chunk_of_items: list[tuple[int, BulkItem]],
                            ) -> dict[str, list[Part]]:
            """The context parts of the batch's sessions the helper does not hold yet: this
            process's, or what the file holds; the helper holds them from now on."""
            if count <= 0:
                return {}
            new = [sid for sid in dict.fromkeys(item[0] for _, item in chunk_of_items
                                                if isinstance(item[0], str))
                   if sid not in helper_holds]
            unseen = contexts.unseen(new)
            if unseen:
                contexts.from_file(unseen, await backend.session_tails(unseen, count))
            helper_holds.update(new)
            return contexts.hand_over(new)

        async def prepare_here(chunk_of_items: list[tuple[int, BulkItem]], batch_time: str,
                               previous: asyncio.Task[None] | None) -> Prepared:
            """A batch prepared and embedded by this process (not yet in context)."""
            batch, refused = await asyncio.to_thread(prepare_batch, config, chunk_of_items,
                                                     agent, batch_time)
            # The first batch is embedded here, so that writing starts while the helper starts.
            matrix = await embed(texts_to_embed(batch, count, max_chars),
                                 wait_for_helper=previous is not None)
            return batch, refused, matrix

        async def stage(chunk_of_items: list[tuple[int, BulkItem]],
                        previous: asyncio.Task[None] | None,
                        turn: tuple[asyncio.Event | None, asyncio.Event]) -> None:
            nonlocal settled
            batch_time = utc_now()
            helper = self.process if previous is not None else None
            done = prepared_here = None
            if helper is None or not helper.usable:
                prepared_here = await prepare_here(chunk_of_items, batch_time, previous)
            before, mine = turn
            try:
                if before is not None:
                    await before.wait()  # contexts follow input order across batches
                if prepared_here is None and helper is not None:
                    # The helper prepares, embeds and puts the batch in context on its own
                    # core (None: it is not running, or broke: this process does it).
                    await helper.started()
                    if helper.running:
                        done = await helper.prepare(chunk_of_items, agent, batch_time,
                                                    import_key, await hand_over(chunk_of_items))
                    if done is None and helper_holds:
                        # It broke holding sessions' parts: they are read from the file
                        # again, once it holds every batch before this one.
                        helper_holds.clear()
                        if previous is not None:
                            await previous
                if done is not None:
                    batch, refused, matrix = done
                else:
                    batch, refused, matrix = prepared_here or await prepare_here(
                        chunk_of_items, batch_time, previous)
                    batch, matrix = await in_context(batch, matrix)
            finally:
                mine.set()
            rejected.extend(refused)
            if previous is not None:
                await previous  # writes stay in input order: sequences are checked in order
            if batch:
                await write(batch, matrix)
            settled += len(chunk_of_items)
            if progress is not None:
                progress(settled)

        async def write(batch: list[tuple[int, PreparedMessage]],
                        matrix: np.ndarray | None) -> None:
            nonlocal stored, inserted, deduplicated
            outcomes = await backend.write_messages(
                [p for _, p in batch], all_or_nothing=False, vectors=matrix,
                vector_model=model.embedder.name)
            for (index, prepared), outcome in zip(batch, outcomes, strict=True):
                if outcome.error is not None:
                    rejected.append(Rejected(index, prepared.session_id, prepared.sequence,
                                             outcome.error))
                    continue
                stored += 1
                inserted += outcome.inserted
                deduplicated += outcome.deduplicated
                self._working_memory.drop(prepared.session_id)
            self._wake()

        # A pipeline: batch N is prepared and embedded in a thread while batch N-1 is written
        # on the writer's thread; at most two batches are in flight.
        in_flight: list[asyncio.Task[None]] = []
        pending_items: list[tuple[int, BulkItem]] = []
        last_turn: asyncio.Event | None = None

        def launch() -> None:
            nonlocal pending_items, last_turn
            previous = in_flight[-1] if in_flight else None
            if previous is not None and embed_inline and self.process is None and \
                    worth_a_process(config.embedding):
                # A second batch means a real import: give the model a core of its own.
                self.process = EmbeddingProcess(
                    config.embedding, model.embedder.name, model.embedder.dimension,
                    prepare_with=config)
                self.process.start()
            turn = asyncio.Event()
            in_flight.append(asyncio.create_task(stage(pending_items, previous,
                                                       (last_turn, turn))))
            last_turn = turn
            pending_items = []

        importing = large = False
        # Closed last, after the tasks in flight, even if waiting for them is cancelled.
        with contextlib.ExitStack() as spared:
            try:
                for index, item in enumerate(items):
                    pending_items.append((index, item))
                    if len(pending_items) >= (batch_size if index < GROW_FROM_MESSAGES
                                              else batch_size * GROWN_BATCHES):
                        launch()
                        if not importing:
                            # A second batch on its way means a real import: the full-text index
                            # is tuned for large transactions until it ends (one call costs two
                            # small writes, which a single batch does not pay).
                            importing = True
                            # Its batches would set off the collector's full passes over the
                            # whole process, holding the GIL the writes need (core.collector).
                            spared.enter_context(collector_spared())
                            await backend.bulk_writes(True)
                        if not large and index + 1 >= FOLLOW_FROM_MESSAGES:
                            large = True
                            await backend.bulk_writes(True, large=True)
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
                if importing:
                    try:
                        await backend.bulk_writes(False)
                    except Exception as exc:  # never hides the import's own error; see bulk_writes
                        log.warning("could not set the full-text index back after an import "
                                    "(the next import does): %s", exc)
        rejected.sort(key=lambda r: r.index)
        return BulkStoreResult(stored, inserted, deduplicated, rejected)
