"""``workbench doctor``: what the engine finds on this machine and in a memory file.

Each check runs on its own, so one failure (no sqlite-vec, say) never hides the others,
and each failure says what to do about it.
"""

from __future__ import annotations

import asyncio
import json
import platform
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from workbench.command_line import (
    MEMORY,
    MEMORY_HELP,
    command_config,
    model_fallback_said,
    model_option,
    open_engine,
    run_command,
    unlogged_warnings,
)

if TYPE_CHECKING:
    from core.locations import Location


def _check_model(config: Any) -> dict[str, Any]:
    from core.embeddings import load_embedder

    try:
        loaded = load_embedder(config.embedding)
    except Exception as exc:  # a DimensionMismatch or a broken config: show it
        return {"ok": False, "backend": config.embedding.backend,
                "configured": config.embedding.model, "error": str(exc)}
    embedder = loaded.embedder
    result = {"ok": True, "backend": config.embedding.backend,
              "configured": config.embedding.model, "name": embedder.name,
              "dimension": embedder.dimension, "fell_back": loaded.fell_back,
              "warning": loaded.warning,
              "tokenizer": getattr(embedder, "tokenizer", None) is not None}
    embedder.close()
    return result


def _check_clipboard() -> dict[str, Any]:
    try:
        import pyperclip

        pyperclip.paste()
        return {"ok": True, "available": True}
    except Exception as exc:  # pyperclip raises its own exception type when it finds none
        return {"ok": True, "available": False, "note": (
            f"{exc.__class__.__name__}: no system clipboard tool; the app copies through the "
            "terminal (OSC 52) instead. Install xclip, xsel or wl-clipboard for a system copy.")}


async def _check_database(config: Any, db: Location) -> dict[str, Any]:
    from core.storage import damage, examine
    from core.storage.opening import code_schema_version

    shown = str(db)  # a URL without its password
    if not db.is_postgres:
        try:
            state = await asyncio.to_thread(examine, db.path.expanduser())
        except Exception as exc:  # a symlink loop, another app's database: that is the finding
            return {"ok": False, "path": shown, "exists": True, "error": str(exc)}
        if state != "memory":
            return {"ok": True, "path": shown, "exists": state == "empty", "memory": False}
    try:
        async with open_engine(db, config, writes=False, read_only=True) as engine:
            status = await engine.embedding_status()
            counts = await engine.counts()
            file_dimension, file_model = await engine.backend.vector_meta()
            storage = await engine.backend.versions()
            off = engine.model.vectors_off
            # The model's fallback: the model line says it; vectors off: the problem line.
            warnings = [w for w in unlogged_warnings(engine)
                        if off is None or w != off.message]
            saved_indexes = getattr(engine.backend, "saved_indexes", None)
            indexes = await saved_indexes() if saved_indexes is not None else []
        # Damage in a page the open did not read shows only when every page is read.
        if not db.is_postgres and (found := await asyncio.to_thread(
                damage, db.path.expanduser())) is not None:
            return {"ok": False, "path": shown, "exists": True, "error": found}
        return {"ok": off is None, "path": shown, "exists": True,
                "vectors_off": None if off is None else off.message, "storage": storage,
                "schema_version": engine.backend.schema_version,
                "code_schema_version": code_schema_version(db), "counts": counts,
                "vector_model": file_model, "vector_dimension": file_dimension,
                "embedding": status.to_dict(), "warnings": warnings,
                "saved_indexes": indexes}
    except Exception as exc:  # e.g. DimensionMismatch: that is the finding
        return {"ok": False, "path": shown, "exists": True, "error": str(exc)}


async def gather(config: Any, db: Location | None, config_path: Path | None) -> dict[str, Any]:
    """Run every check and return the findings as one JSON-ready dict.

    This machine's SQLite is checked unless the memory is on a PostgreSQL server, whose own
    versions the database check asks its backend for."""
    from core.storage import capabilities

    if db is None and config.storage.url:
        from core.locations import parse_location

        db = parse_location(config.storage.url)
    report: dict[str, Any] = {
        "python": platform.python_version(),
        "config": str(config_path) if config_path else "defaults (no config file)",
    }
    if db is None or not db.is_postgres:
        report["sqlite"] = await asyncio.to_thread(capabilities)
    report["model"] = await asyncio.to_thread(_check_model, config)
    report["clipboard"] = await asyncio.to_thread(_check_clipboard)
    if db is not None:
        report["database"] = await _check_database(config, db)
    report["ok"] = all(report[key]["ok"] for key in ("sqlite", "model", "clipboard", "database")
                       if key in report)
    return report


def render(report: dict[str, Any]) -> list[str]:
    """The findings as aligned lines for a terminal."""
    lines = [f"python       {report['python']}", f"config       {report['config']}"]
    sqlite = report.get("sqlite")
    if sqlite is None:
        pass  # a server's memory: its versions are the database's first line
    elif "error" in sqlite:
        lines.append(f"sqlite       PROBLEM: {sqlite['error']}")
    else:
        lines.append(f"sqlite       {sqlite['sqlite']} via {sqlite['driver']}; extension loading "
                     f"{'yes' if sqlite['extension_loading'] else 'NO'}")
        lines.append("sqlite-vec   " + (sqlite.get("sqlite_vec") or
                                        f"PROBLEM: {sqlite.get('sqlite_vec_error')}"))
        lines.append("fts5         " + ("yes" if sqlite.get("fts5") else
                                        f"PROBLEM: {sqlite.get('fts5_error')}"))
    model = report["model"]
    if "error" in model:
        lines.append(f"model        PROBLEM: {model['error']}")
    else:
        backend = (f"fallback from {model['backend']} {model['configured']}"
                   if model["fell_back"] else f"backend {model['backend']}")
        lines.append(f"model        {model['name']} ({model['dimension']} dims, {backend}; "
                     f"tokenizer {'yes' if model['tokenizer'] else 'no'})")
        if model["warning"]:
            lines.append(f"             {model['warning']}")
    clip = report["clipboard"]
    lines.append("clipboard    " + ("system clipboard available" if clip["available"]
                                    else clip["note"]))
    database = report.get("database")
    if database is not None:
        if not database["exists"]:
            lines.append(f"database     {database['path']} does not exist yet")
        elif database.get("memory") is False:
            lines.append(f"database     {database['path']} is empty, not a memory yet")
        elif "error" in database:
            lines.append(f"database     PROBLEM: {database['error']}")
        else:
            counts = database["counts"]
            emb = database["embedding"]
            storage = ", ".join(f"{name} {version}"
                                for name, version in database["storage"].items())
            lines.append(f"database     {database['path']}: schema {database['schema_version']}"
                         f" (this code writes {database['code_schema_version']}); {storage}")
            lines.append(f"             {counts['sessions']:,} sessions, "
                         f"{counts['conversation_events']:,} events, {counts['chunks']:,} chunks,"
                         f" {counts['chunks_vec']:,} vectors")
            lines.append(f"             vectors: {database['vector_dimension']} dims from "
                         f"{database['vector_model']}; backlog {emb['backlog']:,}, failed "
                         f"{emb['failed']:,}")
            for index in database.get("saved_indexes", []):
                lines.append(f"             saved index {index['index']}: {index['state']}; "
                             f"{index['bytes']:,} bytes in {index['folder']}")
            for warning in database["warnings"]:
                lines.append(f"             warning: {warning}")
            if database["vectors_off"]:
                lines.append(f"             PROBLEM: {database['vectors_off']}")
    lines.append("status       " + ("ok" if report["ok"] else "PROBLEMS FOUND (see above)"))
    return lines


@click.command("doctor")
@click.option("--db", "db", type=MEMORY, default=None,
              help=f"Also inspect this memory, opened read-only ({MEMORY_HELP}; default: "
                   "the config's [storage] url, if set).")
@model_option
@click.option("--json", "as_json", is_flag=True, help="Print the findings as JSON.")
@click.pass_context
def doctor(ctx: click.Context, db: Location | None, model: str | None, as_json: bool) -> None:
    """Print what the engine finds: SQLite, sqlite-vec, FTS5 (for a file), model, clipboard,
    the memory (a server's: PostgreSQL and pgvector)."""
    config = command_config(ctx, model)
    report = run_command(gather(config, db, ctx.obj.get("config_path")))
    model_fallback_said()  # the model line says it, with its reason
    if as_json:
        click.echo(json.dumps(report, indent=2))
    else:
        for line in render(report):
            click.echo(line)
    if not report["ok"]:
        sys.exit(1)
