"""The ``workbench`` command: one console script, heavy imports deferred into each command.

Exit codes: 0 success, 1 failure (the engine refused or something broke), 2 usage error.
Errors go to stderr as one line a person can act on.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

import click

DEFAULT_DB = Path("data") / "memory.db"
T = TypeVar("T")


def _run(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine, turning the engine's refusals into one line on stderr and exit 1."""
    from core.errors import WorkbenchError

    try:
        return asyncio.run(coro)
    except WorkbenchError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(1)
    except FileNotFoundError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(1)
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
        sys.exit(130)


def _load_config(ctx: click.Context) -> Any:
    from core.config import load_config
    from core.errors import ConfigError

    try:
        return load_config(ctx.obj.get("config_path"))
    except ConfigError as exc:
        click.echo(f"error: config: {exc}", err=True)
        sys.exit(1)


def _with_model(config: Any, model: str | None) -> Any:
    """The config with ``--model`` applied: a folder or hub id for model2vec."""
    if model is None:
        return config
    import dataclasses

    if model == "deterministic":
        embedding = dataclasses.replace(config.embedding, backend="deterministic")
    else:
        embedding = dataclasses.replace(config.embedding, backend="model2vec", model=model)
    return dataclasses.replace(config, embedding=embedding)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--config", "config_path", type=click.Path(dir_okay=False, path_type=Path),
              envvar="WORKBENCH_CONFIG", help="TOML config file (default: $WORKBENCH_CONFIG).")
@click.version_option(package_name="memory-workbench", prog_name="workbench")
@click.pass_context
def main(ctx: click.Context, config_path: Path | None) -> None:
    """Memory Workbench: open, inspect and tune the memory your agent reads and writes."""
    ctx.ensure_object(dict)
    ctx.obj["config_path"] = config_path


@main.command()
@click.option("--db", "db_path", type=click.Path(dir_okay=False, path_type=Path),
              default=None, help="Also inspect this memory file (opened read-only).")
@click.option("--json", "as_json", is_flag=True, help="Print the findings as JSON.")
@click.pass_context
def doctor(ctx: click.Context, db_path: Path | None, as_json: bool) -> None:
    """Print what the engine finds: SQLite, sqlite-vec, FTS5, model, clipboard, the file."""
    from workbench.doctor import gather, render

    config = _load_config(ctx)
    report = _run(gather(config, db_path, ctx.obj.get("config_path")))
    if as_json:
        click.echo(json.dumps(report, indent=2))
    else:
        for line in render(report):
            click.echo(line)
    if not report["ok"]:
        sys.exit(1)


@main.command()
@click.option("--db", "db_path", type=click.Path(dir_okay=False, path_type=Path),
              default=DEFAULT_DB, show_default=True, help="The memory file to re-embed.")
@click.option("--model", default=None,
              help="model2vec hub id or folder ('deterministic' for the zero-download backend);"
                   " default: the configured model.")
@click.pass_context
def reindex(ctx: click.Context, db_path: Path, model: str | None) -> None:
    """Re-embed every chunk with a model (moving the file to it), with a progress bar."""
    config = _with_model(_load_config(ctx), model)
    if not db_path.exists():
        click.echo(f"error: {db_path} does not exist", err=True)
        sys.exit(1)
    total = _run(_reindex(db_path, config))
    click.echo(f"re-embedded {total:,} chunks")


async def _reindex(db_path: Path, config: Any) -> int:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

    from core import Engine

    async with Engine.open(db_path, config=config, reindex=True) as engine:
        if engine.embedding_fell_back:
            await engine.reindex()  # refuses, saying why, before anything is drawn or changed
        for warning in engine.warnings:
            click.echo(f"warning: {warning}", err=True)
        with Progress("[progress.description]{task.description}", BarColumn(),
                      MofNCompleteColumn(), TimeRemainingColumn(), transient=False) as bar:
            task = bar.add_task(f"embedding with {engine.embedder.name}", total=None)

            def advance(done: int, total: int) -> None:
                bar.update(task, completed=done, total=total)

            total = await engine.reindex(progress=advance)
            bar.update(task, completed=total, total=total)
        status = await engine.embedding_status()
        if status.failed:
            click.echo(f"warning: {status.failed} chunks failed to embed; "
                       "`workbench doctor --db` shows the error", err=True)
        return total


@main.group()
def bench() -> None:
    """Benchmarks that print figures (throughput, latency, peak memory)."""


@bench.command("ingest")
@click.option("--model", default=None,
              help="model2vec folder or hub id ('deterministic' for the hash backend);"
                   " default: the configured model.")
@click.option("--messages", default=20_000, show_default=True, type=click.IntRange(min=1),
              help="Messages to ingest.")
@click.option("--sessions", default=200, show_default=True, type=click.IntRange(min=1),
              help="Sessions to spread them over.")
@click.pass_context
def bench_ingest(ctx: click.Context, model: str | None, messages: int, sessions: int) -> None:
    """Encode-only vs end-to-end ingest throughput (store + drain), their ratio, peak RSS."""
    from workbench.bench import run_ingest

    config = _with_model(_load_config(ctx), model)
    say: Callable[[str], None] = lambda line: click.echo(line, err=True)  # noqa: E731
    figures = _run(run_ingest(config, messages, sessions, say=say))
    for line in figures.lines():
        click.echo(line)


if __name__ == "__main__":
    main()
