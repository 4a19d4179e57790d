"""One query's ranking scored against a person's judgments, and its weights swept.

Judgments grade chunks 0-3 for one query in one scope (``Engine.judge``); a chunk graded
:data:`RELEVANT_GRADE` or more is relevant. A ranking is scored with the evaluation's
recall@k and nDCG@k over chunk ids, k being the ranking's ``top_k``. A sweep re-ranks the
kept legs at each vector weight (full-text weight ``1 - v``): no database work, so the
playground can draw it while the person watches.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from core.evaluation.metrics import ndcg_at, recall_at
from core.evaluation.runner import SWEEP_WEIGHTS
from core.retrieval.search import SearchResult

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
