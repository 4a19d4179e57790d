"""What moved between two rankings of the same query: the playground's ↑2 / ↓1 / new.

Rankings are lists of chunk ids, best first. A chunk in both moved by the difference of
its places; a chunk only in the later one entered; a chunk only in the earlier one left.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class RankingDiff:
    """How ``after`` differs from ``before``."""

    moves: dict[str, int | None]
    """For each chunk of ``after``: places moved up (positive) or down (negative); None
    when it entered."""
    left: list[str]
    """Chunks of ``before`` that ``after`` lacks, in ``before``'s order."""

    @property
    def entered(self) -> list[str]:
        """Chunks of ``after`` that ``before`` lacked, in ``after``'s order."""
        return [chunk_id for chunk_id, move in self.moves.items() if move is None]

    @property
    def moved(self) -> list[str]:
        """Chunks in both whose place changed, in ``after``'s order."""
        return [chunk_id for chunk_id, move in self.moves.items() if move]

    @property
    def unchanged(self) -> bool:
        """True when both rankings are the same list."""
        return not self.left and not self.entered and not self.moved


def diff_rankings(before: Sequence[str], after: Sequence[str]) -> RankingDiff:
    """What moved, entered and left going from ``before`` to ``after``."""
    place_before = {chunk_id: place for place, chunk_id in enumerate(before)}
    moves: dict[str, int | None] = {}
    for place, chunk_id in enumerate(after):
        earlier = place_before.get(chunk_id)
        moves[chunk_id] = None if earlier is None else earlier - place
    after_ids = set(after)
    return RankingDiff(moves, [chunk_id for chunk_id in before if chunk_id not in after_ids])
