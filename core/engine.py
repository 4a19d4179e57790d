"""The Engine: the one object every front end (app, CLI, MCP server, an agent) talks to.

It owns the storage backend, the embedder and its background worker, the working memory
and the token counter, and implements seed 001's ``Memory`` and ``MemoryRetrieval``
operations on top of them. It never issues SQL itself: that is the backend's job.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from core import indexing, inputs, sessions_export
from core.bulk import BulkIngest, BulkItem
from core.clock import utc_now
from core.config import Config, load_config
from core.embed_worker import EmbeddingWorker
from core.embeddings import (
    Embedder,
    LoadedEmbedder,
    LoadingEmbedder,
    embed_checked,
    load_embedder,
)
from core.errors import EmbeddingError, InvalidInput, NotFound, OutOfNamespace
from core.notes import transfer
from core.notes.facts import Facts
from core.notes.fields import clean_namespace
from core.notes.service import Notes
from core.retrieval.search import SearchResult
from core.retrieval.service import Retrieval
from core.schedules.store import Schedules
from core.scratchpad import Scratchpad
from core.storage.events import PreparedChunk, PreparedMessage, out_of_namespace
from core.storage.notes import MEMORY_PREFIX
from core.storage.sqlite_backend import SqliteBackend
from core.summary.compaction import Compactor, Progress
from core.summary.service import Summaries
from core.tokens import TokenCounter
from core.types import (
    BulkStoreResult,
    CompactionResult,
    ConsolidationReport,
    ContextResult,
    EmbeddingStatus,
    Fact,
    HybridQueryResult,
    MemoryHit,
    MemoryRecord,
    Note,
    NoteExportResult,
    NoteHit,
    NoteImportResult,
    NotePage,
    Pulse,
    RestoreResult,
    ScratchpadState,
    SessionExportResult,
    SessionInfo,
    StoreResult,
    SummaryOutcome,
    SummaryState,
)
from core.working_memory import WorkingMemory

log = logging.getLogger(__name__)

# A query this short embeds on the event loop with a quick embedder (a static model takes
# ~0.1 ms for it, less than handing it to a thread); a longer text goes to a thread.
QUICK_QUERY_CHARS = 2000

ConfigSource = str | os.PathLike[str] | dict[str, Any] | Config | None
_Method = TypeVar("_Method", bound=Callable[..., Any])


def _needs_model(method: _Method) -> _Method:
    """Make a method wait for a deferred model load (and raise what it failed with)."""

    @functools.wraps(method)
    async def waiting(self: Engine, *args: Any, **kwargs: Any) -> Any:
        await self.model_ready()
        return await method(self, *args, **kwargs)

    return waiting  # type: ignore[return-value]


class _Opening:
    """``Engine.open(...)``: usable as ``async with`` (closes on exit) or with ``await``."""

    def __init__(self, path: str | os.PathLike[str], config: ConfigSource,
                 kwargs: dict[str, Any]) -> None:
        self._args = (path, config, kwargs)
        self._engine: Engine | None = None

    def __await__(self) -> Any:
        path, config, kwargs = self._args
        return Engine._open(path, config, **kwargs).__await__()

    async def __aenter__(self) -> Engine:
        self._engine = await self
        return self._engine

    async def __aexit__(self, *exc_info: object) -> None:
        if self._engine is not None:
            await self._engine.close()


class Engine:
    """Durable agent memory over one SQLite file: store, recall, forget, query, restore."""

    def __init__(self, backend: SqliteBackend, config: Config, loaded: LoadedEmbedder) -> None:
        self.config = config
        self.backend = backend
        self.path = backend.path
        self.embedder: Embedder = loaded.embedder
        self.embedding_fell_back = loaded.fell_back
        self.embedding_warning = loaded.warning
        self._fallback_warning = loaded.warning
        self.warnings: list[str] = list(backend.warnings)
        if loaded.warning:
            self.warnings.append(loaded.warning)
        self.tokens = TokenCounter(getattr(self.embedder, "tokenizer", None))
        short = config.short_term
        self.working_memory = WorkingMemory(
            max_history_turns=short.max_history_turns, session_ttl=short.session_ttl,
            max_sessions=short.max_sessions)
        self.worker: EmbeddingWorker | None = None
        self.bulk = BulkIngest(self)
        self.retrieval = Retrieval(self)
        self.notes = Notes(self)
        self.facts = Facts(self)
        self.scratchpad = Scratchpad(self)
        self.summaries = Summaries(self)
        self.compactor = Compactor(self)
        self.schedules = Schedules(self)
        self.vectors_usable = False
        self._closed = False
        self._model_task: asyncio.Task[None] | None = None

    # -- lifecycle -------------------------------------------------------------------------

    @classmethod
    def open(cls, path: str | os.PathLike[str], config: ConfigSource = None, *,
             read_only: bool = False, reindex: bool = False,
             start_worker: bool = True, defer_model: bool = False) -> _Opening:
        """Open (creating if missing) a memory file.

        ``reindex`` opens a file embedded with a model of another size so that
        :meth:`reindex` can move it; otherwise such a file is refused (seed 003).
        ``defer_model`` returns as soon as the file is open and loads the model in the
        background (the app browses meanwhile): what needs the model waits for it, and a
        model the file refuses raises from those calls and from :meth:`model_ready`.
        """
        return _Opening(path, config, {"read_only": read_only, "reindex": reindex,
                                       "start_worker": start_worker,
                                       "defer_model": defer_model})

    @classmethod
    async def _open(cls, path: str | os.PathLike[str], config: ConfigSource, *,
                    read_only: bool, reindex: bool, start_worker: bool,
                    defer_model: bool) -> Engine:
        cfg = load_config(config)
        backend = await asyncio.to_thread(SqliteBackend.open, Path(path), cfg.storage,
                                          read_only=read_only)
        if defer_model and not reindex:
            placeholder = LoadingEmbedder(cfg.embedding.model or cfg.embedding.backend)
            engine = cls(backend, cfg, LoadedEmbedder(placeholder, None, False))
            engine._model_task = asyncio.create_task(engine._load_model(start_worker))
            return engine
        try:
            engine = cls(backend, cfg, LoadedEmbedder(LoadingEmbedder(""), None, False))
            await engine._load_model(start_worker, reindex=reindex)
        except BaseException:
            backend.close()
            raise
        return engine

    async def _load_model(self, start_worker: bool, *, reindex: bool = False) -> None:
        """Load the embedder, check it against the file's vectors, start the background work."""
        backend = self.backend
        file_dimension, file_model = await backend.vector_meta()
        loaded = await asyncio.to_thread(
            load_embedder, self.config.embedding,
            file_dimension=None if reindex else file_dimension)
        self.embedder = loaded.embedder
        self.embedding_fell_back = loaded.fell_back
        self.embedding_warning = self._fallback_warning = loaded.warning
        if loaded.warning:
            self.warnings.append(loaded.warning)
        self.tokens = TokenCounter(getattr(self.embedder, "tokenizer", None))
        self.summaries.use_counter(self.tokens)
        name, dimension = self.embedder.name, self.embedder.dimension
        if not reindex:  # a reindexing engine has no usable vectors until reindex() runs
            await backend.ensure_vector_table(dimension, name)
            file_model = file_model or name
            self.vectors_usable = file_model == name or file_dimension is None
            if not self.vectors_usable:
                self.embedding_warning = (
                    f"this file's vectors come from {file_model}, but the engine runs "
                    f"{name}: the vector leg is off and new chunks wait unembedded; run "
                    f"`workbench reindex` to move the file to {name}")
                self.warnings.append(self.embedding_warning)
        if self._closed:
            return
        if start_worker and self.vectors_usable and not backend.read_only and not reindex:
            self._start_worker()
        if start_worker and not reindex:
            self.compactor.start()

    @property
    def model_loaded(self) -> bool:
        """False while a deferred model load is still running (or failed)."""
        task = self._model_task
        return task is None or (task.done() and not task.cancelled()
                                and task.exception() is None)

    async def model_ready(self) -> None:
        """Wait for a deferred model load; raises what it failed with (e.g. the file's
        vectors have another dimension)."""
        if self._model_task is not None:
            await asyncio.shield(self._model_task)

    def _start_worker(self) -> None:
        emb = self.config.embedding
        self.worker = EmbeddingWorker(self.backend, self.embedder, batch_size=emb.batch_size,
                                      max_attempts=emb.max_attempts)
        self.worker.start()

    async def close(self) -> None:
        """Stop the worker (after its batch in hand) and close the file."""
        if self._closed:
            return
        self._closed = True
        if self._model_task is not None and not self._model_task.done():
            self._model_task.cancel()
            with contextlib.suppress(BaseException):
                await self._model_task
        await self.compactor.stop()
        await self.summaries.stop()
        await self.retrieval.flush_logs()
        if self.worker is not None:
            await self.worker.stop()
        await self.bulk.close()
        self.backend.close()
        self.embedder.close()

    @property
    def read_only(self) -> bool:
        """True when the file could not be (or was asked not to be) opened for writing."""
        return self.backend.read_only

    @property
    def read_only_reason(self) -> str | None:
        """Why the file is read-only when it was not asked to be (not writable, on a
        read-only or full file system, schema too new); None otherwise."""
        return self.backend.read_only_reason

    # -- storing ---------------------------------------------------------------------------

    def prepare_message(self, session_id: str, sequence: int | None, payload: object,
                        agent: str | None, created_at: str,
                        bound: bool = False) -> PreparedMessage:
        """Validate a message and compute its rows (text, chunks, hashes, metadata), off-lock.

        ``bound``: the write is refused (``OutOfNamespace``) unless the session is ``agent``'s
        or new. Raises ``InvalidInput`` (``InvalidMessage`` for a bad payload); writes nothing.
        """
        inputs.session_id(session_id)
        if agent is not None:
            inputs.utf8_text(agent, "agent")
        if session_id.startswith(MEMORY_PREFIX):
            raise InvalidInput(f"session {session_id!r} holds a namespace's notes (its name "
                               f"begins with {MEMORY_PREFIX!r}); write notes with add_note or "
                               "save_memory, and messages to another session")
        if sequence is not None:
            inputs.int64(sequence, "sequence")
        message = indexing.validate_message(payload)
        role = message["role"]
        importance = message.get("importance")
        if importance is None:
            importance = indexing.default_importance(role, self.config.importance)
        text = indexing.normalize_text(indexing.extract_indexable_text(message))
        chunking = self.config.chunking
        pieces = indexing.chunk_text(text, chunking.max_chars, chunking.overlap_chars)
        chunks = tuple(PreparedChunk(piece, indexing.content_hash(piece)) for piece in pieces)
        event_metadata = message.get("metadata") or {}
        chunk_metadata: dict[str, Any] = dict(event_metadata)
        if "tags" in event_metadata:
            notes = self.config.notes
            chunk_metadata["tags"] = indexing.normalize_tags(
                event_metadata["tags"], notes.max_tags, notes.max_tag_chars)
        chunk_metadata["role"] = role
        for key in ("tool_name", "tool_call_id", "name"):
            if message.get(key):
                chunk_metadata[key] = message[key]
        return PreparedMessage(
            session_id=session_id, sequence=sequence,
            payload_json=json.dumps(message, ensure_ascii=False, allow_nan=False),
            role=role, importance=float(importance), chunks=chunks,
            chunk_metadata=chunk_metadata, agent_identity=agent or self.config.agent,
            created_at=created_at, bound=bound)

    @_needs_model
    async def store(self, session_id: str, sequence: int, payload: dict[str, Any], *,
                    agent: str | None = None, namespace: str | None = None) -> StoreResult:
        """Store one message durably (seed 001's nine steps, one transaction).

        Raises ``InvalidMessage`` for a payload that is not a Message, ``SequenceError`` when
        ``sequence`` is not above the session's last; in both cases nothing is written.
        ``namespace`` binds the call: the session must be that namespace's (or new, and made
        in it), else ``OutOfNamespace`` and nothing is written.
        """
        if sequence is None:
            raise InvalidInput("sequence is required; use append() to allocate the next one")
        return await self._store_one(session_id, sequence, payload, agent, namespace)

    @_needs_model
    async def append(self, session_id: str, message: dict[str, Any], *,
                     agent: str | None = None, namespace: str | None = None) -> StoreResult:
        """Store a message at the session's next sequence (allocated in the transaction);
        ``namespace`` binds the call as :meth:`store`'s does."""
        return await self._store_one(session_id, None, message, agent, namespace)

    async def _store_one(self, session_id: str, sequence: int | None, payload: Any,
                         agent: str | None, namespace: str | None) -> StoreResult:
        if namespace is not None:
            agent = clean_namespace(namespace)
        prepared = self.prepare_message(session_id, sequence, payload, agent, utc_now(),
                                        bound=namespace is not None)
        chunking = self.config.chunking
        (outcome,) = await self.backend.write_messages(
            [prepared], all_or_nothing=True, context_messages=chunking.context_messages,
            context_chars=chunking.context_chars)
        assert outcome.sequence is not None
        self._remember(prepared, outcome.sequence)
        if outcome.inserted and self.worker is not None:
            self.worker.wake()
        self.summaries.after_store(session_id, prepared.payload_json, outcome.sequence)
        return StoreResult(session_id, outcome.sequence, outcome.inserted, outcome.deduplicated)

    def _remember(self, prepared: PreparedMessage, sequence: int) -> None:
        """Keep the working memory in step with a store, when it holds the session."""
        held = self.working_memory.get(prepared.session_id)
        if held is None:
            return
        if held and held[-1].sequence >= sequence:
            self.working_memory.drop(prepared.session_id)
            return
        self.working_memory.append(prepared.session_id, MemoryRecord(
            prepared.session_id, sequence, json.loads(prepared.payload_json),
            prepared.created_at, prepared.importance))

    @_needs_model
    async def store_many(self, items: Iterable[BulkItem], *, agent: str | None = None,
                         batch_size: int = 1000) -> BulkStoreResult:
        """The importers' bulk path: many messages per transaction, refusals reported.

        Each item is ``(session_id, sequence or None, payload)``, or with the message's
        original ``created_at`` after it (None: now; RFC 3339 with ``Z`` or an offset, or
        SQLite's ``YYYY-MM-DD HH:MM:SS``, no zone meaning UTC). A message that is invalid,
        out of sequence or has an unreadable ``created_at`` is listed in ``rejected`` with
        its reason; the others are stored, embedded before they are written (see
        :mod:`core.bulk`).
        """
        return await self.bulk.store_many(items, agent=agent, batch_size=batch_size)

    @_needs_model
    async def drain(self, timeout: float | None = None) -> None:
        """Wait until the embedding backlog is empty (chunks that failed for good excepted)
        and the rolling-summary checks that stores scheduled have finished."""
        await asyncio.wait_for(self.summaries.settle(), timeout)
        if self.worker is not None:
            await self.worker.drain(timeout)

    # -- reading ---------------------------------------------------------------------------

    async def recall(self, session_id: str, limit: int | None = None) -> list[MemoryRecord]:
        """A session's stored events, oldest first; with ``limit``, its latest ``limit``.

        Served from working memory when it holds the session's tail (checked against the
        file's last sequence, so another process's writes are never missed).
        """
        inputs.utf8_text(session_id, "session_id")
        if limit is not None and inputs.int64(limit, "limit") < 0:
            raise InvalidInput(f"limit must not be negative, got {limit}")
        held = self.working_memory.get(session_id)
        if held is not None and limit is not None and len(held) >= limit:
            last = await self.backend.last_sequence(session_id)
            if held and held[-1].sequence == last:
                return list(held[len(held) - limit:]) if limit else []
        rows = await self.backend.read_events(session_id, limit)
        records = [MemoryRecord(**row) for row in rows]
        if limit is None or limit >= self.config.short_term.max_history_turns:
            self.working_memory.load(session_id, records)
        return records

    async def list_sessions(self, agent: str | None = None, limit: int | None = None,
                            offset: int = 0) -> list[SessionInfo]:
        """Sessions, most recently active first, with event and chunk counts."""
        rows = await self.backend.list_sessions(agent, limit, offset)
        return [SessionInfo(**row) for row in rows]

    async def forget(self, session_id: str) -> bool:
        """Delete a session and everything under it; False when there was no such session."""
        inputs.utf8_text(session_id, "session_id")
        self.working_memory.drop(session_id)
        self.summaries.forget(session_id)
        return await self.backend.delete_session(session_id)

    async def session_state(self, session_id: str) -> dict[str, Any]:
        """The session's state (last_sequence, summary_state, scratchpad)."""
        state = await self.backend.read_session_state(session_id)
        if state is None:
            raise NotFound(f"no session {session_id!r}")
        return state

    async def export_session(self, session_id: str,
                             path: str | os.PathLike[str]) -> SessionExportResult:
        """Write a session's events, rolling summary and scratchpad to one JSON file,
        atomically (see :mod:`core.sessions_export`); ``NotFound`` when there is none."""
        return await sessions_export.export_session(self, session_id, path)

    @_needs_model
    async def restore(self, session_id: str, token_budget: int) -> RestoreResult:
        """The session's context for a new run, within ``token_budget``, oldest first.

        Replay starts at the latest compact marker (seed 004): the marker, then the rolling
        summary as the system message "Rolling session summary: …" (seed 001), then the
        newest messages after the summary that still fit. The marker and the summary come
        first and are kept while they fit. Tokens are counted by
        :class:`core.tokens.TokenCounter`: the embedding model's tokenizer when it has one,
        else about four characters a token, plus a per-message overhead.
        """
        return await self.summaries.restore(session_id, token_budget)

    # -- summaries, compaction, consolidation ------------------------------------------------

    async def summary_state(self, session_id: str) -> SummaryState:
        """The session's rolling summary (text, upper_sequence, epoch, last error)."""
        return await self.summaries.state(session_id)

    async def write_summary_state(self, session_id: str, text: str, upper_sequence: int,
                                  expected_epoch: int) -> bool:
        """Compare-and-swap the rolling summary (seed 001 "Race Safety"): True when written
        with epoch ``expected_epoch + 1``; False, nothing written, when the epoch moved."""
        return await self.summaries.write_state(session_id, text, upper_sequence,
                                                expected_epoch)

    @_needs_model
    async def summarize(self, session_id: str, token_budget: int | None = None) -> SummaryOutcome:
        """Run the rolling-summary check now (it also runs after each store with
        ``summary.auto``); the outcome says whether it fired, and why."""
        return await self.summaries.summarize(session_id, token_budget)

    @_needs_model
    async def compact(self, session_id: str) -> CompactionResult:
        """Fold the history since the last compact marker into an Archive note and a new
        marker (seed 004), with a markdown copy (seed 002)."""
        return await self.compactor.compact(session_id)

    @_needs_model
    async def consolidate(self, idle_hours: float | None = None,
                          progress: Progress | None = None) -> ConsolidationReport:
        """Compact every conversation idle for ``idle_hours`` (seed 000); resumable."""
        return await self.compactor.consolidate(idle_hours, progress)

    async def list_archives(self, session_id: str | None = None) -> list[dict[str, Any]]:
        """Compaction archives (one session's, or all), oldest first."""
        return await self.backend.list_archives(session_id)

    # -- retrieval -------------------------------------------------------------------------

    @_needs_model
    async def embed_query(self, text: str) -> np.ndarray:
        """The query's vector from the engine's embedder (on the loop when that is quicker)."""
        if getattr(self.embedder, "quick", False) and len(text) <= QUICK_QUERY_CHARS:
            return embed_checked(self.embedder, [text])[0]
        return (await asyncio.to_thread(embed_checked, self.embedder, [text]))[0]

    @_needs_model
    async def hybrid_query(self, *, session_id: str | None = None, query: str, top_k: int = 10,
                           vector_weight: float | None = None, fts_weight: float | None = None,
                           tags: Sequence[str] | None = None,
                           query_embedding: Sequence[float] | None = None,
                           fusion: str | None = None, rrf_k: int | None = None,
                           namespace: str | None = None, mode: str | None = None,
                           min_score: float | None = None, raw_fts: bool = False,
                           caller: str = "api") -> list[HybridQueryResult]:
        """Seed 001's hybrid query: vector KNN + FTS5 bm25, fused, ties by recency.

        Scope is one ``session_id`` or a ``namespace`` (every session of an agent identity).
        ``mode`` is "keyword", "vector" or "hybrid" (seed 003); ``fusion`` is "minmax" (seed
        001), "rrf" or "dbsf"; ``None`` takes the configured value. See :meth:`search` for
        the kept legs and the explanation behind the same results.
        """
        found = await self.retrieval.search(
            session_id=session_id, namespace=namespace, query=query, top_k=top_k,
            vector_weight=vector_weight, fts_weight=fts_weight, tags=tags,
            query_embedding=query_embedding, fusion=fusion, rrf_k=rrf_k, mode=mode,
            min_score=min_score, raw_fts=raw_fts, caller=caller)
        return found.results

    @_needs_model
    async def search(self, **request: Any) -> SearchResult:
        """Run a query's legs once and rank them; the result re-ranks without I/O.

        Takes :meth:`hybrid_query`'s keywords; see :meth:`core.retrieval.service.Retrieval.search`.
        """
        return await self.retrieval.search(**request)

    async def retrieval_log(self, limit: int = 50, **filters: Any) -> list[dict[str, Any]]:
        """Logged queries, newest first (``caller=``, ``session_id=``, ``namespace=``)."""
        return await self.retrieval.retrieval_log(limit, **filters)

    @_needs_model
    async def replay(self, log_id: int, *, namespace: str | None = None,
                     **changes: Any) -> SearchResult:
        """Run a logged query again, exactly as it was asked and in its logged scope
        (``changes`` override a ranking knob, never the scope); ``namespace`` binds the call:
        another namespace's entry is ``NotFound``."""
        return await self.retrieval.replay(log_id, namespace=namespace, **changes)

    async def judge(self, query: str, chunk_id: str, grade: int, **scope: Any) -> None:
        """Record how relevant a chunk is to a query (0 not relevant … 3 exactly right)."""
        await self.retrieval.judge(query, chunk_id, grade, **scope)

    async def judgments(self, query: str, **scope: Any) -> dict[str, int]:
        """chunk_id -> grade recorded for a query in a scope."""
        return await self.retrieval.judgments(query, **scope)

    @_needs_model
    async def get_context(self, session_id: str, query: str, *, namespace: str | None = None,
                          caller: str = "get_context") -> ContextResult:
        """Seed 000's tri-hybrid context: recent, salient and relevant events, deduplicated.

        ``namespace`` binds the call (another namespace's session: ``OutOfNamespace``);
        ``caller`` is who the relevance search is logged as.
        """
        if namespace is not None:
            await self.require_session_in(session_id, namespace)
        return await self.retrieval.get_context(session_id, query, caller=caller)

    async def require_session_in(self, session_id: str, namespace: str) -> None:
        """Refuse (``OutOfNamespace``) a session that exists and is not ``namespace``'s; a
        session that does not exist yet passes (it holds nothing to reach)."""
        namespace = clean_namespace(namespace)
        owner = await self.backend.session_agent(inputs.utf8_text(session_id, "session_id"))
        if owner is not None and owner != namespace:
            raise OutOfNamespace(out_of_namespace(session_id, namespace))

    # -- notes (seed 001 notes, seed 004 operations; see core/notes/service.py) -------------
    #
    # Every note call works in one namespace: ``namespace=`` or the configured agent. A note
    # is named by its id, its name or any alias; one namespace never reaches another's notes.

    def note_session(self, namespace: str | None = None) -> str:
        """The session whose chunks index a namespace's notes: ``hybrid_query`` on it
        searches exactly those notes (``namespace=`` finds them beside the conversations)."""
        return self.notes.session_id(namespace)

    @_needs_model
    async def add_note(self, name: str, content: str, *, namespace: str | None = None,
                       kind: str = "Note", category: str | None = None,
                       tags: Sequence[str] | None = None, source: str = "",
                       importance: float = 0.5, aliases: Sequence[str] | None = None) -> Note:
        """Create a note (seed 004 Add); ``NameTaken`` when a name is already bound."""
        return await self.notes.add(name, content, namespace=namespace, kind=kind,
                                    category=category, tags=tags, source=source,
                                    importance=importance, aliases=aliases)

    @_needs_model
    async def write_note(self, ref: str, content: str | None = None, *,
                         namespace: str | None = None, kind: str | None = None,
                         category: str | None = None, tags: Sequence[str] | None = None,
                         source: str | None = None, importance: float | None = None) -> Note:
        """Replace a note's content and any field given (seed 004 Write), identity kept."""
        return await self.notes.write(ref, content, namespace=namespace, kind=kind,
                                      category=category, tags=tags, source=source,
                                      importance=importance)

    @_needs_model
    async def edit_note(self, ref: str, *, namespace: str | None = None,
                        name: str | None = None, aliases: Sequence[str] | None = None,
                        content: str | None = None, kind: str | None = None,
                        category: str | None = None, tags: Sequence[str] | None = None,
                        source: str | None = None, importance: float | None = None) -> Note:
        """Rename a note, replace its aliases and write any field given, in one transaction:
        all of it or (``NameTaken``, ``InvalidInput``, ``NotFound``) nothing."""
        return await self.notes.edit(ref, namespace=namespace, name=name, aliases=aliases,
                                     content=content, kind=kind, category=category, tags=tags,
                                     source=source, importance=importance)

    async def note_namespaces(self) -> list[str]:
        """Every namespace that holds a note, in order (for pickers; an empty one has none)."""
        return await self.notes.namespaces()

    async def rename_note(self, ref: str, new_name: str, *,
                          namespace: str | None = None) -> Note:
        """Change a note's name (seed 004 Rename); the old name is released."""
        return await self.notes.rename(ref, new_name, namespace=namespace)

    async def alias_note(self, ref: str, alias: str, *, namespace: str | None = None) -> Note:
        """Bind another name to a note (seed 004 Alias); it adds no search words."""
        return await self.notes.alias(ref, alias, namespace=namespace)

    async def unalias_note(self, alias: str, *, namespace: str | None = None) -> Note:
        """Unbind an alias; returns the note it named."""
        return await self.notes.unalias(alias, namespace=namespace)

    async def remove_note(self, ref: str, *, namespace: str | None = None) -> bool:
        """Delete a note with its names, event, chunks, FTS rows and vectors (seed 004 Remove)."""
        return await self.notes.remove(ref, namespace=namespace)

    async def get_note(self, ref: str, *, namespace: str | None = None) -> Note:
        """The note an id, name or alias names; ``NotFound`` otherwise."""
        return await self.notes.get(ref, namespace=namespace)

    async def list_notes(self, *, namespace: str | None = None, category: str | None = None,
                         kind: str | None = None, tags: Sequence[str] | None = None,
                         text: str | None = None, limit: int = 50, offset: int = 0,
                         order: str = "name") -> NotePage:
        """A page of notes filtered by category, kind, tags (all) and text, with the total."""
        return await self.notes.list_notes(namespace=namespace, category=category, kind=kind,
                                           tags=tags, text=text, limit=limit, offset=offset,
                                           order=order)

    async def export_notes(self, path: str | os.PathLike[str], *,
                           namespace: str | None = None) -> NoteExportResult:
        """Write a namespace's notes to one JSON file, atomically."""
        return await transfer.export_notes(self.notes, path, namespace)

    @_needs_model
    async def import_notes(self, path: str | os.PathLike[str], *, namespace: str | None = None,
                           overwrite: bool = False) -> NoteImportResult:
        """Import a notes file: all of it, or (``ImportCollision``) nothing."""
        return await transfer.import_notes(self.notes, path, namespace, overwrite=overwrite)

    # -- seed 002's memory tools -----------------------------------------------------------

    @_needs_model
    async def save_memory(self, key: str, content: str, category: str | None = None, *,
                          namespace: str | None = None) -> Note:
        """Store content under a key (the note of that name, written or added)."""
        return await self.notes.save_memory(key, content, category, namespace=namespace)

    @_needs_model
    async def recall_memories(self, query: str, *, namespace: str | None = None,
                              limit: int = 10, caller: str = "recall_memories") -> list[MemoryHit]:
        """Memories for a query: BM25, else the LIKE substring fallback."""
        return await self.notes.recall_memories(query, namespace=namespace, limit=limit,
                                                caller=caller)

    # -- seed 001's memory tools: notes by id, with tags -----------------------------------

    @_needs_model
    async def memory_save(self, content: str, *, tags: Sequence[str] | None = None,
                          source: str = "memory_save", namespace: str | None = None) -> Note:
        """Store a note by content alone (seed 001 ``store_note``): a fresh ``note-{uuid}``
        and a name made from its first words, for people browsing."""
        return await self.notes.memory_save(content, tags=tags, source=source,
                                            namespace=namespace)

    @_needs_model
    async def memory_search(self, query: str, *, tags: Sequence[str] | None = None,
                            top_k: int = 10, namespace: str | None = None,
                            caller: str = "memory_search") -> list[NoteHit]:
        """The namespace's notes for a query (hybrid, tags filtered in SQL), best first,
        one hit per note."""
        return await self.notes.memory_search(query, tags=tags, top_k=top_k,
                                              namespace=namespace, caller=caller)

    async def forget_memory(self, key: str, *, namespace: str | None = None) -> bool:
        """Remove the memory a key names; False when none."""
        return await self.notes.forget_memory(key, namespace=namespace)

    async def list_memories(self, *, namespace: str | None = None,
                            category: str | None = None) -> list[str]:
        """Every memory key of the namespace, in order."""
        return await self.notes.list_memories(namespace=namespace, category=category)

    # -- facts (seed 000; see core/notes/facts.py) -----------------------------------------

    async def upsert_fact(self, category: str, key: str, value: str, *, source: str = "agent",
                          namespace: str | None = None) -> Fact:
        """Store a fact; the same category and key replace its value."""
        return await self.facts.upsert(category, key, value, source=source, namespace=namespace)

    async def get_fact(self, category: str, key: str, *, namespace: str | None = None) -> Fact:
        """One fact; ``NotFound`` when there is none."""
        return await self.facts.get(category, key, namespace=namespace)

    async def list_facts(self, *, category: str | None = None,
                         namespace: str | None = None) -> list[Fact]:
        """A namespace's facts, by category then key."""
        return await self.facts.list_facts(category=category, namespace=namespace)

    async def delete_fact(self, category: str, key: str, *,
                          namespace: str | None = None) -> bool:
        """Delete a fact; False when there was none."""
        return await self.facts.delete(category, key, namespace=namespace)

    # -- scratchpad (seed 001; see core/scratchpad.py) -------------------------------------

    async def read_scratchpad(self, session_id: str, *,
                              namespace: str | None = None) -> ScratchpadState | None:
        """A session's scratchpad, or None when it has none."""
        return await self.scratchpad.read(session_id, namespace=namespace)

    async def write_scratchpad(self, session_id: str, items: Sequence[str], *,
                               agent: str | None = None,
                               namespace: str | None = None) -> ScratchpadState:
        """Replace a session's scratchpad whole; over the limits it is refused whole.
        ``namespace`` binds the call (another namespace's session: ``OutOfNamespace``)."""
        return await self.scratchpad.write(session_id, items, agent=agent, namespace=namespace)

    async def clear_scratchpad(self, session_id: str, *, namespace: str | None = None) -> bool:
        """Empty a session's scratchpad; False when it had none."""
        return await self.scratchpad.clear(session_id, namespace=namespace)

    async def scratchpad_sessions(self, limit: int = 200) -> list[ScratchpadState]:
        """The sessions that have a scratchpad, most recently written first."""
        return await self.scratchpad.sessions(limit)

    # -- embeddings ------------------------------------------------------------------------

    async def embedding_status(self) -> EmbeddingStatus:
        """The model, its size, the backlog and failures, vectors of other models."""
        counts = await self.backend.embedding_counts()
        others = {m: n for m, n in counts["models"].items() if m != self.embedder.name}
        return EmbeddingStatus(
            model=self.embedder.name, dimension=self.embedder.dimension,
            backlog=counts["pending"], failed=counts["failed"], embedded=counts["done"],
            other_models=others, fell_back=self.embedding_fell_back,
            warning=self.embedding_warning)

    @_needs_model
    async def reindex(self, progress: Any = None) -> int:
        """Re-embed every chunk with the engine's model; returns the number of chunks.

        ``progress(done, total)`` is called as batches are saved. Open the engine with
        ``reindex=True`` to reindex a file whose vectors have another dimension.
        """
        if self.embedding_fell_back:
            raise EmbeddingError(f"reindex refused, nothing was changed: {self._fallback_warning}")
        total = await self.backend.reset_vectors(self.embedder.dimension, self.embedder.name)
        self.vectors_usable = True
        if self.embedding_warning != self._fallback_warning:
            self.warnings.remove(self.embedding_warning)
            self.embedding_warning = self._fallback_warning
        if self.worker is None:
            self._start_worker()
        assert self.worker is not None
        self.worker.embedded = 0
        if progress is not None:
            self.worker.on_progress = lambda done, _left: progress(done, total)
        try:
            await self.worker.drain()
        finally:
            self.worker.on_progress = None
        return total

    async def pulse(self) -> Pulse:
        """What a watching front end polls, cheaply: the file's change counter (``PRAGMA
        data_version``, which moves when any connection or process commits), the embedding
        backlog and failures, and whether the model has loaded."""
        version, backlog, failed = await self.backend.pulse()
        refused = self.worker.storage_error if self.worker is not None else None
        return Pulse(data_version=version, backlog=backlog, failed=failed,
                     model=self.embedder.name, model_loaded=self.model_loaded,
                     fell_back=self.embedding_fell_back, warning=self.embedding_warning,
                     storage_error=None if refused is None else str(refused))

    async def counts(self) -> dict[str, int]:
        """Row counts per table (for doctor and for checking cascades)."""
        return await self.backend.table_counts()
