"""PostgreSQL: TO BE WRITTEN — core/storage/notes.py's operations on an async connection."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from core.storage.notes import NoteChanges, NoteDraft, NoteRef
from core.storage.pg.connection import Conn


async def read_note(conn: Conn, namespace: str, ref: NoteRef) -> dict[str, Any] | None:
    """The note ``ref`` names in ``namespace``."""
    raise NotImplementedError("PostgreSQL: read_note")


async def notes_by_ids(
    conn: Conn, namespace: str, note_ids: Sequence[str]
) -> dict[str, dict[str, Any]]:
    """The namespace's notes among ``note_ids``; ids of other namespaces are left out."""
    raise NotImplementedError("PostgreSQL: notes_by_ids")


async def note_names(conn: Conn, namespace: str, category: str | None = None) -> list[str]:
    """The namespace's note names in order (seed 002 ``list_memories``)."""
    raise NotImplementedError("PostgreSQL: note_names")


async def all_notes(conn: Conn, namespace: str) -> list[dict[str, Any]]:
    """Every note of the namespace, by name (for export)."""
    raise NotImplementedError("PostgreSQL: all_notes")


async def add_note(conn: Conn, draft: NoteDraft, now: str) -> dict[str, Any]:
    """Create a note with its names, tags, event and chunks; NameTaken if a name is bound."""
    raise NotImplementedError("PostgreSQL: add_note")


async def write_note(
    conn: Conn, namespace: str, ref: NoteRef, changes: NoteChanges, now: str
) -> dict[str, Any]:
    """Replace a note's content and fields: its chunks and event are deleted and stored"""
    raise NotImplementedError("PostgreSQL: write_note")


async def rename_note(
    conn: Conn, namespace: str, ref: NoteRef, new_name: str, now: str
) -> dict[str, Any]:
    """Give a note a new name (the old one is released; an alias of its own may become its"""
    raise NotImplementedError("PostgreSQL: rename_note")


async def alias_note(
    conn: Conn, namespace: str, ref: NoteRef, alias: str, now: str
) -> dict[str, Any]:
    """Bind one more name to a note; binding a name it already answers to changes nothing."""
    raise NotImplementedError("PostgreSQL: alias_note")


async def unalias_note(conn: Conn, namespace: str, alias: str, now: str) -> dict[str, Any]:
    """Unbind an alias; the note's own name cannot be unbound (rename it instead)."""
    raise NotImplementedError("PostgreSQL: unalias_note")


async def remove_note(conn: Conn, namespace: str, ref: NoteRef) -> bool:
    """Delete a note with its names, tags, event, chunks, FTS rows and vectors."""
    raise NotImplementedError("PostgreSQL: remove_note")


async def edit_note(
    conn: Conn,
    namespace: str,
    ref: NoteRef,
    new_name: str | None,
    aliases: Sequence[str] | None,
    changes: NoteChanges,
    now: str,
) -> dict[str, Any]:
    """Rename a note, set its aliases and write its fields in one transaction, so a name"""
    raise NotImplementedError("PostgreSQL: edit_note")


async def namespaces(conn: Conn) -> list[str]:
    """Every namespace that holds a note, in order: one index seek per namespace (a skip"""
    raise NotImplementedError("PostgreSQL: namespaces")


async def import_notes(
    conn: Conn,
    namespace: str,
    drafts: Sequence[NoteDraft],
    overwrite: bool,
    now: str,
    new_id: Callable[[], str],
) -> dict[str, Any]:
    """Apply imported notes in one transaction, or report every collision and apply nothing."""
    raise NotImplementedError("PostgreSQL: import_notes")
