"""Retrieval as the engine offers it: queries, the retrieval log, judgments, get_context.

:class:`Retrieval` runs a query's legs against the storage backend (at once, each on its
own reader connection), ranks them with :mod:`core.retrieval.search`, and records every
query in the retrieval log without making the caller wait. The engine delegates to it, so
every front end queries the same way.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from core import indexing, inputs, retrieval
from core.clock import utc_now
from core.conversations import require_session_in
from core.errors import EmbeddingError, InvalidInput, NotFound
from core.inputs import MAX_IDENTIFIER_CHARS, clean_namespace
from core.retrieval.boosts import boost_settings
from core.retrieval.depth import leg_depth
from core.retrieval.log_writer import LogWriter
from core.retrieval.search import MODES, KeptLegs, Ranking, SearchResult, answering_statement, rank
from core.storage.derived.vector_matrix import DERIVED_VECTOR_LEG
from core.storage.log_rows import LogEntry, log_row
from core.storage.vocabulary import SESSION_VECTOR_LEG, LegRequest, LegRows, Scope
from core.types import ContextItem, ContextResult, MemoryRecord

if TYPE_CHECKING:
    from core.config import Config
    from core.conversations import Conversations
    from core.embeddings.current_model import CurrentModel
    from core.storage.backend import Backend

log = logging.getLogger(__name__)

# sqlite-vec answers a KNN query for at most 4096 neighbours: no leg is asked for more, and no
# query for more results than that.
MAX_TOP_K = 4096


class Retrieval:
    """The engine's queries, retrieval log, judgments and tri-hybrid context."""

    def __init__(self, backend: Backend, config: Config, model: CurrentModel,
                 conversations: Conversations) -> None:
        self._backend = backend
        self._config = config
        self._model = model
        self._conversations = conversations
        self._log = LogWriter(backend)

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
        """Run a query's legs once and rank them; the result re-ranks without I/O.

        Oxydra's hybrid query: vector KNN + FTS5 bm25, fused, ties by recency. Scope is one
        ``session_id`` or a ``namespace`` (every session of an agent identity). ``mode`` is
        "keyword", "vector" or "hybrid" (nexo-rs); ``fusion`` is "minmax" (oxydra), "rrf" or
        "dbsf"; ``None`` takes the configured value. Any text is a valid query: only its words
        reach FTS5 (see :mod:`core.retrieval.fts_query`). When full-text search matches
        nothing, pynchy's LIKE substring fallback answers. A failing embedder leaves the
        full-text leg to answer alone, and the explanation says so, with every full-text
        statement as the backend ran it. With ``raw_fts`` the query is FTS5 syntax passed
        through as written (``"exact phrase" NEAR(a b) -c``); the backend refuses a syntax
        error as ``InvalidInput``. ``speaker_boost``,
        ``date_boost``, ``neighbour_weight`` and ``neighbour_window`` are the boosts of
        :mod:`core.retrieval.boosts` (None: the configured ones); ``candidate_depth`` how
        many candidates each leg returns (:mod:`core.retrieval.depth`). With
        ``require_session`` a session that does not exist is ``NotFound`` (what a person who
        typed its name needs to hear); without, it holds nothing and finds nothing, as a
        forgotten session does for an agent's ``hybrid_query``.
        """
        ranking, scope, mode_used, wanted_tags = self._validate_query(
            query, session_id, namespace, top_k, vector_weight, fts_weight, tags, fusion,
            rrf_k, mode, min_score)
        ranking = dataclasses.replace(ranking, **boost_settings(
            self._config.retrieval, speaker_boost=speaker_boost, date_boost=date_boost,
            neighbour_weight=neighbour_weight, neighbour_window=neighbour_window))
        depth = leg_depth(self._config.retrieval.candidate_depth, candidate_depth,
                          fused_session=session_id is not None and mode_used == "hybrid",
                          top_k=top_k)
        terms = retrieval.query_terms(query)
        legs = KeptLegs(query=query, scope=scope.describe(), mode=mode_used, terms=terms,
                        fts_expression=None, tags=wanted_tags, depth=depth, raw_fts=raw_fts)

        request = LegRequest(
            scope=scope, depth=depth, tags=tuple(wanted_tags), terms=tuple(terms),
            raw_expression=query if raw_fts else None,
            like_text=None if raw_fts else query.strip() or None,
            context_weight=self._config.retrieval.context_weight,
            model=self._model.embedder.name)
        if raw_fts and not query.strip():
            raise InvalidInput("raw FTS mode needs an expression; an empty one matches nothing")
        full_text, vectors = mode_used != "vector", mode_used != "keyword"
        with self._log.query():
            if scope.session_id is not None:
                await self._session_legs(legs, request, full_text, vectors, query_embedding)
            else:
                await self._namespace_legs(legs, request, full_text, vectors, query_embedding)
        found = rank(legs, ranking)
        if not found.results and scope.session_id is not None and require_session:
            await self._require_session(scope.session_id)
        self._log_query(found, scope, caller)
        return found

    async def _require_session(self, session_id: str) -> None:
        """Refuse a search in a session that does not exist (``NotFound``): "0 results"
        would say the memory holds nothing that matches, when the name is what is wrong.
        Asked only when nothing was found, so a search that finds costs nothing more."""
        if await self._backend.session_agent(session_id) is None:
            raise NotFound(f"no session {inputs.shown(session_id, 100)} to search")

    async def _session_legs(self, legs: KeptLegs, request: LegRequest, full_text: bool,
                            vectors: bool, query_embedding: Sequence[float] | None) -> None:
        """A session's legs: the query embedded, then both legs and the fetch in one hop."""
        started = time.perf_counter()
        qvec = await self._query_vector(legs.query, query_embedding, legs) if vectors else None
        embedded = (time.perf_counter() - started) * 1000
        rows = await self._backend.run_legs(dataclasses.replace(request, query_vector=qvec),
                                            full_text=full_text)
        self._keep(legs, rows)
        if qvec is not None:
            legs.vector_path = rows.vector_path or self._backend.vector_leg_name
        if legs.vector_path == SESSION_VECTOR_LEG:
            legs.index_origins = self._backend.derived_origins(request.scope.value)
        legs.chunks = rows.chunks
        legs.timings_ms.update(rows.timings_ms)
        if vectors:
            legs.timings_ms["vector"] = embedded + rows.timings_ms.get("vector", 0.0)

    async def _namespace_legs(self, legs: KeptLegs, request: LegRequest, full_text: bool,
                              vectors: bool, query_embedding: Sequence[float] | None) -> None:
        """A namespace's legs at once, each on its own reader, with the chunks they found:
        the full-text leg runs while the model embeds the query."""
        rows = await self._backend.namespace_legs(
            request, full_text=full_text,
            query_vector=self._query_vector(legs.query, query_embedding, legs)
            if vectors else None)
        self._keep(legs, rows)
        legs.vector_path = rows.vector_path
        if legs.fts_derived or rows.vector_path == DERIVED_VECTOR_LEG:
            legs.index_origins = self._backend.derived_origins(request.scope.value)
        if (not self._backend.features.exact_vector_search and not request.tags
                and rows.vector_path == self._backend.vector_leg_name):
            # A session's vectors, and tagged ones, are ranked exactly on every backend, as
            # a derived matrix ranks them; a namespace's may go through the database's
            # approximate index.
            legs.vector_approximate = (
                "approximate (HNSW): the namespace's nearest chunks come from an "
                "approximate index, which may miss a few of the exact ones")
        legs.chunks = rows.chunks
        legs.timings_ms.update(rows.timings_ms)

    @staticmethod
    def _keep(legs: KeptLegs, rows: LegRows) -> None:
        """The legs' rows as ranked hits (a vector distance becomes a similarity), and the
        full-text statements as the backend ran them."""
        legs.fts = [retrieval.LegHit(cid, score, n) for n, (cid, score) in enumerate(rows.fts, 1)]
        legs.fts_fallback = "like" if rows.fts_fallback == "like" else None
        legs.fts_derived = rows.fts_fallback == "derived"
        legs.fts_ran = list(rows.fts_ran)
        answered = answering_statement(legs.fts_ran)
        legs.fts_expression = answered.describe() if answered is not None else None
        legs.vector = [retrieval.LegHit(cid, 1.0 - dist, n) for n, (cid, dist) in enumerate(
            [row for row in rows.vector if row[1] is not None], 1)]

    def _log_query(self, found: SearchResult, scope: Scope, caller: str) -> None:
        """Record the query in the retrieval log without making the caller wait for it."""
        if not self._config.retrieval.log_enabled or self._backend.read_only:
            return
        ranking = found.ranking
        entry = {
            "created_at": utc_now(), "caller": caller,
            "scope_kind": scope.kind, "scope_value": scope.value,
            "query": found.legs.query,
            "params": {"session_id": scope.session_id, "namespace": scope.namespace,
                       "top_k": ranking.top_k, "vector_weight": ranking.vector_weight,
                       "fts_weight": ranking.fts_weight, "fusion": ranking.fusion,
                       "rrf_k": ranking.rrf_k, "mode": found.legs.mode,
                       "min_score": ranking.min_score, "tags": found.legs.tags,
                       "raw_fts": found.legs.raw_fts, "speaker_boost": ranking.speaker_boost,
                       "date_boost": ranking.date_boost,
                       "neighbour_weight": ranking.neighbour_weight,
                       "neighbour_window": ranking.neighbour_window,
                       "candidate_depth": found.legs.depth},
            "results": [{"chunk_id": r.chunk_id, "score": r.score,
                         "vector_score": r.vector_score, "fts_score": r.fts_score}
                        for r in found.results],
            "timings_ms": found.legs.timings_ms,
        }
        self._log.add(log_row(entry))

    async def retrieval_log(self, limit: int = 50, *, caller: str | None = None,
                            session_id: str | None = None,
                            namespace: str | None = None) -> list[dict[str, Any]]:
        """Logged queries, newest first, by caller and scope when given."""
        await self.flush_logs()
        if session_id is None and namespace is None:
            entries = await self._backend.read_log(limit, caller)
        else:
            scope = _scope(session_id, namespace)
            entries = await self._backend.read_log(limit, caller, scope.kind, scope.value)
        return [entry.to_dict() for entry in entries]

    async def replay(self, log_id: int, *, namespace: str | None = None,
                     **changes: Any) -> SearchResult:
        """Run a logged query again, exactly as it was asked, in the scope it was asked in
        (``changes`` override a ranking knob, never the scope). ``namespace`` binds the call:
        an entry whose scope is neither that namespace nor a session of it is not found."""
        if "session_id" in changes:
            raise InvalidInput("a replay runs in the scope it was logged in; its session "
                               "cannot be changed (run a new search for another scope)")
        await self.flush_logs()
        entries = await self._backend.read_log(1, log_id=log_id)
        if entries and namespace is not None and not await self._logged_in(entries[0],
                                                                          namespace):
            entries = []
        if not entries:
            bound = "" if namespace is None else f" in namespace {inputs.shown(namespace)}"
            raise NotFound(f"no retrieval log entry {log_id}{bound}")
        params = {**entries[0].params, **changes}
        return await self.search(query=entries[0].query, caller="replay", **params)

    async def _logged_in(self, entry: LogEntry, namespace: str) -> bool:
        """Whether a log entry's scope is ``namespace`` or a session it owns now."""
        namespace = clean_namespace(namespace)
        if entry.scope_kind == "namespace":
            return entry.scope_value == namespace
        return await self._backend.session_agent(entry.scope_value) == namespace

    async def flush_logs(self) -> None:
        """Write the queries still waiting for the log (reads of the log and close call it)."""
        await self._log.flush()

    async def judge(self, query: str, chunk_id: str, grade: int, *,
                    session_id: str | None = None, namespace: str | None = None) -> None:
        """Record how relevant a chunk is to a query (0 not relevant … 3 exactly right)."""
        if isinstance(grade, bool) or not isinstance(grade, int) or not 0 <= grade <= 3:
            raise InvalidInput(f"grade must be an integer from 0 to 3, got {inputs.shown(grade)}")
        scope = _scope(session_id, namespace)
        await self._backend.set_judgment(scope.kind, scope.value, query, chunk_id, grade,
                                         utc_now())

    async def judgments(self, query: str, *, session_id: str | None = None,
                        namespace: str | None = None) -> dict[str, int]:
        """chunk_id -> grade recorded for a query in a scope."""
        scope = _scope(session_id, namespace)
        return await self._backend.read_judgments(scope.kind, scope.value, query)

    async def judged_queries(self, *, session_id: str | None = None,
                             namespace: str | None = None) -> dict[str, dict[str, int]]:
        """query -> {chunk_id: grade} for every query judged in a scope."""
        scope = _scope(session_id, namespace)
        return await self._backend.read_scope_judgments(scope.kind, scope.value)

    async def get_context(self, session_id: str, query: str, *, namespace: str | None = None,
                          caller: str = "get_context") -> ContextResult:
        """aidaemon's tri-hybrid context: recent, salient and relevant events, deduplicated.

        Recency: the last ``recency_limit`` (10) events. Salience: events whose importance
        is at least ``salience_threshold`` (0.85). Relevance: events whose chunks' vector
        similarity to the query exceeds ``relevance_threshold`` (0.655), at most
        ``relevance_limit`` (5). Each event appears once, in sequence order, with the
        strategies that chose it. ``namespace`` binds the call (another namespace's session:
        ``OutOfNamespace``); ``caller`` is who the relevance search is logged as.
        """
        if namespace is not None:
            await require_session_in(self._backend, session_id, namespace)
        inputs.utf8_text(query, "query")
        rcfg = self._config.retrieval
        chosen: dict[int, tuple[MemoryRecord, list[str], float | None]] = {}

        def add(record: MemoryRecord, reason: str, similarity: float | None = None) -> None:
            _, reasons, best = chosen.setdefault(record.sequence, (record, [], None))
            if reason not in reasons:
                reasons.append(reason)
            if similarity is not None:
                chosen[record.sequence] = (record, reasons, max(similarity, best or similarity))

        for record in await self._conversations.recall(session_id, rcfg.recency_limit):
            add(record, "recency")
        for row in await self._backend.salient_events(session_id, rcfg.salience_threshold):
            add(row, "salience")
        relevant = 0
        if query.strip() and chosen:  # no events: no session to search (search refuses one)
            found = await self.search(session_id=session_id, query=query, mode="vector",
                                      top_k=max(rcfg.relevance_limit * 4, 20),
                                      caller=caller)
            wanted: dict[int, float] = {}
            for result in found.results:
                similarity = result.vector_raw
                if similarity is None or similarity <= rcfg.relevance_threshold:
                    continue
                if result.sequence_start not in wanted and len(wanted) >= rcfg.relevance_limit:
                    continue
                wanted[result.sequence_start] = max(similarity,
                                                    wanted.get(result.sequence_start, -1.0))
            if wanted:
                events_by_sequence = {r.sequence: r for r in await self._backend.read_events(
                    session_id, None, min(wanted) - 1) if r.sequence in wanted}
                for sequence, similarity in wanted.items():
                    if sequence in events_by_sequence:
                        add(events_by_sequence[sequence], "relevance", similarity)
                        relevant += 1
        items = [ContextItem(record, reasons, similarity)
                 for _, (record, reasons, similarity) in sorted(chosen.items())]
        counts = {reason: sum(reason in item.reasons for item in items)
                  for reason in ("recency", "salience", "relevance")}
        return ContextResult(session_id, items, counts)

    def _validate_query(self, query: object, session_id: str | None, namespace: str | None,
                        top_k: object, vector_weight: float | None, fts_weight: float | None,
                        tags: Sequence[str] | None, fusion: str | None, rrf_k: int | None,
                        mode: str | None, min_score: float | None,
                        ) -> tuple[Ranking, Scope, str, list[str]]:
        inputs.within_size(inputs.query_text(query), "query",
                           self._config.storage.max_content_kb)
        if isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= MAX_TOP_K:
            raise InvalidInput(f"top_k must be an integer from 1 to {MAX_TOP_K}, "
                               f"got {inputs.shown(top_k)}")
        scope = _scope(session_id, namespace)
        rcfg = self._config.retrieval
        vw = rcfg.vector_weight if vector_weight is None else vector_weight
        fw = rcfg.fts_weight if fts_weight is None else fts_weight
        for name, value in (("vector_weight", vw), ("fts_weight", fw)):
            if isinstance(value, bool) or not isinstance(value, int | float) or \
                    not math.isfinite(value) or value < 0:
                raise InvalidInput(f"{name} must be a non-negative number, "
                                   f"got {inputs.shown(value)}")
        method = rcfg.fusion if fusion is None else fusion
        if method not in retrieval.FUSIONS:
            raise InvalidInput(f"fusion must be one of {', '.join(retrieval.FUSIONS)}; "
                               f"got {inputs.shown(method)}")
        mode_used = rcfg.default_recall_mode if mode is None else mode
        if mode_used not in MODES:
            raise InvalidInput(f"mode must be one of {', '.join(MODES)}; "
                               f"got {inputs.shown(mode_used)}")
        k = rcfg.rrf_k if rrf_k is None else rrf_k
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise InvalidInput(f"rrf_k must be a positive integer, got {inputs.shown(k)}")
        if min_score is not None and (isinstance(min_score, bool) or not isinstance(
                min_score, int | float) or not math.isfinite(min_score)):
            raise InvalidInput(f"min_score must be a number, got {inputs.shown(min_score)}")
        wanted_tags = indexing.normalize_tags(tags, self._config.notes.max_tags,
                                              self._config.notes.max_tag_chars) if tags else []
        ranking = Ranking(float(vw), float(fw), method, k, top_k,
                          None if min_score is None else float(min_score))
        return ranking, scope, mode_used, wanted_tags

    async def _query_vector(self, query: str, query_embedding: Sequence[float] | None,
                            legs: KeptLegs) -> np.ndarray | None:
        """The query's vector, or None with the reason in ``legs.vector_note``."""
        if not self._model.vectors_usable:
            legs.vector_note = ("the vector leg is off: " + (self._model.warning or
                                                            "this file's vectors are unusable"))
            return None
        if query_embedding is not None:
            try:
                with np.errstate(over="ignore"):  # beyond float32 is inf: no vector, below
                    qvec = np.asarray(query_embedding, dtype=np.float32)
            except (TypeError, ValueError, OverflowError):
                raise InvalidInput("query_embedding must be a list of numbers, got "
                                   f"{inputs.shown(query_embedding)}") from None
            if qvec.shape != (self._model.embedder.dimension,):
                raise InvalidInput(f"query_embedding has {qvec.size} values; the model "
                                   f"makes {self._model.embedder.dimension}")
        elif not query.strip():
            legs.vector_note = "the query is empty: the vector leg has nothing to embed"
            return None
        else:
            try:
                qvec = await self._model.embed_query(query)
            except EmbeddingError as exc:
                # The keyword leg still answers: a query never fails because the model did.
                log.warning("query embedding failed; answering from full text only: %s", exc)
                legs.vector_note = f"embedding the query failed ({exc}); full text only"
                return None
        if not np.all(np.isfinite(qvec)) or float(np.linalg.norm(qvec)) == 0:
            legs.vector_note = "the query has no words the model knows: no vector to compare"
            return None
        return qvec


def _scope(session_id: str | None, namespace: str | None) -> Scope:
    """The scope a caller named, or InvalidInput when it named both or neither."""
    # Lengths only: a scope named before the identifier rule can still be searched, and one
    # longer than any identifier names nothing.
    for what, named, limit in (("session_id", session_id, inputs.MAX_SESSION_ID_CHARS),
                               ("namespace", namespace, MAX_IDENTIFIER_CHARS)):
        if named is not None and len(inputs.utf8_text(named, what)) > limit:
            raise InvalidInput(f"{what} {inputs.shown(named)} is {len(named):,} characters; "
                               f"none is longer than {limit:,}")
    try:
        return Scope(session_id=session_id, namespace=namespace)
    except ValueError as exc:
        raise InvalidInput(str(exc)) from None
