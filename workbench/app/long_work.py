"""Long work the command palette starts: reindex, consolidation, imports, export.

Each job runs through :meth:`WorkbenchHost.run_long`: a progress strip, ctrl+x to cancel,
the outcome (or the error) as a notification. Cancelling loses nothing: reindex and
consolidation resume where they stopped, and an import is all or nothing per batch.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from core.export_paths import export_root, in_export_root
from workbench.app.host import Report, WorkbenchHost
from workbench.app.screens.confirm import ConfirmScreen
from workbench.app.screens.prompt import PromptScreen


def reindex(app: WorkbenchHost) -> None:
    """Re-embed every chunk with the engine's model."""
    engine = app.engine
    if engine is None:
        return

    async def job(report: Report) -> str:
        total = await engine.reindex(progress=lambda done, total: report(done, total, None))
        return f"re-embedded {total:,} chunks with {engine.embedder.name}"

    app.run_long("Reindexing embeddings", job)


def consolidate(app: WorkbenchHost) -> None:
    """Compact every conversation idle for the configured hours, now (after asking)."""
    engine = app.engine
    if engine is None:
        return
    hours = engine.config.consolidation.idle_hours

    async def job(report: Report) -> str:
        found = await engine.consolidate(
            progress=lambda done, total, session: report(done, total, f"Consolidating {session}"))
        return (f"compacted {len(found.compacted)} conversations, skipped {len(found.skipped)}"
                + (f", {len(found.failed)} failed" if found.failed else ""))

    def answered(confirmed: bool | None) -> None:
        if confirmed:
            app.run_long("Consolidating", job)

    app.push_screen(ConfirmScreen(
        f"Compact every conversation idle for more than {hours:g} hours, now?\n\nIn each, "
        "the messages since its last compact marker are folded into a new Archive note and "
        "a marker; a restore then starts at the marker. The events stay in the file, marked "
        "archived. This cannot be undone.", "Compact"), answered)


def import_notes(app: WorkbenchHost) -> None:
    """Ask for a notes JSON file (as export writes it) and import it, all or nothing."""

    def chosen(path: str | None) -> None:
        engine = app.engine
        if path is None or engine is None:
            return

        async def job(report: Report) -> str:
            result = await engine.import_notes(Path(path).expanduser())
            return f"imported {result.added} notes, replaced {result.replaced}"

        app.run_long(f"Importing notes from {path}", job)

    app.push_screen(PromptScreen("Import notes from a JSON file (as export writes it):",
                                 "notes.json"), chosen)


def export_notes(app: WorkbenchHost) -> None:
    """Ask for a path and write the agent namespace's notes there."""

    engine = app.engine
    if engine is None:
        return
    root = export_root(engine.location)

    def chosen(path: str | None) -> None:
        if path is None:
            return

        async def job(report: Report) -> str:
            result = await engine.export_notes(in_export_root(engine.location, path))
            return f"wrote {result.notes} notes of {result.namespace} to {result.path}"

        app.run_long("Exporting notes", job)

    app.push_screen(PromptScreen(
        f"Export the notes of the configured agent to (a relative path is inside {root}):",
        "notes.json", str(root / f"notes-{engine.notes.namespace(None)}.json")), chosen)


def import_locomo(app: WorkbenchHost) -> None:
    """Ask for a LoCoMo JSON file and store its conversations, as `workbench import locomo`
    does (a second import adds nothing)."""

    def chosen(path: str | None) -> None:
        engine = app.engine
        if path is None or engine is None:
            return

        async def job(report: Report) -> str:
            from core.evaluation import convert_locomo_file, store_dataset
            from core.evaluation.dataset import Dataset

            conversions = await asyncio.to_thread(convert_locomo_file, Path(path).expanduser())
            dataset = Dataset()
            for conversion in conversions:
                dataset.extend(conversion.dataset)
            report(0, None, f"Importing {dataset.message_count:,} messages from {path}")
            stored = await store_dataset(engine, dataset)  # resumes; refusals raise
            added = sum(session.stored for session in stored.sessions)
            return (f"imported {added:,} messages in {len(dataset.messages)} conversations "
                    f"({dataset.message_count - added:,} were already there)")

        app.run_long("Importing LoCoMo conversations", job)

    app.push_screen(PromptScreen("Import LoCoMo conversations from a JSON file:",
                                 "locomo.json"), chosen)


COMMANDS: tuple[tuple[str, str, Callable[[WorkbenchHost], None]], ...] = (
    ("Reindex embeddings", "Re-embed every chunk with the current model (progress, ctrl+x)",
     reindex),
    ("Consolidate now…", "Compact idle conversations into archives (asks first; ctrl+x)",
     consolidate),
    ("Import notes…", "Import a notes JSON file, all or nothing", import_notes),
    ("Export notes…", "Write the agent's notes to a JSON file", export_notes),
    ("Import LoCoMo conversations…", "Store the conversations of a LoCoMo JSON file",
     import_locomo),
)
