"""``workbench eval``: score retrieval on a dataset (as ``workbench import locomo`` writes it)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from core.retrieval.fusion import FUSIONS
from core.storage.locations import Location
from workbench.cli.support import (
    MEMORY,
    MEMORY_HELP,
    _drain_with_progress,
    _echo_warnings,
    _load_config,
    _require_db,
    _run,
    _with_model,
    model_option,
)


@click.command("eval")
@click.option("--db", "db", required=True, type=MEMORY,
              help=f"{MEMORY_HELP} the dataset was imported into.")
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
def eval_command(ctx: click.Context, db: Location, dataset_path: Path, run_sweep: bool,
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
    _require_db(db)
    result, category_names = _run(_evaluate(db, dataset_path, config, run_sweep,
                                            vector_weight, fusion))
    from core.evaluation.report import report_lines, sweep_lines

    if as_json:
        click.echo(json.dumps({"dataset": str(dataset_path), **result.to_dict()}, indent=2))
        return
    lines = sweep_lines(result) if run_sweep else report_lines(result, category_names)
    for line in lines:
        click.echo(line)


async def _evaluate(db: Location, dataset_path: Path, config: Any, run_sweep: bool,
                    vector_weight: float | None, fusion: str | None) -> tuple[Any, Any]:
    from core import Engine
    from core.evaluation import evaluate, read_dataset, sweep
    from core.evaluation.locomo import CATEGORY_NAMES

    dataset = read_dataset(dataset_path)
    is_locomo = bool(dataset.messages) and all(s.startswith("locomo-") for s in dataset.messages)
    async with Engine.open(db, config=config) as engine:
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

