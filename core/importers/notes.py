"""Landing imported notes (pynchy memories, crabtalk entries, oxydra notes).

An importer turns its source into :class:`PlannedNote` items and hands them to
:func:`land_notes`, which decides for each one, against the namespace's notes:

- a note of that name (or, for a planned note with an id, that id) holds the same content
  and kind: **already**;
- the name or an alias already names another note (in the target, or an earlier record of
  the same source), or the engine refuses a field (a name over 200 characters, blank
  content, a category that is not core/daily/conversation): **skipped**, with the reason.
  An import never overwrites a note;
- the rest are written in one transaction, each with its source's times when it had them
  (the same path as ``Engine.import_notes``).

Names are the identity, so importing a file twice adds nothing the second time.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from core.errors import InvalidInput
from core.importers.report import ImportReport
from core.notes.fields import new_note_id
from core.storage.vocabulary import NoteDraft
from core.types import Note

if TYPE_CHECKING:
    from core.engine import Engine

PAGE = 1000


@dataclass(frozen=True)
class PlannedNote:
    """One note to import and where the source holds it."""

    where: str
    name: Any
    content: Any
    kind: Any = "Note"
    category: Any = None
    aliases: Sequence[Any] = ()
    tags: Sequence[Any] | None = None
    source: str = ""
    importance: float = 0.5
    note_id: str | None = None     # keep this id (a seed-001 note's) unless it is taken
    created_at: str | None = None  # engine timestamps, or None for "now"
    updated_at: str | None = None


async def namespace_notes(engine: Engine, namespace: str) -> dict[str, Note]:
    """Every note of a namespace by each of its names, aliases and its id."""
    found: dict[str, Note] = {}
    offset = 0
    while True:
        page = await engine.list_notes(namespace=namespace, limit=PAGE, offset=offset)
        for note in page.notes:
            for name in (note.note_id, note.name, *note.aliases):
                found[name] = note
        offset += len(page.notes)
        if not page.notes or offset >= page.total:
            return found


async def land_notes(engine: Engine, planned: Sequence[PlannedNote], report: ImportReport,
                     *, namespace: str, kind: str) -> None:
    """Add the notes the namespace lacks of ``planned``, as ``kind`` records of the report
    (see the module docstring)."""
    report.kind(kind)
    namespace = engine.notes.namespace(namespace)
    existing = await namespace_notes(engine, namespace)
    claimed: dict[str, str] = {}  # name -> where in the source it was first claimed
    drafts: list[NoteDraft] = []
    for item in planned:
        try:
            draft = engine.notes.draft(
                item.name, item.content, namespace=namespace, kind=item.kind,
                category=item.category, tags=item.tags, source=item.source,
                importance=item.importance, aliases=item.aliases,
                note_id=item.note_id or new_note_id(), created_at=item.created_at,
                updated_at=item.updated_at)
        except InvalidInput as exc:
            report.skip(kind, item.where, str(exc))
            continue
        held = existing.get(draft.name) or (existing.get(item.note_id) if item.note_id else None)
        if held is not None:
            if held.content == draft.content and held.kind == draft.kind:
                report.already(kind)
            else:
                report.skip(kind, item.where, f"{draft.name!r} already names note "
                            f"{held.name!r} in namespace {namespace!r} with other content; "
                            "an import does not overwrite it (rename or remove that note to "
                            "import this one)")
            continue
        reason = _name_taken(draft, existing, claimed, namespace)
        if reason is not None:
            report.skip(kind, item.where, reason)
            continue
        for name in (draft.name, *draft.aliases):
            claimed[name] = item.where
        drafts.append(draft)
    if not drafts:
        return
    result = await engine.notes.apply_import(namespace, drafts, overwrite=False)
    if not result.applied:
        names = ", ".join(repr(c.name) for c in result.collisions)
        raise InvalidInput(f"another writer took the names {names} in namespace "
                           f"{namespace!r} during the import; no note was added, run the "
                           "import again")
    report.added(kind, result.added)


def _name_taken(draft: NoteDraft, existing: dict[str, Note], claimed: dict[str, str],
                namespace: str) -> str | None:
    """Why the draft's name or an alias cannot be bound, or None when all are free."""
    for name in (draft.name, *draft.aliases):
        what = "name" if name == draft.name else "alias"
        if name in existing:
            return (f"its {what} {name!r} already names note {existing[name].name!r} in "
                    f"namespace {namespace!r}")
        if name in claimed:
            return f"its {what} {name!r} is also claimed by {claimed[name]} of the source"
    return None
