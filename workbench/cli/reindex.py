"""``workbench reindex``: re-embed every chunk of a memory file with a model."""

from __future__ import annotations

import sys
from typing import Any

import click

from core.locations import Location
from workbench.command_line import (
    command_config,
    db_option,
    echo_json,
    echo_warnings,
    json_option,
    memory_location,
    model_option,
    open_engine,
    require_db,
    run_command,
)


@click.command("reindex")
@db_option
@model_option
@json_option
@click.pass_context
def reindex(ctx: click.Context, db: Location | None, model: str | None, as_json: bool) -> None:
    """Re-embed every chunk with a model (moving the memory to it), with a progress bar."""
    config = command_config(ctx, model)
    location = memory_location(db, config)
    require_db(location)
    report = run_command(_reindex(location, config))
    if as_json:
        echo_json(report)
    else:
        click.echo(f"re-embedded {report['chunks']:,} chunks with {report['model']}")
    if report["failed"]:
        sys.exit(1)


async def _reindex(db: Location, config: Any) -> dict[str, Any]:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

    async with open_engine(db, config, writes=True, reindex=True) as engine:
        if engine.model.fell_back:
            await engine.reindex()  # refuses, saying why, before anything is drawn or changed
        echo_warnings(engine)
        # The bar goes to stderr: stdout is the result, which a script may read.
        with Progress("[progress.description]{task.description}", BarColumn(),
                      MofNCompleteColumn(), TimeRemainingColumn(), transient=False,
                      console=Console(stderr=True)) as bar:
            task = bar.add_task(f"embedding with {engine.embedder.name}", total=None)

            def advance(done: int, total: int) -> None:
                bar.update(task, completed=done, total=total)

            total = await engine.reindex(progress=advance)
            bar.update(task, completed=total, total=total)
        status = await engine.embedding_status()
        if status.failed:
            click.echo(f"error: {status.failed} chunks failed to embed; "
                       "`workbench doctor --db` shows the error", err=True)
        return {"db": str(db), "model": status.model, "dimension": status.dimension,
                "chunks": total, "failed": status.failed}
