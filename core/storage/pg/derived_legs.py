"""PostgreSQL: a namespace's two legs answered by its derived indexes in memory
(:mod:`core.storage.pg.derived`), or None for the SQL path to answer.

The full-text leg takes the terms the postings path of :mod:`core.storage.pg.fts_bm25`
takes (no tag filter, each typed term one lexeme): PostgreSQL turns each term into its
lexemes once (``to_tsvector`` over the schema's configuration), and the answer is cached.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import numpy as np

from core.storage.executed import DERIVED, Executed
from core.storage.fts_words import words
from core.storage.pg.connection import Conn, PgDatabase
from core.storage.pg.derived import PgDerivedIndexes
from core.storage.pg.fts_bm25 import BM25_B, BM25_K1, CONFIG
from core.storage.pg.postings_index import Scored
from core.storage.pg.search import scope_filter, tsquery_sql
from core.storage.vocabulary import Scope

_CACHED_TERMS = 50_000


class DerivedLegs:
    """The derived legs of one backend, and its cache of terms' lexemes."""

    def __init__(self, db: PgDatabase, budget_bytes: int = 0) -> None:
        self._db = db
        self.indexes = PgDerivedIndexes(db, budget_bytes)
        self._lexemes: dict[str, tuple[tuple[str, int], ...]] = {}

    async def vector_rows(self, namespace: str, query: np.ndarray,
                          k: int) -> list[tuple[str, float]] | None:
        """The namespace's ``k`` nearest chunks, exact, from its matrix; None when the
        matrix is not built yet."""
        held = await self.indexes.synced(namespace)
        if held is None:
            return None
        top = held.vectors.nearest(namespace, query, k)
        return [(held.chunk_ids[rowid], distance) for rowid, distance in top
                if rowid in held.chunk_ids]

    async def full_text_rows(self, namespace: str, terms: Sequence[str], k: int,
                             context_weight: float, ran: list[Executed] | None = None,
                             ) -> list[tuple[str, float]] | None:
        """The namespace's bm25 top ``k`` from its postings in memory, equal to the SQL
        path's (:func:`core.storage.pg.search.fts_search`); None when they are not built.
        What it ranked with is appended to ``ran``.

        A term of several positions ("read_file", "2026-09-12") is a phrase, which postings
        cannot match: a chunk holding its every lexeme is a candidate, and the candidates
        that could enter the top ``k`` are checked against the phrase in SQL (by rowid).
        """
        kept = [term for term in terms if words(term)]
        if not kept:
            return None
        # Both at once: the sync is asked in the turn the vector leg asks, so one serves both.
        parsed, held = await asyncio.gather(self._parsed(kept),
                                            self.indexes.synced(namespace))
        if held is None:
            return None
        lexemes = [lexeme for term in kept for lexeme, _ in parsed[term]]
        phrases = [term for term in kept if _is_phrase(parsed[term])]
        plan = held.postings.plan(
            lexemes, context_weight,
            [lexeme for term in kept if not _is_phrase(parsed[term])
             for lexeme, _ in parsed[term]],
            [[lexeme for lexeme, _ in parsed[term]] for term in phrases])
        checked: dict[int, bool] = {}
        cut = 1
        while True:
            scored = plan.scored(cut)
            top = await self._checked_top(scored, k, phrases, checked)
            if cut >= len(plan.words) or scored.complete:
                break
            # The k-th score only grows as lexemes join the essential ones: the next cut is
            # the first whose rest could still beat it.
            reached = top[k - 1][1] if len(top) >= k else -1.0
            if plan.rest_bound(cut) < reached:
                break
            cut += 1
            while cut < len(plan.words) and plan.rest_bound(cut) >= reached >= 0:
                cut += 1
        found = [(held.chunk_ids[rowid], score) for rowid, score in top
                 if rowid in held.chunk_ids]
        if ran is not None:
            ran.append(Executed(
                DERIVED, tsquery_sql(kept), "bm25 in memory, as the SQL path ranks it",
                scope_filter(Scope(namespace=namespace)), len(found),
                {"words": kept, "lexemes": lexemes, "k1": BM25_K1, "b": BM25_B,
                 "N": held.postings.chunk_count(), "avgdl": held.postings.mean_length(),
                 "weights": {"text": 1.0, "context": float(context_weight)}}))
        return found

    async def _checked_top(self, scored: Scored, k: int, phrases: list[str],
                           checked: dict[int, bool]) -> list[tuple[int, float]]:
        """The ``k`` best of ``scored`` that match: (fts_rowid, score). A chunk that only
        holds a phrase's every lexeme is checked against the phrases in SQL, and only when it
        could be among the ``k`` (``checked`` keeps the answers across calls)."""
        depth = 4 * k
        while True:
            best = scored.best(depth)
            accepted: list[int] = []
            unchecked: list[int] = []
            for i in best:
                rowid = int(scored.rowids[i])
                if scored.matched[i] or checked.get(rowid):
                    accepted.append(int(i))
                elif rowid not in checked:
                    unchecked.append(rowid)
                if len(accepted) + len(unchecked) >= k:
                    break
            if unchecked:
                found = await self._db.read(_phrase_matches, unchecked, phrases)
                checked.update({rowid: rowid in found for rowid in unchecked})
                continue
            if len(accepted) >= k or len(best) == len(scored.rowids):
                return [(int(scored.rowids[i]), float(scored.scores[i]))
                        for i in accepted[:k]]
            depth *= 4

    async def _parsed(self, terms: Sequence[str]) -> dict[str, tuple[tuple[str, int], ...]]:
        """Each term's lexemes with their count of positions, from the cache or (the others,
        in one round trip) from PostgreSQL."""
        known = {term: self._lexemes[term] for term in terms if term in self._lexemes}
        missing = [term for term in dict.fromkeys(terms) if term not in known]
        if missing:
            known.update(await self._db.read(_parse, missing))
            if len(self._lexemes) + len(missing) > _CACHED_TERMS:
                self._lexemes.clear()
            self._lexemes.update({term: known[term] for term in missing})
        return known

    async def close(self) -> None:
        await self.indexes.close()


async def _parse(conn: Conn, terms: list[str]) -> dict[str, tuple[tuple[str, int], ...]]:
    """Each term's lexemes with their count of positions (none for a stop word)."""
    cursor = await conn.execute(
        "SELECT t.term, u.lexeme, cardinality(u.positions)"
        " FROM unnest(%s::text[]) t(term),"
        f" unnest(to_tsvector('{CONFIG}', t.term)) u", (terms,))
    parsed: dict[str, list[tuple[str, int]]] = {term: [] for term in terms}
    for term, lexeme, held in await cursor.fetchall():
        parsed[str(term)].append((str(lexeme), int(held)))
    return {term: tuple(entries) for term, entries in parsed.items()}


def _is_phrase(entries: tuple[tuple[str, int], ...]) -> bool:
    """Whether a term's lexemes need their positions to match (more than one position)."""
    return bool(entries) and [held for _, held in entries] != [1]


async def _phrase_matches(conn: Conn, rowids: list[int], phrases: list[str]) -> set[int]:
    """Which of the chunks ``rowids`` match one of the ``phrases`` as the SQL path matches
    a term (``phraseto_tsquery``)."""
    match = " || ".join([f"phraseto_tsquery('{CONFIG}', %s)"] * len(phrases))
    cursor = await conn.execute(
        f"SELECT fts_rowid FROM chunks WHERE fts_rowid = ANY(%s) AND fts @@ ({match})",
        [rowids, *phrases])
    return {int(row[0]) for row in await cursor.fetchall()}
