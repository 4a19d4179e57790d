"""The ``workbench`` command: one console script, heavy imports deferred into each command.

The group lives here; every command lives in the module of its group (``workbench/cli/``,
and ``workbench/bench/commands.py`` for ``workbench bench``) and is added below.

Exit codes: 0 success, 1 failure (the engine refused or something broke), 2 usage error.
Errors go to stderr as one line a person can act on.
"""

from __future__ import annotations

from pathlib import Path

import click

from workbench.cli.app_commands import OpensByDefault


@click.group(cls=OpensByDefault, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--config", "config_path", type=click.Path(dir_okay=False, path_type=Path),
              envvar="WORKBENCH_CONFIG", help="TOML config file (default: $WORKBENCH_CONFIG).")
@click.version_option(package_name="memory-workbench", prog_name="workbench")
@click.pass_context
def main(ctx: click.Context, config_path: Path | None) -> None:
    """Memory Workbench: open, inspect and tune the memory your agent reads and writes.

    `workbench [DB]` opens the app on DB, a file or a postgresql:// URL (default: the
    config's [storage] url, else ./data/memory.db); `workbench demo` builds a demo memory
    and opens it.
    """
    from workbench.command_line import say_model_fallback, show_engine_log

    show_engine_log()
    # The model's lines come as the command ends: after its error, when it has one.
    ctx.call_on_close(say_model_fallback)
    ctx.ensure_object(dict)
    ctx.obj["config_path"] = config_path


def _register_commands() -> None:
    """Commands kept in their own modules, added to the group here."""
    from workbench.bench.commands import bench
    from workbench.cli.app_commands import demo_command, open_command
    from workbench.cli.doctor import doctor
    from workbench.cli.evaluate import eval_command, tune_command
    from workbench.cli.facts import facts_group
    from workbench.cli.migrate import migrate_command
    from workbench.cli.notes import notes_group
    from workbench.cli.pg import pg_group
    from workbench.cli.reindex import reindex
    from workbench.cli.schedules import scheduler_group, schedules_group
    from workbench.cli.scratchpad import scratchpad_group
    from workbench.cli.search import log_command, search_command
    from workbench.cli.sessions import sessions_group
    from workbench.cli.summary import compact_command, consolidate_command, summarize_command
    from workbench.cli.transfer import export_group, import_group
    from workbench.mcp.server import mcp_command

    for command in (doctor, reindex, bench, import_group, eval_command, tune_command,
                    open_command, demo_command, search_command, log_command,
                    summarize_command, compact_command, consolidate_command, schedules_group,
                    scheduler_group, sessions_group, notes_group, scratchpad_group,
                    facts_group, mcp_command, export_group, pg_group, migrate_command):
        main.add_command(command)


_register_commands()
