"""The ``workbench`` command: one console script, heavy imports deferred into each command.

Exit codes: 0 success, 1 failure (the engine refused or something broke), 2 usage error.
Errors go to stderr as one line a person can act on.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import click

from core.retrieval.fusion import FUSIONS
from workbench.app_cli import OpensByDefault
from workbench.cli_support import (
    DEFAULT_DB,
    _echo_figures,
    _echo_warnings,
    _load_config,
    _require_db,
    _run,
    _with_model,
    echo_json,
    json_option,
    model_option,
)
from workbench.text import count


@click.group(cls=OpensByDefault, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--config", "config_path", type=click.Path(dir_okay=False, path_type=Path),
              envvar="WORKBENCH_CONFIG", help="TOML config file (default: $WORKBENCH_CONFIG).")
@click.version_option(package_name="memory-workbench", prog_name="workbench")
@click.pass_context
def main(ctx: click.Context, config_path: Path | None) -> None:
    """Memory Workbench: open, inspect and tune the memory your agent reads and writes.

    `workbench [DB]` opens the app on DB (default ./data/memory.db); `workbench demo`
    builds a demo memory and opens it.
    """
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
@model_option
@json_option
@click.pass_context
def reindex(ctx: click.Context, db_path: Path, model: str | None, as_json: bool) -> None:
    """Re-embed every chunk with a model (moving the file to it), with a progress bar."""
    config = _with_model(_load_config(ctx), model)
    _require_db(db_path)
    report = _run(_reindex(db_path, config))
    if as_json:
        echo_json(report)
    else:
        click.echo(f"re-embedded {report['chunks']:,} chunks with {report['model']}")
    if report["failed"]:
        sys.exit(1)


async def _reindex(db_path: Path, config: Any) -> dict[str, Any]:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

    from core import Engine

    async with Engine.open(db_path, config=config, reindex=True) as engine:
        if engine.embedding_fell_back:
            await engine.reindex()  # refuses, saying why, before anything is drawn or changed
        _echo_warnings(engine)
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
        return {"db": str(db_path), "model": status.model, "dimension": status.dimension,
                "chunks": total, "failed": status.failed}


@main.group()
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
    from workbench.bench import run_ingest

    config = _with_model(_load_config(ctx), model)
    _echo_figures(lambda say: run_ingest(config, messages, sessions, say=say))




async def _drain_with_progress(engine: Any) -> Any:
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




@main.group("import")
def import_group() -> None:
    """Import conversations and other agents' memory stores into a memory file."""


@import_group.command("locomo")
@click.argument("files", nargs=-1, required=True,
                type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--db", "db_path", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="The memory file to import into (created when missing).")
@click.option("--dataset", "dataset_path", type=click.Path(dir_okay=False, path_type=Path),
              default=None,
              help="Where to write the evaluation dataset (JSONL); default: <db stem>.locomo.jsonl"
                   " next to the memory file.")
@model_option
@click.option("--json", "as_json", is_flag=True, help="Print the counts as JSON.")
@click.pass_context
def import_locomo(ctx: click.Context, files: tuple[Path, ...], db_path: Path,
                  dataset_path: Path | None, model: str | None, as_json: bool) -> None:
    """Import LoCoMo conversations (their turns only) and write their questions as a dataset.

    Each conversation becomes one session; importing a file again adds nothing.
    """
    config = _with_model(_load_config(ctx), model)
    if dataset_path is None:
        dataset_path = db_path.with_name(f"{db_path.stem}.locomo.jsonl")
    summary = _run(_import_locomo(files, db_path, dataset_path, config))
    if as_json:
        click.echo(json.dumps(summary, indent=2))
        return
    for conversion, stored in zip(summary["conversations"], summary["stored"], strict=True):
        categories = ", ".join(f"{c}: {n}" for c, n in conversion["queries_by_category"].items())
        unknown = conversion["unknown_evidence"]
        click.echo(f"{conversion['session_id']}  ({conversion['source']})")
        click.echo(f"  turns     {conversion['turns']:,} in {conversion['sessions']} LoCoMo "
                   f"sessions; {conversion['images']} with an image caption")
        click.echo(f"  queries   {conversion['queries']} by category ({categories})")
        click.echo(f"  evidence  {count(conversion['split_evidence'], 'string')} held several "
                   f"ids (split); {count(len(unknown), 'id')} named no turn"
                   + (f" ({', '.join(unknown)})" if unknown else "")
                   + f"; {count(conversion['without_evidence'], 'question')} without "
                     "evidence left out")
        if stored["stored"]:
            click.echo(f"  stored    {stored['stored']:,} messages"
                       + (f" ({stored['already']:,} were there)" if stored["already"] else ""))
        else:
            click.echo(f"  stored    nothing: already imported ({stored['already']:,} messages)")
    embedding = summary["embedding"]
    click.echo(f"embedding   {embedding['model']}: backlog {embedding['backlog']:,}, "
               f"{embedding['embedded']:,} chunks embedded, {embedding['failed']:,} failed")
    click.echo(f"dataset     {summary['dataset']}: {count(summary['sessions'], 'session')}, "
               f"{summary['messages']:,} messages, {summary['queries']:,} queries")


async def _import_locomo(files: tuple[Path, ...], db_path: Path, dataset_path: Path,
                         config: Any) -> dict[str, Any]:
    from core import Engine
    from core.evaluation import convert_locomo_file, store_dataset
    from core.evaluation.dataset import Dataset, write_dataset

    # Every file is converted (and refused if malformed) before the memory file is touched.
    conversions = [c for path in files for c in convert_locomo_file(path)]
    dataset = Dataset()
    for conversion in conversions:
        dataset.extend(conversion.dataset)
    async with Engine.open(db_path, config=config) as engine:
        _echo_warnings(engine)
        stored = await store_dataset(engine, dataset)
        status = await _drain_with_progress(engine)
    write_dataset(dataset, dataset_path)
    return {
        "db": str(db_path), "dataset": str(dataset_path),
        "conversations": [c.to_dict() for c in conversions],
        "stored": [{"session_id": s.session_id, "stored": s.stored, "already": s.already}
                   for s in stored.sessions],
        "sessions": len(dataset.messages), "messages": dataset.message_count,
        "queries": len(dataset.queries),
        "embedding": {"model": status.model, "backlog": status.backlog,
                      "embedded": status.embedded, "failed": status.failed},
    }


@main.command("eval")
@click.option("--db", "db_path", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="The memory file the dataset was imported into.")
@click.option("--dataset", "dataset_path", required=True,
              type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="The dataset JSONL (as `workbench import locomo` writes it).")
@click.option("--sweep", "run_sweep", is_flag=True,
              help="Run each fusion at vector weights 0.0, 0.1, ..., 1.0 (fts weight 1 - vector)"
                   " and mark the best by recall@10.")
@click.option("--vector-weight", type=click.FloatRange(0.0, 1.0), default=None,
              help="Vector leg weight; the fts weight is 1 minus it (default: the configured"
                   " weights).")
@click.option("--fusion", type=click.Choice(FUSIONS), default=None,
              help="Fusion method (default: the configured one); with --sweep, sweep only it.")
@model_option
@click.option("--json", "as_json", is_flag=True,
              help="Print the report as JSON (with each query's ranked turns and scores).")
@click.pass_context
def eval_command(ctx: click.Context, db_path: Path, dataset_path: Path, run_sweep: bool,
                 vector_weight: float | None, fusion: str | None, model: str | None,
                 as_json: bool) -> None:
    """Score retrieval on a dataset: recall@k, hit@k, MRR and nDCG@k, overall and per category."""
    if run_sweep and vector_weight is not None:
        raise click.UsageError("--sweep tries every vector weight; leave out --vector-weight")
    config = _with_model(_load_config(ctx), model)
    # Evaluation queries are measurements, not an agent's recalls: they stay out of the
    # file's retrieval log.
    config = config.model_copy(
        update={"retrieval": config.retrieval.model_copy(update={"log_enabled": False})})
    _require_db(db_path)
    result, category_names = _run(_evaluate(db_path, dataset_path, config, run_sweep,
                                            vector_weight, fusion))
    from core.evaluation.report import report_lines, sweep_lines

    if as_json:
        click.echo(json.dumps({"dataset": str(dataset_path), **result.to_dict()}, indent=2))
        return
    lines = sweep_lines(result) if run_sweep else report_lines(result, category_names)
    for line in lines:
        click.echo(line)


async def _evaluate(db_path: Path, dataset_path: Path, config: Any, run_sweep: bool,
                    vector_weight: float | None, fusion: str | None) -> tuple[Any, Any]:
    from core import Engine
    from core.evaluation import evaluate, read_dataset, sweep
    from core.evaluation.locomo import CATEGORY_NAMES

    dataset = read_dataset(dataset_path)
    is_locomo = bool(dataset.messages) and all(s.startswith("locomo-") for s in dataset.messages)
    async with Engine.open(db_path, config=config) as engine:
        _echo_warnings(engine)
        await _drain_with_progress(engine)
        if run_sweep:
            def progress(done: int, total: int) -> None:
                click.echo(f"\rsweep       {done}/{total}", err=True, nl=done == total)

            result = await sweep(engine, dataset, fusions=(fusion,) if fusion else FUSIONS,
                                 progress=progress)
        else:
            result = await evaluate(
                engine, dataset, vector_weight=vector_weight, fusion=fusion,
                fts_weight=None if vector_weight is None else round(1.0 - vector_weight, 6))
    return result, CATEGORY_NAMES if is_locomo else None



@bench.command("query")
@model_option
@click.option("--chunks", default=100_000, show_default=True, type=click.IntRange(min=100),
              help="Chunks to build the database with.")
@click.option("--sessions", default=1_000, show_default=True, type=click.IntRange(min=1),
              help="Sessions to spread them over (all under one agent).")
@click.option("--queries", default=300, show_default=True, type=click.IntRange(min=10),
              help="Queries to time on each path.")
@click.pass_context
def bench_query(ctx: click.Context, model: str | None, chunks: int, sessions: int,
                queries: int) -> None:
    """Query latency p50/p95: session, namespace, re-fusion, and numpy brute force."""
    from workbench.bench_query import run_query_bench

    config = _with_model(_load_config(ctx), model)
    _echo_figures(lambda say: run_query_bench(config, chunks, sessions, queries=queries,
                                              say=say))


@bench.command("app")
@click.option("--db", "db_path", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="The memory file to open (e.g. one `workbench bench query` built).")
@model_option
@click.option("--runs", default=5, show_default=True, type=click.IntRange(min=1),
              help="How many times to start the app.")
@click.pass_context
def bench_app(ctx: click.Context, db_path: Path, model: str | None, runs: int) -> None:
    """Start-up: first paint, file open, sessions listed and model loaded, in ms."""
    from workbench.bench_app import run_app_bench

    _require_db(db_path)
    config = _with_model(_load_config(ctx), model)
    run_app_bench(db_path, config.to_dict(), runs, click.echo)


def _register_commands() -> None:
    """Commands kept in their own modules, added to the group here."""
    from workbench.app_cli import demo_command, open_command
    from workbench.facts_cli import facts_group
    from workbench.mcp_server import mcp_command
    from workbench.notes_cli import notes_group
    from workbench.schedules_cli import scheduler_group, schedules_group
    from workbench.scratchpad_cli import scratchpad_group
    from workbench.search_cli import log_command, search_command
    from workbench.sessions_cli import sessions_group
    from workbench.summary_cli import compact_command, consolidate_command, summarize_command

    for command in (open_command, demo_command, search_command, log_command,
                    summarize_command, compact_command, consolidate_command, schedules_group,
                    scheduler_group, sessions_group, notes_group, scratchpad_group,
                    facts_group, mcp_command):
        main.add_command(command)
    from workbench.transfer_cli import export_group, import_commands

    for command in import_commands:
        import_group.add_command(command)
    main.add_command(export_group)
    from workbench.bench_concurrency import bench_concurrency

    bench.add_command(bench_concurrency)
    from workbench.bench_crash import crash_command

    bench.add_command(crash_command)
    from workbench.bench_isolation import isolation_command

    bench.add_command(isolation_command)
    from workbench.bench_diskfull import diskfull_command

    bench.add_command(diskfull_command)


_register_commands()

if __name__ == "__main__":
    main()
