"""``workbench summarize``, ``compact`` and ``consolidate``: the summaries, on demand."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from core.locations import Location
from workbench.command_line import db_option, echo_json, json_option, model_option, on_engine

if TYPE_CHECKING:
    from core.engine import Engine


@click.command("summarize")
@click.argument("session_id")
@db_option
@model_option
@click.option("--budget", type=click.IntRange(min=1), default=None,
              help="Token budget (default: summary.token_budget).")
@json_option
@click.pass_context
def summarize_command(ctx: click.Context, session_id: str, db: Location | None, model: str | None,
                      budget: int | None, as_json: bool) -> None:
    """Run the rolling-summary check on a session now, and say what it did."""
    outcome = on_engine(ctx, db, lambda engine: engine.summarize(session_id, budget),
                        writes=True, model=model)
    if as_json:
        echo_json(outcome.to_dict())
        return
    verdict = "summarised" if outcome.applied else "not summarised"
    click.echo(f"{session_id}: {verdict}: {outcome.reason}")
    click.echo(f"tokens {outcome.tokens_before:,} -> {outcome.tokens_after:,} of "
               f"{outcome.token_budget:,}"
               + (f"; {outcome.condensed} messages condensed, summary covers up to "
                  f"#{outcome.upper_sequence} (epoch {outcome.epoch})" if outcome.applied else ""))
    if outcome.error:
        raise SystemExit(1)


@click.command("compact")
@click.argument("session_id")
@db_option
@model_option
@json_option
@click.pass_context
def compact_command(ctx: click.Context, session_id: str, db: Location | None, model: str | None,
                    as_json: bool) -> None:
    """Fold a session's history since its last marker into an archive note and a marker."""
    result = on_engine(ctx, db, lambda engine: engine.compact(session_id), writes=True,
                       model=model)
    if as_json:
        echo_json(result.to_dict())
        return
    click.echo(f"{session_id}: {result.compacted} messages (#{result.first_sequence}-"
               f"#{result.last_sequence}) archived as {result.archive_name!r}; marker at "
               f"#{result.marker_sequence}")
    click.echo(f"markdown: {result.file_path or 'not written: ' + str(result.file_error)}")


@click.command("consolidate")
@db_option
@model_option
@click.option("--idle-hours", type=click.FloatRange(min=0), default=None,
              help="Compact conversations idle this long (default: consolidation.idle_hours).")
@json_option
@click.pass_context
def consolidate_command(ctx: click.Context, db: Location | None, model: str | None,
                        idle_hours: float | None, as_json: bool) -> None:
    """Compact every idle conversation now (resumable: run it again after a crash)."""
    report = on_engine(ctx, db, lambda engine: _consolidate(engine, idle_hours, as_json),
                       writes=True, model=model)
    if as_json:
        echo_json(report.to_dict())
    else:
        click.echo(f"consolidated {len(report.compacted)} conversations idle since before "
                   f"{report.idle_before}; {len(report.skipped)} skipped, "
                   f"{len(report.failed)} failed, {report.files_repaired} archive files "
                   "written again")
        for session_id, reason in report.skipped.items():
            click.echo(f"skipped {session_id}: {reason}")
        for session_id, error in report.failed.items():
            click.echo(f"failed {session_id}: {error}", err=True)
    if report.failed:
        raise SystemExit(1)


async def _consolidate(engine: Engine, idle_hours: float | None, quiet: bool) -> Any:
    """Consolidate with a progress bar (none when ``quiet``)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

    with Progress("[progress.description]{task.description}", BarColumn(),
                  MofNCompleteColumn(), TimeRemainingColumn(), disable=quiet,
                  console=None) as bar:
        task = bar.add_task("compacting idle conversations", total=None)

        def advance(done: int, total: int, session_id: str) -> None:
            bar.update(task, completed=done, total=total,
                       description=f"compacted {session_id}")

        return await engine.consolidate(idle_hours, progress=advance)
