"""SQL for retrieval's legs: FTS5 bm25, LIKE fallback and vector KNN, inside a scope.

A scope is one session or one namespace (every session of an agent identity). A session's
full-text query matches its own prefixed terms, a namespace's ANDs the agent's token into
MATCH (see :mod:`core.storage.fts_rows`), so FTS5 only scores what the scope holds; vector
queries constrain the vec0 partition keys. Tags are
filtered here, in SQL, on every leg: a chunk qualifies when its ``metadata_json.tags``
holds every requested tag. Every full-text statement is recorded as it ran
(:class:`core.storage.executed.Executed`), for explanations.
"""


from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from core.errors import InvalidInput
from core.inputs import one_line
from core.storage.executed import DERIVED, FTS5, LIKE, Executed, inlined
from core.storage.fts_rows import prefixed, session_prefix
from core.storage.fts_words import words
from core.storage.rows import ChunkRow, like_pattern
from core.storage.sqlite import fts_maxscore
from core.storage.sqlite.chunk_rows import CHUNK_SELECT, chunk_row
from core.storage.sqlite.chunk_rows import fetch_chunks as fetch_chunks  # an operation here too
from core.storage.sqlite.connection import select_in, sqlite_module
from core.storage.sqlite.fts_maxscore import bm25_rowids, quoted
from core.storage.vocabulary import (
    FullTextRows,
    LegRequest,
    LegRows,
    Scope,
    derived_answers,
)

if TYPE_CHECKING:
    from core.storage.derived.fulltext_leg import DerivedFullText

SQLITE_ERROR = 1  # the generic error code, which FTS5 gives a MATCH it cannot parse


def _tags_clause(tags: Sequence[str]) -> tuple[str, list[Any]]:
    if not tags:
        return "", []
    return (" AND (SELECT count(DISTINCT t.value) FROM json_each(c.metadata_json, '$.tags') t"
            " WHERE t.value IN (SELECT value FROM json_each(?))) = ?",
            [json.dumps(list(tags)), len(set(tags))])


def _scope_clause(scope: Scope) -> tuple[str, list[Any]]:
    if scope.session_id is not None:
        return "c.session_id = ?", [scope.session_id]
    return ("c.session_id IN (SELECT session_id FROM sessions WHERE"
            " coalesce(agent_identity, '') = ?)", [scope.namespace or ""])


def fts_search(conn: Any, scope: Scope, terms: Sequence[str], k: int,
               tags: Sequence[str] = (), context_weight: float = 0.5,
               ran: list[Executed] | None = None) -> list[tuple[str, float]]:
    """Top ``k`` chunks holding any of ``terms``: (chunk_id, -bm25, higher is better).

    A chunk's own words weigh 1 in bm25 and its conversational context ``context_weight``.
    A session matches its prefixed copy of the words (see :mod:`core.storage.fts_rows`), so
    only its own doclists are walked; a namespace matches the plain words ANDed with its
    agent token. Each statement run is appended to ``ran``.
    """
    if not terms:
        return []
    tag_sql, tag_params = _tags_clause(tags)
    if scope.session_id is not None:
        session_match = _session_match(scope.session_id, terms, context_weight)
        if session_match is None:
            return []
        match, weights = session_match
        where, params = "c.session_id = ?", [scope.session_id]
    else:
        scope_filter = namespace_filter(scope)
        weights = namespace_weights(context_weight)
        if not tags:
            return _owned_top(conn, scope, fts_maxscore.ranked_rowids(
                conn, list(terms), scope_filter, weights, k, ran))
        match = fts_maxscore.plain_expression(terms, scope_filter)
        where, params = _scope_clause(scope)
    if not tags:
        top = bm25_rowids(conn, match, weights, k)
        _record(ran, Executed(FTS5, match, _bm25(weights), rows=len(top)))
        return _owned_top(conn, scope, top)
    rows = conn.execute(
        f"SELECT c.chunk_id, -bm25(chunks_fts, {weights}) AS score FROM chunks_fts"
        " JOIN chunks c ON c.fts_rowid = chunks_fts.rowid"
        f" WHERE chunks_fts MATCH ? AND {where}{tag_sql} ORDER BY score DESC LIMIT ?",
        [match, *params, *tag_params, k],
    ).fetchall()
    _record(ran, Executed(FTS5, match, _bm25(weights),
                          inlined(where + tag_sql, [*params, *tag_params]), len(rows)))
    return rows


def namespace_filter(scope: Scope) -> str:
    """The FTS5 expression every row of a namespace matches: its agent token."""
    return f'scope_token : "{scope.token}"'


def namespace_weights(context_weight: float) -> str:
    """bm25's column weights for a namespace query: text 1, context ``context_weight``."""
    return f"1.0, 0, {float(context_weight)!r}, 0, 0"


def _bm25(weights: str) -> str:
    return f"bm25(chunks_fts, {weights})"


def _record(ran: list[Executed] | None, executed: Executed) -> None:
    if ran is not None:
        ran.append(executed)


def _owned_top(conn: Any, scope: Scope, top: list[tuple[int, float]]) -> list[tuple[str, float]]:
    """The scope's top rows by bm25, ranked inside FTS5, as (chunk_id, score).

    The MATCH already confines the rows to the scope (a session's prefixed terms, a
    namespace's agent token), so chunk rows are looked up for the top ``k`` only: joining
    first cost a lookup for every matching row (most of a namespace query's time). The
    owner check on the looked-up rows drops what a colliding prefix or token would let in
    (never seen; it can only shorten the list, never widen it).
    """
    if not top:
        return []
    rowids = [rowid for rowid, _ in top]
    if scope.session_id is not None:  # the chunk row names its session; no join needed
        rows = select_in(conn, "SELECT fts_rowid, chunk_id, session_id FROM chunks"
                               " WHERE fts_rowid IN", rowids)
    else:
        rows = select_in(conn, "SELECT c.fts_rowid, c.chunk_id, coalesce(s.agent_identity, '')"
                               " FROM chunks c JOIN sessions s ON s.session_id = c.session_id"
                               " WHERE c.fts_rowid IN", rowids)
    return _owned(top, {rowid: (chunk_id, owner) for rowid, chunk_id, owner in rows},
                  scope.value)


def _owned(top: list[tuple[int, float]], owners: dict[int, tuple[str, str]],
           wanted: str) -> list[tuple[str, float]]:
    """``top``'s rows that belong to ``wanted``, as (chunk_id, score), in rank order."""
    return [(owners[rowid][0], score) for rowid, score in top
            if rowid in owners and owners[rowid][1] == wanted]


def session_bm25(conn: Any, request: LegRequest,
                 ran: list[Executed] | None = None) -> list[tuple[int, float]]:
    """FTS5's top ``depth`` (rowid, -bm25) of a session's prefixed columns for the terms
    (the statement appended to ``ran``)."""
    match = session_match(request)
    if match is None:
        return []
    top = bm25_rowids(conn, *match, request.depth)
    _record(ran, Executed(FTS5, match[0], _bm25(match[1]), rows=len(top)))
    return top


def session_match(request: LegRequest) -> tuple[str, str] | None:
    """A session request's MATCH and bm25 weights, or None (no words)."""
    return _session_match(request.scope.session_id or "", request.terms, request.context_weight)


def _session_match(session_id: str, terms: Sequence[str],
                   context_weight: float) -> tuple[str, str] | None:
    """A session's MATCH over its prefixed terms and the bm25 weights, or None (no words)."""
    prefix = session_prefix(session_id)
    ors = " OR ".join(quoted(prefixed(prefix, term)) for term in terms if words(term))
    if not ors:
        return None
    return (f"{{session_text session_context}} : ({ors})",
            f"0, 0, 0, 1.0, {float(context_weight)!r}")


def fts_search_raw(conn: Any, scope: Scope, expression: str, k: int,
                   tags: Sequence[str] = (), context_weight: float = 0.5,
                   ran: list[Executed] | None = None) -> list[tuple[str, float]]:
    """Top ``k`` chunks for FTS5 syntax a person wrote: (chunk_id, -bm25).

    The expression searches a chunk's text and its context, as a typed query does; it may
    name one of them (``chunk_text : x``, ``context : x``) to narrow it. The scope is
    enforced on the chunks table, never inside the expression: a person's syntax (an
    unbalanced bracket, an OR) could otherwise escape an ANDed scope token. A syntax error
    (SQLite's generic error code, which this statement gives for nothing else) is refused as
    ``InvalidInput`` carrying SQLite's words.
    """
    where, params = _scope_clause(scope)
    tag_sql, tag_params = _tags_clause(tags)
    weights = namespace_weights(context_weight)
    match = f"{{chunk_text context}} : ({expression})"
    try:
        rows = conn.execute(
            f"SELECT c.chunk_id, -bm25(chunks_fts, {weights})"
            " AS score FROM chunks_fts JOIN chunks c ON c.fts_rowid = chunks_fts.rowid"
            f" WHERE chunks_fts MATCH ? AND {where}{tag_sql} ORDER BY score DESC LIMIT ?",
            [match, *params, *tag_params, k],
        ).fetchall()
    except sqlite_module().OperationalError as exc:
        if getattr(exc, "sqlite_errorcode", SQLITE_ERROR) != SQLITE_ERROR:
            raise  # busy, locked, I/O: not the person's syntax
        raise InvalidInput(f"FTS syntax error in raw mode: {one_line(str(exc))}; fix the "
                           "expression, or search without raw mode") from None
    _record(ran, Executed(FTS5, match, _bm25(weights),
                          inlined(where + tag_sql, [*params, *tag_params]), len(rows)))
    return rows


def like_search(conn: Any, scope: Scope, text: str, k: int, tags: Sequence[str] = (),
                ran: list[Executed] | None = None) -> list[tuple[str, float]]:
    """pynchy's fallback: chunks containing ``text`` as a substring, most recent first."""
    where, params = _scope_clause(scope)
    tag_sql, tag_params = _tags_clause(tags)
    pattern = like_pattern(text)
    rows = conn.execute(
        f"SELECT c.chunk_id FROM chunks c WHERE {where} AND c.chunk_text LIKE ? ESCAPE '\\'"
        f"{tag_sql} ORDER BY c.sequence_end DESC, c.chunk_id LIMIT ?",
        [*params, pattern, *tag_params, k],
    ).fetchall()
    _record(ran, Executed(LIKE, pattern, "most recent first",
                          inlined(where + tag_sql, [*params, *tag_params]), len(rows)))
    return [(row[0], 1.0) for row in rows]


def vector_search(conn: Any, scope: Scope, query: np.ndarray, k: int, model: str,
                  tags: Sequence[str] = ()) -> list[tuple[str, float]]:
    """The ``k`` nearest chunks by cosine distance: (chunk_id, distance).

    Without tags, a vec0 KNN inside the scope's partitions. With tags, the tagged chunks of
    the scope are ranked exactly in SQL (``vec_distance_cosine``), so the filter applies
    before the cut, never after. ``model`` is not filtered on in the KNN: a file's vectors
    all come from one model (the engine writes vectors only when the file's model is its
    own, and reindex replaces them all), and the filter cost ~170 ms at 100k chunks because
    sqlite-vec keeps metadata text over 12 bytes out of line.
    """
    blob = np.ascontiguousarray(query, dtype=np.float32).tobytes()
    if not tags:
        column = "session_id" if scope.kind == "session" else "agent_identity"
        return conn.execute(
            "SELECT chunk_id, distance FROM chunks_vec WHERE embedding_blob MATCH ? AND k = ?"
            f" AND {column} = ? ORDER BY distance",
            (blob, k, scope.value),
        ).fetchall()
    where, params = _scope_clause(scope)
    tag_sql, tag_params = _tags_clause(tags)
    return conn.execute(
        "SELECT c.chunk_id, vec_distance_cosine(v.embedding_blob, ?) AS distance"
        " FROM chunks c JOIN chunks_vec v ON v.chunk_id = c.chunk_id"
        f" WHERE {where} AND c.embedding_status = 'done'{tag_sql}"
        " AND v.embedding_model = ? ORDER BY distance LIMIT ?",
        [blob, *params, *tag_params, model, k],
    ).fetchall()


def full_text_leg(conn: Any, request: LegRequest, derived: DerivedFullText | None = None,
                  chunks: dict[str, ChunkRow] | None = None) -> FullTextRows:
    """The full-text leg: bm25 over the terms (or raw syntax), else the LIKE fallback; which
    answered: "like", "derived" (``derived``'s index, when it could) or None (FTS5); and
    what ran. The derived index adds the rows it found to ``chunks`` when given (one read
    for both)."""
    scope, depth, tags = request.scope, request.depth, request.tags
    ran: list[Executed] = []
    if request.raw_expression is not None:
        return FullTextRows(fts_search_raw(conn, scope, request.raw_expression, depth, tags,
                                           request.context_weight, ran), None, ran)
    rows = None
    if derived is not None and derived_answers(request):
        found = derived.rows(conn, scope.namespace or "", request.terms, depth,
                             request.context_weight, chunks)
        if found is not None:
            rows, parameters = found
            ran.append(Executed(
                DERIVED, fts_maxscore.plain_expression(request.terms, namespace_filter(scope)),
                _bm25(namespace_weights(request.context_weight)), rows=len(rows),
                parameters=parameters))
    answered = None if rows is None else "derived"
    if rows is None:
        rows = fts_search(conn, scope, request.terms, depth, tags, request.context_weight, ran)
    if not rows and request.like_text:
        rows = like_search(conn, scope, request.like_text, depth, tags, ran)
        return FullTextRows(rows, "like" if rows else None, ran)
    return FullTextRows(rows, answered, ran)


def run_legs(conn: Any, request: LegRequest, *, full_text: bool,
             session_vectors: SessionVectors | None = None) -> LegRows:
    """Both legs and the chunks they found, one after the other on this connection.

    A session's legs cost well under a millisecond each; running them in one hop saves the
    thread hand-offs that would otherwise cost more than the SQL. ``session_vectors``
    answers a session's vector leg and fetch from a derived index when it can.
    """
    if session_typed(request, full_text):
        return _session_legs(conn, request, session_vectors)
    timings: dict[str, float] = {}
    if session_vectors is not None and session_vector_leg(request, full_text):
        answer = session_vectors(conn, request, [], timings)
        if answer is not None:  # a session's vector-only query (get_context's relevance)
            return LegRows([], None, answer.vector, answer.chunks, timings, answer.vector_path)
    started = time.perf_counter()
    fts_rows: list[tuple[str, float]] = []
    fallback = None
    ran: list[Executed] = []
    if full_text:
        fts_rows, fallback, ran = full_text_leg(conn, request)
        timings["fts"] = (time.perf_counter() - started) * 1000
    vector_rows = _timed_vector_leg(conn, request, timings)
    began = time.perf_counter()
    ids = sorted({row[0] for row in fts_rows} | {row[0] for row in vector_rows})
    chunks = fetch_chunks(conn, ids)
    timings["fetch"] = (time.perf_counter() - began) * 1000
    return LegRows(fts_rows, fallback, vector_rows, chunks, timings, fts_ran=ran)


def session_typed(request: LegRequest, full_text: bool) -> bool:
    """Whether a query is a session's typed hybrid (or keyword) one, answered in one hop."""
    return (full_text and request.scope.session_id is not None and not request.tags
            and request.raw_expression is None)


def session_vector_leg(request: LegRequest, full_text: bool) -> bool:
    """Whether a session query's vector leg and fetch may come from a derived index: it has
    a query vector and no tags, and its full-text leg (if any) is typed words."""
    return (request.query_vector is not None and request.scope.session_id is not None
            and not request.tags and (not full_text or request.raw_expression is None))


class SessionAnswer(NamedTuple):
    """Derived indexes' answer to a session's vector leg and fetch, and to its full-text
    leg when they were asked to rank it too."""

    vector: list[tuple[str, float]]  # (chunk_id, distance), nearest first
    by_rowid: dict[int, Sequence[Any]]  # the full-text leg's rows, for the owner check
    chunks: dict[str, ChunkRow]  # every candidate
    vector_path: str
    top: list[tuple[int, float]]  # the full-text leg's (rowid, -bm25), best first
    fts_derived: bool = False  # the derived full-text index ranked ``top`` (else FTS5)
    fts_ran: tuple[Executed, ...] = ()  # what ranked ``top``, when it was ranked here


# Given the connection, the request, the full-text leg's (rowid, score) rows (None: rank
# them too, from the derived full-text index) and the timings to fill: the answer, or None
# when the SQL path must answer (see core.storage.sqlite.session_vectors).
SessionVectors = Callable[[Any, LegRequest, list[tuple[int, float]] | None, dict[str, float]],
                          SessionAnswer | None]


def _session_legs(conn: Any, request: LegRequest,
                  session_vectors: SessionVectors | None = None) -> LegRows:
    """A session's typed query: bm25 rowids, the vector leg, then every chunk in one read.

    The full-text leg's owner check needs the chunk rows its rowids name, and the fetch
    reads those same rows: reading them once (by rowid for the full-text hits, by id for
    the vector hits not among them) halves the random page reads of a session's query.
    """
    timings: dict[str, float] = {}
    session_id = request.scope.session_id or ""
    ran: list[Executed] = []
    # Both legs from the derived indexes when they can, else bm25 from FTS5 first.
    answered = None if session_vectors is None else session_vectors(
        conn, request, None, timings)
    if answered is None:
        started = time.perf_counter()
        top = session_bm25(conn, request, ran)
        timings["fts"] = (time.perf_counter() - started) * 1000
        if session_vectors is not None:
            answered = session_vectors(conn, request, top, timings)
    else:
        top = answered.top
        ran.extend(answered.fts_ran)
    path = None
    ranked_by = None  # what answered the full-text leg: "derived", or None (FTS5)
    if answered is not None:
        vector_rows, by_rowid, chunks = answered.vector, answered.by_rowid, answered.chunks
        path = answered.vector_path
        ranked_by = "derived" if answered.fts_derived else None
    else:
        vector_rows = _timed_vector_leg(conn, request, timings)
        began = time.perf_counter()
        by_rowid, chunks = session_chunks(conn, session_id, [rowid for rowid, _ in top],
                                          [row[0] for row in vector_rows])
        timings["fetch"] = (time.perf_counter() - began) * 1000
    fts_rows = _owned(top, {rowid: (row[1], row[2]) for rowid, row in by_rowid.items()},
                      session_id)

    fallback = ranked_by
    if not fts_rows and request.like_text:
        began = time.perf_counter()
        fts_rows = like_search(conn, request.scope, request.like_text, request.depth, (), ran)
        if fts_rows:
            fallback = "like"
            chunks.update(fetch_chunks(conn, sorted({cid for cid, _ in fts_rows}
                                                    - chunks.keys())))
        timings["fts"] += (time.perf_counter() - began) * 1000
    return LegRows(fts_rows, fallback, vector_rows, chunks, timings, path, ran)


# A session with at most this many rows per wanted row is read whole, in one range of
# chunks_session_rows: most of it is wanted anyway, and its rows are adjacent pages there. A
# larger one is looked up row by row (reading all of a long session would cost more).
READ_WHOLE_RATIO = 2


def whole_session(conn: Any, session_id: str, most: int) -> list[Sequence[Any]] | None:
    """Every chunk row of a session that holds at most ``most`` (``CHUNK_SELECT``'s
    columns, in session order from ``chunks_session_rows``); None for a longer one."""
    size = conn.execute(
        "SELECT count(*) FROM (SELECT 1 FROM chunks WHERE session_id = ? LIMIT ?)",
        (session_id, most + 1)).fetchone()[0]
    if size > most:
        return None
    return conn.execute(CHUNK_SELECT + " INDEXED BY chunks_session_rows WHERE session_id = ?",
                        (session_id,)).fetchall()


def session_chunks(conn: Any, session_id: str, rowids: Sequence[int], chunk_ids: Sequence[str],
                   ) -> tuple[dict[int, Sequence[Any]], dict[str, ChunkRow]]:
    """A session's candidate rows: by full-text rowid (the rows themselves, for the owner
    check) and every candidate as a chunk, by chunk id.

    A session barely larger than what is wanted is read whole from the index that clusters
    its rows (the migration ``0009``); a larger one is looked up: rowids on that same index,
    the vector leg's ids by primary key.
    """
    wanted_rowids, wanted_ids = set(rowids), set(chunk_ids)
    if not wanted_rowids and not wanted_ids:
        return {}, {}
    whole = whole_session(conn, session_id,
                          READ_WHOLE_RATIO * (len(wanted_rowids) + len(wanted_ids)))
    if whole is not None:
        rows = [row for row in whole if row[0] in wanted_rowids or row[1] in wanted_ids]
    else:
        rows = select_in(conn, CHUNK_SELECT + " INDEXED BY chunks_session_rows"
                         " WHERE session_id = ? AND fts_rowid IN", list(wanted_rowids),
                         [session_id])
    by_rowid = {row[0]: row for row in rows if row[0] in wanted_rowids}
    chunks = {row[1]: chunk_row(row) for row in rows}
    missing = sorted(wanted_ids - chunks.keys())
    chunks.update((row[1], chunk_row(row)) for row in select_in(
        conn, CHUNK_SELECT + " WHERE chunk_id IN", missing))
    return by_rowid, chunks


def _timed_vector_leg(conn: Any, request: LegRequest,
                      timings: dict[str, float]) -> list[tuple[str, float]]:
    """The vector leg's rows (none without a query vector), its time noted in ``timings``."""
    if request.query_vector is None:
        return []
    began = time.perf_counter()
    rows = vector_search(conn, request.scope, request.query_vector, request.depth,
                         request.model, request.tags)
    timings["vector"] = (time.perf_counter() - began) * 1000
    return rows
