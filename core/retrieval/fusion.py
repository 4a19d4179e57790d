"""Fusing the vector and full-text legs into one ranking (oxydra "Weighted Merge" and more).

Each leg returns candidates with raw scores (higher is better) and ranks. A fusion turns
each leg's raw scores into normalised ones and combines them with the leg weights:

- ``minmax`` (oxydra): scale each leg to [0, 1] over the candidates it returned, then
  ``vector_weight * v + fts_weight * f``. A leg whose scores are all equal scales to 1.
- ``dbsf`` (distribution-based score fusion): scale each leg by its mean ± 3 standard
  deviations, clipped to [0, 1], so one outlier does not squash the rest and a lone weak
  hit is not lifted to 1.
- ``rrf`` (reciprocal-rank fusion): a leg contributes ``1 / (rrf_k + rank)``; raw scores
  are ignored, only the order counts.

A chunk a leg did not return scores 0 on that leg. Ties go to the more recent chunk (higher
``sequence_end``), then to the smaller chunk id, so the ranking is total and repeatable.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import NamedTuple

FUSIONS = ("minmax", "rrf", "dbsf")


class LegHit(NamedTuple):
    """One candidate from one leg: its raw score (higher is better) and 1-based rank.

    A named tuple rather than a frozen dataclass: a query makes one per leg row and one
    ``Fused`` per candidate, on the event loop, and a frozen dataclass costs three times as
    much to construct (about a sixth of a session query's ranking went to constructors).
    """

    chunk_id: str
    raw: float
    rank: int


class Fused(NamedTuple):
    """One fused candidate: final score, the normalised leg scores that made it, and what
    the boosts of :mod:`core.retrieval.boosts` added to it."""

    chunk_id: str
    score: float
    vector: float
    fts: float
    speaker: float = 0.0
    neighbour: float = 0.0
    date: float = 0.0


def min_max(hits: Sequence[LegHit]) -> dict[str, float]:
    """Scale a leg's raw scores to [0, 1]; a leg whose scores are all equal scales to 1."""
    if not hits:
        return {}
    raws = [hit.raw for hit in hits]
    low, high = min(raws), max(raws)
    span = high - low
    if span <= 1e-12:
        return {hit.chunk_id: 1.0 for hit in hits}
    return {hit.chunk_id: (hit.raw - low) / span for hit in hits}


def distribution(hits: Sequence[LegHit]) -> dict[str, float]:
    """Scale by mean ± 3σ, clipped to [0, 1]; a single candidate or no spread scales to 1."""
    if not hits:
        return {}
    mean = sum(hit.raw for hit in hits) / len(hits)
    sigma = math.sqrt(sum((hit.raw - mean) ** 2 for hit in hits) / len(hits))
    if sigma <= 1e-12:
        return {hit.chunk_id: 1.0 for hit in hits}
    low, span = mean - 3 * sigma, 6 * sigma
    return {hit.chunk_id: min(1.0, max(0.0, (hit.raw - low) / span)) for hit in hits}


def reciprocal_rank(rrf_k: int) -> Callable[[Sequence[LegHit]], dict[str, float]]:
    """A leg's contribution under RRF: ``1 / (rrf_k + rank)``."""
    def normalise(hits: Sequence[LegHit]) -> dict[str, float]:
        return {hit.chunk_id: 1.0 / (rrf_k + hit.rank) for hit in hits}
    return normalise


def fuse(vector_hits: Sequence[LegHit], fts_hits: Sequence[LegHit], *, vector_weight: float,
         fts_weight: float, method: str = "minmax", rrf_k: int = 60,
         recency: Mapping[str, int] | None = None) -> list[Fused]:
    """The fused ranking, best first, ties by recency then chunk id."""
    if method == "minmax":
        normalise: Callable[[Sequence[LegHit]], dict[str, float]] = min_max
    elif method == "dbsf":
        normalise = distribution
    elif method == "rrf":
        normalise = reciprocal_rank(rrf_k)
    else:
        raise ValueError(f"fusion must be one of {', '.join(FUSIONS)}; got {method!r}")
    recency = recency or {}
    vector_norm = normalise(vector_hits)
    fts_norm = normalise(fts_hits)
    vector_of, fts_of = vector_norm.get, fts_norm.get
    fused = [Fused(chunk_id, vector_weight * vector + fts_weight * fts, vector, fts)
             for chunk_id in vector_norm.keys() | fts_norm.keys()
             for vector, fts in ((vector_of(chunk_id, 0.0), fts_of(chunk_id, 0.0)),)]
    fused.sort(key=lambda item: (-item.score, -recency.get(item.chunk_id, 0), item.chunk_id))
    return fused
