"""``workbench eval`` and ``workbench tune``: score retrieval on a dataset (as ``workbench
import locomo`` writes it), with intervals; compare two settings; tune by cross-validation."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from core.locations import Location
from core.retrieval.fusion import FUSIONS
from workbench.command_line import (
    MEMORY,
    MEMORY_HELP,
    command_config,
    drain_with_progress,
    echo_warnings,
    model_option,
    open_engine,
    require_db,
    run_command,
)

SIDE_HELP = ("a TOML config file laid over the current config, 'current', or settings "
             "'section.key=value ...' (e.g. 'retrieval.vector_weight=0.5 retrieval.fusion=rrf')")


def _measuring_config(ctx: click.Context, model: str | None) -> Any:
    # Evaluation queries are measurements, not an agent's recalls: they stay out of the
    # file's retrieval log.
    config = command_config(ctx, model)
    return config.model_copy(
        update={"retrieval": config.retrieval.model_copy(update={"log_enabled": False})})


def _progress(label: str) -> Any:
    def progress(done: int, total: int) -> None:
        click.echo(f"\r{label:<12}{done}/{total}", err=True, nl=done == total)
    return progress


@click.command("eval")
@click.option("--db", "db", required=True, type=MEMORY,
              help=f"{MEMORY_HELP} the dataset was imported into.")
@click.option("--dataset", "dataset_path", required=True,
              type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="The dataset JSONL (as `workbench import locomo` writes it).")
@click.option("--sweep", "run_sweep", is_flag=True,
              help="Run each fusion at vector weights 0.0, 0.1, ..., 1.0 (fts weight 1 - vector),"
                   " each with its recall@10 interval; mark the best only when it beats the"
                   " current setting on held-out folds beyond noise.")
@click.option("--folds", type=click.IntRange(min=2), default=None,
              help="Cross-validate the sweep's choice: chosen on k-1 folds, scored on the"
                   " held-out one (by conversation when there are k, else by query);"
                   " default 5 with --sweep.")
@click.option("--compare", nargs=2, default=None, metavar="A B",
              help=f"Score two settings on the same queries and print B - A with its paired"
                   f" interval; each is {SIDE_HELP}.")
@click.option("--vector-weight", type=click.FloatRange(0.0, 1.0), default=None,
              help="Vector leg weight; the fts weight is 1 minus it (default: the configured"
                   " weights).")
@click.option("--fusion", type=click.Choice(FUSIONS), default=None,
              help="Fusion method (default: the configured one); with --sweep, sweep only it.")
@model_option
@click.option("--json", "as_json", is_flag=True,
              help="Print the report as JSON (intervals included; a single evaluation also"
                   " has each query's ranked turns and scores).")
@click.pass_context
def eval_command(ctx: click.Context, db: Location, dataset_path: Path, run_sweep: bool,
                 folds: int | None, compare: tuple[str, str] | None,
                 vector_weight: float | None, fusion: str | None, model: str | None,
                 as_json: bool) -> None:
    """Score retrieval on a dataset: recall@k, hit@k, MRR and nDCG@k with 95% intervals."""
    swept = run_sweep or folds is not None
    if swept and vector_weight is not None:
        raise click.UsageError("--sweep tries every vector weight; leave out --vector-weight")
    if compare and (swept or vector_weight is not None or fusion is not None):
        raise click.UsageError("--compare names both settings whole; leave out --sweep, "
                               "--folds, --vector-weight and --fusion")
    config = _measuring_config(ctx, model)
    require_db(db)
    from core.evaluation import report as text

    if compare:
        comparison, names = run_command(_compare(db, dataset_path, config, compare))
        if as_json:
            click.echo(json.dumps({"dataset": str(dataset_path), "a_setting": compare[0],
                                   "b_setting": compare[1], **comparison.to_dict()}, indent=2))
            return
        _echo_lines(text.comparison_lines(comparison, compare, names))
        return
    if swept:
        from core.evaluation.settings import default_axes

        axes = default_axes(fusions=(fusion,) if fusion else None)
        cv, _ = run_command(_tune(db, dataset_path, config, axes, folds))
        if as_json:
            click.echo(json.dumps({"dataset": str(dataset_path), **cv.to_dict()}, indent=2))
            return
        lines = [f"model  {cv.model}", ""]
        lines += text.grid_lines(cv) if run_sweep else []
        _echo_lines([*lines, *([""] if run_sweep else []), *text.cross_validation_lines(cv)])
        return
    result, names = run_command(_evaluate(db, dataset_path, config, vector_weight, fusion))
    if as_json:
        click.echo(json.dumps({"dataset": str(dataset_path), **result.to_dict()}, indent=2))
        return
    _echo_lines(text.report_lines(result, names))


@click.command("tune")
@click.option("--db", "db", required=True, type=MEMORY,
              help=f"{MEMORY_HELP} holding the dataset or the judgments.")
@click.option("--dataset", "dataset_path", default=None,
              type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Tune on this dataset JSONL (as `workbench import locomo` writes it).")
@click.option("--session", "session_id", default=None,
              help="Instead of a dataset, tune on the queries judged in this session (the"
                   " playground's judgments; judged recall@k, k the configured top_k).")
@click.option("--namespace", default=None,
              help="Instead of a dataset, tune on the queries judged in this namespace.")
@click.option("--grid", "grid", multiple=True, metavar="retrieval.KEY[=A,B,...]",
              help="An axis of the grid (repeatable): a retrieval option and its values; a"
                   " boolean or choice option without values tries them all. Default: every"
                   " fusion x vector weights 0.0-1.0.")
@click.option("--folds", type=click.IntRange(min=2), default=5, show_default=True,
              help="Folds of the cross-validation (by conversation when there are that many).")
@click.option("--write", "write_path", type=click.Path(dir_okay=False, path_type=Path),
              default=None,
              help="Write the recommended setting into this TOML config file (other lines"
                   " kept), only when it beats the current one beyond noise.")
@model_option
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.pass_context
def tune_command(ctx: click.Context, db: Location, dataset_path: Path | None,
                 session_id: str | None, namespace: str | None, grid: tuple[str, ...],
                 folds: int, write_path: Path | None, model: str | None, as_json: bool) -> None:
    """Choose retrieval settings by cross-validation and recommend one with its held-out gain."""
    from core.errors import WorkbenchError
    from core.evaluation import report as text
    from core.evaluation.settings import default_axes, parse_axis, write_settings

    scope = {k: v for k, v in (("session_id", session_id), ("namespace", namespace)) if v}
    if (dataset_path is None) == (not scope) or len(scope) > 1:
        raise click.UsageError("tune on one of: --dataset FILE, --session ID, --namespace NAME")
    config = _measuring_config(ctx, model)
    require_db(db)
    try:
        axes = [parse_axis(axis) for axis in grid] if grid else default_axes()
    except WorkbenchError as exc:
        raise click.BadParameter(str(exc), param_hint="--grid") from None
    if dataset_path is not None:
        cv, _ = run_command(_tune(db, dataset_path, config, axes, folds))
    else:
        cv = run_command(_tune_judged(db, scope, config, axes, folds))
    written = False
    if write_path is not None and cv.beats_current:
        try:
            write_settings(write_path, cv.points[cv.best])
        except WorkbenchError as exc:
            raise click.ClickException(str(exc)) from None
        written = True
    if as_json:
        source = {"dataset": str(dataset_path)} if dataset_path else {"judged": scope}
        click.echo(json.dumps({**source, **cv.to_dict(),
                               "written": str(write_path) if written else None}, indent=2))
        return
    lines = [f"model  {cv.model}", "", *text.grid_lines(cv), "",
             *text.cross_validation_lines(cv), ""]
    from core.evaluation.settings import describe

    best = describe(cv.points[cv.best])
    if cv.beats_current:
        lines.append(f"recommended: {best} (held-out {text._label(cv.metric)} "
                     f"{cv.gain.shown(signed=True)} over the current setting)")
        lines.append(f"written to {write_path}" if written
                     else "to keep it: --write CONFIG, or set it in your config file")
    else:
        lines.append("recommended: keep the current setting" + (
            f"; {write_path} left as it was" if write_path is not None else ""))
    _echo_lines(lines)


def _echo_lines(lines: list[str]) -> None:
    for line in lines:
        click.echo(line)


def _draining(db: Location, config: Any) -> Any:
    """The memory opened to read, with the embedding worker, so the backlog can be embedded
    before anything is measured."""
    return open_engine(db, config, writes=False, start_worker=True)


def _category_names(dataset: Any) -> Any:
    from core.evaluation.locomo import CATEGORY_NAMES

    is_locomo = bool(dataset.messages) and all(s.startswith("locomo-") for s in dataset.messages)
    return CATEGORY_NAMES if is_locomo else None


async def _evaluate(db: Location, dataset_path: Path, config: Any,
                    vector_weight: float | None, fusion: str | None) -> tuple[Any, Any]:
    from core.evaluation import evaluate, read_dataset

    dataset = read_dataset(dataset_path)
    async with _draining(db, config) as engine:
        echo_warnings(engine)
        await drain_with_progress(engine)
        result = await evaluate(
            engine, dataset, vector_weight=vector_weight, fusion=fusion,
            fts_weight=None if vector_weight is None else round(1.0 - vector_weight, 6))
    return result, _category_names(dataset)


async def _scored(db: Location, dataset: Any, config: Any, points: list[Any],
                  label: str) -> list[Any]:
    """Each point's evaluation; the file is drained once, before any is scored."""
    from core.evaluation.tuning import score_points

    async with _draining(db, config) as engine:
        echo_warnings(engine)
        await drain_with_progress(engine)
    return await score_points(lambda c: open_engine(db, c, writes=False), config, dataset, points,
                              progress=_progress(label))


async def _compare(db: Location, dataset_path: Path, config: Any,
                   sides: tuple[str, str]) -> tuple[Any, Any]:
    from core.evaluation import read_dataset
    from core.evaluation.settings import parse_side
    from core.evaluation.tuning import compare

    dataset = read_dataset(dataset_path)
    first, second = await _scored(db, dataset, config, [parse_side(s) for s in sides],
                                  "compare")
    return compare(first, second), _category_names(dataset)


async def _tune(db: Location, dataset_path: Path, config: Any, axes: list[Any],
                folds: int | None) -> tuple[Any, Any]:
    from core.evaluation import read_dataset
    from core.evaluation.settings import grid_points
    from core.evaluation.tuning import DEFAULT_FOLDS, cross_validate_reports

    dataset = read_dataset(dataset_path)
    points = [{}, *grid_points(axes)]  # the current setting first: ties go to it
    reports = await _scored(db, dataset, config, points, "grid")
    return (cross_validate_reports(points, reports, dataset, folds or DEFAULT_FOLDS),
            _category_names(dataset))


async def _tune_judged(db: Location, scope: dict[str, str], config: Any, axes: list[Any],
                       folds: int) -> Any:
    from core.evaluation.settings import grid_points
    from core.evaluation.tuning import cross_validate, score_judged_points

    points = [{}, *grid_points(axes)]  # the current setting first: ties go to it
    async with _draining(db, config) as engine:
        echo_warnings(engine)
        await drain_with_progress(engine)
    scores, count, model = await score_judged_points(
        lambda c: open_engine(db, c, writes=False), config, scope, points, _progress("grid"))
    # One scope, one group: the folds split its queries.
    return cross_validate(points, scores, ["judged"] * count, folds=folds,
                          metric=f"judged recall@{config.retrieval.top_k}", model=model)
