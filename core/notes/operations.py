"""The Engine's note and fact operations, in one place: its one note API.

:class:`NoteOperations` is a base of :class:`core.engine.Engine`: each method waits for the
model where it needs one and hands the call to :class:`core.notes.service.Notes` or
:class:`core.notes.facts.Facts`, where the rules are explained. Every call works in one
namespace: ``namespace=`` or the configured agent. A note is named by its id, its name or
any alias; one namespace never reaches another's notes.

pynchy's memory tools (notes by key) and oxydra's (notes by id, with tags) are not here: the
MCP server (:mod:`workbench.mcp.tools`) maps their names onto these operations and onto the
notes service's ``save_memory``, ``recall_memories``, ``list_memories``, ``memory_save`` and
``memory_search``, which hold the rules they add.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

from core.embeddings.loading import needs_model
from core.notes import transfer
from core.types import Fact, Note, NoteExportResult, NoteImportResult, NotePage

if TYPE_CHECKING:
    from core.notes.facts import Facts
    from core.notes.service import Notes


class NoteOperations:
    """Notes (oxydra's, with crabtalk's operations) and facts."""

    notes: Notes
    facts: Facts

    def note_session(self, namespace: str | None = None) -> str:
        """The session whose chunks index a namespace's notes."""
        return self.notes.session_id(namespace)

    @needs_model
    async def add_note(self, name: str, content: str, *, namespace: str | None = None,
                       kind: str = "Note", category: str | None = None,
                       tags: Sequence[str] | None = None, source: str = "",
                       importance: float = 0.5, aliases: Sequence[str] | None = None) -> Note:
        """Create a note (crabtalk's Add); ``NameTaken`` when a name is already bound."""
        return await self.notes.add(name, content, namespace=namespace, kind=kind,
                                    category=category, tags=tags, source=source,
                                    importance=importance, aliases=aliases)

    @needs_model
    async def write_note(self, ref: str, content: str | None = None, *,
                         namespace: str | None = None, kind: str | None = None,
                         category: str | None = None, tags: Sequence[str] | None = None,
                         source: str | None = None, importance: float | None = None) -> Note:
        """Replace a note's content and any field given (crabtalk's Write), identity kept."""
        return await self.notes.write(ref, content, namespace=namespace, kind=kind,
                                      category=category, tags=tags, source=source,
                                      importance=importance)

    @needs_model
    async def edit_note(self, ref: str, *, namespace: str | None = None,
                        name: str | None = None, aliases: Sequence[str] | None = None,
                        content: str | None = None, kind: str | None = None,
                        category: str | None = None, tags: Sequence[str] | None = None,
                        source: str | None = None, importance: float | None = None) -> Note:
        """Rename a note, replace its aliases and write any field given, all or nothing."""
        return await self.notes.edit(ref, namespace=namespace, name=name, aliases=aliases,
                                     content=content, kind=kind, category=category, tags=tags,
                                     source=source, importance=importance)

    async def rename_note(self, ref: str, new_name: str, *,
                          namespace: str | None = None) -> Note:
        """Change a note's name (crabtalk's Rename); the old name is released."""
        return await self.notes.rename(ref, new_name, namespace=namespace)

    async def alias_note(self, ref: str, alias: str, *, namespace: str | None = None) -> Note:
        """Bind another name to a note (crabtalk's Alias); it adds no search words."""
        return await self.notes.alias(ref, alias, namespace=namespace)

    async def unalias_note(self, alias: str, *, namespace: str | None = None) -> Note:
        """Unbind an alias; returns the note it named."""
        return await self.notes.unalias(alias, namespace=namespace)

    async def remove_note(self, ref: str, *, namespace: str | None = None) -> bool:
        """Delete a note and everything that indexes it (crabtalk's Remove)."""
        return await self.notes.remove(ref, namespace=namespace)

    async def get_note(self, ref: str, *, namespace: str | None = None) -> Note:
        """The note an id, name or alias names; ``NotFound`` otherwise."""
        return await self.notes.get(ref, namespace=namespace)

    async def list_notes(self, *, namespace: str | None = None, category: str | None = None,
                         kind: str | None = None, tags: Sequence[str] | None = None,
                         text: str | None = None, limit: int = 50, offset: int = 0,
                         order: str = "name") -> NotePage:
        """A page of notes filtered by category, kind, tags (all) and text, with the total."""
        return await self.notes.list_notes(namespace=namespace, category=category, kind=kind,
                                           tags=tags, text=text, limit=limit, offset=offset,
                                           order=order)

    async def export_notes(self, path: str | os.PathLike[str], *,
                           namespace: str | None = None) -> NoteExportResult:
        """Write a namespace's notes to one JSON file, atomically."""
        return await transfer.export_notes(self.notes, path, namespace)

    @needs_model
    async def import_notes(self, path: str | os.PathLike[str], *, namespace: str | None = None,
                           overwrite: bool = False) -> NoteImportResult:
        """Import a notes file: all of it, or (``ImportCollision``) nothing."""
        return await transfer.import_notes(self.notes, path, namespace, overwrite=overwrite)

    # -- facts (aidaemon; see core/notes/facts.py) -----------------------------------------

    async def upsert_fact(self, category: str, key: str, value: str, *, source: str = "agent",
                          namespace: str | None = None) -> Fact:
        """Store a fact; the same category and key replace its value."""
        return await self.facts.upsert(category, key, value, source=source, namespace=namespace)

    async def get_fact(self, category: str, key: str, *, namespace: str | None = None) -> Fact:
        """One fact; ``NotFound`` when there is none."""
        return await self.facts.get(category, key, namespace=namespace)

    async def list_facts(self, *, category: str | None = None,
                         namespace: str | None = None) -> list[Fact]:
        """A namespace's facts, by category then key."""
        return await self.facts.list_facts(category=category, namespace=namespace)

    async def delete_fact(self, category: str, key: str, *,
                          namespace: str | None = None) -> bool:
        """Delete a fact; False when there was none."""
        return await self.facts.delete(category, key, namespace=namespace)
