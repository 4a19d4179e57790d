"""PostgreSQL: a namespace's two legs answered by its derived indexes in memory
(:mod:`core.storage.pg.derived`), or None for the SQL path to answer.

The full-text leg takes the terms the postings path of :mod:`core.storage.pg.fts_bm25`
takes (no tag filter, each typed term one lexeme): PostgreSQL turns each term into its
lexemes once (``to_tsvector`` over the schema's configuration), and the answer is cached.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from core.storage.fts_rows import words
from core.storage.pg.connection import Conn, PgDatabase
from core.storage.pg.derived import PgDerivedIndexes
from core.storage.pg.fts_bm25 import CONFIG

DERIVED_VECTOR_LEG = "namespace matrix (numpy, exact)"
"""What answers a namespace's vector leg once its derived matrix is built."""

_CACHED_TERMS = 50_000


class DerivedLegs:
    """The derived legs of one backend, and its cache of terms' lexemes."""

    def __init__(self, db: PgDatabase) -> None:
        self._db = db
        self.indexes = PgDerivedIndexes(db)
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
                             context_weight: float) -> list[tuple[str, float]] | None:
        """The namespace's bm25 top ``k`` from its postings in memory; None when they are not
        built yet or a term is a phrase (which the SQL path matches)."""
        kept = [term for term in terms if words(term)]
        if not kept:
            return None
        lexemes = await self._query_lexemes(kept)
        if lexemes is None:
            return None
        held = await self.indexes.synced(namespace)
        if held is None:
            return None
        top = held.postings.top_k(lexemes, k, context_weight)
        return [(held.chunk_ids[rowid], score) for rowid, score in top
                if rowid in held.chunk_ids]

    async def _query_lexemes(self, terms: Sequence[str]) -> list[str] | None:
        """The terms' lexemes, each term's from the cache or (for the others, in one round
        trip) from PostgreSQL; None when a term holds more than one position."""
        known = {term: self._lexemes[term] for term in terms if term in self._lexemes}
        missing = [term for term in dict.fromkeys(terms) if term not in known]
        if missing:
            known.update(await self._db.read(_parse, missing))
            if len(self._lexemes) + len(missing) > _CACHED_TERMS:
                self._lexemes.clear()
            self._lexemes.update({term: known[term] for term in missing})
        lexemes: list[str] = []
        for term in terms:
            entries = known[term]
            if entries and [held for _, held in entries] != [1]:
                return None
            lexemes.extend(lexeme for lexeme, _ in entries)
        return lexemes

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
