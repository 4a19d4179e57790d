"""A namespace's notes as one JSON file, and back (crabtalk's single-file store).

The file is written atomically: into a temporary file in the same folder, flushed and
fsynced, then renamed over the target, and the folder fsynced so the rename itself is
durable. A crash at any point leaves either the old file or the new one, never half of
one. The format::

    {"format": "memory-workbench-notes", "version": 1, "namespace": "...",
     "exported_at": "...", "notes": [{"note_id": "note-…", "name": "...", "aliases": [...],
     "content": "...", "kind": "Note", "category": "core", "tags": [...], "source": "...",
     "importance": 0.5, "created_at": "...", "updated_at": "...", "schema_version": 1}]}

An import checks the whole file before it writes anything (every field as :meth:`add`
checks it, and no name claimed twice), then applies it in one transaction: either every
note or, when names collide and ``overwrite`` was not asked for, none. The file's
``namespace`` is a record of where it came from; notes go to the namespace the caller names.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import stat
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.clock import utc_now
from core.errors import ImportCollision, InvalidInput
from core.notes.fields import NOTE_SCHEMA_VERSION, is_note_id, new_note_id
from core.storage.vocabulary import NoteDraft
from core.types import NameCollision, Note, NoteExportResult, NoteImportResult

if TYPE_CHECKING:
    from core.notes.service import Notes

FORMAT = "memory-workbench-notes"
VERSION = 1

_NOTE_KEYS = {"note_id", "name", "aliases", "content", "kind", "category", "tags", "source",
              "importance", "created_at", "updated_at", "schema_version"}
_TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z")


async def write_json_document(target: Path, document: Any) -> None:
    """Write ``document`` as indented JSON to ``target``, atomically, off the event loop;
    ``InvalidInput`` when the file cannot be written (nothing is then left behind)."""
    data = json.dumps(document, ensure_ascii=False, indent=1).encode("utf-8")
    try:
        await asyncio.to_thread(write_atomically, target, data)
    except OSError as exc:
        raise InvalidInput(f"cannot write {target}: {exc.strerror or exc}") from None


def write_atomically(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` so that a crash leaves the old file or the new one.

    An existing file's permissions are kept; a new file is readable by its owner only, as
    notes are private to the agent that wrote them.
    """
    folder = path.parent
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        with contextlib.suppress(FileNotFoundError):
            os.chmod(temporary, stat.S_IMODE(path.stat().st_mode))
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise
    _fsync_folder(folder)


def _fsync_folder(folder: Path) -> None:
    """Make a rename in ``folder`` durable (POSIX; Windows cannot open folders, and needs not)."""
    try:
        descriptor = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def _document(namespace: str, stored: list[Note]) -> dict[str, Any]:
    return {"format": FORMAT, "version": VERSION, "namespace": namespace,
            "exported_at": utc_now(),
            "notes": [{key: getattr(note, key) for key in (
                "note_id", "name", "aliases", "content", "kind", "category", "tags", "source",
                "importance", "created_at", "updated_at", "schema_version")}
                      for note in stored]}


async def export_notes(notes: Notes, path: str | os.PathLike[str],
                       namespace: str | None = None) -> NoteExportResult:
    """Write every note of a namespace to one JSON file, atomically."""
    namespace = notes.namespace(namespace)
    target = Path(path).expanduser()
    stored = await notes.all_notes(namespace)
    await write_json_document(target, _document(namespace, stored))
    return NoteExportResult(str(target), namespace, len(stored))


def _field(note: dict[str, Any], key: str, default: Any) -> Any:
    return note[key] if key in note and note[key] is not None else default


def _drafts(notes: Notes, namespace: str, document: Any) -> list[NoteDraft]:
    """Every note of the file as a draft, or InvalidInput naming the first thing wrong."""
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise InvalidInput(f'not a notes file: it needs "format": "{FORMAT}"')
    if document.get("version") != VERSION:
        raise InvalidInput(f"notes file version {document.get('version')!r} is not one this "
                           f"workbench reads ({VERSION})")
    items = document.get("notes")
    if not isinstance(items, list):
        raise InvalidInput('a notes file needs a "notes" list')
    drafts: list[NoteDraft] = []
    claimed: dict[str, int] = {}
    ids: set[str] = set()
    for index, item in enumerate(items):
        where = f"notes[{index}]"
        if not isinstance(item, dict):
            raise InvalidInput(f"{where} must be an object, got {type(item).__name__}")
        unknown = sorted(set(item) - _NOTE_KEYS)
        if unknown:
            raise InvalidInput(f"{where} has unknown keys: {', '.join(map(repr, unknown))}")
        try:
            draft = _draft(notes, namespace, item)
        except InvalidInput as exc:
            raise InvalidInput(f"{where}: {exc}") from None
        if draft.note_id in ids:
            raise InvalidInput(f"{where}: note id {draft.note_id} appears twice in the file")
        ids.add(draft.note_id)
        for name in (draft.name, *draft.aliases):
            if name in claimed:
                raise InvalidInput(f"{where}: {name!r} also names notes[{claimed[name]}] in the "
                                   "file; a name means one note")
            claimed[name] = index
        drafts.append(draft)
    return drafts


def _draft(notes: Notes, namespace: str, item: dict[str, Any]) -> NoteDraft:
    note_id = _field(item, "note_id", None)
    if note_id is not None and (not isinstance(note_id, str) or not is_note_id(note_id)):
        raise InvalidInput(f"note_id {note_id!r} is not a note id (note-<uuid>)")
    times = {}
    for key in ("created_at", "updated_at"):
        value = _field(item, key, None)
        if value is not None and (not isinstance(value, str) or not _TIMESTAMP.fullmatch(value)):
            raise InvalidInput(f"{key} {value!r} is not a timestamp like "
                               "2024-05-01T12:00:00.000Z")
        times[key] = value
    version = _field(item, "schema_version", NOTE_SCHEMA_VERSION)
    if version != NOTE_SCHEMA_VERSION:
        raise InvalidInput(f"schema_version {version!r} is not {NOTE_SCHEMA_VERSION}")
    if "name" not in item or "content" not in item:
        raise InvalidInput("a note needs a name and content")
    return notes.draft(
        item["name"], item["content"], namespace=namespace,
        kind=_field(item, "kind", "Note"), category=_field(item, "category", None),
        tags=_field(item, "tags", None), source=_field(item, "source", ""),
        importance=_field(item, "importance", 0.5), aliases=_field(item, "aliases", None),
        note_id=note_id or new_note_id(), **times)


def _collision_message(path: Path, namespace: str, collisions: list[NameCollision]) -> str:
    listed = "; ".join(f"{c.name!r} (claimed by {c.imported_note!r} in the file) is the "
                       f"{c.bound_as} of note {c.existing_note!r}" for c in collisions)
    return (f"{len(collisions)} name{'s' if len(collisions) != 1 else ''} in {path} already "
            f"taken in namespace {namespace!r}; nothing was imported (import with overwrite "
            f"to let the file win): {listed}")


async def import_notes(notes: Notes, path: str | os.PathLike[str],
                       namespace: str | None = None, *,
                       overwrite: bool = False) -> NoteImportResult:
    """Import a notes file into a namespace: all of it, or nothing.

    Without ``overwrite``, names that collide with the namespace's notes are reported, each
    of them, in ``ImportCollision`` and nothing is written. With it the file wins (see
    :func:`core.storage.sqlite.notes.import_notes` for exactly how).
    """
    namespace = notes.namespace(namespace)
    source = Path(path).expanduser()
    try:
        raw = await asyncio.to_thread(source.read_bytes)
    except OSError as exc:
        raise InvalidInput(f"cannot read {source}: {exc.strerror or exc}") from None
    try:
        document = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        raise InvalidInput(f"{source} is not JSON: {exc}") from None
    drafts = await asyncio.to_thread(_drafts, notes, namespace, document)
    result = await notes.apply_import(namespace, drafts, overwrite=overwrite)
    if not result.applied:
        raise ImportCollision(_collision_message(source, namespace, result.collisions),
                              result.collisions)
    return NoteImportResult(result.added, result.replaced, result.removed, result.collisions)
