"""``workbench [DB]``, ``workbench open [DB]`` and ``workbench demo``: the app's commands."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from workbench.command_line import (
    MEMORY,
    command_config,
    examine_memory,
    memory_location,
    model_option,
)

if TYPE_CHECKING:
    from core.locations import Location


class OpensByDefault(click.Group):
    """A group where ``workbench`` alone, ``workbench FILE`` or ``workbench URL`` means
    ``workbench open``."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        index = 0
        while index < len(args) and args[index] in ("--config",) + GROUP_FLAGS:
            index += 1 if args[index] in GROUP_FLAGS else 2
        while index < len(args) and args[index].startswith("--config="):
            index += 1
        rest = args[index:]
        if not rest or rest[0].startswith("-") and rest[0] not in GROUP_FLAGS or (
                rest[0] not in self.commands and looks_like_a_memory(rest[0])):
            args = [*args[:index], "open", *rest]
        return super().parse_args(ctx, args)


def looks_like_a_memory(word: str) -> bool:
    """A word that names a memory rather than a mistyped command: a ``scheme://`` URL (an
    unsupported scheme is then refused by ``open``, naming the ones that work), or a file
    that exists, has a folder in it, or ends like a database (``workbench serach`` stays a
    usage error)."""
    if "://" in word:
        return True
    path = Path(word)
    return (path.exists() or len(path.parts) > 1
            or path.suffix.lower() in (".db", ".sqlite", ".sqlite3", ".memory"))


GROUP_FLAGS = ("-h", "--help", "--version")


theme_option = click.option("--theme", default=None,
                            help="A theme by name (built-in, themes/, or your theme folder).")


@click.command("open")
@click.argument("db", required=False, type=MEMORY, default=None)
@theme_option
@model_option
@click.pass_context
def open_command(ctx: click.Context, db: Location | None, theme: str | None,
                 model: str | None) -> None:
    """Open the app on a memory: a file (created if missing) or a postgresql:// URL
    (default: the config's [storage] url, else ./data/memory.db)."""
    config = command_config(ctx, model)
    _run_app(memory_location(db, config), config, theme)


@click.command("demo")
@click.option("--db", "db_path", type=click.Path(dir_okay=False, path_type=Path),
              default=Path("data") / "demo.db", show_default=True,
              help="Where to build the demo memory.")
@click.option("--fresh", is_flag=True, help="Build it again even when it exists.")
@click.option("--no-open", is_flag=True, help="Build it, do not open the app.")
@theme_option
@model_option
@click.pass_context
def demo_command(ctx: click.Context, db_path: Path, fresh: bool, no_open: bool,
                 theme: str | None, model: str | None) -> None:
    """Build a demo memory (agents, conversations with tool calls, notes, scratchpads,
    schedules with runs) and open the app on it."""
    from workbench.demo.build import build_demo

    config = command_config(ctx, model)
    if fresh and db_path.exists():
        for suffix in ("", "-wal", "-shm"):
            Path(f"{db_path}{suffix}").unlink(missing_ok=True)
    if not db_path.exists():
        click.echo(f"building the demo memory in {db_path} …", err=True)
        summary = asyncio.run(build_demo(db_path, config,
                                         progress=lambda line: click.echo(f"  {line}", err=True)))
        click.echo(f"  {summary.sessions} sessions, {summary.messages} messages, "
                   f"{summary.notes} notes, {summary.schedules} schedules", err=True)
    if not no_open:
        from core.locations import parse_location

        _run_app(parse_location(db_path), config, theme)


def _run_app(db: Location, config: Any, theme: str | None) -> None:
    from workbench.app.app import AppSettings, WorkbenchApp

    if not db.is_postgres and db.path.is_dir():
        click.echo(f"error: {db} is a folder, not a memory file", err=True)
        sys.exit(2)
    examine_memory(db)  # the app creates a missing or empty file; it refuses one not a memory
    app = WorkbenchApp(db, config, AppSettings(theme=theme))
    app.run()
