"""Whether a setting generalises: grids of settings scored per query, compared, cross-validated.

A grid point is a set of overrides (:mod:`core.evaluation.settings`). Points that differ
only in ranking knobs (weights, fusion, ``rrf_k``) share one search per query and re-rank
its kept legs; a point that changes anything else gets an engine opened with that config.
Cross-validation splits the queries into k folds (by conversation when there are at least
k of them, so no conversation is on both sides; else by query), chooses the best point on
k-1 folds and scores it on the held-out one. The pooled held-out scores of those choices
against the current setting's, with a paired bootstrap interval, say whether tuning gains
anything beyond noise; a sweep marks its best point only when it does.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from core.config.sections import Config, RetrievalConfig
from core.errors import InvalidInput
from core.evaluation.dataset import Dataset
from core.evaluation.metrics import METRICS
from core.evaluation.runner import (
    DEFAULT_TOP_K_CHUNKS,
    EXCLUDED_CATEGORIES,
    EvalReport,
    check_engine_holds,
    report_of,
    search_all,
)
from core.evaluation.settings import Overrides, apply_overrides, describe, with_implied
from core.evaluation.stats import (
    SEED,
    FloatArray,
    Interval,
    mean_intervals,
    paired_difference,
    resample_counts,
)
from core.retrieval.search import Ranking

if TYPE_CHECKING:
    from core.engine import Engine

OpenEngine = Callable[[Config], AbstractAsyncContextManager["Engine"]]
TUNED_METRIC = "recall@10"
TIE_METRIC = "mrr"
DEFAULT_FOLDS = 5
# Ranking knobs with a config field of the same name: changing them re-ranks kept legs.
# top_k is the evaluation's own (it asks for 50 chunks a query), never the config's.
RERANK_FIELDS = tuple(f.name for f in dataclasses.fields(Ranking)
                      if f.name in RetrievalConfig.model_fields and f.name != "top_k")


def _search_part(overrides: Overrides) -> Overrides:
    """The overrides a re-rank cannot apply: they need a search of their own."""
    rerank_keys = {f"retrieval.{name}" for name in RERANK_FIELDS}
    return {k: v for k, v in with_implied(overrides).items() if k not in rerank_keys}


def _search_groups(base: Config, points: Sequence[Overrides]) -> list[tuple[Config, list[int]]]:
    """The points sharing each search config (the base with their search overrides)."""
    groups: dict[str, list[int]] = {}
    for index, point in enumerate(points):
        groups.setdefault(repr(sorted(_search_part(point).items())), []).append(index)
    return [(apply_overrides(base, _search_part(points[members[0]])), members)
            for members in groups.values()]


async def score_points(open_engine: OpenEngine, base: Config, dataset: Dataset,
                       points: Sequence[Overrides], *,
                       top_k_chunks: int = DEFAULT_TOP_K_CHUNKS,
                       excluded: Sequence[str] = EXCLUDED_CATEGORIES,
                       progress: Callable[[int, int], None] | None = None) -> list[EvalReport]:
    """Each point's evaluation, in order; one search per query per distinct search config."""
    configs = [apply_overrides(base, point) for point in points]  # refuses a bad one first
    reports: list[EvalReport | None] = [None] * len(points)
    done = 0
    for search_config, members in _search_groups(base, points):
        async with open_engine(search_config) as engine:
            await check_engine_holds(engine, dataset)
            searched = await search_all(engine, dataset, top_k_chunks)
            for index in members:
                ranking = {name: getattr(configs[index].retrieval, name)
                           for name in RERANK_FIELDS}
                reranked = [found.rerank(**ranking) for found in searched]
                reports[index] = report_of(engine, dataset, reranked, top_k_chunks, excluded)
                done += 1
                if progress is not None:
                    progress(done, len(points))
    return [report for report in reports if report is not None]


def overall_values(report: EvalReport, metric: str) -> FloatArray:
    """The metric of each query the overall figures count (excluded categories left out)."""
    return np.array([s.metrics[metric] for s in report.scores
                     if s.category not in report.excluded], dtype=np.float64)


@dataclass(frozen=True)
class Comparison:
    """Two settings on the same queries: each one's figures and B - A per metric."""

    first: EvalReport
    second: EvalReport
    differences: dict[str, Interval]
    """Overall, B - A, with the paired interval."""
    category_differences: dict[str, dict[str, Interval]]

    def to_dict(self) -> dict[str, Any]:
        """The comparison as a JSON-ready dict (no per-query rows)."""
        return {"a": self.first.to_dict(with_queries=False),
                "b": self.second.to_dict(with_queries=False),
                "b_minus_a": {m: i.to_dict() for m, i in self.differences.items()},
                "b_minus_a_categories": {
                    c: {m: i.to_dict() for m, i in d.items()}
                    for c, d in self.category_differences.items()}}


def compare(first: EvalReport, second: EvalReport) -> Comparison:
    """B - A for every metric, overall and per category, with paired bootstrap intervals."""
    def differences(keep: Callable[[str | None], bool]) -> dict[str, Interval]:
        rows = [i for i, s in enumerate(first.scores) if keep(s.category)]
        counts = resample_counts(len(rows))
        return {m: paired_difference([first.scores[i].metrics[m] for i in rows],
                                     [second.scores[i].metrics[m] for i in rows], counts)
                for m in METRICS}

    def in_category(category: str) -> Callable[[str | None], bool]:
        return lambda c: c == category

    return Comparison(first, second,
                      differences(lambda c: c not in first.excluded),
                      {category: differences(in_category(category))
                       for category in first.categories})


def assign_folds(groups: Sequence[str], folds: int, seed: int = SEED,
                 ) -> tuple[list[int], str]:
    """Each query's fold, given each query's group (its conversation), and how they were
    split: "conversation" when there are at least ``folds`` groups (a group's queries stay
    together), else "query"."""
    if folds < 2 or folds > len(groups):
        raise InvalidInput(f"--folds must be from 2 to the {len(groups)} queries scored, "
                           f"got {folds}")
    rng = np.random.default_rng(seed)
    distinct = list(dict.fromkeys(groups))
    if len(distinct) >= folds:
        order = rng.permutation(len(distinct))
        fold_of = {distinct[j]: position % folds for position, j in enumerate(order)}
        return [fold_of[group] for group in groups], "conversation"
    assigned = [0] * len(groups)
    for position, j in enumerate(rng.permutation(len(groups))):
        assigned[int(j)] = position % folds
    return assigned, "query"


@dataclass(frozen=True)
class PointScores:
    """One grid point on every query: the tuned metric, the tie-breaker, and the means the
    grid table shows beside them."""

    values: FloatArray
    ties: FloatArray
    shown: dict[str, float]


SHOWN_METRICS = ("recall@5", "recall@25", "mrr")


def report_scores(report: EvalReport) -> PointScores:
    """A dataset evaluation as grid scores: recall@10, then MRR, over the overall queries."""
    return PointScores(overall_values(report, TUNED_METRIC), overall_values(report, TIE_METRIC),
                       {m: report.overall.metrics[m] for m in SHOWN_METRICS})


@dataclass(frozen=True)
class FoldOutcome:
    """One held-out fold: the point chosen on the others, and both settings' scores on it."""

    fold: int
    queries: int
    chosen: int
    current: float
    tuned: float


@dataclass(frozen=True)
class CrossValidation:
    """Which point tuning picks, and whether picking beats the current one on held-out folds.

    ``points[0]`` is the current setting. ``best`` is chosen on every query; ``gain`` is the
    pooled held-out score of the per-fold choices minus the current one's, paired."""

    model: str
    points: list[Overrides]
    shown: list[dict[str, float]]
    metric: str
    grouping: str
    folds: list[FoldOutcome]
    current: Interval
    tuned: Interval
    gain: Interval
    best: int
    point_intervals: list[Interval]
    """Each point's ``metric`` over every query, with its interval (the band)."""

    @property
    def beats_current(self) -> bool:
        """The best point differs from the current one and tuning's held-out gain is > 0
        beyond noise (its interval lies above 0)."""
        return self.best != 0 and self.gain.low > 0.0

    def to_dict(self) -> dict[str, Any]:
        """The cross-validation as a JSON-ready dict."""
        return {
            "model": self.model, "metric": self.metric, "grouping": self.grouping,
            "folds": [dataclasses.asdict(f) | {"chosen": describe(self.points[f.chosen])}
                      for f in self.folds],
            "held_out_current": self.current.to_dict(), "held_out_tuned": self.tuned.to_dict(),
            "held_out_gain": self.gain.to_dict(), "beats_current": self.beats_current,
            "best": describe(self.points[self.best]),
            "best_overrides": with_implied(self.points[self.best]),
            "points": [{"setting": describe(p), self.metric: i.to_dict(), **shown}
                       for p, shown, i in zip(self.points, self.shown, self.point_intervals,
                                              strict=True)]}


def _choose(matrix: FloatArray, ties: FloatArray, rows: np.ndarray) -> int:
    """The point with the best mean over ``rows`` (then the tie metric); ties go to the
    current point (0), then to the earlier one."""
    means = matrix[:, rows].mean(axis=1)
    tie_means = ties[:, rows].mean(axis=1)
    return max(range(len(means)), key=lambda i: (means[i], tie_means[i], i == 0, -i))


def cross_validate(points: Sequence[Overrides], scores: Sequence[PointScores],
                   groups: Sequence[str], *, folds: int = DEFAULT_FOLDS,
                   metric: str = TUNED_METRIC, model: str = "") -> CrossValidation:
    """Choose on k-1 folds, score on the held-out one, pool; ``points[0]`` is the current.
    ``groups`` names each query's conversation, so folds can keep one whole."""
    count = len(groups)
    assigned, grouping = assign_folds(groups, min(folds, count))
    fold_of = np.array(assigned)
    matrix = np.stack([score.values for score in scores])
    ties = np.stack([score.ties for score in scores])
    tuned_values = np.empty(count)
    outcomes = []
    for fold in range(int(fold_of.max()) + 1):
        held = np.flatnonzero(fold_of == fold)
        chosen = _choose(matrix, ties, np.flatnonzero(fold_of != fold))
        tuned_values[held] = matrix[chosen, held]
        outcomes.append(FoldOutcome(fold + 1, len(held), chosen,
                                    float(matrix[0, held].mean()),
                                    float(matrix[chosen, held].mean())))
    counts = resample_counts(count)
    current, tuned = mean_intervals(np.stack([matrix[0], tuned_values], axis=1), counts)
    return CrossValidation(
        model, list(points), [score.shown for score in scores], metric, grouping, outcomes,
        current, tuned, paired_difference(matrix[0], tuned_values, counts),
        _choose(matrix, ties, np.arange(count)), mean_intervals(matrix.T, counts))


def cross_validate_reports(points: Sequence[Overrides], reports: Sequence[EvalReport],
                           dataset: Dataset, folds: int = DEFAULT_FOLDS) -> CrossValidation:
    """:func:`cross_validate` on a dataset's evaluations (the overall queries, by session)."""
    groups = [query.session_id for query, score in zip(dataset.queries, reports[0].scores,
                                                        strict=True)
              if score.category not in reports[0].excluded]
    return cross_validate(points, [report_scores(r) for r in reports], groups, folds=folds,
                          model=reports[0].model)


async def score_judged_points(open_engine: OpenEngine, base: Config, scope: Mapping[str, str],
                              points: Sequence[Overrides],
                              progress: Callable[[int, int], None] | None = None,
                              ) -> tuple[list[PointScores], int, str]:
    """Each point on the queries judged in ``scope`` (a person's own judgments): judged
    recall@k per query, then nDCG@k, k the configured ``top_k``. Also returns how many
    queries and the model."""
    from core.evaluation.judged import JudgedSearches, set_values

    configs = [apply_overrides(base, point) for point in points]  # refuses a bad one first
    scores: list[PointScores | None] = [None] * len(points)
    done, count, model = 0, 0, ""
    for search_config, members in _search_groups(base, points):
        async with open_engine(search_config) as engine:
            judged = await JudgedSearches().load(engine, scope,
                                                  top_k=search_config.retrieval.top_k)
            model = engine.embedder.name
        if not len(judged):
            raise InvalidInput(f"nothing is judged relevant in {describe_scope(scope)}: judge "
                               "queries in the playground first")
        count = len(judged)
        searched = judged.results[0].ranking
        for index in members:
            ranking = dataclasses.replace(searched, **{
                name: getattr(configs[index].retrieval, name) for name in RERANK_FIELDS})
            recall, ndcg = set_values(judged, ranking)
            scores[index] = PointScores(recall, ndcg, {"nDCG": float(ndcg.mean())})
            done += 1
            if progress is not None:
                progress(done, len(points))
    return [score for score in scores if score is not None], count, model


def describe_scope(scope: Mapping[str, str]) -> str:
    """``session trip-dolomites`` or ``namespace ops``."""
    return " ".join(f"{key.removesuffix('_id')} {value}" for key, value in scope.items())
