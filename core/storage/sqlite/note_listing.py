"""Listing a namespace's notes: filters, pages, and which index leads.

The planner has no statistics, so the order of work is chosen here (see :func:`list_notes`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from core.storage.fts_rows import prefixed, session_prefix, words
from core.storage.rows import NoteRow, like_pattern
from core.storage.sqlite.connection import select_in
from core.storage.sqlite.notes import NOTE_SELECT, notes_with_aliases
from core.storage.vocabulary import NoteQuery, memory_session_id

# A filtered page is reached from its set of note ids up to this many matches; above it the
# namespace is walked in page order (a wide filter fills a page within a few rows).
_SMALL_SET = 2000


def _text_expression(session_id: str, text: str) -> str | None:
    """Every word of ``text`` as a prefix of a word of the note's content or name (AND)."""
    prefix = session_prefix(session_id)
    found = dict.fromkeys(word.lower() for word in words(text))
    if not found:
        return None
    terms = " AND ".join(f'"{prefixed(prefix, word)}" *' for word in found)
    return f"{{session_text session_context}} : ({terms})"


def list_notes(conn: Any, query: NoteQuery,
               ) -> tuple[list[NoteRow], int, bool, str | None]:
    """One page of the namespace's notes matching every filter, the total (and whether it is
    exact), and how the text filter matched ("fts", "like" or None).

    The text filter matches words in FTS5 (each word a prefix, all words in one chunk of the
    note's content or its name); when that finds nothing, pynchy's LIKE fallback looks for
    the text as a substring of the name or content.

    Which index leads is chosen here, not left to the planner, which has no statistics: tags
    and words give a set of note ids; a count and a small set's page reach the notes by
    primary key from the set (0.1 ms for a rare word at 100k notes, where walking the
    namespace took 15-40 ms); a large set's page walks the namespace in page order and stops
    once the page is full. The unary ``+`` keeps the namespace's indexes out of a plan.

    Words found in more than ``TEXT_SET_LIMIT`` notes are not turned into a set (that cost
    0.85 s for a word in 75k of 100k notes): the page walks the namespace in order and keeps
    the notes with a matching chunk, and the total counts on only ``COUNT_AHEAD`` notes past
    the page, so it may be a lower bound (the page says so).
    """
    where = ["n.namespace = ?"]
    params: list[Any] = [query.namespace]
    if query.category is not None:
        where.append("n.category = ?")
        params.append(query.category)
    if query.kind is not None:
        where.append("n.kind = ?")
        params.append(query.kind)
    sets: list[str] = []
    set_params: list[Any] = []
    for tag in query.tags:
        sets.append("n.note_id IN (SELECT t.note_id FROM note_tags t"
                    " WHERE t.namespace = ? AND t.tag = ?)")
        set_params += [query.namespace, tag]
    text_match = None
    total: int | None = None
    text = (query.text or "").strip()
    if text:
        session_id = memory_session_id(query.namespace)
        expression = _text_expression(session_id, text)
        if expression is not None:
            found = [row[0] for row in conn.execute(
                "SELECT DISTINCT c.note_id FROM chunks_fts f"
                " JOIN chunks c ON c.fts_rowid = f.rowid"
                " WHERE f.chunks_fts MATCH ? AND c.session_id = ? AND c.note_id IS NOT NULL"
                " LIMIT ?", (expression, session_id, TEXT_SET_LIMIT + 1))]
            if len(found) > TEXT_SET_LIMIT:
                clauses = [*where, *sets]
                if sets and _count(conn, where, params, sets, set_params) <= _SMALL_SET:
                    clauses[0] = "+n.namespace = ?"  # the tags' few notes lead, then sort
                rows, counted, exact = _walk_for_text(conn, query, clauses,
                                                      [*params, *set_params], expression)
                if counted:
                    return rows, counted, exact, "fts"
            elif found:
                clause = "n.note_id IN (SELECT value FROM json_each(?))"
                total = _count(conn, where, params, [*sets, clause],
                               [*set_params, json.dumps(found)])
                if total:
                    text_match = "fts"
                    sets.append(clause)
                    set_params.append(json.dumps(found))
        if text_match is None:
            text_match = "like"
            pattern = like_pattern(text)
            where.append("(n.name LIKE ? ESCAPE '\\' OR n.content LIKE ? ESCAPE '\\')")
            params += [pattern, pattern]
            total = None
    if total is None:
        total = _count(conn, where, params, sets, set_params)
    clauses = where + sets
    if sets and total <= _SMALL_SET:
        clauses[0] = "+n.namespace = ?"
    rows = conn.execute(f"{NOTE_SELECT} WHERE {' AND '.join(clauses)} ORDER BY {_order(query)}"
                        " LIMIT ? OFFSET ?",
                        [*params, *set_params, query.limit, query.offset]).fetchall()
    return notes_with_aliases(conn, rows), total, True, text_match


# A text filter whose words are in more notes than this is checked note by note during a
# walk in page order instead of becoming a set of note ids.
TEXT_SET_LIMIT = 5000
# How many matching notes past the page such a walk counts before it stops.
COUNT_AHEAD = 1000


def _order(query: NoteQuery) -> str:
    return "n.updated_at DESC, n.note_id" if query.order == "updated" else "n.name"


def _walk_for_text(conn: Any, query: NoteQuery, clauses: list[str], params: list[Any],
                   expression: str) -> tuple[list[NoteRow], int, bool]:
    """A broad text filter's page: the namespace in page order, kept when one of the note's
    chunks is among the rows the words match; counted up to ``COUNT_AHEAD`` past the page."""
    matching = {row[0] for row in conn.execute(
        "SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ?", (expression,))}
    cursor = conn.execute(
        f"SELECT n.note_id, (SELECT group_concat(c.fts_rowid) FROM chunks c"
        f" WHERE c.note_id = n.note_id) FROM notes n WHERE {' AND '.join(clauses)}"
        f" ORDER BY {_order(query)}", params)
    page: list[str] = []
    counted = 0
    exact = True
    for note_id, chunk_rowids in cursor:
        if not chunk_rowids or not any(int(rowid) in matching
                                       for rowid in chunk_rowids.split(",")):
            continue
        counted += 1
        if query.offset < counted <= query.offset + query.limit:
            page.append(note_id)
        elif counted >= query.offset + query.limit + COUNT_AHEAD:
            exact = False
            break
    cursor.close()
    by_id = {row[0]: row for row in select_in(conn, f"{NOTE_SELECT} WHERE n.note_id IN", page)}
    return notes_with_aliases(conn, [by_id[note_id] for note_id in page]), counted, exact


def _count(conn: Any, where: Sequence[str], params: Sequence[Any], sets: Sequence[str],
           set_params: Sequence[Any]) -> int:
    """How many notes match: from the sets by primary key when there are sets."""
    clauses = [*where, *sets]
    if sets:
        clauses[0] = "+n.namespace = ?"
    return int(conn.execute(f"SELECT count(*) FROM notes n WHERE {' AND '.join(clauses)}",
                            [*params, *set_params]).fetchone()[0])
