"""SQL for notes: identity, names and aliases, tags, and the operations that change them.

Where a note lives. A namespace's notes belong to its memory session ``memory:{namespace}``
(oxydra keeps notes in session ``memory:{user_id}``), whose agent identity is the
namespace (the engine's namespaces are agent identities, nexo-rs). A session query on that
session therefore searches exactly the namespace's notes, and a namespace query finds them
beside the agent's conversations. The engine refuses messages for ``memory:`` sessions, so
such a session holds notes only.

How a note is indexed, and how listings are planned: :mod:`core.storage.sqlite.note_index` and
:mod:`core.storage.sqlite.note_listing`.

Every operation is one transaction that resolves names inside it, so a second writer can
never slip between a check and a write; every statement names the namespace, so an id or
name from another namespace finds nothing.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from core.errors import InvalidInput, NameTaken, NotFound
from core.inputs import shown
from core.storage.messages import PreparedChunk
from core.storage.rows import (
    NOTE_COLUMNS,
    NoteImportOutcome,
    NoteRow,
    import_collisions,
    name_range,
    names_of,
    new_row,
    stored_notes,
)
from core.storage.sqlite.connection import select_in, transaction
from core.storage.sqlite.events import insert_rows
from core.storage.sqlite.note_index import chunks_of, index_notes, touch_note, unindex_note
from core.storage.vocabulary import NoteChanges, NoteDraft, NoteRef, memory_session_id

NOTE_SELECT = "SELECT " + ", ".join(f"n.{column}" for column in NOTE_COLUMNS) + " FROM notes n"


# -- reading -------------------------------------------------------------------------------


def notes_with_aliases(conn: Any, rows: Sequence[Sequence[Any]]) -> list[NoteRow]:
    """Note rows as :class:`NoteRow`, with their aliases (sorted) and tags."""
    return stored_notes(rows, select_in(
        conn, "SELECT note_id, name FROM note_names WHERE is_alias = 1 AND note_id IN",
        [row[0] for row in rows]))


def _by_id(conn: Any, namespace: str, note_id: str) -> NoteRow | None:
    rows = conn.execute(f"{NOTE_SELECT} WHERE n.namespace = ? AND n.note_id = ?",
                        (namespace, note_id)).fetchall()
    return notes_with_aliases(conn, rows)[0] if rows else None


def resolve(conn: Any, namespace: str, ref: NoteRef) -> str | None:
    """The id of the note ``ref`` names in ``namespace`` (None when it names none there)."""
    if ref.note_id is not None:
        row = conn.execute("SELECT note_id FROM notes WHERE namespace = ? AND note_id = ?",
                           (namespace, ref.note_id)).fetchone()
    else:
        row = conn.execute("SELECT note_id FROM note_names WHERE namespace = ? AND name = ?",
                           (namespace, ref.name)).fetchone()
    return None if row is None else row[0]


def read_note(conn: Any, namespace: str, ref: NoteRef) -> NoteRow | None:
    """The note ``ref`` names in ``namespace``."""
    note_id = resolve(conn, namespace, ref)
    return None if note_id is None else _by_id(conn, namespace, note_id)


def _require(conn: Any, namespace: str, ref: NoteRef) -> NoteRow:
    note = read_note(conn, namespace, ref)
    if note is None:
        raise NotFound(f"no {ref.describe()} in namespace {namespace!r}")
    return note


def notes_by_ids(conn: Any, namespace: str,
                 note_ids: Sequence[str]) -> dict[str, NoteRow]:
    """The namespace's notes among ``note_ids``; ids of other namespaces are left out."""
    rows = select_in(conn, f"{NOTE_SELECT} WHERE n.namespace = ? AND n.note_id IN", note_ids,
                     [namespace])
    return {note.note_id: note for note in notes_with_aliases(conn, rows)}


def note_names(conn: Any, namespace: str, category: str | None = None) -> list[str]:
    """The namespace's note names in order (pynchy ``list_memories``)."""
    if category is None:
        rows = conn.execute("SELECT name FROM notes WHERE namespace = ? ORDER BY name",
                            (namespace,)).fetchall()
    else:
        rows = conn.execute("SELECT name FROM notes WHERE namespace = ? AND category = ?"
                            " ORDER BY name", (namespace, category)).fetchall()
    return [row[0] for row in rows]


def all_notes(conn: Any, namespace: str) -> list[NoteRow]:
    """Every note of the namespace, by name (for export)."""
    return notes_with_aliases(conn, conn.execute(
        f"{NOTE_SELECT} WHERE n.namespace = ? ORDER BY n.name", (namespace,)).fetchall())


def notes_under(conn: Any, namespace: str, source: str, prefix: str,
                children_only: bool = False, limit: int | None = None) -> list[NoteRow]:
    """The namespace's notes written by ``source`` whose names start with ``prefix``
    (``children_only``: with no ``/`` after it), by note id."""
    where = ["n.namespace = ?", "n.source = ?"]
    params: list[Any] = [namespace, source]
    bounds = name_range(prefix)
    if bounds is not None:
        where.append("n.name >= ? AND n.name < ?")
        params += bounds
    if children_only:
        where.append("instr(substr(n.name, ?), '/') = 0")
        params.append(len(prefix) + 1)
    sql = f"{NOTE_SELECT} WHERE {' AND '.join(where)} ORDER BY n.note_id"
    if limit is not None:
        sql += " LIMIT ?"
        params.append(limit)
    return notes_with_aliases(conn, conn.execute(sql, params).fetchall())


def _reindex(conn: Any, namespace: str, note_id: str, chunks: Iterable[PreparedChunk],
             now: str) -> NoteRow:
    """Index a note's stored row again (after its old rows were deleted); the note, after."""
    note = _by_id(conn, namespace, note_id)
    assert note is not None
    index_notes(conn, [(note, chunks)], now)
    return _by_id(conn, namespace, note_id)  # type: ignore[return-value]


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
            raise NameTaken(f"{shown(name)} is already {bound} note {shown(holder)} "
                            f"({note_id}) in namespace {namespace!r}; nothing was written")


def _insert_notes(conn: Any, rows: Sequence[NoteRow]) -> None:
    """Insert new notes with their names and tags, one statement per table."""
    insert_rows(conn, "notes", NOTE_COLUMNS, [row.values() for row in rows])
    insert_rows(conn, "note_names", ["namespace", "name", "note_id", "is_alias"], [
        binding for row in rows
        for binding in names_of(row.namespace, row.note_id, row.name, row.aliases)])
    insert_rows(conn, "note_tags", ["note_id", "namespace", "tag"], [
        (row.note_id, row.namespace, tag) for row in rows for tag in row.tags])


def _set_tags(conn: Any, namespace: str, note_id: str, tags: Sequence[str]) -> None:
    conn.execute("DELETE FROM note_tags WHERE note_id = ?", (note_id,))
    insert_rows(conn, "note_tags", ["note_id", "namespace", "tag"],
                [(note_id, namespace, tag) for tag in tags])


# -- operations (crabtalk: Add, Rename, Alias, Write, Remove) ---------------------------------


def add_note(conn: Any, draft: NoteDraft, now: str) -> NoteRow:
    """Create a note with its names, tags, event and chunks; NameTaken if a name is bound."""
    with transaction(conn):
        session_id = _memory_session(conn, draft.namespace, now)
        _refuse_taken(conn, draft.namespace, [draft.name, *draft.aliases])
        row = new_row(draft, draft.note_id, session_id, now)
        _insert_notes(conn, [row])
        index_notes(conn, [(row, draft.chunks)], now)
        return _by_id(conn, draft.namespace, draft.note_id)  # type: ignore[return-value]


def write_note(conn: Any, namespace: str, ref: NoteRef, changes: NoteChanges,
               now: str) -> NoteRow:
    """Replace a note's content and fields: its chunks and event are deleted and stored
    again (oxydra update semantics); id, name, aliases and created_at are kept."""
    with transaction(conn):
        note = _require(conn, namespace, ref)
        _memory_session(conn, namespace, now)
        chunks = changes.chunks if changes.chunks is not None else chunks_of(
            conn, note.note_id)
        unindex_note(conn, note)
        conn.execute(
            "UPDATE notes SET content = coalesce(?, content), kind = coalesce(?, kind),"
            " category = coalesce(?, category), tags_json = coalesce(?, tags_json),"
            " source = coalesce(?, source), importance = coalesce(?, importance),"
            " updated_at = ? WHERE note_id = ?",
            (changes.content, changes.kind, changes.category,
             None if changes.tags is None else json.dumps(list(changes.tags),
                                                          ensure_ascii=False),
             changes.source, changes.importance, now, note.note_id))
        if changes.tags is not None:
            _set_tags(conn, namespace, note.note_id, changes.tags)
        return _reindex(conn, namespace, note.note_id, chunks, now)


def rename_note(conn: Any, namespace: str, ref: NoteRef, new_name: str,
                now: str) -> NoteRow:
    """Give a note a new name (the old one is released; an alias of its own may become its
    name). The name is indexed with the content, so the note is indexed again."""
    with transaction(conn):
        note = _require(conn, namespace, ref)
        if new_name == note.name:
            return note
        _refuse_taken(conn, namespace, [new_name], own_id=note.note_id)
        _memory_session(conn, namespace, now)
        conn.execute("DELETE FROM note_names WHERE namespace = ? AND name IN (?, ?)",
                     (namespace, note.name, new_name))
        conn.execute("UPDATE notes SET name = ?, updated_at = ? WHERE note_id = ?",
                     (new_name, now, note.note_id))
        insert_rows(conn, "note_names", ["namespace", "name", "note_id", "is_alias"],
                    [(namespace, new_name, note.note_id, 0)])
        chunks = chunks_of(conn, note.note_id)
        unindex_note(conn, note)
        return _reindex(conn, namespace, note.note_id, chunks, now)


def alias_note(conn: Any, namespace: str, ref: NoteRef, alias: str,
               now: str) -> NoteRow:
    """Bind one more name to a note; binding a name it already answers to changes nothing."""
    with transaction(conn):
        note = _require(conn, namespace, ref)
        _refuse_taken(conn, namespace, [alias], own_id=note.note_id)
        if alias == note.name or alias in note.aliases:
            return note
        insert_rows(conn, "note_names", ["namespace", "name", "note_id", "is_alias"],
                    [(namespace, alias, note.note_id, 1)])
        touch_note(conn, note.note_id, now)
        return _by_id(conn, namespace, note.note_id)  # type: ignore[return-value]


def unalias_note(conn: Any, namespace: str, alias: str, now: str) -> NoteRow:
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
        touch_note(conn, note_id, now)
        return _by_id(conn, namespace, note_id)  # type: ignore[return-value]


def remove_note(conn: Any, namespace: str, ref: NoteRef) -> bool:
    """Delete a note with its names, tags, event, chunks, FTS rows and vectors."""
    with transaction(conn):
        note = read_note(conn, namespace, ref)
        if note is None:
            return False
        unindex_note(conn, note)
        conn.execute("DELETE FROM notes WHERE namespace = ? AND note_id = ?",
                     (namespace, note.note_id))
        return True


def edit_note(conn: Any, namespace: str, ref: NoteRef, new_name: str | None,
              aliases: Sequence[str] | None, changes: NoteChanges, now: str) -> NoteRow:
    """Rename a note, set its aliases and write its fields in one transaction, so a name
    that is taken (or any other refusal) leaves the note exactly as it was."""
    with transaction(conn):
        ref = NoteRef(note_id=_require(conn, namespace, ref).note_id)
        if new_name is not None:
            rename_note(conn, namespace, ref, new_name, now)
        if aliases is not None:
            current = _require(conn, namespace, ref).aliases
            for alias in current:
                if alias not in aliases:
                    unalias_note(conn, namespace, alias, now)
            for alias in aliases:
                if alias not in current:
                    alias_note(conn, namespace, ref, alias, now)
        return write_note(conn, namespace, ref, changes, now)


def namespaces(conn: Any) -> list[str]:
    """Every namespace that holds a note, in order: one index seek per namespace (a skip
    scan), not a walk over every note."""
    rows = conn.execute(
        "WITH RECURSIVE found(namespace) AS ("
        " SELECT min(namespace) FROM notes"
        " UNION ALL SELECT (SELECT min(n.namespace) FROM notes n"
        "  WHERE n.namespace > found.namespace) FROM found WHERE found.namespace IS NOT NULL)"
        " SELECT namespace FROM found WHERE namespace IS NOT NULL").fetchall()
    return [row[0] for row in rows]


# -- import ----------------------------------------------------------------------------------


def import_notes(conn: Any, namespace: str, drafts: Sequence[NoteDraft], overwrite: bool,
                 now: str, new_id: Callable[[], str]) -> NoteImportOutcome:
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
        collisions = import_collisions(claimed, bound)
        if (collisions and not overwrite) or not drafts:
            return NoteImportOutcome(applied=not collisions, collisions=collisions)
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
            unindex_note(conn, note)
            conn.execute("DELETE FROM note_names WHERE note_id = ?", (note_id,))
        for note_id, draft in replaced.items():
            conn.execute(
                "UPDATE notes SET name = ?, content = ?, kind = ?, category = ?, tags_json = ?,"
                " source = ?, importance = ?, updated_at = ? WHERE note_id = ?",
                (draft.name, draft.content, draft.kind, draft.category,
                 json.dumps(list(draft.tags), ensure_ascii=False), draft.source,
                 draft.importance, now, note_id))
            insert_rows(conn, "note_names", ["namespace", "name", "note_id", "is_alias"],
                        names_of(namespace, note_id, draft.name, draft.aliases))
            _set_tags(conn, namespace, note_id, draft.tags)
            _reindex(conn, namespace, note_id, draft.chunks, now)
        replacing = {id(draft) for draft in replaced.values()}
        fresh = [draft for draft in drafts if id(draft) not in replacing]
        taken = {row[0] for row in select_in(conn, "SELECT note_id FROM notes WHERE note_id IN",
                                             [draft.note_id for draft in fresh])}
        rows = [new_row(draft, new_id() if draft.note_id in taken else draft.note_id,
                        session_id, now) for draft in fresh]
        _insert_notes(conn, rows)
        index_notes(conn, list(zip(rows, (draft.chunks for draft in fresh), strict=True)), now)
        return NoteImportOutcome(applied=True, collisions=collisions, added=len(rows),
                                 replaced=len(replaced), removed=removed)


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
            touch_note(conn, note_id, now)
        else:
            note = _by_id(conn, namespace, note_id)
            assert note is not None
            unindex_note(conn, note)
            conn.execute("DELETE FROM notes WHERE note_id = ?", (note_id,))
            removed[note_id] = holder
    return sorted(removed.values())
