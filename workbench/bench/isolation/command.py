"""``workbench bench isolation``: the adversarial isolation suite, run and printed.

It is the suite ``tests/test_isolation.py`` runs (:mod:`workbench.bench.isolation`), in a
temporary folder: the cases tried per entry point, the leaks and crashes found (each on a
line), and the time each part took. Exit 1 when anything leaked.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from workbench.command_line import MEMORY

if TYPE_CHECKING:
    from core.locations import Location


def report_lines(result: Any) -> list[str]:
    """The suite's figures as printed: a table per entry point, then each finding."""
    from workbench.bench.isolation.mcp_attacks import MCP_NAMESPACE
    from workbench.bench.isolation.victim import ATTACKER, VICTIM

    planted = result.planted
    lines = [
        f"victim      namespace {VICTIM!r}: {planted['chunks']} chunks, {planted['notes']} notes,"
        f" {planted['logged queries']} logged queries, {planted['markers']} markers (secret"
        " words and ids)",
        f"attacker    namespace {ATTACKER!r} and crafted ones (engine API, CLI); the MCP server"
        f" bound to {MCP_NAMESPACE!r}",
        f"{'entry point':<16}{'cases':>8}{'leaks':>8}{'crashes':>9}{'time':>9}",
    ]
    for entry, cases in result.cases.items():
        leaks = sum(finding.entry == entry for finding in result.leaks)
        crashes = sum(finding.entry == entry for finding in result.crashes)
        lines.append(f"{entry:<16}{cases:>8,}{leaks:>8}{crashes:>9}"
                     f"{result.seconds.get(entry, 0.0):>8.1f}s")
    total_seconds = sum(result.seconds.values())
    lines.append(f"{'all':<16}{result.total:>8,}{len(result.leaks):>8}{len(result.crashes):>9}"
                 f"{total_seconds:>8.1f}s  (planting {result.seconds.get('plant', 0.0):.1f} s"
                 f" included; load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores)")
    lines += [f"leak: {finding.line()}" for finding in result.leaks]
    lines += [f"crash: {finding.line()}" for finding in result.crashes]
    return lines


@click.command("isolation")
@click.option("--thorough", is_flag=True,
              help="Give the command line every crafted input too (slower).")
@click.option("--no-mcp", is_flag=True, help="Leave the MCP server out.")
@click.option("--keep", "keep_dir", type=click.Path(file_okay=False, path_type=Path),
              default=None, help="Build the memory file (or, with --db, the config and"
              " archives) in this folder and keep it.")
@click.option("--db", "db", type=MEMORY, default=None,
              help="Plant into this memory instead of a new file: a postgresql:// URL of an"
                   " empty database (the victim's rows stay in it).")
@click.option("--rls", is_flag=True,
              help="With a postgresql:// --db: the attacker's engine, CLI and MCP server connect"
                   " as roles bound to their namespaces (row-level security), made for the run"
                   " and dropped after it.")
def isolation_command(thorough: bool, no_mcp: bool, keep_dir: Path | None,
                      db: Location | None, rls: bool) -> None:
    """Attack one namespace's memory from another through the engine, the CLI and the MCP
    server, and print the cases tried and the leaks found (there must be none)."""
    import sys

    from workbench.bench.isolation import run_suite

    if rls and (db is None or not db.is_postgres):
        raise click.UsageError("--rls needs --db postgresql://…")
    memory = None if db is None else db.target if db.is_postgres else str(db.path)

    def run(folder: Path) -> Any:
        root = click.get_current_context().find_root().command
        return run_suite(folder, root, memory=memory, rls=rls, mcp=not no_mcp,
                         thorough=thorough, say=lambda line: click.echo(line, err=True))

    if keep_dir is not None:
        result = run(keep_dir)
    else:
        with tempfile.TemporaryDirectory(prefix="workbench-isolation-") as folder:
            result = run(Path(folder))
    for line in report_lines(result):
        click.echo(line)
    if result.leaks:
        sys.exit(1)
