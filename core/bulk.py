"""The bulk ingest path: many messages per transaction, embedded before they are written.

A pipeline over batches: batch N is validated, chunked and embedded (the first in a thread of
this process, the next ones in a helper process, see :mod:`core.embeddings.process`) while
batch N-1 is written on the writer's lane, chunks and vectors in one transaction. Writes stay
in input order, because sequences are checked in order.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np

from core.clock import utc_now
from core.embeddings import embed_checked
from core.embeddings.context import blend_rows
from core.embeddings.process import EmbeddingProcess, worth_a_process
from core.prepare import prepare_batch, texts_to_embed
from core.storage.fts_rows import context_text, prefixed, session_prefix
from core.storage.messages import PreparedMessage
from core.types import BulkStoreResult, Rejected

if TYPE_CHECKING:
    from core.config import Config
    from core.embeddings.current_model import CurrentModel
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

        def embed_here(texts: list[str]) -> np.ndarray | None:
            try:
                return embed_checked(model.embedder, texts)
            except Exception as exc:  # the worker will retry these chunks and record errors
                log.warning("bulk embedding failed, leaving %d chunks to the worker: %s",
                            len(texts), exc)
                return None

        chunking = config.chunking
        count, max_chars = chunking.context_messages, chunking.context_chars
        # Per session, its latest messages so far as context parts: (text, vector or None,
        # its words glued to the session's prefix).
        tails: dict[str, list[tuple[str, np.ndarray | None, str]]] = {}

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
                matrix = await asyncio.to_thread(embed_here, texts)
            return matrix

        async def in_context(batch: list[tuple[int, PreparedMessage]], raw: np.ndarray | None,
                             ) -> tuple[list[tuple[int, PreparedMessage]], np.ndarray | None]:
            """Each message's context, and its chunks' vectors blended with it, in input order.

            ``raw`` holds the chunks' own vectors, then those of the first chunks cut at
            ``context_chars`` that were longer. Sessions met for the first time start from
            what the file holds. Contexts are known before writing, so chunks are stored
            with their final vectors and nothing is left to the worker.
            """
            if count <= 0:
                return batch, raw
            sessions = list(dict.fromkeys(p.session_id for _, p in batch))
            unseen = [sid for sid in sessions if sid not in tails]
            if unseen:
                found = await backend.session_tails(unseen, count)
                for sid in unseen:
                    prefix = session_prefix(sid)
                    tails[sid] = [(text[:max_chars], None, prefixed(prefix, text[:max_chars]))
                                  for text in found.get(sid, [])]
            if raw is not None and not await vectors_for_tails(sessions):
                raw = None
            out: list[tuple[int, PreparedMessage]] = []
            # With ``raw``, every part has its vector (vectors_for_tails saw to it).
            parts: list[list[np.ndarray]] = []
            extra = iter(raw[sum(len(p.chunks) for _, p in batch):] if raw is not None else ())
            row = 0
            for index, prepared in batch:
                tail = tails[prepared.session_id]
                # The context's prefixed words are its parts' in order (prefixed_context).
                out.append((index, prepared.with_context(
                    context_text([text for text, _, _ in tail], max_chars),
                    " ".join(words for text, _, words in tail if text and words))))
                parts += [[vector for _, vector, _ in tail if vector is not None]] * len(
                    prepared.chunks)
                if prepared.chunks:
                    first = prepared.chunks[0].text
                    vector = None
                    if raw is not None:
                        vector = next(extra) if len(first) > max_chars else raw[row]
                    words = prepared.part_words
                    if words is None:
                        words = prefixed(session_prefix(prepared.session_id), first[:max_chars])
                    tail.append((first[:max_chars], vector, words))
                    del tail[:-count]
                row += len(prepared.chunks)
            return out, None if raw is None else blend_rows(raw[:row], parts)

        async def vectors_for_tails(sessions: list[str]) -> bool:
            """Embed the context parts that have no vector yet (read from the file, or left
            by a batch whose embedding failed); False when embedding failed again."""
            missing = list(dict.fromkeys(text for sid in sessions
                                         for text, vector, _ in tails[sid] if vector is None))
            if not missing:
                return True
            # Never waits: a batch's own embedding has waited for the helper already, and the
            # first batch's (from an earlier import in the file) should not.
            vectors = await embed(missing, wait_for_helper=False)
            if vectors is None:
                return False
            made = dict(zip(missing, vectors, strict=True))
            for sid in sessions:
                tails[sid] = [(text, made[text] if vector is None else vector, words)
                              for text, vector, words in tails[sid]]
            return True

        async def stage(chunk_of_items: list[tuple[int, BulkItem]],
                        previous: asyncio.Task[None] | None,
                        turn: tuple[asyncio.Event | None, asyncio.Event]) -> None:
            nonlocal settled
            done, batch_time = None, utc_now()
            if self.process is not None and previous is not None:
                # The helper prepares and embeds the batch on its own core (None: it is not
                # running, so this process does both, as for the first batch).
                await self.process.started()
                done = await self.process.prepare(chunk_of_items, agent, batch_time)
            if done is None:
                batch, refused = await asyncio.to_thread(prepare_batch, config, chunk_of_items,
                                                         agent, batch_time)
                # The first batch is embedded here, so that writing starts while the helper
                # starts.
                matrix = await embed(texts_to_embed(batch, count, max_chars),
                                     wait_for_helper=previous is not None)
            else:
                batch, refused, matrix = done
            before, mine = turn
            try:
                if before is not None:
                    await before.wait()  # contexts follow input order across batches
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
        try:
            for index, item in enumerate(items):
                pending_items.append((index, item))
                if len(pending_items) >= batch_size:
                    launch()
                    if not importing:
                        # A second batch on its way means a real import: the full-text index
                        # is tuned for large transactions until it ends (one call costs two
                        # small writes, which a single batch does not pay).
                        importing = True
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
