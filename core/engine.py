"""The Engine: the one object every front end (app, CLI, MCP server, an agent) talks to.

It opens the storage backend, composes the services over it and delegates to them, so this
file reads as a table of contents. Each service is given what it uses (the backend, the
current model, the working memory, a config section, the services it calls) and none holds
the Engine:

- :mod:`core.embeddings.current_model` and :mod:`core.embeddings.loading`: the model,
  loaded now or in the background, its embedding worker, reindexing
- :mod:`core.conversations`: store, append, recall, forget (oxydra's ``Memory``)
- :mod:`core.bulk`: the importers' bulk path
- :mod:`core.retrieval.service`: hybrid queries, the retrieval log, ``get_context``
- :mod:`core.notes.service`, :mod:`core.notes.facts`: notes and facts, whose operations
  the Engine inherits from :class:`core.notes.operations.NoteOperations`
- :mod:`core.scratchpad`: a session's scratchpad
- :mod:`core.summary.service`, :mod:`core.summary.compaction`: summaries, archives
- :mod:`core.schedules.store`: schedules (``engine.schedules``)
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from core import sessions_export
from core.bulk import BATCH_MESSAGES, BulkIngest, BulkItem, MessageTime
from core.config import Config, load_config
from core.conversations import Conversations
from core.embeddings import Embedder, LoadedEmbedder, LoadingEmbedder
from core.embeddings.current_model import CurrentModel
from core.embeddings.loading import ModelLoader, needs_model
from core.embeddings.worker import EmbeddingWorker
from core.locations import Location, parse_location
from core.notes.facts import Facts
from core.notes.operations import NoteOperations
from core.notes.service import Notes
from core.opening import Opening
from core.retrieval.search import SearchResult
from core.retrieval.service import Retrieval
from core.schedules.store import Schedules
from core.scratchpad import Scratchpad
from core.storage.opening import configured_location, open_backend
from core.summary.compaction import Compactor, Progress
from core.summary.service import Summaries
from core.tokens import TokenCounter
from core.types import (
    Archive,
    BulkStoreResult,
    CompactionResult,
    ConsolidationReport,
    ContextResult,
    EmbeddingStatus,
    HybridQueryResult,
    MemoryRecord,
    Pulse,
    RestoreResult,
    ScratchpadState,
    SessionExportResult,
    SessionInfo,
    StoreResult,
    SummaryOutcome,
    SummaryState,
)
from core.upkeep import Upkeep
from core.working_memory import WorkingMemory

if TYPE_CHECKING:
    from core.storage.backend import Backend

ConfigSource = str | os.PathLike[str] | dict[str, Any] | Config | None


class Engine(NoteOperations):
    """Durable agent memory over one SQLite file: store, recall, forget, query, restore."""

    def __init__(self, backend: Backend, config: Config, loaded: LoadedEmbedder) -> None:
        self.config = config
        self.backend = backend
        self.location = backend.location
        self.warnings: list[str] = list(backend.warnings)
        self.model = CurrentModel(loaded, self.warnings)
        self._loader = ModelLoader(backend, config.embedding, self.model)
        self.upkeep = Upkeep(backend)
        short = config.short_term

        def wake() -> None:  # after every write: the embedding worker, the index upkeep
            self.model.wake()
            self.upkeep.wrote()

        self.working_memory = WorkingMemory(
            max_history_turns=short.max_history_turns, session_ttl=short.session_ttl,
            max_sessions=short.max_sessions)
        self.summaries = Summaries(backend, config.summary, self.model)
        self.conversations = Conversations(backend, config, self.working_memory, wake,
                                           self.summaries)
        self.bulk = BulkIngest(backend, config, self.model, self.working_memory, wake)
        self.retrieval = Retrieval(backend, config, self.model, self.conversations)
        self.notes = Notes(backend, config, self.retrieval, self.working_memory, wake)
        self.facts = Facts(backend, self.notes)
        self.scratchpad = Scratchpad(backend, config.scratchpad, config.agent)
        self.compactor = Compactor(
            backend, config.summary, config.consolidation, summaries=self.summaries,
            notes=self.notes, model=self.model, working_memory=self.working_memory, wake=wake)
        self.schedules = Schedules(backend, config.scheduler)
        self._closed = False

    # -- lifecycle -------------------------------------------------------------------------

    @classmethod
    def open(cls, path: str | os.PathLike[str] | Location | None = None,
             config: ConfigSource = None, *, read_only: bool = False, reindex: bool = False,
             start_worker: bool = True, defer_model: bool = False,
             background: bool = True) -> Opening[Engine]:
        """Open (creating if missing) the memory at ``path``: a SQLite file, or a PostgreSQL
        database by ``postgresql://`` URL; None opens the config's ``[storage] url``.

        ``reindex`` opens a file embedded with a model of another size so that
        :meth:`reindex` can move it; otherwise such a file is refused (nexo-rs).
        ``defer_model`` returns as soon as the file is open and loads the model in the
        background (the app browses meanwhile): what needs the model waits for it, and a
        model the file refuses raises from those calls and from :meth:`model_ready`.
        ``background=False`` starts no consolidation passes and no index upkeep: what a
        command opens the memory for is all it does, while the app, a server or an agent
        keeping the memory open does this upkeep.
        """
        # Parsed now, so no frame below holds a URL's password in a plain string (a crash
        # report that prints locals shows a Location without it).
        where = parse_location(path) if isinstance(path, (str, os.PathLike)) else path
        return Opening(lambda: cls._open(where, config, read_only=read_only, reindex=reindex,
                                         start_worker=start_worker, defer_model=defer_model,
                                         background=background))

    @classmethod
    async def _open(cls, path: str | os.PathLike[str] | Location | None, config: ConfigSource,
                    *, read_only: bool, reindex: bool, start_worker: bool,
                    defer_model: bool, background: bool) -> Engine:
        cfg = load_config(config)
        backend = await open_backend(configured_location(path, cfg.storage), cfg.storage,
                                     read_only=read_only)
        deferred = defer_model and not reindex
        # A placeholder model stands in until the real one loads, now or in the background.
        placeholder = LoadingEmbedder(cfg.embedding.model or cfg.embedding.backend
                                      if deferred else "")
        try:
            engine = cls(backend, cfg, LoadedEmbedder(placeholder, None, False))
            await engine._loader.start(deferred=deferred, start_worker=start_worker,
                                       reindex=reindex,
                                       also_start=engine.compactor.start if background else None)
            if background:
                engine.upkeep.start()
        except BaseException:
            await backend.close()
            raise
        return engine

    @property
    def model_loaded(self) -> bool:
        """False while a deferred model load is still running (or failed)."""
        return self._loader.loaded

    async def model_ready(self) -> None:
        """Wait for a deferred model load; raises what it failed with (e.g. the file's
        vectors have another dimension)."""
        await self._loader.ready()

    async def close(self) -> None:
        """Stop the worker (after its batch in hand) and close the file."""
        if self._closed:
            return
        self._closed = True
        await self._loader.cancel()
        await self.upkeep.stop()
        await self.compactor.stop()
        await self.summaries.stop()
        await self.retrieval.flush_logs()
        await self._loader.stop_worker()
        await self.bulk.close()
        await self.backend.close()
        self.model.embedder.close()

    @property
    def read_only(self) -> bool:
        """True when the file could not be (or was asked not to be) opened for writing."""
        return self.backend.read_only

    # -- the current model (core/embeddings/current_model.py: ``engine.model``, the rest) ---

    @property
    def embedder(self) -> Embedder:
        """The embedder running now (a placeholder while a deferred load runs)."""
        return self.model.embedder

    @property
    def tokens(self) -> TokenCounter:
        """The token counter of the model running now."""
        return self.model.tokens

    @property
    def worker(self) -> EmbeddingWorker | None:
        """The background embedding worker, when one runs."""
        return self.model.worker

    @worker.setter
    def worker(self, worker: EmbeddingWorker | None) -> None:
        self.model.worker = worker

    # -- conversations (see core/conversations.py) -----------------------------------------

    @needs_model
    async def store(self, session_id: str, sequence: int, payload: dict[str, Any],
                    created_at: MessageTime = None, *, agent: str | None = None,
                    namespace: str | None = None) -> StoreResult:
        """Store one message durably at ``sequence`` (oxydra's nine steps); ``created_at`` is
        its own time (ISO-8601 with a UTC offset, or an aware datetime; None: now)."""
        return await self.conversations.store(session_id, sequence, payload, agent, namespace,
                                              created_at)

    @needs_model
    async def append(self, session_id: str, message: dict[str, Any],
                     created_at: MessageTime = None, *, agent: str | None = None,
                     namespace: str | None = None) -> StoreResult:
        """Store a message at the session's next sequence, at ``created_at`` as
        :meth:`store` takes it."""
        return await self.conversations.append(session_id, message, agent, namespace,
                                               created_at)

    @needs_model
    async def store_many(self, items: Iterable[BulkItem], *, agent: str | None = None,
                         batch_size: int = BATCH_MESSAGES,
                         progress: Callable[[int], None] | None = None) -> BulkStoreResult:
        """The importers' bulk path, refusals reported (:meth:`BulkIngest.store_many`)."""
        return await self.bulk.store_many(items, agent=agent, batch_size=batch_size,
                                          progress=progress)

    @needs_model
    async def drain(self, timeout: float | None = None) -> None:
        """Wait until the embedding backlog is empty (chunks that failed for good excepted)
        and the rolling-summary checks that stores scheduled have finished."""
        await asyncio.wait_for(self.summaries.settle(), timeout)
        if self.worker is not None:
            await self.worker.drain(timeout)

    async def recall(self, session_id: str, limit: int | None = None) -> list[MemoryRecord]:
        """A session's stored events, oldest first; with ``limit``, its latest ``limit``."""
        return await self.conversations.recall(session_id, limit)

    async def list_sessions(self, agent: str | None = None, limit: int | None = None,
                            offset: int = 0) -> list[SessionInfo]:
        """Sessions, most recently active first, with event and chunk counts."""
        return await self.conversations.list_sessions(agent, limit, offset)

    async def forget(self, session_id: str) -> bool:
        """Delete a session and everything under it; False when there was no such session."""
        return await self.conversations.forget(session_id)

    async def session_state(self, session_id: str) -> dict[str, Any]:
        """The session's state (last_sequence, summary_state, scratchpad)."""
        return await self.conversations.session_state(session_id)

    async def export_session(self, session_id: str,
                             path: str | os.PathLike[str]) -> SessionExportResult:
        """Write a session to one JSON file (see :mod:`core.sessions_export`)."""
        return await sessions_export.export_session(self.backend, session_id, path)

    # -- summaries, compaction, consolidation (see core/summary/) --------------------------

    @needs_model
    async def restore(self, session_id: str, token_budget: int) -> RestoreResult:
        """The session's context for a new run, within ``token_budget``, oldest first."""
        return await self.summaries.restore(session_id, token_budget)

    async def summary_state(self, session_id: str) -> SummaryState:
        """The session's rolling summary (text, upper_sequence, epoch, last error)."""
        return await self.summaries.state(session_id)

    async def write_summary_state(self, session_id: str, text: str, upper_sequence: int,
                                  expected_epoch: int) -> bool:
        """Compare-and-swap the rolling summary; False, nothing written, when the epoch moved."""
        return await self.summaries.write_state(session_id, text, upper_sequence,
                                                expected_epoch)

    @needs_model
    async def summarize(self, session_id: str, token_budget: int | None = None) -> SummaryOutcome:
        """Run the rolling-summary check now; the outcome says whether it fired, and why."""
        return await self.summaries.summarize(session_id, token_budget)

    @needs_model
    async def compact(self, session_id: str) -> CompactionResult:
        """Fold the history since the last compact marker into an Archive note (crabtalk)."""
        return await self.compactor.compact(session_id)

    @needs_model
    async def consolidate(self, idle_hours: float | None = None,
                          progress: Progress | None = None) -> ConsolidationReport:
        """Compact every conversation idle for ``idle_hours`` (aidaemon); resumable."""
        return await self.compactor.consolidate(idle_hours, progress)

    async def list_archives(self, session_id: str | None = None) -> list[Archive]:
        """Compaction archives (one session's, or all), oldest first."""
        return await self.backend.list_archives(session_id)

    # -- retrieval (see core/retrieval/service.py) -----------------------------------------

    @needs_model
    async def embed_query(self, text: str) -> np.ndarray:
        """The query's vector from the engine's embedder."""
        return await self.model.embed_query(text)

    @needs_model
    async def hybrid_query(self, *, session_id: str | None = None, query: str, top_k: int = 10,
                           vector_weight: float | None = None, fts_weight: float | None = None,
                           tags: Sequence[str] | None = None,
                           query_embedding: Sequence[float] | None = None,
                           fusion: str | None = None, rrf_k: int | None = None,
                           namespace: str | None = None, mode: str | None = None,
                           min_score: float | None = None, raw_fts: bool = False,
                           caller: str = "api") -> list[HybridQueryResult]:
        """Oxydra's hybrid query: vector KNN + FTS5 bm25, fused, ties by recency."""
        found = await self.retrieval.search(
            session_id=session_id, namespace=namespace, query=query, top_k=top_k,
            vector_weight=vector_weight, fts_weight=fts_weight, tags=tags,
            query_embedding=query_embedding, fusion=fusion, rrf_k=rrf_k, mode=mode,
            min_score=min_score, raw_fts=raw_fts, caller=caller)
        return found.results

    @needs_model
    async def search(self, *, query: str, session_id: str | None = None,
                     namespace: str | None = None, top_k: int = 10,
                     vector_weight: float | None = None, fts_weight: float | None = None,
                     tags: Sequence[str] | None = None,
                     query_embedding: Sequence[float] | None = None,
                     fusion: str | None = None, rrf_k: int | None = None,
                     mode: str | None = None, min_score: float | None = None,
                     raw_fts: bool = False, speaker_boost: float | None = None,
                     date_boost: float | None = None, neighbour_weight: float | None = None,
                     neighbour_window: int | None = None,
                     candidate_depth: int | None = None,
                     caller: str = "api", require_session: bool = False) -> SearchResult:
        """:meth:`hybrid_query` with its legs kept, so the result re-ranks without I/O; the
        boosts and ``candidate_depth`` None take the configured values, ``require_session``
        refuses a session that does not exist (see :meth:`Retrieval.search`)."""
        return await self.retrieval.search(
            query=query, session_id=session_id, namespace=namespace, top_k=top_k,
            vector_weight=vector_weight, fts_weight=fts_weight, tags=tags,
            query_embedding=query_embedding, fusion=fusion, rrf_k=rrf_k, mode=mode,
            min_score=min_score, raw_fts=raw_fts, speaker_boost=speaker_boost,
            date_boost=date_boost, neighbour_weight=neighbour_weight,
            neighbour_window=neighbour_window, candidate_depth=candidate_depth, caller=caller,
            require_session=require_session)

    async def retrieval_log(self, limit: int = 50, *, caller: str | None = None,
                            session_id: str | None = None,
                            namespace: str | None = None) -> list[dict[str, Any]]:
        """Logged queries, newest first, by caller and scope when given."""
        return await self.retrieval.retrieval_log(limit, caller=caller, session_id=session_id,
                                                  namespace=namespace)

    @needs_model
    async def replay(self, log_id: int, *, namespace: str | None = None,
                     session_id: str | None = None, top_k: int | None = None,
                     vector_weight: float | None = None, fts_weight: float | None = None,
                     tags: Sequence[str] | None = None, fusion: str | None = None,
                     rrf_k: int | None = None, mode: str | None = None,
                     min_score: float | None = None, raw_fts: bool | None = None,
                     speaker_boost: float | None = None, date_boost: float | None = None,
                     neighbour_weight: float | None = None,
                     neighbour_window: int | None = None,
                     candidate_depth: int | None = None) -> SearchResult:
        """Run a logged query again in its logged scope; a knob given overrides the logged
        one, None keeps it. ``session_id`` is refused (``InvalidInput``): the scope is the
        logged one, and ``namespace`` only binds the call (see :meth:`Retrieval.replay`)."""
        knobs = {"top_k": top_k, "vector_weight": vector_weight, "fts_weight": fts_weight,
                 "tags": tags, "fusion": fusion, "rrf_k": rrf_k, "mode": mode,
                 "min_score": min_score, "raw_fts": raw_fts, "speaker_boost": speaker_boost,
                 "date_boost": date_boost, "neighbour_weight": neighbour_weight,
                 "neighbour_window": neighbour_window, "candidate_depth": candidate_depth}
        changes = {name: value for name, value in knobs.items() if value is not None}
        if session_id is not None:
            changes["session_id"] = session_id
        return await self.retrieval.replay(log_id, namespace=namespace, **changes)

    async def judge(self, query: str, chunk_id: str, grade: int, *,
                    session_id: str | None = None, namespace: str | None = None) -> None:
        """Record how relevant a chunk is to a query (0 not relevant … 3 exactly right), in
        the scope of one session or one namespace."""
        await self.retrieval.judge(query, chunk_id, grade, session_id=session_id,
                                   namespace=namespace)

    async def judgments(self, query: str, *, session_id: str | None = None,
                        namespace: str | None = None) -> dict[str, int]:
        """chunk_id -> grade recorded for a query in a scope."""
        return await self.retrieval.judgments(query, session_id=session_id, namespace=namespace)

    async def judged_queries(self, *, session_id: str | None = None,
                             namespace: str | None = None) -> dict[str, dict[str, int]]:
        """query -> {chunk_id: grade} for every query judged in a scope."""
        return await self.retrieval.judged_queries(session_id=session_id, namespace=namespace)

    @needs_model
    async def get_context(self, session_id: str, query: str, *, namespace: str | None = None,
                          caller: str = "get_context") -> ContextResult:
        """Aidaemon's tri-hybrid context: recent, salient and relevant events, deduplicated."""
        return await self.retrieval.get_context(session_id, query, namespace=namespace,
                                                caller=caller)

    # -- scratchpad (oxydra; see core/scratchpad.py) ---------------------------------------

    async def read_scratchpad(self, session_id: str, *,
                              namespace: str | None = None) -> ScratchpadState | None:
        """A session's scratchpad, or None when it has none."""
        return await self.scratchpad.read(session_id, namespace=namespace)

    async def write_scratchpad(self, session_id: str, items: Sequence[str], *,
                               agent: str | None = None,
                               namespace: str | None = None) -> ScratchpadState:
        """Replace a session's scratchpad whole; over the limits it is refused whole."""
        return await self.scratchpad.write(session_id, items, agent=agent, namespace=namespace)

    async def clear_scratchpad(self, session_id: str, *, namespace: str | None = None) -> bool:
        """Empty a session's scratchpad; False when it had none."""
        return await self.scratchpad.clear(session_id, namespace=namespace)

    async def scratchpad_sessions(self, limit: int = 200) -> list[ScratchpadState]:
        """The sessions that have a scratchpad, most recently written first."""
        return await self.scratchpad.sessions(limit)

    # -- embeddings and the file (see core/embeddings/loading.py) -------------------------------

    async def embedding_status(self) -> EmbeddingStatus:
        """The model, its size, the backlog and failures, vectors of other models."""
        return await self._loader.status()

    @needs_model
    async def reindex(self, progress: Any = None) -> int:
        """Re-embed every chunk with the engine's model; returns the number of chunks."""
        return await self._loader.reindex(progress)

    async def pulse(self) -> Pulse:
        """What a watching front end polls, cheaply: change counter, backlog, model state."""
        return await self._loader.pulse()

    async def counts(self) -> dict[str, int]:
        """Row counts per table (for doctor and for checking cascades)."""
        return await self.backend.table_counts()
