"""``workbench bench``: the group, its ingest, query, peers and app benchmarks, and the
drills and benches kept in their own modules (concurrency, crash, isolation, disk full, MCP
fuzz, frameworks), added here."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from workbench.command_line import (
    MEMORY,
    MEMORY_HELP,
    command_config,
    echo_figures,
    model_option,
    require_db,
    with_model,
)

if TYPE_CHECKING:
    from core.locations import Location


@click.group()
def bench() -> None:
    """Benchmarks that print figures (throughput, latency, peak memory)."""


@bench.command("ingest")
@model_option
@click.option("--messages", default=20_000, show_default=True, type=click.IntRange(min=1),
              help="Messages to ingest.")
@click.option("--sessions", default=200, show_default=True, type=click.IntRange(min=1),
              help="Sessions to spread them over.")
@click.pass_context
def bench_ingest(ctx: click.Context, model: str | None, messages: int, sessions: int) -> None:
    """Encode-only vs end-to-end ingest throughput (store + drain), their ratio, peak RSS."""
    from workbench.bench.ingest import run_ingest

    config = with_model(command_config(ctx), model)
    echo_figures(lambda say: run_ingest(config, messages, sessions, say=say))


@bench.command("query")
@model_option
@click.option("--chunks", default=100_000, show_default=True, type=click.IntRange(min=100),
              help="Chunks to build the database with.")
@click.option("--sessions", default=1_000, show_default=True, type=click.IntRange(min=1),
              help="Sessions to spread them over (all under one agent).")
@click.option("--queries", default=300, show_default=True, type=click.IntRange(min=10),
              help="Queries to time on each path.")
@click.option("--db", "db", default=None, type=MEMORY,
              help="The memory to fill and measure, a path or a postgresql:// URL (default: "
                   "a temporary SQLite file). It must hold no chunks unless --reuse.")
@click.option("--reuse", is_flag=True,
              help="Measure a --db that already holds chunks (topped up to --chunks).")
@click.pass_context
def bench_query(ctx: click.Context, model: str | None, chunks: int, sessions: int,
                queries: int, db: Location | None, reuse: bool) -> None:
    """Query latency p50/p95: session, namespace, re-fusion, numpy brute force, and on
    PostgreSQL the vector leg's recall@10."""
    from workbench.bench.query import run_query_bench

    config = with_model(command_config(ctx), model)
    try:
        echo_figures(lambda say: run_query_bench(config, chunks, sessions, queries=queries,
                                                  db=None if db is None else db.target, reuse=reuse,
                                                  say=say))
    except FileExistsError as error:
        raise click.ClickException(str(error)) from error


@bench.command("peers")
@model_option
@click.option("--chunks", default=100_000, show_default=True, type=click.IntRange(min=100),
              help="Chunks to build both systems with.")
@click.option("--sessions", default=1_000, show_default=True, type=click.IntRange(min=1),
              help="Sessions to spread them over (all under one agent).")
@click.option("--queries", default=200, show_default=True, type=click.IntRange(min=10),
              help="Queries to time on each path, on each system.")
@click.option("--db", "db", default=None, type=click.Path(dir_okay=False),
              help="The SQLite memory to fill and measure (default: a temporary file). It "
                   "must hold no chunks unless --reuse.")
@click.option("--reuse", is_flag=True,
              help="Measure a --db that already holds chunks (one bench query or bench "
                   "peers built), as it is (--chunks and --sessions unused); LanceDB is "
                   "built from it. Queries write its retrieval log: measure a copy.")
@click.pass_context
def bench_peers(ctx: click.Context, model: str | None, chunks: int, sessions: int,
                queries: int, db: str | None, reuse: bool) -> None:
    """This engine beside LanceDB on the same chunks, vectors and queries: session and
    namespace hybrid, vector only, full text only, bulk ingest, and the ratios."""
    import sys

    from workbench.bench.peers import (
        NothingToMeasure,
        PeersUnavailable,
        import_lancedb,
        run_peers_bench,
    )

    if db is not None and "://" in db:
        raise click.UsageError("bench peers compares a SQLite file with LanceDB; measure a "
                               "PostgreSQL memory with: workbench bench query --db URL")
    try:
        import_lancedb()
    except PeersUnavailable as error:
        click.echo(str(error), err=True)
        sys.exit(2)
    if reuse and db is None:
        raise click.UsageError("--reuse needs --db (the file to measure)")
    config = with_model(command_config(ctx), model)
    try:
        echo_figures(lambda say: run_peers_bench(config, chunks, sessions, queries=queries,
                                                  db=None if db is None else Path(db),
                                                  reuse=reuse, say=say))
    except (FileExistsError, NothingToMeasure) as error:
        raise click.ClickException(str(error)) from error


@bench.command("coldstart")
@model_option
@click.option("--chunks", default=100_000, show_default=True, type=click.IntRange(min=100),
              help="Chunks the memory holds (filled up to this many).")
@click.option("--sessions", default=1_000, show_default=True, type=click.IntRange(min=1),
              help="Sessions to spread them over (all under one agent).")
@click.option("--db", "db", default=None, type=MEMORY,
              help="The memory to fill (topped up to --chunks) and measure, a path or a "
                   "postgresql:// URL (default: a temporary SQLite file).")
@click.pass_context
def bench_coldstart(ctx: click.Context, model: str | None, chunks: int, sessions: int,
                    db: Location | None) -> None:
    """A fresh process on a memory queried before: time to open, first namespace query,
    p50/p95 of its first 100 and of the same warm, and the saved indexes' bytes."""
    from workbench.bench.coldstart import run_coldstart

    config = with_model(command_config(ctx), model)
    echo_figures(lambda say: run_coldstart(config, chunks, sessions,
                                            db=None if db is None else db.target, say=say))


@bench.command("writers")
@click.option("--db", "db", default=None, type=MEMORY,
              help="The memory to write into, a path or a postgresql:// URL (default: a "
                   "temporary SQLite file).")
@click.option("--processes", default=4, show_default=True, type=click.IntRange(min=1),
              help="Writer processes at once.")
@click.option("--messages", default=2000, show_default=True, type=click.IntRange(min=1),
              help="Messages to store, over all writers.")
@click.option("--seed", default=1, show_default=True, type=int,
              help="Seed of the messages and of the writers' choices.")
@click.option("--model", default=None,
              help="model2vec hub id or folder; default: the deterministic backend.")
@click.pass_context
def bench_writers(ctx: click.Context, db: Location | None, processes: int, messages: int,
                  seed: int, model: str | None) -> None:
    """Writers in several processes at once: 0 lost, 0 duplicated, sequences increasing,
    SequenceError refusals counted, throughput."""
    import sys

    from workbench.bench.writers import run_writers_bench

    config = with_model(command_config(ctx), model or "deterministic")
    try:
        figures = run_writers_bench(config, None if db is None else db.target, processes,
                                    messages, seed=seed,
                                    say=lambda line: click.echo(line, err=True))
    except FileExistsError as error:
        raise click.ClickException(str(error)) from error
    for line in figures.lines():
        click.echo(line)
    if not figures.passed:
        sys.exit(1)


@bench.command("app")
@click.option("--db", "db", required=True, type=MEMORY,
              help=f"{MEMORY_HELP} to open (e.g. one `workbench bench query` built).")
@model_option
@click.option("--runs", default=5, show_default=True, type=click.IntRange(min=1),
              help="How many times to start the app.")
@click.pass_context
def bench_app(ctx: click.Context, db: Location, model: str | None, runs: int) -> None:
    """Start-up: first paint, memory open, sessions listed and model loaded, in ms."""
    from workbench.bench.app import run_app_bench

    require_db(db)
    config = with_model(command_config(ctx), model)
    run_app_bench(db, config.to_dict(), runs, click.echo)


def _add_drills() -> None:
    """The drills' commands, each in its own module."""
    from workbench.bench.concurrency import bench_concurrency

    bench.add_command(bench_concurrency)
    from workbench.bench.crash import crash_command

    bench.add_command(crash_command)
    from workbench.bench.isolation.command import isolation_command

    bench.add_command(isolation_command)
    from workbench.bench.diskfull import diskfull_command

    bench.add_command(diskfull_command)
    from workbench.bench.mcp_fuzz import mcp_fuzz_command

    bench.add_command(mcp_fuzz_command)
    from workbench.bench.frameworks_command import frameworks_command

    bench.add_command(frameworks_command)


_add_drills()
