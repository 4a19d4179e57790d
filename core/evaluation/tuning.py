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
from collections.abc import Callable, Sequence
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
    _report,
    _search_all,
    check_engine_holds,
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


async def score_points(open_engine: OpenEngine, base: Config, dataset: Dataset,
                       points: Sequence[Overrides], *,
                       top_k_chunks: int = DEFAULT_TOP_K_CHUNKS,
                       excluded: Sequence[str] = EXCLUDED_CATEGORIES,
                       progress: Callable[[int, int], None] | None = None) -> list[EvalReport]:
    """Each point's evaluation, in order; one search per query per distinct search config."""
    configs = [apply_overrides(base, point) for point in points]  # refuses a bad one first
    groups: dict[str, list[int]] = {}
    for index, point in enumerate(points):
        groups.setdefault(repr(sorted(_search_part(point).items())), []).append(index)
    reports: list[EvalReport | None] = [None] * len(points)
    done = 0
    for members in groups.values():
        search_config = apply_overrides(base, _search_part(points[members[0]]))
        async with open_engine(search_config) as engine:
            await check_engine_holds(engine, dataset)
            searched = await _search_all(engine, dataset, top_k_chunks)
            for index in members:
                ranking = {name: getattr(configs[index].retrieval, name)
                           for name in RERANK_FIELDS}
                reranked = [found.rerank(**ranking) for found in searched]
                reports[index] = _report(engine, dataset, reranked, top_k_chunks, excluded)
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


def assign_folds(dataset: Dataset, folds: int, seed: int = SEED) -> tuple[list[int], str]:
    """Each query's fold, and how they were split: "conversation" when the dataset has at
    least ``folds`` sessions with queries (a session's queries stay together), else "query"."""
    queries = dataset.queries
    if folds < 2 or folds > len(queries):
        raise InvalidInput(f"--folds must be from 2 to the {len(queries)} queries scored, "
                           f"got {folds}")
    rng = np.random.default_rng(seed)
    sessions = list(dict.fromkeys(q.session_id for q in queries))
    if len(sessions) >= folds:
        order = rng.permutation(len(sessions))
        fold_of = {sessions[j]: position % folds for position, j in enumerate(order)}
        return [fold_of[q.session_id] for q in queries], "conversation"
    assigned = [0] * len(queries)
    for position, j in enumerate(rng.permutation(len(queries))):
        assigned[int(j)] = position % folds
    return assigned, "query"


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

    points: list[Overrides]
    reports: list[EvalReport]
    metric: str
    grouping: str
    folds: list[FoldOutcome]
    current: Interval
    tuned: Interval
    gain: Interval
    best: int
    point_intervals: list[Interval]
    """Each point's overall ``metric`` over every query, with its interval (the band)."""

    @property
    def beats_current(self) -> bool:
        """The best point differs from the current one and tuning's held-out gain is > 0
        beyond noise (its interval lies above 0)."""
        return self.best != 0 and self.gain.low > 0.0

    def to_dict(self) -> dict[str, Any]:
        """The cross-validation as a JSON-ready dict."""
        return {
            "metric": self.metric, "grouping": self.grouping,
            "folds": [dataclasses.asdict(f) | {"chosen": describe(self.points[f.chosen])}
                      for f in self.folds],
            "held_out_current": self.current.to_dict(), "held_out_tuned": self.tuned.to_dict(),
            "held_out_gain": self.gain.to_dict(), "beats_current": self.beats_current,
            "best": describe(self.points[self.best]),
            "best_overrides": with_implied(self.points[self.best]),
            "points": [{"setting": describe(p), self.metric: i.to_dict(),
                        **{m: r.overall.metrics[m] for m in METRICS}}
                       for p, r, i in zip(self.points, self.reports, self.point_intervals,
                                          strict=True)]}


def _choose(matrix: FloatArray, ties: FloatArray, rows: np.ndarray) -> int:
    """The point with the best mean over ``rows`` (then the tie metric); ties go to the
    current point (0), then to the earlier one."""
    means = matrix[:, rows].mean(axis=1)
    tie_means = ties[:, rows].mean(axis=1)
    return max(range(len(means)), key=lambda i: (means[i], tie_means[i], i == 0, -i))


def cross_validate(points: Sequence[Overrides], reports: Sequence[EvalReport], dataset: Dataset,
                   folds: int = DEFAULT_FOLDS, metric: str = TUNED_METRIC) -> CrossValidation:
    """Choose on k-1 folds, score on the held-out one, pool; ``points[0]`` is the current."""
    included = [i for i, s in enumerate(reports[0].scores)
                if s.category not in reports[0].excluded]
    subset = Dataset(dataset.messages, [dataset.queries[i] for i in included])
    assigned, grouping = assign_folds(subset, min(folds, len(included)))
    fold_of = np.array(assigned)
    matrix = np.stack([overall_values(r, metric) for r in reports])
    ties = np.stack([overall_values(r, TIE_METRIC) for r in reports])
    tuned_values = np.empty(len(included))
    outcomes = []
    for fold in range(int(fold_of.max()) + 1):
        held = np.flatnonzero(fold_of == fold)
        chosen = _choose(matrix, ties, np.flatnonzero(fold_of != fold))
        tuned_values[held] = matrix[chosen, held]
        outcomes.append(FoldOutcome(fold + 1, len(held), chosen,
                                    float(matrix[0, held].mean()),
                                    float(matrix[chosen, held].mean())))
    counts = resample_counts(len(included))
    current, tuned = mean_intervals(np.stack([matrix[0], tuned_values], axis=1), counts)
    return CrossValidation(
        list(points), list(reports), metric, grouping, outcomes, current, tuned,
        paired_difference(matrix[0], tuned_values, counts),
        _choose(matrix, ties, np.arange(len(included))),
        mean_intervals(matrix.T, counts))
