"""Hybrid retrieval (seed 001): vector KNN and FTS5 bm25, min-max normalised, weighted.

Each leg returns candidates with raw scores; both are scaled to [0, 1] by min-max over the
candidates the leg returned, and fused as ``vector_weight * v + fts_weight * f``. A chunk a
leg did not return scores 0 on that leg. Ties go to the more recent chunk (higher
``sequence_end``), then to the smaller chunk id, so the ranking is total and repeatable.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

# Words as FTS5's unicode61 tokenizer sees them; anything else a person types (quotes,
# operators, parentheses, colons) is dropped, so no typed text reaches MATCH as syntax.
_WORD = re.compile(r"\w+", re.UNICODE)


def fts_match_expression(query: str) -> str | None:
    """A safe FTS5 expression: the query's words, each quoted, ORed (None when no words)."""
    words = []
    seen = set()
    for word in _WORD.findall(query.lower()):
        if word not in seen:
            seen.add(word)
            words.append('"' + word.replace('"', '""') + '"')
    if not words:
        return None
    return "chunk_text : (" + " OR ".join(words) + ")"


@dataclass(frozen=True)
class LegHit:
    """One candidate from one leg: its raw score (higher is better) and 1-based rank."""

    chunk_id: str
    raw: float
    rank: int


def min_max(hits: Sequence[LegHit]) -> dict[str, float]:
    """Scale a leg's raw scores to [0, 1]; a leg whose scores are all equal scales to 1."""
    if not hits:
        return {}
    low = min(hit.raw for hit in hits)
    high = max(hit.raw for hit in hits)
    if high - low <= 1e-12:
        return {hit.chunk_id: 1.0 for hit in hits}
    return {hit.chunk_id: (hit.raw - low) / (high - low) for hit in hits}


def fuse_min_max(vector_hits: Sequence[LegHit], fts_hits: Sequence[LegHit],
                 vector_weight: float, fts_weight: float,
                 recency: dict[str, int]) -> list[tuple[str, float, float, float]]:
    """Fused (chunk_id, score, vector_norm, fts_norm), best first, ties by recency then id."""
    vector_norm = min_max(vector_hits)
    fts_norm = min_max(fts_hits)
    fused = []
    for chunk_id in set(vector_norm) | set(fts_norm):
        v = vector_norm.get(chunk_id, 0.0)
        f = fts_norm.get(chunk_id, 0.0)
        fused.append((chunk_id, vector_weight * v + fts_weight * f, v, f))
    fused.sort(key=lambda item: (-item[1], -recency.get(item[0], 0), item[0]))
    return fused
