"""PostgreSQL: notes (:mod:`core.storage.sqlite.notes`'s operations on an async connection, with
the same semantics, shapes, refusals and messages).

Several writers run at once here, where SQLite's one writer made "check the name is free,
then bind it" safe by itself. Every operation that changes a namespace's notes first takes
a transaction-scoped advisory lock on the namespace (:func:`_lock_namespace`), so the
checks and writes of two such operations on one namespace never interleave: the second
waits, then (READ COMMITTED: each statement sees what committed before it) finds the
first's names bound and is refused with ``NameTaken`` before writing anything. The primary
key of ``note_names`` (namespace, name) stays the database's own guard behind the lock.
The memory session's row is locked too, as a message write locks its session, before its
last sequence is read.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from core.errors import InvalidInput, NameTaken, NotFound
from core.inputs import shown
from core.storage.messages import PreparedChunk
from core.storage.pg.connection import Conn
from core.storage.pg.note_index import chunks_of, index_notes, touch_note, unindex_note
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
from core.storage.vocabulary import NoteChanges, NoteDraft, NoteRef, memory_session_id

SELECT = "SELECT " + ", ".join(f"n.{column}" for column in NOTE_COLUMNS) + " FROM notes n"


# -- reading -------------------------------------------------------------------------------


async def rows_to_notes(conn: Conn, rows: Sequence[Sequence[Any]]) -> list[NoteRow]:
    """Note rows as :class:`NoteRow`, with their aliases (sorted) and tags."""
    if not rows:
        return []
    cursor = await conn.execute(
        "SELECT note_id, name FROM note_names WHERE is_alias = 1 AND note_id = ANY(%s)",
        ([row[0] for row in rows],))
    return stored_notes(rows, await cursor.fetchall())


async def _by_id(conn: Conn, namespace: str, note_id: str) -> NoteRow | None:
    cursor = await conn.execute(f"{SELECT} WHERE n.namespace = %s AND n.note_id = %s",
                                (namespace, note_id))
    rows = await cursor.fetchall()
    return (await rows_to_notes(conn, rows))[0] if rows else None


async def _resolve(conn: Conn, namespace: str, ref: NoteRef) -> str | None:
    """The id of the note ``ref`` names in ``namespace`` (None when it names none there)."""
    if ref.note_id is not None:
        cursor = await conn.execute(
            "SELECT note_id FROM notes WHERE namespace = %s AND note_id = %s",
            (namespace, ref.note_id))
    else:
        cursor = await conn.execute(
            "SELECT note_id FROM note_names WHERE namespace = %s AND name = %s",
            (namespace, ref.name))
    row = await cursor.fetchone()
    return None if row is None else str(row[0])


async def read_note(conn: Conn, namespace: str, ref: NoteRef) -> NoteRow | None:
    """The note ``ref`` names in ``namespace``."""
    note_id = await _resolve(conn, namespace, ref)
    return None if note_id is None else await _by_id(conn, namespace, note_id)


async def _require(conn: Conn, namespace: str, ref: NoteRef) -> NoteRow:
    note = await read_note(conn, namespace, ref)
    if note is None:
        raise NotFound(f"no {ref.describe()} in namespace {namespace!r}")
    return note


async def notes_by_ids(
    conn: Conn, namespace: str, note_ids: Sequence[str]
) -> dict[str, NoteRow]:
    """The namespace's notes among ``note_ids``; ids of other namespaces are left out."""
    if not note_ids:
        return {}
    cursor = await conn.execute(f"{SELECT} WHERE n.namespace = %s AND n.note_id = ANY(%s)",
                                (namespace, list(note_ids)))
    return {note.note_id: note
            for note in await rows_to_notes(conn, await cursor.fetchall())}


async def note_names(conn: Conn, namespace: str, category: str | None = None) -> list[str]:
    """The namespace's note names in order (pynchy ``list_memories``)."""
    if category is None:
        cursor = await conn.execute(
            "SELECT name FROM notes WHERE namespace = %s ORDER BY name", (namespace,))
    else:
        cursor = await conn.execute(
            "SELECT name FROM notes WHERE namespace = %s AND category = %s ORDER BY name",
            (namespace, category))
    return [str(row[0]) for row in await cursor.fetchall()]


async def all_notes(conn: Conn, namespace: str) -> list[NoteRow]:
    """Every note of the namespace, by name (for export)."""
    cursor = await conn.execute(f"{SELECT} WHERE n.namespace = %s ORDER BY n.name",
                                (namespace,))
    return await rows_to_notes(conn, await cursor.fetchall())


async def notes_under(conn: Conn, namespace: str, source: str, prefix: str,
                      children_only: bool = False,
                      limit: int | None = None) -> list[NoteRow]:
    """The namespace's notes written by ``source`` whose names start with ``prefix``
    (``children_only``: with no ``/`` after it), by note id."""
    where = ["n.namespace = %s", "n.source = %s"]
    params: list[Any] = [namespace, source]
    bounds = name_range(prefix)
    if bounds is not None:
        where.append("n.name >= %s AND n.name < %s")  # the names are COLLATE "C"
        params += bounds
    if children_only:
        where.append("strpos(substr(n.name, %s), '/') = 0")
        params.append(len(prefix) + 1)
    sql = f"{SELECT} WHERE {' AND '.join(where)} ORDER BY n.note_id"
    if limit is not None:
        sql += " LIMIT %s"
        params.append(limit)
    cursor = await conn.execute(sql, params)
    return await rows_to_notes(conn, await cursor.fetchall())


async def namespaces(conn: Conn) -> list[str]:
    """Every namespace that holds a note, in order: one index seek per namespace (a skip
    scan), not a walk over every note."""
    cursor = await conn.execute(
        "WITH RECURSIVE found(namespace) AS ("
        " SELECT min(namespace) FROM notes"
        " UNION ALL SELECT (SELECT min(n.namespace) FROM notes n"
        "  WHERE n.namespace > found.namespace) FROM found WHERE found.namespace IS NOT NULL)"
        " SELECT namespace FROM found WHERE namespace IS NOT NULL")
    return [str(row[0]) for row in await cursor.fetchall()]


async def _reindex(conn: Conn, namespace: str, note_id: str, chunks: Iterable[PreparedChunk],
                   now: str) -> NoteRow:
    """Index a note's stored row again (after its old rows were deleted); the note, after."""
    note = await _by_id(conn, namespace, note_id)
    assert note is not None
    await index_notes(conn, [(note, chunks)], now)
    return await _by_id(conn, namespace, note_id)  # type: ignore[return-value]


# -- names and locks ---------------------------------------------------------------------------


async def _lock_namespace(conn: Conn, namespace: str) -> None:
    """Hold the namespace's note lock until the transaction ends (see the module's
    docstring). Two keys, so unrelated advisory locks of other modules cannot collide."""
    await conn.execute("SELECT pg_advisory_xact_lock(hashtext('notes'), hashtext(%s))",
                       (namespace,))


async def _memory_session(conn: Conn, namespace: str, now: str) -> str:
    """Create or touch the namespace's memory session, locking its row; refuse one another
    agent owns."""
    session_id = memory_session_id(namespace)
    cursor = await conn.execute(
        "INSERT INTO sessions(session_id, agent_identity, created_at, updated_at)"
        " VALUES (%s, %s, %s, %s)"
        " ON CONFLICT (session_id) DO UPDATE SET updated_at = excluded.updated_at"
        " RETURNING agent_identity", (session_id, namespace, now, now))
    row = await cursor.fetchone()
    owner = None if row is None else row[0]
    if owner != namespace:
        raise InvalidInput(f"session {session_id!r} belongs to agent {owner!r}, not to "
                           f"namespace {namespace!r}; no note was written")
    await conn.execute("INSERT INTO session_state(session_id, state_json, updated_at)"
                       " VALUES (%s, '{}', %s) ON CONFLICT (session_id) DO NOTHING",
                       (session_id, now))
    return session_id


async def _bindings(conn: Conn, namespace: str,
                    names: Sequence[str]) -> dict[str, tuple[str, bool, str]]:
    """name -> (note_id, is_alias, that note's name) for the names already bound."""
    if not names:
        return {}
    cursor = await conn.execute(
        "SELECT b.name, b.note_id, b.is_alias, n.name FROM note_names b"
        " JOIN notes n ON n.note_id = b.note_id"
        " WHERE b.namespace = %s AND b.name = ANY(%s)", (namespace, list(names)))
    return {name: (note_id, bool(is_alias), note_name)
            for name, note_id, is_alias, note_name in await cursor.fetchall()}


async def _refuse_taken(conn: Conn, namespace: str, names: Sequence[str],
                        own_id: str | None = None) -> None:
    for name, (note_id, is_alias, holder) in (await _bindings(conn, namespace, names)).items():
        if note_id != own_id:
            bound = "an alias of" if is_alias else "the name of"
            raise NameTaken(f"{shown(name)} is already {bound} note {shown(holder)} "
                            f"({note_id}) in namespace {namespace!r}; nothing was written")


async def _insert_names(conn: Conn, bindings: Sequence[tuple[str, str, str, int]]) -> None:
    if bindings:
        async with conn.cursor() as cursor:
            await cursor.executemany(
                "INSERT INTO note_names(namespace, name, note_id, is_alias)"
                " VALUES (%s, %s, %s, %s)", bindings)


async def _insert_notes(conn: Conn, rows: Sequence[NoteRow]) -> None:
    """Insert new notes with their names and tags."""
    if not rows:
        return
    async with conn.cursor() as cursor:
        await cursor.executemany(
            f"INSERT INTO notes({', '.join(NOTE_COLUMNS)})"
            f" VALUES ({', '.join(['%s'] * len(NOTE_COLUMNS))})",
            [row.values() for row in rows])
        tags = [(row.note_id, row.namespace, tag) for row in rows for tag in row.tags]
        if tags:
            await cursor.executemany(
                "INSERT INTO note_tags(note_id, namespace, tag) VALUES (%s, %s, %s)", tags)
    await _insert_names(conn, [
        binding for row in rows
        for binding in names_of(row.namespace, row.note_id, row.name, row.aliases)])


async def _set_tags(conn: Conn, namespace: str, note_id: str, tags: Sequence[str]) -> None:
    await conn.execute("DELETE FROM note_tags WHERE note_id = %s", (note_id,))
    if tags:
        async with conn.cursor() as cursor:
            await cursor.executemany(
                "INSERT INTO note_tags(note_id, namespace, tag) VALUES (%s, %s, %s)",
                [(note_id, namespace, tag) for tag in tags])


# -- operations (crabtalk: Add, Rename, Alias, Write, Remove) ----------------------------------


async def add_note(conn: Conn, draft: NoteDraft, now: str) -> NoteRow:
    """Create a note with its names, tags, event and chunks; NameTaken if a name is bound."""
    await _lock_namespace(conn, draft.namespace)
    session_id = await _memory_session(conn, draft.namespace, now)
    await _refuse_taken(conn, draft.namespace, [draft.name, *draft.aliases])
    row = new_row(draft, draft.note_id, session_id, now)
    await _insert_notes(conn, [row])
    await index_notes(conn, [(row, draft.chunks)], now)
    return await _by_id(conn, draft.namespace, draft.note_id)  # type: ignore[return-value]


async def write_note(
    conn: Conn, namespace: str, ref: NoteRef, changes: NoteChanges, now: str
) -> NoteRow:
    """Replace a note's content and fields: its chunks and event are deleted and stored
    again (oxydra update semantics); id, name, aliases and created_at are kept."""
    await _lock_namespace(conn, namespace)
    note = await _require(conn, namespace, ref)
    await _memory_session(conn, namespace, now)
    chunks = changes.chunks if changes.chunks is not None else await chunks_of(
        conn, note.note_id)
    await unindex_note(conn, note)
    await conn.execute(
        "UPDATE notes SET content = coalesce(%s, content), kind = coalesce(%s, kind),"
        " category = coalesce(%s, category), tags_json = coalesce(%s, tags_json),"
        " source = coalesce(%s, source), importance = coalesce(%s, importance),"
        " updated_at = %s WHERE note_id = %s",
        (changes.content, changes.kind, changes.category,
         None if changes.tags is None else json.dumps(list(changes.tags), ensure_ascii=False),
         changes.source, changes.importance, now, note.note_id))
    if changes.tags is not None:
        await _set_tags(conn, namespace, note.note_id, changes.tags)
    return await _reindex(conn, namespace, note.note_id, chunks, now)


async def rename_note(
    conn: Conn, namespace: str, ref: NoteRef, new_name: str, now: str
) -> NoteRow:
    """Give a note a new name (the old one is released; an alias of its own may become its
    name). The name is indexed with the content, so the note is indexed again."""
    await _lock_namespace(conn, namespace)
    note = await _require(conn, namespace, ref)
    if new_name == note.name:
        return note
    await _refuse_taken(conn, namespace, [new_name], own_id=note.note_id)
    await _memory_session(conn, namespace, now)
    await conn.execute("DELETE FROM note_names WHERE namespace = %s AND name = ANY(%s)",
                       (namespace, [note.name, new_name]))
    await conn.execute("UPDATE notes SET name = %s, updated_at = %s WHERE note_id = %s",
                       (new_name, now, note.note_id))
    await _insert_names(conn, [(namespace, new_name, note.note_id, 0)])
    chunks = await chunks_of(conn, note.note_id)
    await unindex_note(conn, note)
    return await _reindex(conn, namespace, note.note_id, chunks, now)


async def alias_note(
    conn: Conn, namespace: str, ref: NoteRef, alias: str, now: str
) -> NoteRow:
    """Bind one more name to a note; binding a name it already answers to changes nothing."""
    await _lock_namespace(conn, namespace)
    note = await _require(conn, namespace, ref)
    await _refuse_taken(conn, namespace, [alias], own_id=note.note_id)
    if alias == note.name or alias in note.aliases:
        return note
    await _insert_names(conn, [(namespace, alias, note.note_id, 1)])
    await touch_note(conn, note.note_id, now)
    return await _by_id(conn, namespace, note.note_id)  # type: ignore[return-value]


async def unalias_note(conn: Conn, namespace: str, alias: str, now: str) -> NoteRow:
    """Unbind an alias; the note's own name cannot be unbound (rename it instead)."""
    await _lock_namespace(conn, namespace)
    cursor = await conn.execute(
        "SELECT note_id, is_alias FROM note_names WHERE namespace = %s AND name = %s",
        (namespace, alias))
    row = await cursor.fetchone()
    if row is None:
        raise NotFound(f"no alias {alias!r} in namespace {namespace!r}")
    note_id, is_alias = row
    if not is_alias:
        raise InvalidInput(f"{alias!r} is the note's own name, not an alias; rename the "
                           "note to change it")
    await conn.execute("DELETE FROM note_names WHERE namespace = %s AND name = %s",
                       (namespace, alias))
    await touch_note(conn, note_id, now)
    return await _by_id(conn, namespace, note_id)  # type: ignore[return-value]


async def remove_note(conn: Conn, namespace: str, ref: NoteRef) -> bool:
    """Delete a note with its names, tags, event, chunks, full text and vectors."""
    await _lock_namespace(conn, namespace)
    note = await read_note(conn, namespace, ref)
    if note is None:
        return False
    await unindex_note(conn, note)
    await conn.execute("DELETE FROM notes WHERE namespace = %s AND note_id = %s",
                       (namespace, note.note_id))
    return True


async def edit_note(
    conn: Conn,
    namespace: str,
    ref: NoteRef,
    new_name: str | None,
    aliases: Sequence[str] | None,
    changes: NoteChanges,
    now: str,
) -> NoteRow:
    """Rename a note, set its aliases and write its fields in one transaction, so a name
    that is taken (or any other refusal) leaves the note exactly as it was: the refusal
    rolls back the whole write."""
    await _lock_namespace(conn, namespace)
    ref = NoteRef(note_id=(await _require(conn, namespace, ref)).note_id)
    if new_name is not None:
        await rename_note(conn, namespace, ref, new_name, now)
    if aliases is not None:
        current = (await _require(conn, namespace, ref)).aliases
        for alias in current:
            if alias not in aliases:
                await unalias_note(conn, namespace, alias, now)
        for alias in aliases:
            if alias not in current:
                await alias_note(conn, namespace, ref, alias, now)
    return await write_note(conn, namespace, ref, changes, now)


# -- import ----------------------------------------------------------------------------------


async def import_notes(
    conn: Conn,
    namespace: str,
    drafts: Sequence[NoteDraft],
    overwrite: bool,
    now: str,
    new_id: Callable[[], str],
) -> NoteImportOutcome:
    """Apply imported notes in one transaction, or report every collision and apply nothing
    (the rules: :func:`core.storage.sqlite.notes.import_notes`)."""
    await _lock_namespace(conn, namespace)
    claimed = {name: draft for draft in drafts for name in (draft.name, *draft.aliases)}
    bound = await _bindings(conn, namespace, list(claimed))
    collisions = import_collisions(claimed, bound)
    if (collisions and not overwrite) or not drafts:
        return NoteImportOutcome(applied=not collisions, collisions=collisions)
    session_id = await _memory_session(conn, namespace, now)
    replaced: dict[str, NoteDraft] = {}
    for draft in drafts:
        binding = bound.get(draft.name)
        if binding is not None and binding[0] not in replaced:
            replaced[binding[0]] = draft
    removed = await _release(conn, namespace, bound, set(replaced), now)
    for note_id in replaced:
        note = await _by_id(conn, namespace, note_id)
        assert note is not None
        await unindex_note(conn, note)
        await conn.execute("DELETE FROM note_names WHERE note_id = %s", (note_id,))
    for note_id, draft in replaced.items():
        await conn.execute(
            "UPDATE notes SET name = %s, content = %s, kind = %s, category = %s,"
            " tags_json = %s, source = %s, importance = %s, updated_at = %s"
            " WHERE note_id = %s",
            (draft.name, draft.content, draft.kind, draft.category,
             json.dumps(list(draft.tags), ensure_ascii=False), draft.source,
             draft.importance, now, note_id))
        await _insert_names(conn, names_of(namespace, note_id, draft.name, draft.aliases))
        await _set_tags(conn, namespace, note_id, draft.tags)
        await _reindex(conn, namespace, note_id, draft.chunks, now)
    replacing = {id(draft) for draft in replaced.values()}
    fresh = [draft for draft in drafts if id(draft) not in replacing]
    taken: set[str] = set()
    if fresh:
        cursor = await conn.execute("SELECT note_id FROM notes WHERE note_id = ANY(%s)",
                                    ([draft.note_id for draft in fresh],))
        taken = {str(row[0]) for row in await cursor.fetchall()}
    rows = [new_row(draft, new_id() if draft.note_id in taken else draft.note_id,
                    session_id, now) for draft in fresh]
    await _insert_notes(conn, rows)
    await index_notes(conn, list(zip(rows, (draft.chunks for draft in fresh), strict=True)),
                      now)
    return NoteImportOutcome(applied=True, collisions=collisions, added=len(rows),
                             replaced=len(replaced), removed=removed)


async def _release(conn: Conn, namespace: str, bound: dict[str, tuple[str, bool, str]],
                   replaced: set[str], now: str) -> list[str]:
    """Free the names an overwriting import claims from notes it does not replace: an alias
    is unbound, a note whose own name it is removed. Returns the removed notes' names."""
    removed: dict[str, str] = {}
    for name, (note_id, is_alias, holder) in bound.items():
        if note_id in replaced or note_id in removed:
            continue
        if is_alias:
            await conn.execute("DELETE FROM note_names WHERE namespace = %s AND name = %s",
                               (namespace, name))
            await touch_note(conn, note_id, now)
        else:
            note = await _by_id(conn, namespace, note_id)
            assert note is not None
            await unindex_note(conn, note)
            await conn.execute("DELETE FROM notes WHERE note_id = %s", (note_id,))
            removed[note_id] = holder
    return sorted(removed.values())
