"""SQL for notes: identity, names and aliases, tags, and the rows that index them.

Where a note lives. A namespace's notes belong to its memory session ``memory:{namespace}``
(seed 001 keeps notes in session ``memory:{user_id}``), whose agent identity is the
namespace (the engine's namespaces are agent identities, seed 003). A session query on that
session therefore searches exactly the namespace's notes, and a namespace query finds them
beside the agent's conversations. The engine refuses messages for ``memory:`` sessions, so
such a session holds notes only.

How a note is indexed. Each note is one event of its memory session, at the session's next
sequence, and its chunks, written in the rows a message's chunks have: the same ``chunks``
columns, the same ``chunks_fts`` rows (:func:`core.storage.fts_rows.fts_rows`: plain words,
scope token, session-prefixed words) and vectors left to the embedding worker. It differs
in three ways, each for a reason:

- A chunk's context is the note's name. Seed 004 searches a note by the words of its content
  and its name; aliases add no words. The context is matched at the configured context
  weight and blended into the chunk's vector, as a message's earlier turns are.
- A chunk's id is made from the note id, the name and the chunk's content hash, not the
  session's: two notes sharing a paragraph each keep their own chunk, so removing one never
  takes the other out of the index (message dedup would share it). The id also fixes all a
  vector is made from (text and context), so a vector the worker computed before a rename
  can never be saved onto the renamed chunk.
- ``chunks.note_id`` names the note, so writing or removing it finds its chunks by index.

Every operation is one transaction that resolves names inside it, so a second writer can
never slip between a check and a write; every statement names the namespace, so an id or
name from another namespace finds nothing.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from core.errors import InvalidInput, NameTaken, NotFound
from core.storage.connection import select_in, transaction
from core.storage.events import (
    CHUNK_COLUMNS,
    PreparedChunk,
    chunk_scope_token,
    insert_rows,
    next_fts_rowid,
)
from core.storage.fts_rows import FTS_COLUMNS, fts_rows, prefixed, session_prefix, words
from core.storage.search import like_pattern

MEMORY_PREFIX = "memory:"

# A filtered page is reached from its set of note ids up to this many matches; above it the
# namespace is walked in page order (a wide filter fills a page within a few rows).
_SMALL_SET = 2000
_NOTE_COLUMNS = ("note_id", "namespace", "session_id", "name", "content", "kind", "category",
                 "tags_json", "source", "importance", "event_sequence", "created_at",
                 "updated_at", "schema_version")
_SELECT = "SELECT " + ", ".join(f"n.{column}" for column in _NOTE_COLUMNS) + " FROM notes n"


def memory_session_id(namespace: str) -> str:
    """The session that holds a namespace's notes."""
    return MEMORY_PREFIX + namespace


def note_chunk_id(note_id: str, name: str, content_hash: str) -> str:
    """A note chunk's id: fixed by its note, its context (the name) and its text."""
    digest = hashlib.sha256(f"{note_id}\x00{name}\x00{content_hash}".encode()).hexdigest()
    return f"chk-{digest[:32]}"


@dataclass(frozen=True)
class NoteRef:
    """How a caller named a note: by its id, or by a name or alias."""

    note_id: str | None = None
    name: str | None = None

    def describe(self) -> str:
        """The reference in words, for messages."""
        return f"note {self.note_id}" if self.note_id is not None else f"note {self.name!r}"


@dataclass(frozen=True)
class NoteDraft:
    """A new note, validated and chunked above storage."""

    note_id: str
    namespace: str
    name: str
    aliases: tuple[str, ...]
    content: str
    kind: str
    category: str
    tags: tuple[str, ...]
    source: str
    importance: float
    chunks: tuple[PreparedChunk, ...]
    schema_version: int = 1
    created_at: str | None = None  # an import keeps the exported times; None: now
    updated_at: str | None = None


@dataclass(frozen=True)
class NoteChanges:
    """What a write changes; None keeps the note's value."""

    content: str | None = None
    chunks: tuple[PreparedChunk, ...] | None = None
    kind: str | None = None
    category: str | None = None
    tags: tuple[str, ...] | None = None
    source: str | None = None
    importance: float | None = None


@dataclass(frozen=True)
class NoteQuery:
    """A listing's filters and page; every filter is applied in SQL."""

    namespace: str
    category: str | None = None
    kind: str | None = None
    tags: tuple[str, ...] = ()
    text: str | None = None
    order: str = "name"  # "name" or "updated" (most recent first)
    limit: int = 50
    offset: int = 0


# -- reading -------------------------------------------------------------------------------


def _notes(conn: Any, rows: Sequence[Sequence[Any]]) -> list[dict[str, Any]]:
    """Note rows as dicts, with their aliases (sorted) and tags."""
    aliases: dict[str, list[str]] = {}
    for note_id, name in select_in(
            conn, "SELECT note_id, name FROM note_names WHERE is_alias = 1 AND note_id IN",
            [row[0] for row in rows]):
        aliases.setdefault(note_id, []).append(name)
    notes = []
    for row in rows:
        note = dict(zip(_NOTE_COLUMNS, row, strict=True))
        note["tags"] = json.loads(note.pop("tags_json"))
        note["aliases"] = sorted(aliases.get(note["note_id"], []))
        notes.append(note)
    return notes


def _by_id(conn: Any, namespace: str, note_id: str) -> dict[str, Any] | None:
    rows = conn.execute(f"{_SELECT} WHERE n.namespace = ? AND n.note_id = ?",
                        (namespace, note_id)).fetchall()
    return _notes(conn, rows)[0] if rows else None


def resolve(conn: Any, namespace: str, ref: NoteRef) -> str | None:
    """The id of the note ``ref`` names in ``namespace`` (None when it names none there)."""
    if ref.note_id is not None:
        row = conn.execute("SELECT note_id FROM notes WHERE namespace = ? AND note_id = ?",
                           (namespace, ref.note_id)).fetchone()
    else:
        row = conn.execute("SELECT note_id FROM note_names WHERE namespace = ? AND name = ?",
                           (namespace, ref.name)).fetchone()
    return None if row is None else row[0]


def read_note(conn: Any, namespace: str, ref: NoteRef) -> dict[str, Any] | None:
    """The note ``ref`` names in ``namespace``."""
    note_id = resolve(conn, namespace, ref)
    return None if note_id is None else _by_id(conn, namespace, note_id)


def _require(conn: Any, namespace: str, ref: NoteRef) -> dict[str, Any]:
    note = read_note(conn, namespace, ref)
    if note is None:
        raise NotFound(f"no {ref.describe()} in namespace {namespace!r}")
    return note


def notes_by_ids(conn: Any, namespace: str,
                 note_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
    """The namespace's notes among ``note_ids``; ids of other namespaces are left out."""
    rows = select_in(conn, f"{_SELECT} WHERE n.namespace = ? AND n.note_id IN", note_ids,
                     [namespace])
    return {note["note_id"]: note for note in _notes(conn, rows)}


def note_names(conn: Any, namespace: str, category: str | None = None) -> list[str]:
    """The namespace's note names in order (seed 002 ``list_memories``)."""
    if category is None:
        rows = conn.execute("SELECT name FROM notes WHERE namespace = ? ORDER BY name",
                            (namespace,)).fetchall()
    else:
        rows = conn.execute("SELECT name FROM notes WHERE namespace = ? AND category = ?"
                            " ORDER BY name", (namespace, category)).fetchall()
    return [row[0] for row in rows]


def all_notes(conn: Any, namespace: str) -> list[dict[str, Any]]:
    """Every note of the namespace, by name (for export)."""
    return _notes(conn, conn.execute(f"{_SELECT} WHERE n.namespace = ? ORDER BY n.name",
                                     (namespace,)).fetchall())


def _text_expression(session_id: str, text: str) -> str | None:
    """Every word of ``text`` as a prefix of a word of the note's content or name (AND)."""
    prefix = session_prefix(session_id)
    found = dict.fromkeys(word.lower() for word in words(text))
    if not found:
        return None
    terms = " AND ".join(f'"{prefixed(prefix, word)}" *' for word in found)
    return f"{{session_text session_context}} : ({terms})"


def list_notes(conn: Any, query: NoteQuery,
               ) -> tuple[list[dict[str, Any]], int, bool, str | None]:
    """One page of the namespace's notes matching every filter, the total (and whether it is
    exact), and how the text filter matched ("fts", "like" or None).

    The text filter matches words in FTS5 (each word a prefix, all words in one chunk of the
    note's content or its name); when that finds nothing, seed 002's LIKE fallback looks for
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
    rows = conn.execute(f"{_SELECT} WHERE {' AND '.join(clauses)} ORDER BY {_order(query)}"
                        " LIMIT ? OFFSET ?",
                        [*params, *set_params, query.limit, query.offset]).fetchall()
    return _notes(conn, rows), total, True, text_match


# A text filter whose words are in more notes than this is checked note by note during a
# walk in page order instead of becoming a set of note ids.
TEXT_SET_LIMIT = 5000
# How many matching notes past the page such a walk counts before it stops.
COUNT_AHEAD = 1000


def _order(query: NoteQuery) -> str:
    return "n.updated_at DESC, n.note_id" if query.order == "updated" else "n.name"


def _walk_for_text(conn: Any, query: NoteQuery, clauses: list[str], params: list[Any],
                   expression: str) -> tuple[list[dict[str, Any]], int, bool]:
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
    by_id = {row[0]: row for row in select_in(conn, f"{_SELECT} WHERE n.note_id IN", page)}
    return _notes(conn, [by_id[note_id] for note_id in page]), counted, exact


def _count(conn: Any, where: Sequence[str], params: Sequence[Any], sets: Sequence[str],
           set_params: Sequence[Any]) -> int:
    """How many notes match: from the sets by primary key when there are sets."""
    clauses = [*where, *sets]
    if sets:
        clauses[0] = "+n.namespace = ?"
    return int(conn.execute(f"SELECT count(*) FROM notes n WHERE {' AND '.join(clauses)}",
                            [*params, *set_params]).fetchone()[0])


# -- the index rows of notes -------------------------------------------------------------


def _next_sequence(conn: Any, session_id: str) -> int:
    """The session's next sequence, above every sequence it ever had (a removed note's too)."""
    row = conn.execute(
        "SELECT max(coalesce((SELECT json_extract(state_json, '$.last_sequence')"
        "                     FROM session_state WHERE session_id = ?1), 0),"
        "           coalesce((SELECT max(sequence) FROM conversation_events"
        "                     WHERE session_id = ?1), 0))", (session_id,)).fetchone()
    return int(row[0]) + 1


def _index(conn: Any, entries: Sequence[tuple[dict[str, Any], Iterable[PreparedChunk]]],
           now: str) -> None:
    """Store each note's event and chunks (seed 001 ``store_note`` steps 2, 3 and 6).

    Set-based, one statement per kind of row whatever the number of notes, so an import of
    100k notes holds the write lock for seconds rather than half a minute.
    """
    if not entries:
        return
    sequences: dict[str, int] = {}
    events: list[tuple[Any, ...]] = []
    chunk_rows: list[tuple[Any, ...]] = []
    fts_rowid = next_fts_rowid(conn)
    for note, chunks in entries:
        note_id, session_id, name = note["note_id"], note["session_id"], note["name"]
        if session_id not in sequences:
            sequences[session_id] = _next_sequence(conn, session_id) - 1
        sequences[session_id] += 1
        sequence = sequences[session_id]
        payload = {"role": "system", "content": note["content"],
                   "metadata": {"note_id": note_id, "name": name, "kind": note["kind"],
                                "category": note["category"], "tags": note["tags"]}}
        events.append((session_id, sequence, json.dumps(payload, ensure_ascii=False), now,
                       note["importance"], note_id))
        metadata = json.dumps({
            "note_id": note_id, "name": name, "kind": note["kind"],
            "category": note["category"], "tags": note["tags"], "source": note["source"],
            "importance": note["importance"], "created_at": note["created_at"],
            "updated_at": note["updated_at"], "schema_version": note["schema_version"],
            "sequence": sequence,
        }, ensure_ascii=False)
        scope_token = chunk_scope_token(session_id, note["namespace"])
        seen: set[str] = set()
        for chunk in chunks:
            if chunk.content_hash in seen:  # a paragraph repeated inside one note: once
                continue
            seen.add(chunk.content_hash)
            chunk_rows.append((note_chunk_id(note_id, name, chunk.content_hash), session_id,
                               chunk.text, chunk.content_hash, sequence, sequence, metadata,
                               fts_rowid, scope_token, now, "pending", name, note_id))
            fts_rowid += 1
    insert_rows(conn, "conversation_events",
                ["session_id", "sequence", "payload_json", "created_at", "importance", "role"],
                [(*event[:5], "system") for event in events])
    conn.executemany(
        "UPDATE session_state SET state_json = json_set(state_json, '$.last_sequence', ?),"
        " updated_at = ? WHERE session_id = ?",
        [(last, now, session_id) for session_id, last in sequences.items()])
    insert_rows(conn, "chunks", [*CHUNK_COLUMNS, "note_id"], chunk_rows)
    insert_rows(conn, "chunks_fts", FTS_COLUMNS,
                fts_rows((row[7], row[1], row[2], row[8], row[11]) for row in chunk_rows))
    conn.executemany("UPDATE notes SET event_sequence = ? WHERE note_id = ?",
                     [(event[1], event[5]) for event in events])


def _unindex(conn: Any, note: dict[str, Any]) -> None:
    """Delete the note's chunks (triggers take their FTS rows and vectors) and its event."""
    conn.execute("DELETE FROM chunks WHERE note_id = ?", (note["note_id"],))
    if note["event_sequence"] is not None:
        conn.execute("DELETE FROM conversation_events WHERE session_id = ? AND sequence = ?",
                     (note["session_id"], note["event_sequence"]))


def _chunks_of(conn: Any, note_id: str) -> list[PreparedChunk]:
    """The note's chunks as stored, in order: a rename indexes the same text again."""
    return [PreparedChunk(text, content_hash) for text, content_hash in conn.execute(
        "SELECT chunk_text, content_hash FROM chunks WHERE note_id = ? ORDER BY fts_rowid",
        (note_id,))]


def _reindex(conn: Any, namespace: str, note_id: str, chunks: Iterable[PreparedChunk],
             now: str) -> dict[str, Any]:
    """Index a note's stored row again (after its old rows were deleted); the note, after."""
    note = _by_id(conn, namespace, note_id)
    assert note is not None
    _index(conn, [(note, chunks)], now)
    return _by_id(conn, namespace, note_id)  # type: ignore[return-value]


def _touch(conn: Any, note_id: str, now: str) -> None:
    """Mark the note changed where its chunks do not need indexing again (aliases)."""
    conn.execute("UPDATE notes SET updated_at = ? WHERE note_id = ?", (now, note_id))
    conn.execute("UPDATE chunks SET metadata_json = json_set(metadata_json, '$.updated_at', ?)"
                 " WHERE note_id = ?", (now, note_id))


# -- names -----------------------------------------------------------------------------------


def _memory_session(conn: Any, namespace: str, now: str) -> str:
    """Create or touch the namespace's memory session; refuse one another agent owns."""
    session_id = memory_session_id(namespace)
    conn.execute(
        "INSERT INTO sessions(session_id, agent_identity, created_at, updated_at)"
        " VALUES (?, ?, ?, ?)"
        " ON CONFLICT(session_id) DO UPDATE SET updated_at = excluded.updated_at",
        (session_id, namespace, now, now))
    (owner,) = conn.execute("SELECT agent_identity FROM sessions WHERE session_id = ?",
                            (session_id,)).fetchone()
    if owner != namespace:
        raise InvalidInput(f"session {session_id!r} belongs to agent {owner!r}, not to "
                           f"namespace {namespace!r}; no note was written")
    conn.execute("INSERT INTO session_state(session_id, state_json, updated_at)"
                 " VALUES (?, '{}', ?) ON CONFLICT(session_id) DO NOTHING", (session_id, now))
    return session_id


def _bindings(conn: Any, namespace: str,
              names: Sequence[str]) -> dict[str, tuple[str, bool, str]]:
    """name -> (note_id, is_alias, that note's name) for the names already bound."""
    return {name: (note_id, bool(is_alias), note_name)
            for name, note_id, is_alias, note_name in select_in(
                conn, "SELECT b.name, b.note_id, b.is_alias, n.name FROM note_names b"
                      " JOIN notes n ON n.note_id = b.note_id"
                      " WHERE b.namespace = ? AND b.name IN", names, [namespace])}


def _refuse_taken(conn: Any, namespace: str, names: Sequence[str],
                  own_id: str | None = None) -> None:
    for name, (note_id, is_alias, holder) in _bindings(conn, namespace, names).items():
        if note_id != own_id:
            bound = "an alias of" if is_alias else "the name of"
            raise NameTaken(f"{name!r} is already {bound} note {holder!r} ({note_id}) in "
                            f"namespace {namespace!r}; nothing was written")


def _new_row(draft: NoteDraft, note_id: str, session_id: str, now: str) -> dict[str, Any]:
    """A new note's row as :func:`_notes` reads it back."""
    return {"note_id": note_id, "namespace": draft.namespace, "session_id": session_id,
            "name": draft.name, "content": draft.content, "kind": draft.kind,
            "category": draft.category, "tags": list(draft.tags), "source": draft.source,
            "importance": draft.importance, "event_sequence": None,
            "created_at": draft.created_at or now, "updated_at": draft.updated_at or now,
            "schema_version": draft.schema_version, "aliases": list(draft.aliases)}


def _insert_notes(conn: Any, rows: Sequence[dict[str, Any]]) -> None:
    """Insert new notes with their names and tags, one statement per table."""
    insert_rows(conn, "notes", _NOTE_COLUMNS, [
        tuple(json.dumps(row["tags"], ensure_ascii=False) if column == "tags_json"
              else row[column] for column in _NOTE_COLUMNS) for row in rows])
    insert_rows(conn, "note_names", ["namespace", "name", "note_id", "is_alias"], [
        binding for row in rows
        for binding in _names_of(row["namespace"], row["note_id"], row["name"], row["aliases"])])
    insert_rows(conn, "note_tags", ["note_id", "namespace", "tag"], [
        (row["note_id"], row["namespace"], tag) for row in rows for tag in row["tags"]])


def _names_of(namespace: str, note_id: str, name: str,
              aliases: Sequence[str]) -> list[tuple[str, str, str, int]]:
    return [(namespace, name, note_id, 0), *[(namespace, a, note_id, 1) for a in aliases]]


def _set_tags(conn: Any, namespace: str, note_id: str, tags: Sequence[str]) -> None:
    conn.execute("DELETE FROM note_tags WHERE note_id = ?", (note_id,))
    insert_rows(conn, "note_tags", ["note_id", "namespace", "tag"],
                [(note_id, namespace, tag) for tag in tags])


# -- operations (seed 004: Add, Rename, Alias, Write, Remove) ---------------------------------


def add_note(conn: Any, draft: NoteDraft, now: str) -> dict[str, Any]:
    """Create a note with its names, tags, event and chunks; NameTaken if a name is bound."""
    with transaction(conn):
        session_id = _memory_session(conn, draft.namespace, now)
        _refuse_taken(conn, draft.namespace, [draft.name, *draft.aliases])
        row = _new_row(draft, draft.note_id, session_id, now)
        _insert_notes(conn, [row])
        _index(conn, [(row, draft.chunks)], now)
        return _by_id(conn, draft.namespace, draft.note_id)  # type: ignore[return-value]


def write_note(conn: Any, namespace: str, ref: NoteRef, changes: NoteChanges,
               now: str) -> dict[str, Any]:
    """Replace a note's content and fields: its chunks and event are deleted and stored
    again (seed 001 update semantics); id, name, aliases and created_at are kept."""
    with transaction(conn):
        note = _require(conn, namespace, ref)
        _memory_session(conn, namespace, now)
        chunks = changes.chunks if changes.chunks is not None else _chunks_of(
            conn, note["note_id"])
        _unindex(conn, note)
        conn.execute(
            "UPDATE notes SET content = coalesce(?, content), kind = coalesce(?, kind),"
            " category = coalesce(?, category), tags_json = coalesce(?, tags_json),"
            " source = coalesce(?, source), importance = coalesce(?, importance),"
            " updated_at = ? WHERE note_id = ?",
            (changes.content, changes.kind, changes.category,
             None if changes.tags is None else json.dumps(list(changes.tags),
                                                          ensure_ascii=False),
             changes.source, changes.importance, now, note["note_id"]))
        if changes.tags is not None:
            _set_tags(conn, namespace, note["note_id"], changes.tags)
        return _reindex(conn, namespace, note["note_id"], chunks, now)


def rename_note(conn: Any, namespace: str, ref: NoteRef, new_name: str,
                now: str) -> dict[str, Any]:
    """Give a note a new name (the old one is released; an alias of its own may become its
    name). The name is indexed with the content, so the note is indexed again."""
    with transaction(conn):
        note = _require(conn, namespace, ref)
        if new_name == note["name"]:
            return note
        _refuse_taken(conn, namespace, [new_name], own_id=note["note_id"])
        _memory_session(conn, namespace, now)
        conn.execute("DELETE FROM note_names WHERE namespace = ? AND name IN (?, ?)",
                     (namespace, note["name"], new_name))
        conn.execute("UPDATE notes SET name = ?, updated_at = ? WHERE note_id = ?",
                     (new_name, now, note["note_id"]))
        insert_rows(conn, "note_names", ["namespace", "name", "note_id", "is_alias"],
                    [(namespace, new_name, note["note_id"], 0)])
        chunks = _chunks_of(conn, note["note_id"])
        _unindex(conn, note)
        return _reindex(conn, namespace, note["note_id"], chunks, now)


def alias_note(conn: Any, namespace: str, ref: NoteRef, alias: str,
               now: str) -> dict[str, Any]:
    """Bind one more name to a note; binding a name it already answers to changes nothing."""
    with transaction(conn):
        note = _require(conn, namespace, ref)
        _refuse_taken(conn, namespace, [alias], own_id=note["note_id"])
        if alias == note["name"] or alias in note["aliases"]:
            return note
        insert_rows(conn, "note_names", ["namespace", "name", "note_id", "is_alias"],
                    [(namespace, alias, note["note_id"], 1)])
        _touch(conn, note["note_id"], now)
        return _by_id(conn, namespace, note["note_id"])  # type: ignore[return-value]


def unalias_note(conn: Any, namespace: str, alias: str, now: str) -> dict[str, Any]:
    """Unbind an alias; the note's own name cannot be unbound (rename it instead)."""
    with transaction(conn):
        row = conn.execute("SELECT note_id, is_alias FROM note_names"
                           " WHERE namespace = ? AND name = ?", (namespace, alias)).fetchone()
        if row is None:
            raise NotFound(f"no alias {alias!r} in namespace {namespace!r}")
        note_id, is_alias = row
        if not is_alias:
            raise InvalidInput(f"{alias!r} is the note's own name, not an alias; rename the "
                               "note to change it")
        conn.execute("DELETE FROM note_names WHERE namespace = ? AND name = ?",
                     (namespace, alias))
        _touch(conn, note_id, now)
        return _by_id(conn, namespace, note_id)  # type: ignore[return-value]


def remove_note(conn: Any, namespace: str, ref: NoteRef) -> bool:
    """Delete a note with its names, tags, event, chunks, FTS rows and vectors."""
    with transaction(conn):
        note = read_note(conn, namespace, ref)
        if note is None:
            return False
        _unindex(conn, note)
        conn.execute("DELETE FROM notes WHERE namespace = ? AND note_id = ?",
                     (namespace, note["note_id"]))
        return True


# -- import ----------------------------------------------------------------------------------


def import_notes(conn: Any, namespace: str, drafts: Sequence[NoteDraft], overwrite: bool,
                 now: str, new_id: Callable[[], str]) -> dict[str, Any]:
    """Apply imported notes in one transaction, or report every collision and apply nothing.

    The drafts' names and aliases are distinct (the caller checked). Without ``overwrite``
    any name already bound in the namespace is a collision and nothing is written. With it
    the file wins: the note a draft's name resolves to is replaced in place (its id and
    created_at kept); any other name the file claims is released, an alias unbound and a
    note whose own name it is removed. A new note keeps the file's id unless that id is
    taken (``new_id()`` makes another) and the file's times when they are given.
    """
    with transaction(conn):
        claimed = {name: draft for draft in drafts for name in (draft.name, *draft.aliases)}
        bound = _bindings(conn, namespace, list(claimed))
        collisions = [
            {"name": name, "imported_note": claimed[name].name, "existing_note_id": note_id,
             "existing_note": holder, "bound_as": "alias" if is_alias else "name"}
            for name, (note_id, is_alias, holder) in bound.items()]
        collisions.sort(key=lambda c: (c["imported_note"], c["name"]))
        if (collisions and not overwrite) or not drafts:
            return {"applied": not collisions, "collisions": collisions, "added": 0,
                    "replaced": 0, "removed": []}
        session_id = _memory_session(conn, namespace, now)
        replaced: dict[str, NoteDraft] = {}
        for draft in drafts:
            binding = bound.get(draft.name)
            if binding is not None and binding[0] not in replaced:
                replaced[binding[0]] = draft
        removed = _release(conn, namespace, bound, set(replaced), now)
        for note_id in replaced:
            note = _by_id(conn, namespace, note_id)
            assert note is not None
            _unindex(conn, note)
            conn.execute("DELETE FROM note_names WHERE note_id = ?", (note_id,))
        for note_id, draft in replaced.items():
            conn.execute(
                "UPDATE notes SET name = ?, content = ?, kind = ?, category = ?, tags_json = ?,"
                " source = ?, importance = ?, updated_at = ? WHERE note_id = ?",
                (draft.name, draft.content, draft.kind, draft.category,
                 json.dumps(list(draft.tags), ensure_ascii=False), draft.source,
                 draft.importance, now, note_id))
            insert_rows(conn, "note_names", ["namespace", "name", "note_id", "is_alias"],
                        _names_of(namespace, note_id, draft.name, draft.aliases))
            _set_tags(conn, namespace, note_id, draft.tags)
            _reindex(conn, namespace, note_id, draft.chunks, now)
        replacing = {id(draft) for draft in replaced.values()}
        fresh = [draft for draft in drafts if id(draft) not in replacing]
        taken = {row[0] for row in select_in(conn, "SELECT note_id FROM notes WHERE note_id IN",
                                             [draft.note_id for draft in fresh])}
        rows = [_new_row(draft, new_id() if draft.note_id in taken else draft.note_id,
                         session_id, now) for draft in fresh]
        _insert_notes(conn, rows)
        _index(conn, [(row, draft.chunks) for row, draft in zip(rows, fresh, strict=True)], now)
        return {"applied": True, "collisions": collisions, "added": len(rows),
                "replaced": len(replaced), "removed": removed}


def _release(conn: Any, namespace: str, bound: dict[str, tuple[str, bool, str]],
             replaced: set[str], now: str) -> list[str]:
    """Free the names an overwriting import claims from notes it does not replace: an alias
    is unbound, a note whose own name it is removed. Returns the removed notes' names."""
    removed: dict[str, str] = {}
    for name, (note_id, is_alias, holder) in bound.items():
        if note_id in replaced or note_id in removed:
            continue
        if is_alias:
            conn.execute("DELETE FROM note_names WHERE namespace = ? AND name = ?",
                         (namespace, name))
            _touch(conn, note_id, now)
        else:
            note = _by_id(conn, namespace, note_id)
            assert note is not None
            _unindex(conn, note)
            conn.execute("DELETE FROM notes WHERE note_id = ?", (note_id,))
            removed[note_id] = holder
    return sorted(removed.values())
