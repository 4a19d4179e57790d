"""``workbench search`` and ``workbench log``: ask what the agent would recall, and replay it."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import click

from core.locations import Location
from core.retrieval.fusion import FUSIONS
from core.retrieval.search import MODES, fusion_scale
from core.types import HybridQueryResult, ScoreParts
from workbench.command_line import (
    command_config,
    db_option,
    echo_read_only,
    hold_vectors_off,
    memory_location,
    model_option,
    open_engine,
    require_db,
    run_command,
)

if TYPE_CHECKING:
    from core.engine import Engine


def _snippet(text: str, width: int = 70) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _leg(normalised: float, rank: int | None, raw: float | None) -> str:
    """One leg's cell: ``0.64 #2 (3.118)``, or ``-`` when the leg did not return the chunk."""
    if rank is None:
        return "-"
    return f"{normalised:.2f} #{rank}" + (f" ({raw:.3f})" if raw is not None else "")


def _parts(result: HybridQueryResult) -> str:
    """The score's parts under their column names; a boost that added nothing is ``·``."""
    parts = result.parts or ScoreParts(fused=result.score)
    boosts = [f"{value:.3f}" if value else "·"
              for value in (parts.speaker, parts.date, parts.neighbour)]
    return f"{parts.fused:>6.3f} {boosts[0]:>7} {boosts[1]:>6} {boosts[2]:>9}"


def _print_results(found: Any, explain: bool) -> None:
    legs = found.legs
    click.echo(f"{len(found.results)} results for {legs.query!r} in {legs.scope} "
               f"({legs.mode}, {found.ranking.fusion}, vector {found.ranking.vector_weight:g} /"
               f" fts {found.ranking.fts_weight:g})")
    click.echo(f"scale: {fusion_scale(found.ranking, legs.mode)}")
    # score = fused + each boost, every part in its own named column; a leg's cell is its
    # normalised score, its rank and its raw score, "-" when the leg did not return the
    # chunk (so a full-text hit min-max put at 0.00 still shows its rank and bm25).
    click.echo(f"{'#':>3} {'score':>6} = {'fused':>6} {'speaker':>7} {'date':>6} "
               f"{'neighbour':>9}  {'vector (raw)':<19} {'fts (raw)':<19} seq    text")
    for number, result in enumerate(found.results, 1):
        vector = _leg(result.vector_score, result.vector_rank, result.vector_raw)
        fts = _leg(result.fts_score, result.fts_rank, result.fts_raw)
        click.echo(f"{number:>3} {result.score:>6.3f} = {_parts(result)}  {vector:<19} "
                   f"{fts:<19} {result.sequence_start:<6} {_snippet(result.text)}")
    if explain:
        explained = found.explain()
        click.echo(f"terms: {', '.join(explained['parsed_terms']) or '(none)'}"
                   f"    fts: {explained['fts_expression'] or '(none)'}")
        for step in explained["fts_executed"]:  # every full-text statement, as it ran
            click.echo(f"  ran: {step['engine']}: {step['expression']}"
                       + (f" WHERE {step['filter']}" if step["filter"] else "")
                       + f" -> {step['rows']} rows")
        click.echo(f"filters: tags {explained['filters']['tags'] or 'none'}    legs: "
                   f"{explained['legs']['vector']} vector, {explained['legs']['fts']} fts "
                   f"(depth {explained['legs']['depth']})")
        boosts, period = explained["boosts"], explained["boosts"]["period"]
        click.echo(f"boosts: speaker {boosts['speaker_boost']:g} (named: "
                   f"{', '.join(boosts['speakers_named']) or 'none'}), date "
                   f"{boosts['date_boost']:g} (period: " + (
                       f"{period['words']!r} {period['from']} to {period['to']}" if period
                       else "none") + f"), neighbour {boosts['neighbour_weight']:g} within "
                   f"{boosts['neighbour_window']} messages")
        for note in explained["notes"]:
            click.echo(f"note: {note}")
        for number, item in enumerate(explained["results"], 1):
            in_context = (f"; in its context: {', '.join(item['context_terms'])}"
                          if item["context_terms"] else "")
            gained = ", ".join(f"{name} +{value:.3f}"
                               for name, value in item["boosts"].items() if value)
            click.echo(f"{number:>3} {item['chunk_id']}: matched "
                       f"{', '.join(item['matched_terms']) or 'no query term'}{in_context}"
                       + (f"; boosted: {gained}" if gained else ""))
        for cut in explained["cut"][:10]:
            click.echo(f"cut: {cut['chunk_id']} ({cut['score']:.3f}): {cut['reason']}")
        if len(explained["cut"]) > 10:
            click.echo(f"cut: … and {len(explained['cut']) - 10} more")


@click.command("search")
@click.argument("query")
@db_option
@model_option
@click.option("--session", "session_id", default=None, help="Search this session.")
@click.option("--namespace", default=None,
              help="Search every session of this agent identity instead.")
@click.option("--top-k", default=10, show_default=True, type=click.IntRange(min=1),
              help="Results to return.")
@click.option("--vector-weight", type=click.FloatRange(min=0), default=None,
              help="Weight of the vector leg (default: configured).")
@click.option("--fts-weight", type=click.FloatRange(min=0), default=None,
              help="Weight of the full-text leg (default: configured).")
@click.option("--fusion", type=click.Choice(FUSIONS), default=None,
              help="How the legs are fused (default: configured).")
@click.option("--mode", type=click.Choice(MODES), default=None,
              help="Which legs run (default: configured).")
@click.option("--tag", "tags", multiple=True, help="Only chunks with this tag (repeatable).")
@click.option("--min-score", type=float, default=None, help="Drop results scoring below this.")
@click.option("--raw-fts", is_flag=True,
              help="Pass the query to FTS5 as written (phrases, NEAR, -term); errors are shown.")
@click.option("--explain", is_flag=True, help="Show terms, filters, notes and what was cut.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (the explanation with "
                                                      "--explain, else the results).")
@click.pass_context
def search_command(ctx: click.Context, query: str, db: Location | None, model: str | None,
                   session_id: str | None,
                   namespace: str | None, top_k: int, vector_weight: float | None,
                   fts_weight: float | None, fusion: str | None, mode: str | None,
                   tags: tuple[str, ...], min_score: float | None, raw_fts: bool,
                   explain: bool, as_json: bool) -> None:
    """Run a query as the agent would, with per-leg scores; --explain says why."""
    if (session_id is None) == (namespace is None):
        raise click.UsageError("give --session or --namespace")
    config = command_config(ctx, model)
    location = memory_location(db, config)
    require_db(location)

    async def run() -> Any:
        async with open_engine(location, config, writes=False) as engine:
            echo_read_only(engine)
            echo_vectors_off(engine)
            return await engine.search(
                query=query, session_id=session_id, namespace=namespace, top_k=top_k,
                vector_weight=vector_weight, fts_weight=fts_weight, fusion=fusion, mode=mode,
                tags=list(tags) or None, min_score=min_score, raw_fts=raw_fts, caller="cli",
                require_session=True)

    found = run_command(run())
    if as_json:
        payload = found.explain() if explain else [r.to_dict() for r in found.results]
        click.echo(json.dumps(payload, indent=2, ensure_ascii=False))
    else:
        _print_results(found, explain)


def echo_vectors_off(engine: Engine) -> None:
    """One line on stderr, as the command ends, while the file's vectors are another
    model's: the results come from full text alone."""
    if engine.model.vectors_off is not None:
        hold_vectors_off(engine.model.vectors_off.message)


@click.command("log")
@db_option
@model_option
@click.option("--limit", default=20, show_default=True, type=click.IntRange(min=1),
              help="Entries to list, newest first.")
@click.option("--caller", default=None, help="Only queries from this caller (agent, cli, app…).")
@click.option("--replay", "replay_id", type=int, default=None,
              help="Run this logged query again and show its results.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def log_command(ctx: click.Context, db: Location | None, model: str | None, limit: int,
                caller: str | None,
                replay_id: int | None, as_json: bool) -> None:
    """List the retrieval log (every query, from any front end), or replay one entry."""
    config = command_config(ctx, model)
    location = memory_location(db, config)
    require_db(location)

    async def run() -> Any:
        async with open_engine(location, config, writes=False) as engine:
            echo_read_only(engine)
            if replay_id is not None:
                echo_vectors_off(engine)
                return await engine.replay(replay_id)
            return await engine.retrieval_log(limit, caller=caller)

    found = run_command(run())
    if replay_id is not None:
        if as_json:
            click.echo(json.dumps([r.to_dict() for r in found.results], indent=2,
                                  ensure_ascii=False))
        else:
            _print_results(found, explain=False)
        return
    if as_json:
        click.echo(json.dumps(found, indent=2, ensure_ascii=False))
        return
    for entry in found:
        params = entry["params"]
        click.echo(f"{entry['log_id']:>6}  {entry['created_at']}  {entry['caller']:<10} "
                   f"{entry['scope_kind']} {entry['scope_value']!r}: {entry['query']!r} "
                   f"-> {len(entry['results'])} results ({params['mode']}, {params['fusion']})")
