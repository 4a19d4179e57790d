"""``workbench import FORMAT`` (jsonl, aidaemon, oxydra, pynchy, crabtalk,
langgraph-checkpoints, langgraph-store, openai-agents-session, locomo) and ``workbench export``.

Imports check the whole source first (a malformed file is refused before the memory file is
opened or created), then land it through the engine and print, per kind, what was added,
what was there already and what was skipped, with each skip's reason.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from core.locations import Location
from workbench.command_line import (
    MEMORY,
    MEMORY_HELP,
    command_config,
    db_option,
    drain_with_progress,
    echo_created,
    echo_json,
    echo_warnings,
    is_missing,
    json_option,
    model_option,
    on_engine,
    open_engine,
    run_command,
)
from workbench.text import count

if TYPE_CHECKING:
    from core.engine import Engine

IMPORTS = {
    "jsonl": ("Import JSONL conversations: one message per line with its session id.",
              "The JSONL file: one JSON object per line, {\"session_id\", \"sequence\" "
              "(optional), \"message\": {role, content, ...}} or the message's keys inline."),
    "aidaemon": ("Import an aidaemon SQLite file: its messages (with importance) and facts.",
                 "The aidaemon SQLite file (tables messages and facts)."),
    "oxydra": ("Import an oxydra SQLite/libSQL file: sessions, events, notes, scratchpads "
               "and rolling summaries (vectors are re-embedded).",
               "The oxydra SQLite/libSQL memory file."),
    "pynchy": ("Import a pynchy memories.db: each key becomes a memory (a note) of the "
               "namespace.",
               "The pynchy memories.db (table memories: key, content, category)."),
    "crabtalk": ("Import a crabtalk entry store exported as JSON: notes and archives with "
                 "their names and aliases.",
                 "The crabtalk JSON export (a list of entries, or {\"entries\": [...]})."),
    "langgraph-checkpoints": (
        "Import LangGraph checkpoints (SqliteSaver or PostgresSaver): each thread becomes a "
        "session with its messages, checkpoints and pending writes.",
        "The SqliteSaver file, or the PostgresSaver database's postgresql:// URL."),
    "langgraph-store": (
        "Import a LangGraph store (SqliteStore or PostgresStore): each item becomes the note "
        "WorkbenchStore reads, with its times; expired items are skipped.",
        "The SqliteStore file, or the PostgresStore database's postgresql:// URL."),
    "openai-agents-session": (
        "Import an OpenAI Agents SDK SQLiteSession file: each session becomes a session "
        "whose items WorkbenchSession gives back.",
        "The SQLiteSession file (tables agent_sessions and agent_messages)."),
}
URL_SOURCES = {"langgraph-checkpoints", "langgraph-store"}
"""Formats whose source may also be a database's ``postgresql://`` URL."""
EXPORT_FORMATS = ("jsonl", "markdown")


class _ImportLine:
    """The import's progress line on stderr: messages settled, then, once all are, that the
    memory is being made searchable (a large import's indexes are saved by its helper
    process, which at a million chunks takes seconds; the embedding backlog drains)."""

    def __init__(self) -> None:
        self.shown = False

    def __call__(self, done: int, total: int) -> None:
        after = " · making it searchable …" if done >= total else ""
        click.echo(f"\rimporting   {done:,}/{total:,}{after}", err=True, nl=False)
        self.shown = True

    def end(self, searchable: bool) -> None:
        """End the line: once the memory is searchable, or before the import's error."""
        if self.shown:
            click.echo(" searchable" if searchable else "", err=True)


def _import_line() -> _ImportLine | None:
    """A progress line on stderr, when stderr is a terminal."""
    return _ImportLine() if sys.stderr.isatty() else None


class _FileOrUrl(click.ParamType):
    """An existing file, or a ``postgresql://`` URL (left for the importer to reach)."""

    name = "file_or_url"

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> Path | str:
        if str(value).startswith(("postgresql://", "postgres://")):
            return str(value)
        return click.Path(exists=True, dir_okay=False, path_type=Path).convert(value, param, ctx)


async def _import(source_format: str, file: Path | str, db: Location, namespace: str | None,
                  config: Any) -> Any:
    from core.importers import check_source, import_file

    check_source(source_format, file)  # before the memory file is opened (or created)
    created = is_missing(db)
    async with open_engine(db, config, writes=True) as engine:
        if created:
            echo_created(db)
        echo_warnings(engine)
        line = _import_line()
        searchable = False
        try:
            report = await import_file(source_format, engine, file, namespace=namespace,
                                       progress=line)
            await engine.drain()
            searchable = True
        finally:
            if line is not None:
                line.end(searchable)
    return report


def _import_command(source_format: str) -> click.Command:
    """The ``workbench import <format>`` command."""
    summary, file_help = IMPORTS[source_format]

    @click.command(source_format, help=f"{summary}\n\nFILE: {file_help}\n\nImporting the "
                   "same file again adds nothing; nothing is skipped without saying why.")
    @click.argument("file", type=_FileOrUrl() if source_format in URL_SOURCES
                    else click.Path(exists=True, dir_okay=False, path_type=Path))
    @click.option("--db", "db", required=True, type=MEMORY,
                  help=f"{MEMORY_HELP} to import into (a file is created when missing).")
    @click.option("--namespace", default=None,
                  help="The agent identity the imported data belongs to (default: the "
                       "configured agent).")
    @model_option
    @json_option
    @click.pass_context
    def command(ctx: click.Context, file: Path | str, db: Location, namespace: str | None,
                model: str | None, as_json: bool) -> None:
        config = command_config(ctx, model)
        report = run_command(_import(source_format, file, db, namespace, config))
        if as_json:
            echo_json(report.to_dict())
            return
        for line in report.lines():
            click.echo(line)

    return command


import_commands = [_import_command(source_format) for source_format in IMPORTS]


@click.group("import")
def import_group() -> None:
    """Import conversations and other agents' memory stores into a memory file."""


@import_group.command("locomo")
@click.argument("files", nargs=-1, required=True,
                type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--db", "db", required=True, type=MEMORY,
              help=f"{MEMORY_HELP} to import into (a file is created when missing).")
@click.option("--dataset", "dataset_path", type=click.Path(dir_okay=False, path_type=Path),
              default=None,
              help="Where to write the evaluation dataset (JSONL); default: <db stem>.locomo.jsonl"
                   " next to the memory file (a URL's memory needs --dataset).")
@click.option("--times", type=click.Choice(["created_at", "metadata"]), default="created_at",
              show_default=True,
              help="Where each LoCoMo session's date-time goes: its turns' own time "
                   "(created_at, read as UTC) or their metadata (session_date).")
@model_option
@click.option("--json", "as_json", is_flag=True, help="Print the counts as JSON.")
@click.pass_context
def import_locomo(ctx: click.Context, files: tuple[Path, ...], db: Location,
                  dataset_path: Path | None, times: str, model: str | None,
                  as_json: bool) -> None:
    """Import LoCoMo conversations (their turns only) and write their questions as a dataset.

    Each conversation becomes one session; importing a file again adds nothing.
    """
    config = command_config(ctx, model)
    if dataset_path is None:
        if db.is_postgres:
            raise click.UsageError("give --dataset: a memory on a server has no folder to "
                                   "write the dataset beside")
        dataset_path = db.path.with_name(f"{db.path.stem}.locomo.jsonl")
    summary = run_command(_import_locomo(files, db, dataset_path, config, times))
    if as_json:
        click.echo(json.dumps(summary, indent=2))
        return
    for conversion, stored in zip(summary["conversations"], summary["stored"], strict=True):
        categories = ", ".join(f"{c}: {n}" for c, n in conversion["queries_by_category"].items())
        unknown = conversion["unknown_evidence"]
        click.echo(f"{conversion['session_id']}  ({conversion['source']})")
        click.echo(f"  turns     {conversion['turns']:,} in {conversion['sessions']} LoCoMo "
                   f"sessions; {conversion['images']} with an image caption")
        click.echo(f"  queries   {conversion['queries']} by category ({categories})")
        click.echo(f"  evidence  {count(conversion['split_evidence'], 'string')} held several "
                   f"ids (split); {count(len(unknown), 'id')} named no turn"
                   + (f" ({', '.join(unknown)})" if unknown else "")
                   + f"; {count(conversion['without_evidence'], 'question')} without "
                     "evidence left out")
        if stored["stored"]:
            click.echo(f"  stored    {stored['stored']:,} messages"
                       + (f" ({stored['already']:,} were there)" if stored["already"] else ""))
        else:
            click.echo(f"  stored    nothing: already imported ({stored['already']:,} messages)")
    embedding = summary["embedding"]
    click.echo(f"embedding   {embedding['model']}: backlog {embedding['backlog']:,}, "
               f"{embedding['embedded']:,} chunks embedded, {embedding['failed']:,} failed")
    click.echo(f"dataset     {summary['dataset']}: {count(summary['sessions'], 'session')}, "
               f"{summary['messages']:,} messages, {summary['queries']:,} queries")


async def _import_locomo(files: tuple[Path, ...], db: Location, dataset_path: Path,
                         config: Any, times: Any = "created_at") -> dict[str, Any]:
    from core.evaluation import convert_locomo_file, store_dataset
    from core.evaluation.dataset import Dataset, write_dataset

    # Every file is converted (and refused if malformed) before the memory file is touched.
    conversions = [c for path in files for c in convert_locomo_file(path, times=times)]
    dataset = Dataset()
    for conversion in conversions:
        dataset.extend(conversion.dataset)
    created = is_missing(db)
    async with open_engine(db, config, writes=True) as engine:
        if created:
            echo_created(db)
        echo_warnings(engine)
        stored = await store_dataset(engine, dataset)
        status = await drain_with_progress(engine)
    write_dataset(dataset, dataset_path)
    return {
        "db": str(db), "dataset": str(dataset_path),
        "conversations": [c.to_dict() for c in conversions],
        "stored": [{"session_id": s.session_id, "stored": s.stored, "already": s.already}
                   for s in stored.sessions],
        "sessions": len(dataset.messages), "messages": dataset.message_count,
        "queries": len(dataset.queries),
        "embedding": {"model": status.model, "backlog": status.backlog,
                      "embedded": status.embedded, "failed": status.failed},
    }


for _command in import_commands:
    import_group.add_command(_command)


@click.group("export")
def export_group() -> None:
    """Export conversations to JSONL (what `workbench import jsonl` reads) or markdown."""


format_option = click.option(
    "--format", "export_format", required=True, type=click.Choice(EXPORT_FORMATS),
    help="jsonl: one event per line, re-importable; markdown: pynchy's archive format, one "
         "file per session.")


def _echo_export(result: Any, as_json: bool) -> None:
    """What was written, each path in full (a relative --out is read from the current
    folder, which the line should not leave the reader to guess)."""
    paths = [os.path.abspath(path) for path in result.paths]
    if as_json:
        echo_json({**result.to_dict(), "paths": paths})
        return
    where = paths[0] if len(paths) == 1 else \
        f"{count(len(paths), 'file')} in {Path(paths[0]).parent}"
    click.echo(f"exported {result.scope} {result.name!r}: {count(result.sessions, 'session')}, "
               f"{count(result.messages, 'message')} as {result.format} to {where}")


@export_group.command("session")
@click.argument("session_id")
@db_option
@format_option
@click.option("--out", "out_path", default=None, type=click.Path(path_type=Path),
              help="The file to write (a folder: <session>.jsonl or .md inside it; default: "
                   "exports/<session>.jsonl or .md beside the memory file).")
@json_option
@click.pass_context
def export_session_command(ctx: click.Context, session_id: str, db: Location | None,
                           export_format: str, out_path: Path | None, as_json: bool) -> None:
    """Export one session's messages to a JSONL or markdown file, atomically."""
    from core.export_paths import default_export_path
    from core.exporters import export_session

    def work(engine: Engine) -> Any:
        suffix = ".jsonl" if export_format == "jsonl" else ".md"
        out = out_path or default_export_path(engine.location, session_id, suffix)
        return export_session(engine, session_id, out, export_format)

    result = on_engine(ctx, db, work, writes=False, read_only=True, defer_model=True)
    _echo_export(result, as_json)


@export_group.command("namespace")
@click.argument("namespace")
@db_option
@format_option
@click.option("--out", "out_path", default=None, type=click.Path(path_type=Path),
              help="jsonl: the file to write (a folder: <namespace>.jsonl inside it); "
                   "markdown: the folder to write one <session>.md per session in (default: "
                   "exports/<namespace>.jsonl or exports/<namespace>/ beside the memory file).")
@json_option
@click.pass_context
def export_namespace_command(ctx: click.Context, namespace: str, db: Location | None,
                             export_format: str, out_path: Path | None, as_json: bool) -> None:
    """Export every conversation session of a namespace (agent identity) to JSONL or
    markdown."""
    from core.export_paths import default_export_path
    from core.exporters import export_namespace

    def work(engine: Engine) -> Any:
        suffix = ".jsonl" if export_format == "jsonl" else ""
        out = out_path or default_export_path(engine.location, namespace, suffix)
        return export_namespace(engine, namespace, out, export_format)

    result = on_engine(ctx, db, work, writes=False, read_only=True, defer_model=True)
    _echo_export(result, as_json)
