"""A seed-004 entry store, exported as one JSON file.

The file is a list of entries, or an object holding one under ``"entries"``; an entry is::

    {"id": 7, "name": "deploy", "aliases": ["release"], "content": "...",
     "kind": "Note", "created_at": "2024-05-01T12:00:00Z"}

(``id``, ``aliases``, ``kind`` and ``created_at`` optional; a time is RFC 3339 text or
seconds since the epoch.)

Each entry becomes a note of the namespace with the same name, aliases, content and kind,
and the entry's ``created_at``. Notes go to the configured default category; Archive
entries (compaction summaries) to ``conversation`` with the tag ``archive``, as the
engine's own archives. Their source is ``import:crabtalk``.

A file that is not JSON, or an entry of the wrong shape (not an object, no name or content,
aliases that are not a list of strings) is ``InvalidInput`` naming the file and the entry,
with nothing written. An entry the engine refuses (a kind other than Note/Archive, a name
over 200 characters) or whose name or alias is taken is skipped with the reason (see
:mod:`core.importers.notes`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.errors import InvalidInput
from core.importers.notes import PlannedNote, land_notes
from core.importers.report import ImportReport, Progress
from core.importers.source import engine_time, read_text

if TYPE_CHECKING:
    from core.engine import Engine

FORMAT = "crabtalk"
KIND = "notes"


def read_entries(path: str | Path) -> list[PlannedNote]:
    """Every entry of the file as a planned note; ``InvalidInput`` names the first
    malformed one."""
    source = Path(path).expanduser()
    try:
        document = json.loads(read_text(source))
    except (ValueError, RecursionError) as exc:
        raise InvalidInput(f"{source} is not JSON: {exc}") from None
    entries = document.get("entries") if isinstance(document, dict) else document
    if not isinstance(entries, list):
        raise InvalidInput(f"{source} is not a crabtalk export: it needs a list of entries "
                           'or an object with an "entries" list')
    return [_planned(source, index, entry) for index, entry in enumerate(entries)]


def _planned(source: Path, index: int, entry: Any) -> PlannedNote:
    where = f"entries[{index}]"
    if not isinstance(entry, dict):
        raise InvalidInput(f"{source} {where}: an entry must be an object, got "
                           f"{type(entry).__name__}")
    if "id" in entry:
        where += f" (id {entry['id']!r})"
    for key in ("name", "content"):
        if not isinstance(entry.get(key), str):
            raise InvalidInput(f"{source} {where}: {key} must be a string, got "
                               f"{entry.get(key)!r}")
    aliases = entry.get("aliases") or []
    if not isinstance(aliases, list) or not all(isinstance(a, str) for a in aliases):
        raise InvalidInput(f"{source} {where}: aliases must be a list of strings")
    kind = entry.get("kind", "Note")
    archive = isinstance(kind, str) and kind.strip().lower() == "archive"
    created_at = engine_time(entry.get("created_at"))
    if created_at is None and entry.get("created_at") is not None:
        raise InvalidInput(f"{source} {where}: created_at {entry['created_at']!r} is not a "
                           "time (RFC 3339 text or seconds since the epoch)")
    return PlannedNote(
        where=f"{where} {entry['name']!r}", name=entry["name"], content=entry["content"],
        kind=kind, aliases=aliases, category="conversation" if archive else None,
        tags=["archive"] if archive else None, source="import:crabtalk",
        created_at=created_at, updated_at=created_at)


def check(path: str | Path) -> None:
    """Refuse a malformed file (``InvalidInput``) without touching any memory file."""
    read_entries(path)


async def import_crabtalk(engine: Engine, path: str | Path, *, namespace: str | None = None,
                         progress: Progress | None = None) -> ImportReport:
    """Import a seed-004 JSON export (see the module docstring) into ``namespace``
    (default: the engine's agent)."""
    namespace = engine.notes.namespace(namespace)
    planned = read_entries(path)
    report = ImportReport(str(path), FORMAT, str(engine.location), namespace)
    await land_notes(engine, planned, report, namespace=namespace, kind=KIND)
    if progress is not None:
        progress(len(planned), len(planned))
    return report
