"""PostgreSQL: full text's bm25 top ``k`` from the postings table, scoring few chunks.

``chunk_terms`` (migration 0002) holds each chunk's words as rows of one covering B-tree,
keyed by word and session: a word's document frequency in a session or namespace, the
scope's chunk count and total length, and a chunk's count of a word are all ranges of that
index, never a walk over tsvectors.

The top ``k`` comes by MaxScore (Turtle and Flood, 1995), as the SQLite side's namespace
search does (:mod:`core.storage.sqlite.fts_maxscore`): a word's share of a chunk's bm25,
``idf * f(k1 + 1) / (f + k1 * (1 - b + b * len / mean))``, is below ``idf * (k1 + 1)``.
Rank only the chunks holding one of the *essential* words (the rarest), exactly (every
query word they hold counts). A chunk holding none of them scores at most the sum of the
others' bounds; if the ``k``-th ranked chunk scores above that sum, no chunk left out could
enter the top ``k``, and the answer is the exhaustive ranking's. Otherwise the next rarest
word joins the essential ones and the ranking runs again (at worst over every matched chunk).
A word held by more than half the scope has an idf of ~0 (clamped at 1e-6, as FTS5 does) and
is never essential unless it is the query's rarest.

Used for the common case, each typed word one lexeme with no tag filter; a word that parses
into several lexemes (a phrase to match, "foo_bar") or a tag filter takes the exhaustive
query in :func:`core.storage.pg.search.fts_search`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from core.storage.pg.connection import Conn
from core.storage.vocabulary import Scope

BM25_K1 = 1.2  # FTS5's bm25 constants (fts5_aux.c)
BM25_B = 0.75
CONFIG = "memory_english"


@dataclass(frozen=True)
class _Word:
    lexeme: str
    idf: float

    @property
    def bound(self) -> float:
        """The most this word adds to any chunk's score."""
        return self.idf * (BM25_K1 + 1)


def _scope_sql(scope: Scope) -> tuple[str, dict[str, Any]]:
    if scope.session_id is not None:
        return "t.session_id = %(scope)s", {"scope": scope.session_id}
    return ("t.session_id IN (SELECT session_id FROM sessions WHERE"
            " coalesce(agent_identity, '') = %(scope)s)", {"scope": scope.namespace or ""})


async def _words(conn: Conn, scope_sql: str, params: dict[str, Any],
                 terms: Sequence[str]) -> tuple[list[_Word], float] | None:
    """The terms' lexemes found in the scope with their idf, rarest first, and the scope's
    mean chunk length, in one round trip; None when a term parses into more than one
    position (a phrase, which postings alone cannot match)."""
    cursor = await conn.execute(
        "WITH parsed AS MATERIALIZED (SELECT t.ord, u.lexeme, cardinality(u.positions) AS n"
        f"  FROM unnest(%(terms)s::text[]) WITH ORDINALITY t(term, ord),"
        f"  unnest(to_tsvector('{CONFIG}', t.term)) u)"
        " SELECT p.ord, p.lexeme, p.n, NULL::numeric, NULL::numeric FROM parsed p"
        " UNION ALL SELECT NULL, t.lexeme, NULL, count(*), sum(t.doc_length)"
        " FROM chunk_terms t WHERE t.lexeme = ANY(ARRAY(SELECT lexeme FROM parsed)"
        f"  || ''::text) AND {scope_sql} GROUP BY t.lexeme",
        {**params, "terms": list(terms)})
    positions: dict[int, list[int]] = {}
    counts: dict[str, tuple[int, int]] = {}
    for ordinal, lexeme, held, chunks, length in await cursor.fetchall():
        if ordinal is not None:
            positions.setdefault(int(ordinal), []).append(int(held))
        else:
            counts[str(lexeme)] = (int(chunks), int(length or 0))
    if any(found != [1] for found in positions.values()):
        return None
    chunks, total_length = counts.pop("", (0, 0))
    mean = max(total_length / chunks, 1.0) if chunks else 1.0
    words = [_Word(lexeme, max(1e-6, math.log((chunks - df + 0.5) / (df + 0.5))))
             for lexeme, (df, _) in counts.items()]
    words.sort(key=lambda word: (-word.idf, word.lexeme))
    return words, mean


async def _ranked(conn: Conn, scope_sql: str, params: dict[str, Any], words: list[_Word],
                  cut: int, mean: float, k: int,
                  context_weight: float) -> list[tuple[str, float]]:
    """The top ``k`` of the chunks holding one of the first ``cut`` words (the essential
    ones), scored over every word.

    Their essential words' share is summed from those words' postings; the other words add
    at most their bounds' sum, so only a chunk whose share reaches the ``k``-th best share
    less that sum can end in the top ``k``, and only those have the other words' postings
    looked up, by their full key.
    """
    essential, rest = words[:cut], words[cut:]
    bm25 = ("q.idf * f.f * (%(k1)s + 1) / (f.f + %(k1)s * (1 - %(b)s + %(b)s * t.doc_length"
            " / %(mean)s))")
    cursor = await conn.execute(
        "WITH query(lexeme, idf) AS (SELECT * FROM unnest(%(lexemes)s::text[],"
        "  %(idfs)s::float8[])),"
        f" shares AS MATERIALIZED (SELECT t.session_id, t.fts_rowid, sum({bm25}) AS share"
        "  FROM chunk_terms t JOIN query q ON q.lexeme = t.lexeme,"
        "  LATERAL (SELECT t.f_text + %(cw)s * t.f_context AS f) f"
        f"  WHERE t.lexeme = ANY(%(essential)s::text[]) AND {scope_sql} AND f.f > 0"
        "  GROUP BY t.session_id, t.fts_rowid),"
        " floor AS (SELECT coalesce((SELECT share FROM shares ORDER BY share DESC"
        "  LIMIT 1 OFFSET %(k)s - 1), 0) - %(rest)s AS share),"
        " scored AS (SELECT s.fts_rowid, s.share + coalesce(o.share, 0) AS score"
        "  FROM shares s CROSS JOIN floor, LATERAL ("
        # OFFSET 0 keeps this a lookup per chunk: flattened into a join, the planner
        # would hash every posting of each common word instead.
        f"   SELECT sum({bm25}) AS share FROM query q JOIN chunk_terms t"
        "   ON t.lexeme = q.lexeme AND t.session_id = s.session_id"
        "   AND t.fts_rowid = s.fts_rowid,"
        "   LATERAL (SELECT t.f_text + %(cw)s * t.f_context AS f) f"
        "   WHERE q.lexeme = ANY(%(others)s::text[]) AND f.f > 0 OFFSET 0) o"
        "  WHERE s.share >= floor.share"
        "  ORDER BY score DESC, s.fts_rowid LIMIT %(k)s)"
        " SELECT c.chunk_id, s.score FROM scored s JOIN chunks c ON c.fts_rowid = s.fts_rowid"
        " ORDER BY s.score DESC, s.fts_rowid",
        {**params, "essential": [w.lexeme for w in essential],
         "others": [w.lexeme for w in rest],
         "lexemes": [w.lexeme for w in words], "idfs": [w.idf for w in words],
         # The bound's sum, widened by a hair so float rounding never leaves a chunk out.
         "rest": sum(w.bound for w in rest) * (1 + 1e-9) + 1e-12,
         "cw": float(context_weight), "k1": BM25_K1, "b": BM25_B, "mean": mean, "k": k})
    return [(str(row[0]), float(row[1])) for row in await cursor.fetchall()]


async def top_k(conn: Conn, scope: Scope, terms: Sequence[str], k: int,
                context_weight: float, rounds: list[list[str]] | None = None,
                ) -> list[tuple[str, float]] | None:
    """The ``k`` chunks of ``scope`` with the highest bm25 for ``terms`` ORed:
    (chunk_id, score), best first, ties by write order; None when a term is a phrase.
    Each ranking's essential lexemes are appended to ``rounds``.

    A session's chunks are few: all its matched chunks are ranked at once. A namespace's
    start from the rarest word alone.
    """
    scope_sql, params = _scope_sql(scope)
    found = await _words(conn, scope_sql, params, terms)
    if found is None:
        return None
    words, mean = found
    rows: list[tuple[str, float]] = []
    cut = len(words) if scope.session_id is not None else min(1, len(words))
    while True:
        rows = await _ranked(conn, scope_sql, params, words, cut, mean, k, context_weight)
        if rounds is not None:
            rounds.append([word.lexeme for word in words[:cut]])
        if cut >= len(words):
            return rows
        if len(rows) < k:  # too few candidates yet: the next rarest word joins
            cut += 1
            continue
        # The k-th score only grows as words join the essential ones (more candidates,
        # the same exact scores): the next cut is the first whose rest could not beat it.
        reached = rows[k - 1][1]
        if _rest_bound(words, cut) < reached:
            return rows
        cut += 1
        while cut < len(words) and _rest_bound(words, cut) >= reached:
            cut += 1


def _rest_bound(words: list[_Word], cut: int) -> float:
    """The most the words after the first ``cut`` add to any chunk's score."""
    return sum(word.bound for word in words[cut:])
