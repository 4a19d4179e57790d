"""A namespace's bm25 top ``k`` without scoring every chunk that holds a common word.

FTS5 ranks by computing bm25 for every row the MATCH admits, then sorting: a namespace
query whose words include one found in most chunks ("good", a speaker's name, a word the
conversational context repeats) scores most of the namespace, ~0.7 µs a row. MaxScore
(Turtle and Flood, 1995) gives the same top ``k`` while scoring far fewer rows.

A word's bm25 contribution is ``idf * f(k1 + 1) / (f + k1 * (1 - b + b * len / avglen))``,
always below ``idf * (k1 + 1)``. Split the query's words into *essential* ones (the rarest)
and the rest. A row holding no essential word scores at most ``(k1 + 1) * Σ idf(rest)``.
So match only rows holding an essential word, but keep the other words in the expression
(ORed with the scope token, which every row in scope holds, so they restrict nothing and
bm25 still counts them): those rows get exactly the scores the plain query gives them. If
the ``k``-th of them scores above the bound, no row left out could enter the top ``k``, and
the answer is exactly the plain query's; otherwise the next rarest word joins the essential
ones and the query runs again (at worst it becomes the plain query).

The words' document counts come from an ``fts5vocab`` table and are cached in the
connection's temp schema until the index changes (its structure record changes with every
write). The scope token and the session columns weigh 0 in this bm25, so they add nothing
to any score. ``idf`` is bounded from above with the largest rowid standing in for the row
count (deletions only make it larger than the truth) and each word's count from below by
its larger per-column count: the bound can only come out high, which costs a round, never
a wrong answer.

On a 100k-chunk file of generated conversation (common words in 50-70% of chunks), over 200
queries: the same top 50 as the plain query for every one, 40 ms mean against 84 ms.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from core.storage.executed import FTS5, Executed
from core.storage.sqlite.events import next_fts_rowid

K1 = 1.2  # FTS5's bm25 constants (fts5_aux.c)
_TOKENIZER = "porter unicode61 remove_diacritics 2"  # chunks_fts's, so words stem the same


def ranked_rowids(conn: Any, terms: Sequence[str], scope_filter: str, weights: str,
                  k: int, ran: list[Executed] | None = None) -> list[tuple[int, float]]:
    """The top ``k`` (rowid, -bm25) for ``terms`` ORed inside ``scope_filter``.

    ``scope_filter`` is an FTS5 expression every row of the scope matches (the agent's
    token); ``weights`` gives it weight 0. Equal to running :func:`plain_expression`
    ranked by bm25. Each round's statement is appended to ``ran``: the last one's rows are
    the answer.
    """
    def run(essential: Sequence[str], rest: Sequence[str],
            ) -> list[tuple[int, float]]:
        expression = _expression(essential, rest, scope_filter)
        found = bm25_rowids(conn, expression, weights, k)
        if ran is not None:
            ran.append(Executed(FTS5, expression, f"bm25(chunks_fts, {weights})",
                                rows=len(found),
                                parameters={"essential": list(essential)} if rest else {}))
        return found

    if len(terms) < 2:
        return run(terms, [])
    order = _rarest_first(conn, terms)
    rows_bound = _row_count_bound(conn)
    rows: list[tuple[int, float]] = []
    for cut in range(1, len(order) + 1):
        essential = [term for term, _ in order[:cut]]
        rest = order[cut:]
        rows = run(essential, [term for term, _ in rest])
        if not rest:
            return rows
        ceiling = (K1 + 1) * sum(_idf_ceiling(rows_bound, docs) for _, docs in rest)
        if len(rows) == k and rows[-1][1] > ceiling:
            return rows
    return rows


def plain_expression(terms: Sequence[str], scope_filter: str) -> str:
    """The plain query: ``terms`` ORed (each quoted: words, never syntax) on a chunk's text
    and context, inside ``scope_filter``."""
    return _expression(terms, [], scope_filter)


def _expression(essential: Sequence[str], rest: Sequence[str], scope_filter: str) -> str:
    found = f"{{chunk_text context}} : ({' OR '.join(quoted(t) for t in essential)})"
    if not rest:
        return f"{found} AND {scope_filter}"
    counted = f"{{chunk_text context}} : ({' OR '.join(quoted(t) for t in rest)})"
    return f"{found} AND {scope_filter} AND ({scope_filter} OR {counted})"


def bm25_rowids(conn: Any, match: str, weights: str, k: int) -> list[tuple[int, float]]:
    """FTS5's top ``k`` rows for ``match`` by weighted bm25: (rowid, -bm25)."""
    return conn.execute(
        f"SELECT rowid, -bm25(chunks_fts, {weights}) AS score FROM chunks_fts"
        " WHERE chunks_fts MATCH ? ORDER BY score DESC LIMIT ?", (match, k)).fetchall()


def quoted(text: str) -> str:
    """``text`` as an FTS5 string: a phrase of its words, never syntax."""
    return '"' + text.replace('"', '""') + '"'


def _idf_ceiling(rows: int, docs: int | None) -> float:
    """FTS5's idf for a word in ``docs`` of ``rows`` rows (clamped at 1e-6, as it does);
    unknown counts (a word that is several tokens) get the largest possible idf."""
    if docs is None:
        docs = 0
    return max(1e-6, math.log((rows - docs + 0.5) / (docs + 0.5)))


def _row_count_bound(conn: Any) -> int:
    """At least the FTS row count: every row is a chunk's, rowids are unique and start at 1."""
    return next_fts_rowid(conn) - 1


def _rarest_first(conn: Any, terms: Sequence[str]) -> list[tuple[str, int | None]]:
    """(term, rows holding it) rarest first; a term that is several tokens (or none) has no
    single count and goes first, always essential."""
    docs = term_docs(conn, terms)
    return sorted(((term, docs[term]) for term in terms),
                  key=lambda pair: -1 if pair[1] is None else pair[1])


def term_docs(conn: Any, terms: Sequence[str]) -> dict[str, int | None]:
    """At least how many rows hold each term in their text or context (None: not one token).

    The count is the larger of the two columns' counts, never more than the rows bm25
    counts for the term, so the idf made from it is never below bm25's.

    Cached per connection in its temp schema, and dropped when the index's structure record
    changes (every write to the index changes it).
    """
    _prepare(conn)
    version = conn.execute("SELECT block FROM chunks_fts_data WHERE id = 10").fetchone()
    state = conn.execute("SELECT version FROM temp.memory_term_state").fetchone()
    if state is None or version is None or state[0] != version[0]:
        conn.execute("DELETE FROM temp.memory_term_docs")
        conn.execute("DELETE FROM temp.memory_term_state")
        conn.execute("INSERT INTO temp.memory_term_state(version) VALUES (?)",
                     (None if version is None else version[0],))
    wanted = list(dict.fromkeys(terms))
    known: dict[str, int | None] = dict(conn.execute(
        f"SELECT term, docs FROM temp.memory_term_docs WHERE term IN"
        f" ({','.join('?' * len(wanted))})", wanted).fetchall())
    missing = [term for term in wanted if term not in known]
    if missing:
        for term, stem in zip(missing, _stems(conn, missing), strict=True):
            docs = None
            if stem is not None:
                row = conn.execute(
                    "SELECT max(doc) FROM temp.memory_vocab WHERE term = ?"
                    " AND col IN ('chunk_text', 'context')", (stem,)).fetchone()
                docs = 0 if row is None or row[0] is None else int(row[0])
            known[term] = docs
        conn.executemany("INSERT OR REPLACE INTO temp.memory_term_docs(term, docs)"
                         " VALUES (?, ?)", [(term, known[term]) for term in missing])
    return {term: known[term] for term in terms}


def _stems(conn: Any, terms: Sequence[str]) -> list[str | None]:
    """Each term as chunks_fts's tokenizer indexes it; None when it is not one token."""
    conn.execute("DELETE FROM temp.memory_stem")
    conn.executemany("INSERT INTO temp.memory_stem(rowid, x) VALUES (?, ?)",
                     list(enumerate(terms, 1)))
    tokens: dict[int, list[str]] = {}
    for term, doc in conn.execute("SELECT term, doc FROM temp.memory_stem_vocab"):
        tokens.setdefault(int(doc), []).append(term)
    return [tokens[n][0] if len(tokens.get(n, [])) == 1 else None
            for n in range(1, len(terms) + 1)]


def _prepare(conn: Any) -> None:
    """The connection's temp tables: a tokenizer probe, the vocabularies, the cache."""
    if conn.execute("SELECT 1 FROM temp.sqlite_master WHERE name = 'memory_term_state'"
                    ).fetchone():
        return
    conn.execute(f"CREATE VIRTUAL TABLE temp.memory_stem USING fts5(x, tokenize = '{_TOKENIZER}')")
    conn.execute("CREATE VIRTUAL TABLE temp.memory_stem_vocab"
                 " USING fts5vocab(temp, memory_stem, 'instance')")
    conn.execute("CREATE VIRTUAL TABLE temp.memory_vocab USING fts5vocab(main, chunks_fts, 'col')")
    conn.execute("CREATE TABLE temp.memory_term_docs(term TEXT PRIMARY KEY, docs INTEGER)")
    conn.execute("CREATE TABLE temp.memory_term_state(version BLOB)")
