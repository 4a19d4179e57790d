"""PostgreSQL: retrieval's legs inside a scope (:mod:`core.storage.sqlite.search`'s operations on
an async connection): bm25 full text, the LIKE fallback, pgvector KNN.

- Full text: each typed term is a phrase (``phraseto_tsquery`` over ``memory_english``,
  as FTS5 quotes each term), the terms ORed; a chunk's text weighs 1 and its context
  ``context_weight`` (the tsvector's weights A and B). The rank is bm25, computed in SQL
  from the tsvectors: measured on the LoCoMo dev questions against SQLite's FTS5 bm25
  (:mod:`core.storage.pg.fts_compare`, ``tests/pg/measure_fts_hnsw.py``), its top 10
  overlaps FTS5's by 0.93 (Kendall tau 0.86) where ``ts_rank_cd``'s best normalisation
  reaches 0.57 (tau 0.18). Without tags, and when each term is one lexeme, the same
  ranking comes from the postings table instead (:mod:`core.storage.pg.fts_bm25`). Raw
  syntax (``websearch_to_tsquery``'s) is ranked by ``ts_rank_cd`` with normalisation
  ``FTS_NORMALIZATION``: its lexemes are not the typed terms bm25 sums over. There, a
  small session's chunks are matched row by row, a large one's and a namespace's through
  the GIN index (``SMALL_SESSION_CHUNKS``).
- Vectors: a session's are ranked exactly, the distance computed for each of its vectors
  (the sort key is an expression the HNSW index cannot serve, so the planner cannot pick
  the index and filter the session's rows out of its approximate answer afterwards). A
  namespace's go through the HNSW index with ``hnsw.ef_search`` raised to
  ``HNSW_EF_SEARCH``: approximate, which ``features.exact_vector_search = False`` says. If
  the index's answer, filtered to the namespace, comes back short of ``k`` (the namespace
  is a small part of a large index), the namespace is ranked exactly instead.
- Tags are filtered in SQL on every leg, before the cut: a chunk qualifies when its
  metadata's ``tags`` holds every requested tag.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from core.storage.executed import LIKE, POSTGRESQL, Executed, inlined, sql_literal
from core.storage.fts_words import words
from core.storage.pg import fts_bm25
from core.storage.pg.connection import Conn
from core.storage.pg.events import vector_text
from core.storage.rows import ChunkRow, like_pattern
from core.storage.vocabulary import FullTextRows, LegRequest, LegRows, Scope

# Raw syntax's rank, ts_rank_cd, normalised by 1 + log(document length) (flag 1), the
# flag closest to bm25 that fts_compare measured (and still far from it).
FTS_NORMALIZATION = 1
# FTS5's bm25 constants (fts5_aux.c).
BM25_K1 = 1.2
BM25_B = 0.75
# Candidates the HNSW search keeps (pgvector's default is 40, its maximum 1000). Over 100k
# chunks of one namespace (workbench bench query, model2vec m2v-minilm-256) recall@10
# against the exact ranking was 0.885 at 200, 0.929 at 400, 0.951 at 800 and 0.963 at 1000
# (the leg's p50 5.6, 8.4, 14.2 and 15.5 ms); building the index with ef_construction 128
# instead of 64 did not change it. The goal is 0.95.
HNSW_EF_SEARCH = 1000
HNSW_EF_SEARCH_MAX = 1000

CONFIG = "memory_english"
# A session's full text is matched row by row up to this many chunks, through the GIN index
# above. Over 100k chunks (workbench bench query), six common words in a session of 100
# chunks: 11.4 ms through the index's bitmaps, 0.75 ms row by row (~7.5 us a chunk, so
# 1,000 chunks stay under the index's cost for common words).
SMALL_SESSION_CHUNKS = 1000


def _tags_clause(tags: Sequence[str]) -> tuple[str, list[Any]]:
    if not tags:
        return "", []
    return (" AND coalesce(c.metadata_json, '{}')::jsonb -> 'tags' @> %s::jsonb",
            [json.dumps(sorted(set(tags)), ensure_ascii=False)])


def _scope_clause(scope: Scope) -> tuple[str, list[Any]]:
    if scope.session_id is not None:
        return "c.session_id = %s", [scope.session_id]
    return ("c.session_id IN (SELECT session_id FROM sessions WHERE"
            " coalesce(agent_identity, '') = %s)", [scope.namespace or ""])


def scope_filter(scope: Scope, tags: Sequence[str] = ()) -> str:
    """The scope's (and the tags') SQL condition on ``chunks c``, its values written in."""
    where, params = _scope_clause(scope)
    tag_sql, tag_params = _tags_clause(tags)
    return inlined(where + tag_sql, [*params, *tag_params], "%s")


def tsquery_sql(terms: Sequence[str]) -> str:
    """The tsquery the typed terms run as, in SQL with the terms written in: each term's
    words as a phrase (``phraseto_tsquery``), ORed."""
    return " || ".join(f"phraseto_tsquery('{CONFIG}', {sql_literal(term)})"
                       for term in terms if words(term))


def _record(ran: list[Executed] | None, executed: Executed) -> None:
    if ran is not None:
        ran.append(executed)


def _weights(context_weight: float) -> str:
    """ts_rank_cd's weights array, {D, C, B, A}: context is B, the chunk's text A."""
    return f"{{0, 0, {float(context_weight)!r}, 1.0}}"


async def _small_session(conn: Conn, session_id: str) -> bool:
    """True when the session holds at most ``SMALL_SESSION_CHUNKS`` chunks (read from the
    session's index, never more than that many entries)."""
    cursor = await conn.execute(
        "SELECT count(*) FROM (SELECT 1 FROM chunks WHERE session_id = %s LIMIT %s) n",
        (session_id, SMALL_SESSION_CHUNKS + 1))
    row = await cursor.fetchone()
    return row is not None and int(row[0]) <= SMALL_SESSION_CHUNKS


async def _ranked(conn: Conn, scope: Scope, query_sql: str, query_params: list[Any], k: int,
                  tags: Sequence[str], context_weight: float) -> list[tuple[str, float]]:
    where, params = _scope_clause(scope)
    tag_sql, tag_params = _tags_clause(tags)
    source, source_params = "chunks c", []
    if scope.session_id is not None and await _small_session(conn, scope.session_id):
        # A small session's chunks are read by its index and each matched, rather than
        # intersected with the GIN index's bitmap of every chunk holding a common word
        # (which the planner prefers): "OFFSET 0" keeps it from flattening the subquery.
        source = "(SELECT * FROM chunks WHERE session_id = %s OFFSET 0) c"
        source_params = [scope.session_id]
    cursor = await conn.execute(
        f"SELECT c.chunk_id, ts_rank_cd(%s::float4[], c.fts, q.query, {FTS_NORMALIZATION})"
        f" AS score FROM {source}, (SELECT {query_sql} AS query) q"
        f" WHERE c.fts @@ q.query AND {where}{tag_sql}"
        " ORDER BY score DESC, c.fts_rowid LIMIT %s",
        [_weights(context_weight), *source_params, *query_params, *params, *tag_params, k])
    return [(str(row[0]), float(row[1])) for row in await cursor.fetchall()]


def terms_query(terms: Sequence[str]) -> tuple[str, list[Any]] | None:
    """The tsquery SQL ORing each term as a phrase, and its parameters; None when no term
    holds a word (nothing can match)."""
    kept = [term for term in terms if words(term)]
    if not kept:
        return None
    return (" || ".join([f"phraseto_tsquery('{CONFIG}', %s)"] * len(kept)), kept)


def _named_scope(scope: Scope) -> tuple[str, dict[str, Any]]:
    if scope.session_id is not None:
        return "c.session_id = %(scope)s", {"scope": scope.session_id}
    return ("c.session_id IN (SELECT session_id FROM sessions WHERE"
            " coalesce(agent_identity, '') = %(scope)s)", {"scope": scope.namespace or ""})


async def fts_search(
    conn: Conn,
    scope: Scope,
    terms: Sequence[str],
    k: int,
    tags: Sequence[str] = (),
    context_weight: float = 0.5,
    ran: list[Executed] | None = None,
) -> list[tuple[str, float]]:
    """Top ``k`` chunks holding any of ``terms``: (chunk_id, bm25, higher is better).
    Words, never syntax: each term is looked for as the words it holds. What ran is
    appended to ``ran``.

    The score is FTS5's bm25, computed from the tsvectors (see the module's docstring):
    per query lexeme, idf × f·(k1+1) / (f + k1·(1 − b + b·len/avglen)), with f the
    lexeme's positions weighted 1 in the chunk's text and ``context_weight`` in its
    context, len the chunk's ``fts_length``, and the document count, mean length and
    document frequencies those of the scope (as a session's prefixed terms give FTS5).
    Without tags, and when each term is one lexeme, the postings table gives the same top
    ``k`` scoring far fewer chunks (:mod:`core.storage.pg.fts_bm25`).
    """
    if not terms:
        return []
    query = terms_query(terms)
    if query is None:
        return []
    if not tags:
        rounds: list[list[str]] = []
        ranked = await fts_bm25.top_k(conn, scope, query[1], k, context_weight, rounds)
        if ranked is not None:
            _record(ran, Executed(
                POSTGRESQL, tsquery_sql(query[1]),
                f"bm25 (k1 {BM25_K1}, b {BM25_B}, text 1.0, context {float(context_weight)!r})"
                " from chunk_terms' postings, MaxScore", scope_filter(scope), len(ranked),
                {"essential lexemes by round": rounds}))
            return ranked
    rows = await fts_search_exhaustive(conn, scope, query[1], k, tags, context_weight)
    _record(ran, Executed(
        POSTGRESQL, tsquery_sql(query[1]),
        f"bm25 (k1 {BM25_K1}, b {BM25_B}, text 1.0, context {float(context_weight)!r})"
        " over the matched tsvectors", scope_filter(scope, tags), len(rows)))
    return rows


async def fts_search_exhaustive(conn: Conn, scope: Scope, terms: Sequence[str], k: int,
                                tags: Sequence[str] = (), context_weight: float = 0.5,
                                ) -> list[tuple[str, float]]:
    """:func:`fts_search` for any terms and tags, every matched chunk scored from its
    tsvector (``terms`` each hold a word)."""
    query = terms_query(terms)
    if query is None:
        return []
    where, params = _named_scope(scope)
    tag_sql = ""
    if tags:
        tag_sql = " AND coalesce(c.metadata_json, '{}')::jsonb -> 'tags' @> %(tags)s::jsonb"
        params["tags"] = json.dumps(sorted(set(tags)), ensure_ascii=False)
    match = " || ".join(f"phraseto_tsquery('{CONFIG}', %(t{i})s)" for i in range(len(query[1])))
    params.update({f"t{i}": term for i, term in enumerate(query[1])})
    params.update({"terms": query[1], "k": k, "cw": float(context_weight), "k1": BM25_K1,
                   "b": BM25_B})
    # A small session's chunks are read once through the session's index and everything
    # below is counted over them; through the GIN index, a common word's bitmap would span
    # every chunk of every session (see SMALL_SESSION_CHUNKS).
    scoped, source, condition = "", "chunks c", where
    if scope.session_id is not None and await _small_session(conn, scope.session_id):
        scoped = ("scoped AS MATERIALIZED (SELECT chunk_id, fts_rowid, fts, fts_length,"
                  f" metadata_json FROM chunks c WHERE {where}),")
        source, condition = "scoped c", "true"
    cursor = await conn.execute(
        f"WITH {scoped} lexemes AS MATERIALIZED ("
        "  SELECT DISTINCT u.lexeme FROM unnest(%(terms)s::text[]) t(term),"
        f"  unnest(to_tsvector('{CONFIG}', t.term)) u),"
        " stats AS MATERIALIZED (SELECT count(*) AS n, greatest(avg(c.fts_length), 1) AS mean"
        f"  FROM {source} WHERE {condition}),"
        f" df AS MATERIALIZED (SELECT l.lexeme, (SELECT count(*) FROM {source}"
        f"  WHERE c.fts @@ format('%%L', l.lexeme)::tsquery AND {condition}) AS hits"
        "  FROM lexemes l),"
        f" matched AS (SELECT c.chunk_id, c.fts_rowid, c.fts, c.fts_length FROM {source}"
        f"  WHERE c.fts @@ ({match}) AND {condition}{tag_sql})"
        " SELECT m.chunk_id, sum(greatest(1e-6, ln((s.n - df.hits + 0.5) / (df.hits + 0.5)))"
        "  * tf.f * (%(k1)s + 1)"
        "  / (tf.f + %(k1)s * (1 - %(b)s + %(b)s * m.fts_length / s.mean))) AS score"
        " FROM matched m CROSS JOIN LATERAL ("
        "  SELECT u.lexeme, cardinality(array_positions(u.weights, 'A'))"
        "   + %(cw)s * cardinality(array_positions(u.weights, 'B')) AS f"
        "  FROM unnest(m.fts) u) tf"
        " JOIN df ON df.lexeme = tf.lexeme CROSS JOIN stats s"
        " WHERE tf.f > 0"
        " GROUP BY m.chunk_id, m.fts_rowid ORDER BY score DESC, m.fts_rowid LIMIT %(k)s",
        params)
    return [(str(row[0]), float(row[1])) for row in await cursor.fetchall()]


async def fts_search_raw(conn: Conn, scope: Scope, expression: str, k: int,
                         tags: Sequence[str] = (), context_weight: float = 0.5,
                         ran: list[Executed] | None = None) -> list[tuple[str, float]]:
    """Top ``k`` chunks for web-search syntax a person wrote ("quoted phrase", or, -not),
    which ``websearch_to_tsquery`` reads without ever refusing (so no syntax error can
    reach the person). The scope is enforced on the chunks, never inside the expression."""
    rows = await _ranked(conn, scope, f"websearch_to_tsquery('{CONFIG}', %s)", [expression],
                         k, tags, context_weight)
    _record(ran, Executed(
        POSTGRESQL, f"websearch_to_tsquery('{CONFIG}', {sql_literal(expression)})",
        f"ts_rank_cd('{_weights(context_weight)}', c.fts, query, {FTS_NORMALIZATION})",
        scope_filter(scope, tags), len(rows)))
    return rows


async def like_search(conn: Conn, scope: Scope, text: str, k: int, tags: Sequence[str] = (),
                      ran: list[Executed] | None = None) -> list[tuple[str, float]]:
    """Pynchy's fallback: chunks containing ``text`` as a substring, most recent first.
    ILIKE under the "C" collation folds ASCII case only, as SQLite's LIKE does."""
    if "\x00" in text:
        # No stored chunk holds a NUL (PostgreSQL text cannot), so nothing contains this
        # text; the query is answered, not refused, as SQLite answers it.
        return []
    where, params = _scope_clause(scope)
    tag_sql, tag_params = _tags_clause(tags)
    cursor = await conn.execute(
        f"SELECT c.chunk_id FROM chunks c WHERE {where}"
        f" AND c.chunk_text ILIKE %s ESCAPE '\\'{tag_sql}"
        " ORDER BY c.sequence_end DESC, c.chunk_id LIMIT %s",
        [*params, like_pattern(text), *tag_params, k])
    rows = [(str(row[0]), 1.0) for row in await cursor.fetchall()]
    _record(ran, Executed(LIKE, like_pattern(text), "most recent first (ILIKE, ASCII case)",
                          scope_filter(scope, tags), len(rows)))
    return rows


async def vector_search(
    conn: Conn, scope: Scope, query: np.ndarray, k: int, model: str, tags: Sequence[str] = ()
) -> list[tuple[str, float]]:
    """The ``k`` nearest chunks by cosine distance: (chunk_id, distance). Exact in a
    session or with tags, HNSW in a namespace (see the module's docstring)."""
    vector = vector_text(query)
    if scope.session_id is not None and not tags:
        return await _rows(conn, (
            "SELECT chunk_id, embedding_blob <=> %s::vector AS distance FROM chunks_vec"
            # "+ 0": a sort key the HNSW index cannot serve, so the ranking is exact.
            " WHERE session_id = %s ORDER BY (embedding_blob <=> %s::vector) + 0, chunk_id"
            " LIMIT %s"), [vector, scope.session_id, vector, k])
    if not tags:
        found = await _hnsw_search(conn, scope.namespace or "", vector, k)
        if found is not None:
            return found
        return await _rows(conn, (
            "SELECT chunk_id, embedding_blob <=> %s::vector AS distance FROM chunks_vec"
            " WHERE agent_identity = %s ORDER BY (embedding_blob <=> %s::vector) + 0,"
            " chunk_id LIMIT %s"), [vector, scope.namespace or "", vector, k])
    where, params = _scope_clause(scope)
    tag_sql, tag_params = _tags_clause(tags)
    return await _rows(conn, (
        "SELECT c.chunk_id, v.embedding_blob <=> %s::vector AS distance"
        " FROM chunks c JOIN chunks_vec v ON v.chunk_id = c.chunk_id"
        f" WHERE {where} AND c.embedding_status = 'done'{tag_sql}"
        " AND v.embedding_model = %s ORDER BY distance, c.chunk_id LIMIT %s"),
        [vector, *params, *tag_params, model, k])


async def _hnsw_search(conn: Conn, namespace: str, vector: str,
                       k: int) -> list[tuple[str, float]] | None:
    """A namespace's nearest through the HNSW index, or None when the index's answer held
    fewer than ``k`` of the namespace's vectors while it has more (filtered away)."""
    ef_search = min(HNSW_EF_SEARCH_MAX, max(HNSW_EF_SEARCH, 2 * k))
    await conn.execute(f"SET LOCAL hnsw.ef_search = {int(ef_search)}")
    rows = await _rows(conn, (
        "SELECT chunk_id, embedding_blob <=> %s::vector AS distance FROM chunks_vec"
        " WHERE agent_identity = %s ORDER BY embedding_blob <=> %s::vector LIMIT %s"),
        [vector, namespace, vector, k])
    if len(rows) >= k:
        return rows
    cursor = await conn.execute(
        "SELECT count(*) FROM (SELECT 1 FROM chunks_vec WHERE agent_identity = %s LIMIT %s) n",
        (namespace, k))
    row = await cursor.fetchone()
    held = 0 if row is None else int(row[0])
    return rows if len(rows) >= held else None


async def _rows(conn: Conn, sql: str, params: list[Any]) -> list[tuple[str, float]]:
    cursor = await conn.execute(sql, params)
    return [(str(row[0]), float(row[1])) for row in await cursor.fetchall()]


async def full_text_leg(conn: Conn, request: LegRequest,
                        ran: list[Executed] | None = None) -> FullTextRows:
    """The full-text leg: bm25 over the terms (ts_rank_cd over raw syntax), else the LIKE
    fallback; and what ran, after what ``ran`` already holds."""
    scope, depth, tags = request.scope, request.depth, request.tags
    ran = [] if ran is None else ran
    if request.raw_expression is not None:
        return FullTextRows(await fts_search_raw(conn, scope, request.raw_expression, depth,
                                                 tags, request.context_weight, ran), None, ran)
    rows = await fts_search(conn, scope, request.terms, depth, tags, request.context_weight,
                            ran)
    if not rows and request.like_text:
        rows = await like_search(conn, scope, request.like_text, depth, tags, ran)
        return FullTextRows(rows, "like" if rows else None, ran)
    return FullTextRows(rows, None, ran)


async def run_legs(conn: Conn, request: LegRequest, *, full_text: bool) -> LegRows:
    """Both legs and the chunks they found, one after the other on this connection (one
    snapshot, one round of connection checkout)."""
    timings: dict[str, float] = {}
    started = time.perf_counter()
    fts_rows: list[tuple[str, float]] = []
    fallback = None
    ran: list[Executed] = []
    if full_text:
        fts_rows, fallback, ran = await full_text_leg(conn, request)
        timings["fts"] = (time.perf_counter() - started) * 1000
    vector_rows: list[tuple[str, float]] = []
    if request.query_vector is not None:
        began = time.perf_counter()
        vector_rows = await vector_search(conn, request.scope, request.query_vector,
                                          request.depth, request.model, request.tags)
        timings["vector"] = (time.perf_counter() - began) * 1000
    began = time.perf_counter()
    ids = sorted({row[0] for row in fts_rows} | {row[0] for row in vector_rows})
    chunks = await fetch_chunks(conn, ids)
    timings["fetch"] = (time.perf_counter() - began) * 1000
    return LegRows(fts_rows, fallback, vector_rows, chunks, timings, fts_ran=ran)


async def fetch_chunks(conn: Conn, chunk_ids: Sequence[str]) -> dict[str, ChunkRow]:
    """Chunk rows by id: text, session, sequence range, metadata, context, time (its first
    message's, as SQLite's ``core.storage.sqlite.chunk_rows`` reads it)."""
    if not chunk_ids:
        return {}
    cursor = await conn.execute(
        "SELECT chunk_id, session_id, chunk_text, sequence_start, sequence_end,"
        " metadata_json, context_text, created_at FROM chunks WHERE chunk_id = ANY(%s)",
        (list(chunk_ids),))
    return {str(row[0]): ChunkRow(row[0], row[1], row[2], int(row[3]), int(row[4]), row[5],
                                  row[6], row[7])
            for row in await cursor.fetchall()}
