"""What every ``workbench`` command shares: running the engine, loading the config."""

from __future__ import annotations

import asyncio
import atexit
import logging
import sys
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from workbench.text import to_json

if TYPE_CHECKING:
    from core.engine import Engine
    from core.locations import Location
    from core.opening import Opening

DEFAULT_DB = Path("data") / "memory.db"
T = TypeVar("T")


def run_command(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine, turning the engine's refusals into one line on stderr and exit 1."""
    from core.errors import WorkbenchError

    try:
        return asyncio.run(coro)
    except (WorkbenchError, FileNotFoundError) as exc:
        click.echo(f"error: {' '.join(str(exc).split())}", err=True)
        sys.exit(1)
    except Exception as exc:
        if (problem := _file_problem(exc)) is None:
            raise
        click.echo(f"error: {problem}", err=True)
        sys.exit(1)
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
        sys.exit(130)


# SQLite's result codes that say the file itself is at fault, not the command or the code:
# an I/O error, a file it cannot open, a damaged file, a file that is not a database.
_FILE_CODES = {10: "cannot be read or written (an I/O error)", 14: "cannot be opened",
               11: "is damaged", 26: "is not a database"}


def _file_problem(exc: BaseException) -> str | None:
    """One line for the driver's error about a file found damaged after it opened (a page
    of a memory file overwritten, say), else None: every other error is a bug to show."""
    from core.storage import primary_code

    code = primary_code(exc)
    if code not in _FILE_CODES:
        return None
    return (f"the memory file {_FILE_CODES[code]} (SQLite: {str(exc)[:100]}); the command "
            "stopped. Check it with `workbench doctor --db FILE`, or restore it from a copy")


class _LevelFirst(logging.Formatter):
    """``warning: …``, as the commands' own lines read."""

    def format(self, record: logging.LogRecord) -> str:
        return f"{record.levelname.lower()}: {super().format(record)}"


class _CurrentStderr(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever ``sys.stderr`` is when a record comes: the app swaps it for its
    own while it runs, and a line on the real one would tear the screen.

    The model's fallback is held back and said once, short, as the command ends
    (:func:`say_model_fallback`): after the command's error when there is one, so the error
    stays the line a person reads first, and once however many times the model loaded.
    """

    def emit(self, record: logging.LogRecord) -> None:
        model = getattr(record, "fallback_model", None)
        if model is not None:
            _fallen_back.setdefault(model, None)
            return
        super().emit(record)

    @property  # type: ignore[override]
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, value: Any) -> None:
        """The stream is always the current ``sys.stderr``; nothing to keep."""


_fallen_back: dict[str | None, None] = {}
"""The configured models that could not load during this command, in order, once each."""


_vectors_off: dict[str, None] = {}
"""Why the file's vectors are off for this command (another model made them), once each."""


def hold_vectors_off(message: str) -> None:
    """Keep the vectors-off line for the command's end, like the fallback's (it says the
    model did not load too, when that is why): a command's error stays its first line."""
    _vectors_off.setdefault(message, None)


def say_model_fallback() -> None:
    """Say, once and short, that the configured model did not load (on stderr); a command
    calls it where the line belongs (``workbench mcp``: before it serves), else it comes as
    the command ends. A held vectors-off line is said instead: it names the model's state
    already, so the two never both print."""
    for message in _vectors_off:
        click.echo(f"warning: {message}", err=True)
    for model in () if _vectors_off else _fallen_back:
        click.echo(f"warning: embedding model {str(model)[:100]!r} could not be loaded; the "
                   "deterministic fallback ran (it matches words, not meaning). "
                   "`workbench doctor` says why", err=True)
    _vectors_off.clear()
    _fallen_back.clear()


def model_fallback_said() -> None:
    """Drop the held fallback line: the command's own output said it (``doctor``)."""
    _fallen_back.clear()


def show_engine_log() -> None:
    """Send the engine's warnings (logger ``core``: a fallback model, a failed background
    task) to stderr in the commands' own words; a logging set up before is left alone."""
    if not logging.getLogger().handlers:
        handler = _CurrentStderr()
        handler.setFormatter(_LevelFirst("%(message)s"))
        logging.basicConfig(level=logging.WARNING, handlers=[handler])
        atexit.register(say_model_fallback)


def command_config(ctx: click.Context, model: str | None = None) -> Any:
    """The config the command runs with: the file's (or the defaults), with ``model`` (the
    command's ``--model``) applied when given."""
    from core.config import load_config
    from core.errors import ConfigError

    try:
        config = load_config(ctx.obj.get("config_path"))
    except ConfigError as exc:
        click.echo(f"error: config: {exc}", err=True)
        sys.exit(1)
    return with_model(config, model)


def with_model(config: Any, model: str | None) -> Any:
    """The config with ``--model`` applied: a folder or hub id for model2vec."""
    if model is None:
        return config
    if model == "deterministic":
        embedding = config.embedding.model_copy(update={"backend": "deterministic"})
    else:
        embedding = config.embedding.model_copy(update={"backend": "model2vec", "model": model})
    return config.model_copy(update={"embedding": embedding})


model_option = click.option(
    "--model", default=None,
    help="model2vec hub id or folder ('deterministic' for the zero-download backend);"
         " default: the configured model.")
"""``--model``, on every command that embeds (or opens a memory whose vectors a model
made); :func:`command_config` applies it."""


class MemoryLocation(click.ParamType):
    """Where a memory lives, as every command takes it: a SQLite file path or a
    ``postgresql://`` URL, parsed into a :class:`~core.locations.Location`.

    ``click.Path`` would take a URL for a file name (and ``resolve_path`` would mangle it);
    this type refuses only what no backend opens: an unknown ``scheme://`` and a folder.
    The parsed location prints without its password, so no message below can show it.
    """

    name = "FILE|URL"

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> Location:
        from core.errors import InvalidInput
        from core.locations import Location, parse_location

        if isinstance(value, Location):
            return value
        try:
            location = parse_location(value)
        except InvalidInput as exc:
            self.fail(str(exc), param, ctx)
        if not location.is_postgres and location.path.is_dir():
            self.fail(f"{location} is a folder, not a memory file", param, ctx)
        return location


MEMORY = MemoryLocation()
MEMORY_HELP = "The memory: a file or a postgresql:// URL"


def memory_location(db: Location | None, config: Any) -> Location:
    """The memory a command opens: ``--db`` when given, else the config's ``[storage] url``,
    else ./data/memory.db."""
    from core.locations import parse_location

    if db is not None:
        return db
    return parse_location(config.storage.url or DEFAULT_DB)


CREATING_COMMANDS = ("sessions append", "notes add", "notes import", "facts set",
                     "scratchpad write", "schedules add", "import", "open", "mcp")
"""The commands that create a missing memory file (or make an empty one a memory): those
that add to memory, the app and the MCP server. Every other command reads or changes what
is there, and refuses."""


def missing_memory(db: Location, state: str = "missing") -> str:
    """Why a command that reads or changes memory does nothing with a missing file (or an
    empty one: ``state`` is ``empty``)."""
    creators = ", ".join(f"`workbench {name}`" for name in CREATING_COMMANDS)
    if state == "empty":
        return (f"{db} is empty, not a memory yet; only a command that adds to memory makes "
                f"it one ({creators})")
    return f"{db} does not exist; only a command that adds to memory creates it ({creators})"


def require_db(db: Location) -> None:
    """Exit 1 with one line unless ``db`` is a memory file already: one that is missing or
    empty, or is not a memory at all (another application's database, a damaged file, a
    device, a symlink loop), is left untouched. A server's database is not looked for:
    opening it says whether it is there."""
    state = examine_memory(db)
    if state != "memory":
        click.echo(f"error: {missing_memory(db, state)}", err=True)
        sys.exit(1)


def is_missing(db: Location) -> bool:
    """True when there is no memory at ``db`` yet: no file, or an empty one (0 bytes), which a
    command that adds to memory makes a memory. Never for a server's database; a file that
    is not a memory is refused here with one line (exit 1)."""
    return examine_memory(db) in ("missing", "empty")


def examine_memory(db: Location) -> str:
    """What the file holds (:func:`core.storage.sqlite.memory_file.examine`; ``memory`` for a
    server's database), or exit 1 with one line when it is not a memory."""
    if db.is_postgres:
        return "memory"
    from core.errors import InvalidInput
    from core.storage import examine

    try:
        return examine(db.path.expanduser())
    except InvalidInput as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(1)


def echo_created(db: Location) -> None:
    """The line a command that created the memory file says on stderr."""
    click.echo(f"created {db}: a new memory file", err=True)


def unlogged_warnings(engine: Engine) -> list[str]:
    """The engine's warnings but the model's fallback, which the engine has logged already
    (logger ``core``, shown on stderr): said once, not twice."""
    logged = engine.model.fallback_warning
    return [warning for warning in engine.warnings if warning != logged]


def echo_warnings(engine: Engine) -> None:
    for warning in unlogged_warnings(engine):
        click.echo(f"warning: {warning}", err=True)


def echo_read_only(engine: Engine) -> None:
    """One line on stderr when the file opened read-only without being asked to (a quiet
    command says nothing else, but a write it then tries is refused for this reason)."""
    reason = engine.backend.read_only_reason
    if reason:
        click.echo(f"warning: {engine.location} is open read-only ({reason}); "
                   "reading works, writing is refused", err=True)


def echo_figures(bench: Callable[[Callable[[str], None]], Coroutine[Any, Any, Any]]) -> None:
    """Run a benchmark with its progress on stderr, then print its figures on stdout."""
    figures = run_command(bench(lambda line: click.echo(line, err=True)))
    for line in figures.lines():
        click.echo(line)


db_option = click.option(
    "--db", "db", type=MEMORY, default=None,
    help=f"{MEMORY_HELP} [default: the config's [storage] url, else {DEFAULT_DB}].")
json_option = click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")


def echo_json(payload: Any) -> None:
    """Print what ``--json`` asks for: indented, non-ASCII kept as it is."""
    click.echo(to_json(payload))


def open_engine(location: Location | None, config: Any, *, writes: bool, serves: bool = False,
                **open_kwargs: Any) -> Opening[Engine]:
    """The one way a command opens the engine (``Engine.open``), saying whether it ``writes``.

    No command starts background work: a consolidation pass, the compactions it makes and
    the index upkeep belong to what keeps a memory open (the app, an agent, ``workbench
    mcp``, which ``serves``), so a command does its one job and a due pass waits for them. A
    command that only reads also runs no embedding worker (unless it asks for one, as
    ``eval`` does to embed a backlog before measuring) and stores nothing, so it starts no
    rolling summary either: what it writes at most is its query in the retrieval log.
    """
    from core import Engine

    if not writes:
        open_kwargs.setdefault("start_worker", False)
    return Engine.open(location, config=config, background=serves, **open_kwargs)


def on_engine(ctx: click.Context, db: Location | None,
              work: Callable[[Any], Coroutine[Any, Any, T]], *, writes: bool,
              warn: bool = True, adds: bool = False, model: str | None = None,
              **open_kwargs: Any) -> T:
    """Run ``work(engine)`` for one command that reads or ``writes`` (:func:`open_engine`);
    its warnings go to stderr, its refusals become one line and exit 1. A missing or empty
    memory file is made a memory (and said so) when the command ``adds`` to memory, else
    refused (:func:`missing_memory`); a file that is not a memory is refused either way.
    ``model`` is the command's ``--model``."""
    config = command_config(ctx, model)
    location = memory_location(db, config)
    created = adds and is_missing(location)
    if not adds:
        require_db(location)

    async def run() -> T:
        async with open_engine(location, config, writes=writes or adds,
                               **open_kwargs) as engine:
            if created:
                echo_created(location)
            if warn:
                echo_warnings(engine)
            else:
                echo_read_only(engine)
            return await work(engine)

    return run_command(run())


async def drain_with_progress(engine: Engine) -> Any:
    """Wait for the embedding backlog to empty, with a progress line on stderr."""
    status = await engine.embedding_status()
    if status.backlog and engine.worker is not None:
        draining = asyncio.ensure_future(engine.drain())
        while not draining.done():
            status = await engine.embedding_status()
            click.echo(f"\rembedding   {status.backlog:,} chunks waiting   ", err=True, nl=False)
            await asyncio.wait({draining}, timeout=0.5)
        click.echo("", err=True)
        await draining
        status = await engine.embedding_status()
    return status


