"""A seed-002 ``memories.db``: its ``memories`` table (key, content, category).

Each row becomes a seed-002 memory of the namespace, exactly what ``save_memory(key,
content, category)`` makes: a note named by the key, holding the content, in the row's
category (core, daily or conversation; an empty one is core, pynchy's default), found by
``recall_memories``. Its source is ``import:pynchy``; ``created_at`` / ``updated_at``
columns, when the table has them, are kept as the note's times.

The notes are written in one transaction (see :mod:`core.importers.notes`), not one
``save_memory`` call each, so the file lands whole or not at all. A key the namespace
already holds with the same content is "already"; with other content it is skipped, never
overwritten; a row the engine refuses (a category pynchy does not have, blank content,
a key over 200 characters) is skipped with the reason.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from core.importers.notes import PlannedNote, land_notes
from core.importers.report import ImportReport, Progress
from core.importers.source import engine_time, open_source

if TYPE_CHECKING:
    from core.engine import Engine

FORMAT = "pynchy"
KIND = "memories"
SHAPE = "a pynchy memories.db"
COLUMNS = ("key", "content", "category")


def check(path: str | Path) -> None:
    """Refuse a file that is not a memories.db (``InvalidInput``), touching no memory file."""
    with open_source(path) as source:
        source.require("memories", COLUMNS, SHAPE)


async def import_pynchy(engine: Engine, path: str | Path, *, namespace: str | None = None,
                         progress: Progress | None = None) -> ImportReport:
    """Import a seed-002 memories.db (see the module docstring) into ``namespace``
    (default: the engine's agent)."""
    namespace = engine.notes.namespace(namespace)
    report = ImportReport(str(path), FORMAT, str(engine.location), namespace)
    with open_source(path) as source:
        source.require("memories", COLUMNS, SHAPE)
        present = set(source.columns("memories"))
        times = [c for c in ("created_at", "updated_at") if c in present]
        rows = source.rows("SELECT rowid AS row_number, key, content, category"
                           + "".join(f", {c}" for c in times) + " FROM memories ORDER BY rowid")
    planned = [
        PlannedNote(where=f"memories row {row['row_number']} (key {row['key']!r})",
                    name=row["key"], content=row["content"],
                    category=row["category"] or "core", source="import:pynchy",
                    created_at=engine_time(row.get("created_at")),
                    updated_at=engine_time(row.get("updated_at") or row.get("created_at")))
        for row in rows]
    await land_notes(engine, planned, report, namespace=namespace, kind=KIND)
    if progress is not None:
        progress(len(planned), len(planned))
    return report
