"""``workbench bench frameworks``: the per-turn bench against LangGraph's and the Agents SDK's
own SQLite memories, or (``--run-turns``) an agent driven into a file to watch and check."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from workbench.command_line import (
    command_config,
    echo_figures,
    model_option,
    run_command,
    with_model,
)


@click.command("frameworks")
@model_option
@click.option("--turns", default=200, show_default=True, type=click.IntRange(min=2),
              help="Agent turns to time on each side.")
@click.option("--run-turns", "run_turns", default=None, type=click.IntRange(min=1),
              help="Instead of timing: drive this many turns into --file, then check that "
                   "every message is there once, in order.")
@click.option("--file", "file", default=None, type=click.Path(dir_okay=False),
              help="The SQLite memory --run-turns writes into (open `workbench FILE` beside).")
@click.option("--framework", default="langgraph", show_default=True,
              type=click.Choice(["langgraph", "openai-agents"]),
              help="The agent --run-turns drives.")
@click.option("--pause", default=0.0, show_default=True, type=click.FloatRange(min=0),
              help="Seconds --run-turns waits between turns, to watch them arrive.")
@click.pass_context
def frameworks_command(ctx: click.Context, model: str | None, turns: int,
                       run_turns: int | None, file: str | None, framework: str,
                       pause: float) -> None:
    """Per-turn p50/p95 of LangGraph's aput+aput_writes (AsyncSqliteSaver vs WorkbenchSaver)
    and the Agents SDK's add_items+get_items (SQLiteSession vs WorkbenchSession), with the
    embedding worker off and with --model as well; or, with --run-turns, a watched run."""
    config = command_config(ctx)
    if run_turns is not None:
        _drive(config, model, run_turns, file, framework, pause)
        return
    from workbench.bench.frameworks import run_frameworks_bench

    deterministic = with_model(config, "deterministic")
    model_config = None if model in (None, "deterministic") else with_model(config, model)
    echo_figures(lambda say: run_frameworks_bench(
        deterministic, turns, model_config=model_config, model=model, say=say))


def _drive(config: object, model: str | None, turns: int, file: str | None, framework: str,
           pause: float) -> None:
    from workbench.bench.frameworks_run import run_turns

    if file is None:
        raise click.UsageError("--run-turns needs --file (the memory to write into)")
    if "://" in file:
        raise click.UsageError("--file is a SQLite memory file, not a URL")
    try:
        report = run_command(run_turns(with_model(config, model or "deterministic"), Path(file),
                                framework, turns, pause,
                                say=lambda line: click.echo(line, err=True)))
    except FileExistsError as error:
        raise click.ClickException(str(error)) from error
    except ImportError as error:
        if (error.name or "").startswith("core."):
            raise click.ClickException(f"{error.name} is not part of this install: its "
                                       f"integration is missing here") from error
        raise click.ClickException(f"{framework} is not installed here ({error}); install "
                                   f"the extra: pip install -e '.[{framework}]'") from error
    for line in report.lines():
        click.echo(line)
    if not report.passed:
        sys.exit(1)
