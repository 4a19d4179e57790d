"""``workbench migrate SRC DST``: copy a whole memory between a file and a PostgreSQL database."""

from __future__ import annotations

import sys
from dataclasses import asdict
from typing import Any

import click

from workbench.command_line import command_config, echo_json, json_option, run_command


@click.command("migrate")
@click.argument("source")
@click.argument("destination")
@click.option("--batch", type=click.IntRange(min=1), default=1000, show_default=True,
              help="Rows copied per transaction.")
@click.option("--sample", type=click.IntRange(min=0), default=50, show_default=True,
              help="Rows per table compared field by field after the copy.")
@json_option
@click.pass_context
def migrate_command(ctx: click.Context, source: str, destination: str, batch: int,
                    sample: int, as_json: bool) -> None:
    """Copy the whole memory at SOURCE into DESTINATION (a file path or a postgresql:// URL,
    either way), resuming an interrupted run, then compare both; exit 1 on a difference."""
    config = command_config(ctx)
    report = run_command(_migrate(source, destination, batch, sample, config.storage))
    if as_json:
        echo_json({**asdict(report), "ok": report.ok})
    else:
        _print_report(report)
    if not report.ok:
        sys.exit(1)


async def _migrate(source: str, destination: str, batch: int, sample: int,
                   storage: Any) -> Any:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

    from core.locations import parse_location
    from core.migrate import migrate

    src, dst = parse_location(source), parse_location(destination)
    console = Console(stderr=True)  # stdout is the report, which a script may read
    console.print(f"migrating {src} -> {dst}")
    with Progress("[progress.description]{task.description}", BarColumn(),
                  MofNCompleteColumn(), TimeRemainingColumn(), console=console) as bar:
        tasks: dict[str, Any] = {}

        def advance(table: str, done: int, total: int) -> None:
            if table not in tasks:
                tasks[table] = bar.add_task(table, total=total)
            bar.update(tasks[table], completed=done, total=max(total, done))

        return await migrate(src, dst, progress=advance, batch=batch, sample=sample,
                             config=storage)


def _print_report(report: Any) -> None:
    click.echo(f"{report.source} -> {report.destination}"
               + (" (resumed)" if report.resumed else ""))
    click.echo(f"vectors: {report.vectors}")
    click.echo(f"{'table':<22}{'source':>10}{'destination':>13}{'sampled':>9}  check")
    for check in report.tables:
        verdict = "ok" if check.ok else "MISMATCH"
        if check.note:
            verdict = f"{verdict} ({check.note})"
        click.echo(f"{check.table:<22}{check.source_rows:>10,}{check.destination_rows:>13,}"
                   f"{check.sampled:>9}  {verdict}")
        for difference in check.differing[:10]:
            click.echo(f"    {difference}")
    for table, key, reason in report.refused:
        click.echo(f"not copied: {table} {'/'.join(map(str, key))}: {reason}", err=True)
    if not report.ok:
        click.echo("error: the copy differs from the source (see above)", err=True)
