"""PostgreSQL: listing a namespace's notes (:mod:`core.storage.sqlite.note_listing` on an async
connection): the same filters, order, page, total and text match.

The text filter looks for every typed word as a prefix of a word of one chunk of the note
(its content, or its name, which is the chunk's context), as SQLite's FTS5 prefix query
does; the words are stemmed by the memory's configuration first (``memory_english``), so
"zebras" finds "zebra". When that finds nothing, the LIKE fallback looks for the text as a
substring of the name or content (ILIKE under the "C" collation folds ASCII case only, as
SQLite's LIKE does).

PostgreSQL's planner has statistics, so the query is written plainly and the total is
always exact (SQLite's broad-word walk may report a lower bound; this one never needs to).
"""

from __future__ import annotations

from typing import Any

from core.storage.fts_rows import words
from core.storage.pg.connection import Conn
from core.storage.pg.notes import SELECT, rows_to_notes
from core.storage.rows import NoteRow, like_pattern
from core.storage.vocabulary import NoteQuery, memory_session_id

CONFIG = "memory_english"


def _text_clause(session_id: str, text: str) -> tuple[str, list[Any]] | None:
    """A clause true for a note with one chunk holding every word of ``text`` as a word
    prefix; None when ``text`` holds no word."""
    found = list(dict.fromkeys(word.lower() for word in words(text)))
    if not found:
        return None
    # quote_literal makes each word one quoted lexeme whatever it holds; ":*" a prefix.
    query = " && ".join(
        [f"to_tsquery('{CONFIG}', quote_literal(%s) || ':*')"] * len(found))
    return (f"EXISTS (SELECT 1 FROM chunks c WHERE c.note_id = n.note_id"
            f" AND c.session_id = %s AND c.fts @@ ({query}))", [session_id, *found])


async def _count(conn: Conn, clauses: list[str], params: list[Any]) -> int:
    cursor = await conn.execute(
        f"SELECT count(*) FROM notes n WHERE {' AND '.join(clauses)}", params)
    row = await cursor.fetchone()
    return 0 if row is None else int(row[0])


async def list_notes(
    conn: Conn,
    query: NoteQuery,
) -> tuple[list[NoteRow], int, bool, str | None]:
    """One page of the namespace's notes matching every filter, the total (and whether it is
    exact: always, here), and how the text filter matched ("fts", "like" or None)."""
    clauses = ["n.namespace = %s"]
    params: list[Any] = [query.namespace]
    if query.category is not None:
        clauses.append("n.category = %s")
        params.append(query.category)
    if query.kind is not None:
        clauses.append("n.kind = %s")
        params.append(query.kind)
    for tag in query.tags:
        clauses.append("n.note_id IN (SELECT t.note_id FROM note_tags t"
                       " WHERE t.namespace = %s AND t.tag = %s)")
        params += [query.namespace, tag]
    text_match = None
    total: int | None = None
    text = (query.text or "").strip()
    if text:
        matched = _text_clause(memory_session_id(query.namespace), text)
        if matched is not None:
            total = await _count(conn, [*clauses, matched[0]], [*params, *matched[1]])
            if total:
                text_match = "fts"
                clauses.append(matched[0])
                params += matched[1]
        if text_match is None:
            text_match = "like"
            pattern = like_pattern(text)
            clauses.append("(n.name ILIKE %s ESCAPE '\\' OR n.content ILIKE %s ESCAPE '\\')")
            params += [pattern, pattern]
            total = None
    if total is None:
        total = await _count(conn, clauses, params)
    order = "n.updated_at DESC, n.note_id" if query.order == "updated" else "n.name"
    cursor = await conn.execute(
        f"{SELECT} WHERE {' AND '.join(clauses)} ORDER BY {order} LIMIT %s OFFSET %s",
        # A negative limit is none and a negative offset none, as SQLite reads them.
        [*params, None if query.limit < 0 else query.limit, max(0, query.offset)])
    return await rows_to_notes(conn, await cursor.fetchall()), total, True, text_match
