"""``workbench scratchpad …``: a session's working-memory scratchpad (oxydra), by hand.

A write replaces the whole list, as the agent's own writes do; a list over the limits
(``[scratchpad]`` in the config: 32 items of 240 characters by default) is refused whole,
in one line naming the limit, and the scratchpad keeps what it had. Writing to a session
that does not exist yet makes it (an agent may set its goals before its first message);
the output says so.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from core.locations import Location
from workbench.cli.notes import read_text_input
from workbench.command_line import db_option, echo_json, json_option, on_engine
from workbench.text import count, one_line, short_time, table

if TYPE_CHECKING:
    from core.engine import Engine

_SESSION = click.argument("session_id", metavar="SESSION")


def _on_scratchpads(ctx: click.Context, db: Location | None, work: Any, *, writes: bool,
                    adds: bool = False) -> Any:
    """Run ``work(engine)`` for a command that reads or ``writes``, without the embedding
    worker: a scratchpad is never embedded. A command that ``adds`` a scratchpad creates a
    missing memory file."""
    return on_engine(ctx, db, work, writes=writes, warn=False, start_worker=False,
                     adds=adds)


async def _exists(engine: Engine, session_id: str) -> bool:
    from core.errors import NotFound

    try:
        await engine.session_state(session_id)
    except NotFound:
        return False
    return True


def _lines_of(text: str) -> list[str]:
    """One item per non-blank line, without the line ends."""
    return [line for line in text.splitlines() if line.strip()]


def _items(items: tuple[str, ...], file_path: Path | None) -> list[str]:
    """The items the command line gives: ITEM..., --file PATH or a lone '-' for stdin."""
    if file_path is not None and items:
        raise click.UsageError("give items or --file, not both")
    if items == ("-",):
        file_path = Path("-")
    if file_path is None:
        if not items:
            raise click.UsageError("give the items, --file PATH or - (standard input); "
                                   "`workbench scratchpad clear` empties a scratchpad")
        return list(items)
    return _lines_of(read_text_input(file_path))


def _state(session_id: str, pad: Any) -> dict[str, Any]:
    """A scratchpad as JSON; a session without one has no items and no time."""
    return pad.to_dict() if pad is not None else {
        "session_id": session_id, "items": [], "updated_at": None}


@click.group("scratchpad")
def scratchpad_group() -> None:
    """List, show, write (whole-replace) and clear sessions' scratchpads."""


@scratchpad_group.command("list")
@db_option
@click.option("--limit", default=200, show_default=True, type=click.IntRange(min=1),
              help="Scratchpads to list, most recently written first.")
@json_option
@click.pass_context
def list_command(ctx: click.Context, db: Location | None, limit: int, as_json: bool) -> None:
    """List the sessions that have a scratchpad: items, last write, the first item."""
    pads = _on_scratchpads(ctx, db, lambda engine: engine.scratchpad_sessions(limit),
                          writes=False)
    if as_json:
        echo_json([pad.to_dict() for pad in pads])
        return
    if not pads:
        click.echo("no session has a scratchpad")
        return
    rows = [(pad.session_id, str(len(pad.items)), short_time(pad.updated_at),
             one_line(pad.items[0], 60) if pad.items else "-") for pad in pads]
    header = ("session", "items", "written", "first item")
    for line in table(header, rows):
        click.echo(line)
    click.echo(count(len(pads), "scratchpad"))


@scratchpad_group.command("show")
@_SESSION
@db_option
@json_option
@click.pass_context
def show_command(ctx: click.Context, session_id: str, db: Location | None, as_json: bool) -> None:
    """Show a session's scratchpad, one numbered item a line (exit 1: no such session)."""

    async def work(engine: Engine) -> Any:
        pad = await engine.read_scratchpad(session_id)
        if pad is None:
            await engine.session_state(session_id)  # NotFound when there is no session
        return pad

    pad = _on_scratchpads(ctx, db, work, writes=False)
    if as_json:
        echo_json(_state(session_id, pad))
    elif pad is None:
        click.echo(f"{session_id} has no scratchpad")
    else:
        click.echo(f"{session_id}: {count(len(pad.items), 'item')}, written "
                   f"{short_time(pad.updated_at)}")
        for number, item in enumerate(pad.items, 1):
            click.echo(f"{number:>3}. {item}")


@scratchpad_group.command("write")
@_SESSION
@click.argument("items", nargs=-1, metavar="[ITEM]...")
@db_option
@click.option("--file", "file_path", default=None,
              type=click.Path(exists=True, dir_okay=False, allow_dash=True, path_type=Path),
              help="Read the items from this UTF-8 file, one a line, blank lines skipped"
                   " ('-': standard input).")
@json_option
@click.pass_context
def write_command(ctx: click.Context, session_id: str, items: tuple[str, ...],
                  db: Location | None, file_path: Path | None, as_json: bool) -> None:
    """Replace a session's scratchpad with ITEMs (a lone - reads them from standard input,
    one a line); over the limits it is refused whole and the scratchpad is kept."""
    new_items = _items(items, file_path)

    async def work(engine: Engine) -> tuple[Any, bool]:
        existed = await _exists(engine, session_id)
        return await engine.write_scratchpad(session_id, new_items), not existed

    pad, made = _on_scratchpads(ctx, db, work, writes=True, adds=True)
    if as_json:
        echo_json({**pad.to_dict(), "new_session": made})
    else:
        click.echo(f"wrote {count(len(pad.items), 'item')} to the scratchpad of {session_id}"
                   + (" (a new session)" if made else ""))


@scratchpad_group.command("clear")
@_SESSION
@db_option
@json_option
@click.pass_context
def clear_command(ctx: click.Context, session_id: str, db: Location | None, as_json: bool) -> None:
    """Remove a session's scratchpad (exit 1 when there is no such session)."""

    async def work(engine: Engine) -> bool:
        await engine.session_state(session_id)  # NotFound when there is no session
        return await engine.clear_scratchpad(session_id)

    cleared = _on_scratchpads(ctx, db, work, writes=True)
    if as_json:
        echo_json({"session_id": session_id, "cleared": cleared})
    else:
        click.echo(f"cleared the scratchpad of {session_id}" if cleared
                   else f"{session_id} had no scratchpad")
