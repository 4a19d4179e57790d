"""How close PostgreSQL's full-text ranking comes to bm25's, measured on a loaded memory.

The SQLite backend ranks full text by FTS5's bm25; PostgreSQL has ``ts_rank_cd`` (cover
density) and no bm25. For a query over a session, :func:`bm25_scores` computes FTS5's bm25
from what the tsvectors store (per chunk: each lexeme's positions and their weights, A for
the chunk's text, B for its context; the session's document count and mean length; each
lexeme's document frequency from ``ts_stat``), and :func:`ts_rank_cd_scores` the rank the
search leg uses under a given normalisation. :func:`compare_rankings` then reports, over
many queries, the mean overlap of the two top-10s and the mean Kendall tau of the two
scorings on the chunks either put in its top 10. ``tests/pg/measure_fts_hnsw.py`` runs it
on the LoCoMo dev conversations.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from core.storage.pg.connection import Conn

CONFIG = "memory_english"

# FTS5's bm25 constants (fts5_aux.c).
K1 = 1.2
B = 0.75


async def query_lexemes(conn: Conn, terms: Sequence[str]) -> list[str]:
    """The distinct lexemes ``memory_english`` makes of the terms, in order."""
    cursor = await conn.execute(
        f"SELECT u.lexeme FROM unnest(%s::text[]) WITH ORDINALITY t(term, n),"
        f" unnest(to_tsvector('{CONFIG}', t.term)) u GROUP BY u.lexeme"
        " ORDER BY min(t.n), u.lexeme", (list(terms),))
    return [str(row[0]) for row in await cursor.fetchall()]


async def bm25_scores(conn: Conn, session_id: str, terms: Sequence[str], *,
                      context_weight: float = 0.5) -> dict[str, float]:
    """FTS5's bm25 (higher is better) of every chunk of the session holding a term's
    lexeme, from the stored tsvectors: per lexeme, idf × f·(k1+1) / (f + k1·(1 − b +
    b·len/avglen)), f the lexeme's occurrences weighted 1 in the text and
    ``context_weight`` in the context, len all of the chunk's positions."""
    lexemes = await query_lexemes(conn, terms)
    if not lexemes:
        return {}
    cursor = await conn.execute(
        "SELECT count(*), avg((SELECT coalesce(sum(cardinality(u.positions)), 0)"
        " FROM unnest(c.fts) u)) FROM chunks c WHERE c.session_id = %s", (session_id,))
    row = await cursor.fetchone()
    assert row is not None
    documents, mean_length = int(row[0]), float(row[1] or 0.0)
    if not documents:
        return {}
    cursor = await conn.execute(
        "SELECT word, ndoc FROM ts_stat(format('SELECT fts FROM chunks WHERE session_id = %%L',"
        " %s::text)) WHERE word = ANY(%s)", (session_id, lexemes))
    frequency = {str(r[0]): int(r[1]) for r in await cursor.fetchall()}
    cursor = await conn.execute(
        "SELECT c.chunk_id, u.lexeme, u.weights,"
        " (SELECT sum(cardinality(a.positions)) FROM unnest(c.fts) a)"
        " FROM chunks c, unnest(c.fts) u WHERE c.session_id = %s AND u.lexeme = ANY(%s)",
        (session_id, lexemes))
    scores: dict[str, float] = {}
    for chunk_id, lexeme, weights, length in await cursor.fetchall():
        hits = frequency.get(str(lexeme), 0)
        # FTS5 floors the idf at a millionth, so a term in every row still counts a little.
        idf = max(1e-6, math.log((documents - hits + 0.5) / (hits + 0.5)))
        f = sum(1.0 if w == "A" else context_weight if w == "B" else 0.0 for w in weights)
        norm = K1 * (1 - B + B * float(length) / mean_length)
        scores[str(chunk_id)] = scores.get(str(chunk_id), 0.0) + idf * f * (K1 + 1) / (f + norm)
    return scores


async def ts_rank_cd_scores(conn: Conn, session_id: str, terms: Sequence[str],
                            normalization: int, *,
                            context_weight: float = 0.5) -> dict[str, float]:
    """``ts_rank_cd`` of every matching chunk of the session under ``normalization``,
    with the search leg's query (each term a phrase, ORed) and weights."""
    from core.storage.pg.search import terms_query  # the leg's own query, not a copy

    query = terms_query(terms)
    if query is None:
        return {}
    cursor = await conn.execute(
        f"SELECT c.chunk_id, ts_rank_cd(%s::float4[], c.fts, q.query, %s)"
        f" FROM chunks c, (SELECT {query[0]} AS query) q"
        " WHERE c.fts @@ q.query AND c.session_id = %s",
        [f"{{0, 0, {float(context_weight)!r}, 1.0}}", normalization, *query[1], session_id])
    return {str(r[0]): float(r[1]) for r in await cursor.fetchall()}


def top(scores: dict[str, float], k: int) -> list[str]:
    """The ``k`` best ids, ties broken by id."""
    return [key for key, _ in sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[:k]]


def overlap_at(first: dict[str, float], second: dict[str, float], k: int = 10) -> float | None:
    """The share of the shorter top-``k`` found in the other's top-``k`` (None: both
    empty)."""
    a, b = top(first, k), top(second, k)
    if not a and not b:
        return None
    return len(set(a) & set(b)) / max(1, min(len(a), len(b))) if a and b else 0.0


def kendall_tau(pairs: Sequence[tuple[float, float]]) -> float | None:
    """Kendall's tau-b of paired scores (None under two pairs or with no untied pair)."""
    concordant = discordant = tied_x = tied_y = 0
    for i in range(len(pairs)):
        for j in range(i + 1, len(pairs)):
            dx = pairs[i][0] - pairs[j][0]
            dy = pairs[i][1] - pairs[j][1]
            if dx == 0 and dy == 0:
                continue
            if dx == 0:
                tied_x += 1
            elif dy == 0:
                tied_y += 1
            elif (dx > 0) == (dy > 0):
                concordant += 1
            else:
                discordant += 1
    denominator = math.sqrt((concordant + discordant + tied_x)
                            * (concordant + discordant + tied_y))
    return None if denominator == 0 else (concordant - discordant) / denominator


def tau_at(first: dict[str, float], second: dict[str, float], k: int = 10) -> float | None:
    """Kendall tau of the two scorings over the chunks either puts in its top ``k`` (a
    chunk one scoring does not match scores below all it does)."""
    union = set(top(first, k)) | set(top(second, k))
    floor_a = min(first.values(), default=0.0) - 1
    floor_b = min(second.values(), default=0.0) - 1
    return kendall_tau([(first.get(c, floor_a), second.get(c, floor_b)) for c in union])


@dataclass
class Agreement:
    """Mean overlap@k and Kendall tau of one scoring against a reference, over queries."""

    name: str
    queries: int
    overlap: float
    tau: float

    def line(self) -> str:
        """One line of a report."""
        return (f"{self.name:<28} overlap@10 {self.overlap:.3f}   Kendall tau {self.tau:.3f}"
                f"   ({self.queries} queries)")


def agreement(name: str, pairs: Iterable[tuple[dict[str, float], dict[str, float]]],
              k: int = 10) -> Agreement:
    """The mean agreement of (reference, candidate) scorings, queries with no match on
    either side left out."""
    overlaps: list[float] = []
    taus: list[float] = []
    for reference, candidate in pairs:
        overlap = overlap_at(reference, candidate, k)
        if overlap is None:
            continue
        overlaps.append(overlap)
        tau = tau_at(reference, candidate, k)
        if tau is not None:
            taus.append(tau)
    return Agreement(name, len(overlaps), sum(overlaps) / max(1, len(overlaps)),
                     sum(taus) / max(1, len(taus)))
