"""Retrieval metrics over turns: recall@k, hit@k, MRR and nDCG@k, as pure functions.

Retrieval returns chunks, but relevance is judged per message (turn), so a ranked list of
chunks is first expanded to the turns it covers (:func:`expand_turns`): each result
contributes the turns with sequences ``sequence_start..sequence_end`` in rank order, a turn
already seen keeps its first position, and the list is cut at :data:`MRR_DEPTH` turns.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

KS = (5, 10, 25)
MRR_DEPTH = 25  # MRR looks this many turns deep; a first hit further down counts 0.
METRICS = (*(f"recall@{k}" for k in KS), *(f"hit@{k}" for k in KS), "mrr",
           *(f"ndcg@{k}" for k in KS))


def expand_turns(spans: Iterable[tuple[int, int]], turn_ids: Mapping[int, str],
                 limit: int = MRR_DEPTH) -> list[str]:
    """Message ids covered by ranked ``(sequence_start, sequence_end)`` spans, deduplicated.

    Sequences with no message in ``turn_ids`` (messages stored outside the dataset) are
    skipped; the result holds at most ``limit`` ids.
    """
    if not turn_ids:
        return []
    first, last = min(turn_ids), max(turn_ids)
    ranked: list[str] = []
    seen: set[str] = set()
    for start, end in spans:
        # Clipped to the session's sequences, so a wide span costs what the session holds.
        for sequence in range(max(start, first), min(end, last) + 1):
            message_id = turn_ids.get(sequence)
            if message_id is None or message_id in seen:
                continue
            seen.add(message_id)
            ranked.append(message_id)
            if len(ranked) >= limit:
                return ranked
    return ranked


def recall_at(ranked: Sequence[str], relevant: Iterable[str], k: int) -> float:
    """Share of the relevant ids found in the first ``k`` ranked ids."""
    wanted = set(relevant)
    if not wanted:
        return 0.0
    return len(wanted.intersection(ranked[:k])) / len(wanted)


def hit_at(ranked: Sequence[str], relevant: Iterable[str], k: int) -> float:
    """1.0 when any relevant id is in the first ``k`` ranked ids, else 0.0."""
    wanted = set(relevant)
    return 1.0 if any(m in wanted for m in ranked[:k]) else 0.0


def reciprocal_rank(ranked: Sequence[str], relevant: Iterable[str],
                    depth: int = MRR_DEPTH) -> float:
    """1 / the rank of the first relevant id within ``depth``; 0.0 when there is none."""
    wanted = set(relevant)
    for rank, message_id in enumerate(ranked[:depth], 1):
        if message_id in wanted:
            return 1.0 / rank
    return 0.0


def ndcg_at(ranked: Sequence[str], relevant: Iterable[str], k: int) -> float:
    """nDCG@k with binary gains and a log2(rank + 1) discount."""
    wanted = set(relevant)
    if not wanted:
        return 0.0
    dcg = sum(1.0 / math.log2(rank + 1)
              for rank, message_id in enumerate(ranked[:k], 1) if message_id in wanted)
    ideal = sum(1.0 / math.log2(rank + 1) for rank in range(1, min(len(wanted), k) + 1))
    return dcg / ideal


@dataclass(frozen=True)
class QueryScore:
    """One query's ranked turns and its metrics (keys as in :data:`METRICS`)."""

    query_id: str
    category: str | None
    relevant: tuple[str, ...]
    ranked: tuple[str, ...]
    metrics: dict[str, float]

    def to_dict(self) -> dict[str, Any]:
        """The score as a JSON-ready dict."""
        return {"query_id": self.query_id, "category": self.category,
                "relevant": list(self.relevant), "ranked": list(self.ranked),
                **self.metrics}


def score_query(query_id: str, category: str | None, ranked: Sequence[str],
                relevant: Sequence[str]) -> QueryScore:
    """Every metric of one query from its ranked turn ids."""
    values: dict[str, float] = {}
    for k in KS:
        values[f"recall@{k}"] = recall_at(ranked, relevant, k)
    for k in KS:
        values[f"hit@{k}"] = hit_at(ranked, relevant, k)
    values["mrr"] = reciprocal_rank(ranked, relevant)
    for k in KS:
        values[f"ndcg@{k}"] = ndcg_at(ranked, relevant, k)
    return QueryScore(query_id, category, tuple(relevant), tuple(ranked), values)


@dataclass(frozen=True)
class Summary:
    """The mean of each metric over a group of queries."""

    queries: int
    metrics: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The summary as a JSON-ready dict."""
        return {"queries": self.queries, **self.metrics}


def summarize(scores: Sequence[QueryScore]) -> Summary:
    """Means over ``scores``; every metric is 0.0 when there are none."""
    if not scores:
        return Summary(0, dict.fromkeys(METRICS, 0.0))
    return Summary(len(scores), {name: sum(s.metrics[name] for s in scores) / len(scores)
                                 for name in METRICS})
