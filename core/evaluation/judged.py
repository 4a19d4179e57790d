"""One query's ranking scored against a person's judgments, and its weights swept.

Judgments grade chunks 0-3 for one query in one scope (``Engine.judge``); a chunk graded
:data:`RELEVANT_GRADE` or more is relevant. A ranking is scored with the evaluation's
recall@k and nDCG@k over chunk ids, k being the ranking's ``top_k``. A sweep re-ranks the
kept legs at each vector weight (full-text weight ``1 - v``): no database work, so the
playground can draw it while the person watches.

Over every judged query of a scope (:class:`JudgedSet`) the same scores come with bootstrap
intervals, the sweep with a band, and two settings with their paired difference, so a
person who judged ten queries sees how little ten queries can tell.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from core.evaluation.metrics import ndcg_at, recall_at
from core.evaluation.runner import SWEEP_WEIGHTS
from core.evaluation.stats import (
    FloatArray,
    Interval,
    mean_interval,
    mean_intervals,
    paired_difference,
    resample_counts,
)
from core.retrieval.search import Ranking, SearchResult, rank

if TYPE_CHECKING:
    from core.engine import Engine

RELEVANT_GRADE = 1


def relevant_chunks(judgments: Mapping[str, int]) -> set[str]:
    """The chunk ids judged relevant (graded :data:`RELEVANT_GRADE` or more)."""
    return {chunk_id for chunk_id, grade in judgments.items() if grade >= RELEVANT_GRADE}


@dataclass(frozen=True)
class JudgedScore:
    """How a ranking's top k does against the chunks judged relevant."""

    k: int
    recall: float
    ndcg: float
    relevant: int
    """How many chunks are judged relevant."""
    found: int
    """How many of them the top k holds."""


def score_ranking(result: SearchResult, judgments: Mapping[str, int]) -> JudgedScore | None:
    """recall@k and nDCG@k of ``result`` (k = its ``top_k``); None when nothing is judged
    relevant, since then there is nothing to find."""
    relevant = relevant_chunks(judgments)
    if not relevant:
        return None
    k = result.ranking.top_k
    ranked = [r.chunk_id for r in result.results]
    return JudgedScore(k=k, recall=recall_at(ranked, relevant, k),
                       ndcg=ndcg_at(ranked, relevant, k), relevant=len(relevant),
                       found=len(relevant.intersection(ranked[:k])))


@dataclass(frozen=True)
class SweepPoint:
    """The judged score of the kept legs re-ranked at one vector weight."""

    vector_weight: float
    fts_weight: float
    score: JudgedScore
    band: Interval | None = None
    """Over a judged set: recall@k's interval at this weight."""


def sweep_point(result: SearchResult, judgments: Mapping[str, int],
                vector_weight: float) -> SweepPoint | None:
    """``result`` re-ranked at ``vector_weight`` (full text ``1 - vector_weight``), scored;
    None when nothing is judged relevant."""
    fts_weight = round(1.0 - vector_weight, 6)
    score = score_ranking(result.rerank(vector_weight=vector_weight, fts_weight=fts_weight),
                          judgments)
    return None if score is None else SweepPoint(vector_weight, fts_weight, score)


def weight_sweep(result: SearchResult, judgments: Mapping[str, int],
                 weights: Sequence[float] = SWEEP_WEIGHTS) -> Iterator[SweepPoint]:
    """Every weight's point, in order, one at a time (a caller can report each and stop
    between them); none when nothing is judged relevant."""
    for weight in weights:
        point = sweep_point(result, judgments, weight)
        if point is not None:
            yield point


def best_point(points: Sequence[SweepPoint]) -> int | None:
    """The index of the best point by nDCG@k, then recall@k; ties go to the earlier one."""
    if not points:
        return None
    return max(range(len(points)),
               key=lambda i: (points[i].score.ndcg, points[i].score.recall, -i))


# --- every judged query of a scope: intervals, a sweep with its band, A | B ----------------------

MIN_JUDGED_QUERIES = 10
"""Below this many judged queries, the playground says the set is too small to tell."""
MAX_INTERVAL_WIDTH = 0.2
"""A recall interval wider than this is too wide to choose a setting by."""


@dataclass(frozen=True)
class JudgedSet:
    """The judged queries of one scope, each searched once with its legs kept, so every
    ranking setting re-ranks the whole set without the database."""

    queries: list[str]
    judgments: list[dict[str, int]]
    results: list[SearchResult]

    def __len__(self) -> int:
        return len(self.queries)


class JudgedSearches:
    """The judged queries' searches, kept: each query is searched once (and logged once,
    as caller "judged"), however often the set is read again as judgments change."""

    def __init__(self) -> None:
        self._searched: dict[tuple[tuple[str, str], ...], dict[str, SearchResult]] = {}

    def keep(self, scope: Mapping[str, str], query: str, found: SearchResult) -> None:
        """Keep a search the caller ran already (in the configured mode), so the set does
        not run it again."""
        self._searched.setdefault(tuple(sorted(scope.items())), {})[query] = found

    async def load(self, engine: Engine, scope: Mapping[str, str], *,
                   top_k: int = 10) -> JudgedSet:
        """Every query judged in ``scope`` with something judged relevant, searched deep
        enough for ``top_k``; the grades are read afresh each time."""
        kept = self._searched.setdefault(tuple(sorted(scope.items())), {})
        judged = await engine.judged_queries(session_id=scope.get("session_id"),
                                             namespace=scope.get("namespace"))
        queries, judgments, results = [], [], []
        for query, grades in judged.items():
            if not relevant_chunks(grades):
                continue
            found = kept.get(query)
            if found is None or found.legs.depth < top_k:
                found = await engine.search(query=query, top_k=top_k, caller="judged",
                                            session_id=scope.get("session_id"),
                                            namespace=scope.get("namespace"))
                kept[query] = found
            queries.append(query)
            judgments.append(grades)
            results.append(found)
        return JudgedSet(queries, judgments, results)


@dataclass(frozen=True)
class SetScore:
    """recall@k and nDCG@k over a judged set, each with its bootstrap interval."""

    k: int
    queries: int
    recall: Interval
    ndcg: Interval

    @property
    def warning(self) -> str | None:
        """Why the set is too small to choose a setting by, or None."""
        if self.queries < MIN_JUDGED_QUERIES:
            return (f"only {self.queries} judged quer{'y' if self.queries == 1 else 'ies'}: "
                    f"too few to tell settings apart; judge {MIN_JUDGED_QUERIES} or more")
        if self.recall.width > MAX_INTERVAL_WIDTH:
            return (f"recall@{self.k} could be anywhere in {self.recall.low:.2f}-"
                    f"{self.recall.high:.2f}: judge more queries before trusting a setting")
        return None


def set_values(judged: JudgedSet, ranking: Ranking) -> tuple[FloatArray, FloatArray]:
    """Each query's recall@k and nDCG@k under ``ranking``."""
    recall, ndcg = [], []
    for result, grades in zip(judged.results, judged.judgments, strict=True):
        score = score_ranking(rank(result.legs, ranking), grades)
        assert score is not None  # the set holds only queries with something relevant
        recall.append(score.recall)
        ndcg.append(score.ndcg)
    return np.array(recall), np.array(ndcg)


def set_score(judged: JudgedSet, ranking: Ranking) -> SetScore | None:
    """The set under ``ranking`` (weights, fusion, top_k…); None when it is empty."""
    if not len(judged):
        return None
    recall, ndcg = set_values(judged, ranking)
    recall_interval, ndcg_interval = mean_intervals(np.stack([recall, ndcg], axis=1))
    return SetScore(ranking.top_k, len(judged), recall_interval, ndcg_interval)


def set_difference(judged: JudgedSet, first: Ranking, second: Ranking) -> Interval | None:
    """recall@k of ``second`` minus ``first`` over the set, with its paired interval."""
    if not len(judged):
        return None
    return paired_difference(set_values(judged, first)[0], set_values(judged, second)[0])


def set_sweep(judged: JudgedSet, ranking: Ranking,
              weights: Sequence[float] = SWEEP_WEIGHTS) -> Iterator[SweepPoint]:
    """The set at each vector weight (full text ``1 - v``, the rest of ``ranking`` kept):
    mean recall@k and nDCG@k, and the recall interval as the point's band."""
    if not len(judged):
        return
    counts = resample_counts(len(judged))
    for weight in weights:
        fts_weight = round(1.0 - weight, 6)
        recall, ndcg = set_values(judged, dataclasses.replace(
            ranking, vector_weight=weight, fts_weight=fts_weight))
        band = mean_interval(recall, counts)
        score = JudgedScore(k=ranking.top_k, recall=band.estimate, ndcg=float(ndcg.mean()),
                            relevant=0, found=0)
        yield SweepPoint(weight, fts_weight, score, band)


def sweep_verdict(judged: JudgedSet, ranking: Ranking, best: SweepPoint) -> str:
    """What a sweep of the judged set says: the best weight, and whether it beats the
    current ranking's weights beyond noise (recall@k, paired)."""
    count = len(judged)
    head = (f"Best vector weight {best.vector_weight:.1f} (fts {best.fts_weight:.1f}) over "
            f"{count} judged quer{'y' if count == 1 else 'ies'}: recall@{ranking.top_k} "
            f"{best.score.recall:.2f}")
    if (best.vector_weight, best.fts_weight) == (ranking.vector_weight, ranking.fts_weight):
        return f"{head}; that is the current setting"
    difference = set_difference(judged, ranking, dataclasses.replace(
        ranking, vector_weight=best.vector_weight, fts_weight=best.fts_weight))
    assert difference is not None  # the set is not empty: it has a best point
    if difference.low > 0.0:
        return f"{head}, {difference.shown(signed=True)} over now: beyond noise"
    return (f"{head}, {difference.shown(signed=True)} over now: within noise, so the "
            "current weights are as good as these judgments can tell")
