"""``workbench notes …``: the notes of one namespace, read, changed, exported and imported
without the app.

Every command works in one namespace: ``--namespace``, else the configured agent identity
(``agent`` in the config, "default" unless set), and a note of another namespace is not
there for it. A note is named (REF) by its id, its name or any of its aliases. Commands
that change what a note is found by (its content or name) return once its chunks are
embedded, so ``workbench search`` finds it by both legs straight after.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from core.locations import Location
from core.notes.fields import CATEGORIES, KINDS
from workbench.command_line import db_option, echo_json, json_option, model_option, on_engine
from workbench.text import count, short_time, table

if TYPE_CHECKING:
    from core.engine import Engine

T = TypeVar("T")

_REF = click.argument("ref", metavar="REF")
_NAMESPACE = click.option("--namespace", default=None,
                          help="The namespace the note is in (default: the configured agent).")
_CATEGORY = click.option("--category", type=click.Choice(CATEGORIES, case_sensitive=False),
                         default=None, help="core, daily or conversation (new notes: core).")
_KIND = click.option("--kind", type=click.Choice(KINDS, case_sensitive=False), default=None,
                     help="Note or Archive (new notes: Note).")
_TAGS = click.option("--tag", "tags", multiple=True,
                     help="A tag (repeatable); trimmed and lower-cased.")
_CONTENT = click.option("--content", default=None, help="The note's text.")
_FILE = click.option("--file", "file_path", default=None,
                     type=click.Path(exists=True, dir_okay=False, allow_dash=True,
                                     path_type=Path),
                     help="Read the note's text from this UTF-8 file ('-': standard input).")
_SOURCE = click.option("--source", default=None, help="Who or what wrote the note.")
_IMPORTANCE = click.option("--importance", type=click.FloatRange(0.0, 1.0), default=None,
                           help="From 0 to 1 (new notes: 0.5).")


def _on_notes(ctx: click.Context, db: Location | None,
              work: Callable[[Any], Coroutine[Any, Any, T]], *, writes: bool,
              indexes: bool = False, adds: bool = False, model: str | None = None) -> T:
    """Run ``work(engine)`` for a command that reads or ``writes``; with ``indexes`` (it
    changed what a note is found by), the embedding worker runs and the command waits for
    the new chunks' vectors. A command that ``adds`` notes creates a missing memory file;
    ``model`` is its ``--model``."""
    if not indexes:
        return on_engine(ctx, db, work, writes=writes, warn=False, start_worker=False,
                         adds=adds)

    async def then_drain(engine: Engine) -> T:
        result = await work(engine)
        await engine.drain()
        return result

    return on_engine(ctx, db, then_drain, writes=True, adds=adds, model=model)


def _content(content: str | None, file_path: Path | None) -> str | None:
    """The text ``--content`` or ``--file`` gives (None when neither); both is a usage error."""
    if content is not None and file_path is not None:
        raise click.UsageError("give --content or --file, not both")
    return content if file_path is None else read_text_input(file_path)


def read_text_input(path: Path) -> str:
    """The UTF-8 text of a file, or of standard input for '-'; exit 1, saying why, when it
    cannot be read."""
    shown = "standard input" if str(path) == "-" else str(path)
    try:
        with click.open_file(str(path), encoding="utf-8") as stream:
            return stream.read()
    except UnicodeDecodeError:
        click.echo(f"error: {shown} is not UTF-8 text", err=True)
    except OSError as exc:
        click.echo(f"error: cannot read {shown}: {exc.strerror or exc}", err=True)
    sys.exit(1)


def _summary(note: Any) -> str:
    """``'name' (note-…) in namespace 'ns': Note, core, 2 tags``."""
    tags = f"tags {', '.join(note.tags)}" if note.tags else "no tags"
    aliases = f", aliases {', '.join(note.aliases)}" if note.aliases else ""
    return (f"{note.name!r} ({note.note_id}) in namespace {note.namespace!r}: {note.kind}, "
            f"{note.category}, {tags}{aliases}")


def _report(note: Any, as_json: bool, verb: str) -> None:
    if as_json:
        echo_json(note.to_dict())
    else:
        click.echo(f"{verb} {_summary(note)}")


@click.group("notes")
def notes_group() -> None:
    """List, show, add, edit, rename, alias, remove, export and import the notes of a
    namespace."""


@notes_group.command("list")
@db_option
@_NAMESPACE
@_CATEGORY
@_KIND
@click.option("--tag", "tags", multiple=True, help="Only notes with this tag (repeatable: all).")
@click.option("--text", default=None,
              help="Only notes whose name or content has words starting so (else the text "
                   "as a substring).")
@click.option("--order", type=click.Choice(["name", "updated"]), default="name",
              show_default=True, help="By name, or most recently changed first.")
@click.option("--limit", default=50, show_default=True, type=click.IntRange(1, 1000),
              help="Notes to list.")
@click.option("--offset", default=0, show_default=True, type=click.IntRange(min=0),
              help="Notes to skip first.")
@json_option
@click.pass_context
def list_command(ctx: click.Context, db: Location | None, namespace: str | None,
                 category: str | None, kind: str | None, tags: tuple[str, ...],
                 text: str | None, order: str, limit: int, offset: int,
                 as_json: bool) -> None:
    """List a namespace's notes (name, kind, category, tags, last change), with the total."""

    async def work(engine: Engine) -> tuple[str, Any]:
        page = await engine.list_notes(namespace=namespace, category=category, kind=kind,
                                       tags=list(tags) or None, text=text, limit=limit,
                                       offset=offset, order=order)
        return engine.notes.namespace(namespace), page

    shown_namespace, page = _on_notes(ctx, db, work, writes=False)
    if as_json:
        echo_json({"namespace": shown_namespace, **page.to_dict()})
        return
    rows = [(note.name, note.kind, note.category, ", ".join(note.tags) or "-",
             short_time(note.updated_at), ", ".join(note.aliases) or "-")
            for note in page.notes]
    if rows:
        header = ("name", "kind", "category", "tags", "updated", "aliases")
        for line in table(header, rows):
            click.echo(line)
    total = f"{'' if page.total_exact else 'at least '}{page.total:,}"
    shown = f"{offset + 1}-{offset + len(rows)} of " if rows else "none of "
    matched = " (text found as a substring)" if rows and page.text_match == "like" else ""
    click.echo(f"{shown}{total} note{'' if page.total == 1 else 's'} in namespace "
               f"{shown_namespace!r}{matched}")


@notes_group.command("show")
@_REF
@db_option
@_NAMESPACE
@json_option
@click.pass_context
def show_command(ctx: click.Context, ref: str, db: Location | None, namespace: str | None,
                 as_json: bool) -> None:
    """Show one note (by id, name or alias): every field, then its content."""
    note = _on_notes(ctx, db, lambda engine: engine.get_note(ref, namespace=namespace),
                     writes=False)
    if as_json:
        echo_json(note.to_dict())
        return
    fields = note.to_dict()
    content = fields.pop("content")
    for key in ("aliases", "tags"):
        fields[key] = ", ".join(fields[key])
    for key, value in fields.items():
        click.echo(f"{key + ':':<16}{value if value not in (None, '') else '-'}")
    click.echo("")
    click.echo(content)


@notes_group.command("add")
@click.argument("name")
@db_option
@model_option
@_NAMESPACE
@_CONTENT
@_FILE
@_CATEGORY
@_TAGS
@click.option("--alias", "aliases", multiple=True, help="Another name for it (repeatable).")
@_KIND
@_SOURCE
@_IMPORTANCE
@json_option
@click.pass_context
def add_command(ctx: click.Context, name: str, db: Location | None, model: str | None,
                namespace: str | None, content: str | None, file_path: Path | None,
                category: str | None, tags: tuple[str, ...], aliases: tuple[str, ...],
                kind: str | None, source: str | None, importance: float | None,
                as_json: bool) -> None:
    """Add a note named NAME, its text from --content, --file or standard input (--file -).

    Refused (exit 1, nothing written) when NAME or an alias already names a note here.
    """
    text = _content(content, file_path)
    if text is None:
        raise click.UsageError("give the note's text: --content TEXT, --file PATH or --file -")

    async def work(engine: Engine) -> Any:
        return await engine.add_note(
            name, text, namespace=namespace, kind=kind or "Note", category=category,
            tags=list(tags), source=source or "", aliases=list(aliases),
            importance=0.5 if importance is None else importance)

    _report(_on_notes(ctx, db, work, writes=True, indexes=True, adds=True, model=model),
            as_json, "added")


@notes_group.command("edit")
@_REF
@db_option
@model_option
@_NAMESPACE
@_CONTENT
@_FILE
@_CATEGORY
@click.option("--tag", "tags", multiple=True,
              help="A tag (repeatable); the tags given replace the note's tags.")
@click.option("--no-tags", is_flag=True, help="Remove every tag.")
@_KIND
@_SOURCE
@_IMPORTANCE
@json_option
@click.pass_context
def edit_command(ctx: click.Context, ref: str, db: Location | None, model: str | None,
                 namespace: str | None, content: str | None, file_path: Path | None,
                 category: str | None, tags: tuple[str, ...], no_tags: bool,
                 kind: str | None, source: str | None, importance: float | None,
                 as_json: bool) -> None:
    """Replace a note's content and any field given; its id, name and aliases stay."""
    if tags and no_tags:
        raise click.UsageError("give --tag or --no-tags, not both")
    text = _content(content, file_path)
    new_tags = [] if no_tags else list(tags) or None
    if text is None and new_tags is None and all(
            value is None for value in (category, kind, source, importance)):
        raise click.UsageError("nothing to change: give --content, --file, --category, "
                               "--tag, --no-tags, --kind, --source or --importance")

    async def work(engine: Engine) -> Any:
        return await engine.write_note(ref, text, namespace=namespace, kind=kind,
                                       category=category, tags=new_tags, source=source,
                                       importance=importance)

    _report(_on_notes(ctx, db, work, writes=True, indexes=True, model=model), as_json,
            "wrote")


@notes_group.command("rm")
@_REF
@db_option
@_NAMESPACE
@click.option("--yes", is_flag=True, help="Remove without asking.")
@json_option
@click.pass_context
def rm_command(ctx: click.Context, ref: str, db: Location | None, namespace: str | None, yes: bool,
               as_json: bool) -> None:
    """Remove a note with its names and index entries (exit 1 when REF names none)."""

    async def work(engine: Engine) -> Any:
        note = await engine.get_note(ref, namespace=namespace)  # NotFound when it names none
        if not yes:
            click.confirm(f"remove note {note.name!r} ({note.note_id}) from namespace "
                          f"{note.namespace!r}?", abort=True, err=True)
        await engine.remove_note(note.note_id, namespace=namespace)
        return note

    note = _on_notes(ctx, db, work, writes=True)
    if as_json:
        echo_json({"removed": note.note_id, "name": note.name, "namespace": note.namespace})
    else:
        click.echo(f"removed {note.name!r} ({note.note_id}) from namespace {note.namespace!r}")


@notes_group.command("alias")
@_REF
@click.argument("alias")
@db_option
@_NAMESPACE
@json_option
@click.pass_context
def alias_command(ctx: click.Context, ref: str, alias: str, db: Location | None,
                  namespace: str | None, as_json: bool) -> None:
    """Give a note another name, ALIAS: it finds the note and adds no search words."""
    note = _on_notes(ctx, db,
                     lambda engine: engine.alias_note(ref, alias, namespace=namespace),
                     writes=True)
    _report(note, as_json, "aliased")


@notes_group.command("unalias")
@click.argument("alias")
@db_option
@_NAMESPACE
@json_option
@click.pass_context
def unalias_command(ctx: click.Context, alias: str, db: Location | None, namespace: str | None,
                    as_json: bool) -> None:
    """Take the name ALIAS from the note it names (a note's own name is changed by rename)."""
    note = _on_notes(ctx, db,
                     lambda engine: engine.unalias_note(alias, namespace=namespace),
                     writes=True)
    _report(note, as_json, f"unaliased {alias!r} from")


@notes_group.command("rename")
@_REF
@click.argument("new_name")
@db_option
@model_option
@_NAMESPACE
@json_option
@click.pass_context
def rename_command(ctx: click.Context, ref: str, new_name: str, db: Location | None,
                   model: str | None, namespace: str | None, as_json: bool) -> None:
    """Give a note the name NEW_NAME; the old name is released (and no longer finds it)."""
    note = _on_notes(ctx, db,
                     lambda engine: engine.rename_note(ref, new_name, namespace=namespace),
                     writes=True, indexes=True, model=model)
    _report(note, as_json, "renamed to")


@notes_group.command("export")
@db_option
@_NAMESPACE
@click.option("--out", "out_path", default=None,
              type=click.Path(dir_okay=False, writable=True, path_type=Path),
              help="The JSON file to write (replaced if it exists, atomically; default: "
                   "exports/notes-<namespace>.json beside the memory file).")
@json_option
@click.pass_context
def export_command(ctx: click.Context, db: Location | None, namespace: str | None,
                   out_path: Path | None, as_json: bool) -> None:
    """Write every note of a namespace to one JSON file, atomically (`notes import` reads it)."""
    from core.export_paths import default_export_path

    def work(engine: Engine) -> Any:
        stem = f"notes-{engine.notes.namespace(namespace)}"
        out = out_path or default_export_path(engine.location, stem, ".json")
        return engine.export_notes(out, namespace=namespace)

    result = _on_notes(ctx, db, work, writes=False)
    written = os.path.abspath(result.path)
    if as_json:
        echo_json({**result.to_dict(), "path": written})
    else:
        click.echo(f"wrote {count(result.notes, 'note')} of namespace {result.namespace!r} "
                   f"to {written}")


COLLISIONS_SHOWN = 3
"""A refused import's one error line names this many colliding names; --json has them all."""


@notes_group.command("import")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@db_option
@model_option
@_NAMESPACE
@click.option("--overwrite", is_flag=True,
              help="Let the file win where its names are taken: the note of that name is "
                   "replaced, an alias unbound, a note whose own name it is removed.")
@json_option
@click.pass_context
def import_command(ctx: click.Context, file: Path, db: Location | None, model: str | None,
                   namespace: str | None, overwrite: bool, as_json: bool) -> None:
    """Import a notes file (as `notes export` writes it) into a namespace: all of it or
    nothing.

    Without --overwrite, names already taken in the namespace refuse the whole file
    (exit 1; --json lists every collision).
    """
    from core.errors import ImportCollision

    async def work(engine: Engine) -> tuple[str, Any, ImportCollision | None]:
        shown_namespace = engine.notes.namespace(namespace)
        try:
            result = await engine.import_notes(file, namespace=namespace, overwrite=overwrite)
        except ImportCollision as refusal:
            return shown_namespace, None, refusal
        return shown_namespace, result, None

    shown_namespace, result, refusal = _on_notes(ctx, db, work, writes=True, indexes=True,
                                                 adds=True, model=model)
    if refusal is not None:
        collisions: list[Any] = refusal.collisions  # core.types.NameCollision, each
        if as_json:
            echo_json({"path": str(file), "namespace": shown_namespace, "imported": False,
                       "collisions": [c.to_dict() for c in collisions]})
        named = ", ".join(repr(c.name) for c in collisions[:COLLISIONS_SHOWN])
        more = len(collisions) - COLLISIONS_SHOWN
        named += f" and {more} more" if more > 0 else ""
        taken = "name is" if len(collisions) == 1 else "names are"
        click.echo(f"error: {len(collisions)} {taken} already taken in namespace "
                   f"{shown_namespace!r} ({named}); nothing was imported (--overwrite lets "
                   "the file win; --json lists each)", err=True)
        sys.exit(1)
    if as_json:
        echo_json({"path": str(file), "namespace": shown_namespace, "imported": True,
                   **result.to_dict()})
        return
    taken = (f"; {count(len(result.collisions), 'name')} taken from notes already here"
             if result.collisions else "")
    removed = (f", {count(len(result.removed), 'note')} removed ({', '.join(result.removed)})"
               if result.removed else "")
    click.echo(f"imported {file} into namespace {shown_namespace!r}: {result.added:,} added, "
               f"{result.replaced:,} replaced{removed}{taken}")
