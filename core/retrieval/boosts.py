"""Boosts added to the fused score from what the candidates are, not how the legs scored them.

- **Speaker** (``speaker_boost``): a question about a person ("What do Melanie's kids
  like?") is mostly answered by what that person said; the name indexed with each message
  (``Melanie: …``) is one common word among many to bm25. A user's or assistant's
  message whose ``name`` (the Message dict's optional field) the query names gains
  ``speaker_boost`` times the most the fused legs can give together.
- **Date** (``date_boost``): a candidate whose message date falls in the period the query
  names (:mod:`core.retrieval.dates`) gains ``date_boost`` times the same maximum.
- **Neighbour** (``neighbour_weight``): evidence sits beside evidence (a question and its
  answer are adjacent turns), so a candidate gains ``neighbour_weight`` times the best
  score of a candidate that ends just before it or starts just after it in the same session.

Both work on the candidates the legs already returned, so re-ranking stays free of I/O.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Mapping, Sequence, Set
from typing import Any

from core.retrieval.fusion import Fused

_WORD = re.compile(r"\w+", re.UNICODE)


def speaker_name(chunk: Mapping[str, Any]) -> str | None:
    """The name of who said a fetched chunk's message, when its message carries one."""
    raw = chunk.get("metadata_json")
    if not raw or '"name"' not in raw:  # most chunks: no parse at all
        return None
    metadata = json.loads(raw)
    name = metadata.get("name")
    # As indexing reads it: a tool's or the system's ``name`` is no participant's.
    if metadata.get("role") not in ("user", "assistant") or not isinstance(name, str):
        return None
    return name.strip() or None


def named_speakers(query: str, chunks: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The candidates' speaker names the query names (every word of the name, any case)."""
    words = {word.lower() for word in _WORD.findall(query)}
    if not words:
        return []
    names = {name for chunk in chunks.values() if (name := speaker_name(chunk))}
    return sorted(name for name in names
                  if (parts := _WORD.findall(name.lower())) and all(p in words for p in parts))


def apply_boosts(fused: Sequence[Fused], chunks: Mapping[str, Mapping[str, Any]], *,
                 speakers: Sequence[str], speaker_amount: float, in_period: Set[str],
                 date_amount: float, neighbour_weight: float) -> list[Fused]:
    """``fused`` with the speaker, date and neighbour boosts added, best first again.

    ``speaker_amount`` is what a named speaker's message gains and ``date_amount`` what a
    chunk of ``in_period`` gains (both already on the fused scale). Ties go to the more
    recent chunk, then the smaller id, as in fusion.
    """
    if not (speakers and speaker_amount > 0) and not (in_period and date_amount > 0) \
            and neighbour_weight <= 0:
        return list(fused)
    named = set(speakers)
    boosted = []
    for item in fused:
        chunk = chunks.get(item.chunk_id)
        gain = speaker_amount if named and chunk is not None and speaker_name(chunk) in named \
            else 0.0
        dated = date_amount if item.chunk_id in in_period else 0.0
        boosted.append(dataclasses.replace(item, score=item.score + gain + dated, speaker=gain,
                                           date=dated))
    if neighbour_weight > 0:
        boosted = _with_neighbours(boosted, chunks, neighbour_weight)
    boosted.sort(key=lambda item: (-item.score, -_end(chunks, item.chunk_id), item.chunk_id))
    return boosted


def _with_neighbours(items: list[Fused], chunks: Mapping[str, Mapping[str, Any]],
                     weight: float) -> list[Fused]:
    """Each item plus ``weight`` times the best score of a candidate adjacent to it."""
    ending: dict[tuple[str, int], float] = {}  # (session, sequence_end) -> best score
    starting: dict[tuple[str, int], float] = {}
    for item in items:
        chunk = chunks.get(item.chunk_id)
        if chunk is None:
            continue
        end = (chunk["session_id"], chunk["sequence_end"])
        start = (chunk["session_id"], chunk["sequence_start"])
        ending[end] = max(item.score, ending.get(end, 0.0))
        starting[start] = max(item.score, starting.get(start, 0.0))
    result = []
    for item in items:
        chunk = chunks.get(item.chunk_id)
        if chunk is None:
            result.append(item)
            continue
        session = chunk["session_id"]
        best = max(ending.get((session, chunk["sequence_start"] - 1), 0.0),
                   starting.get((session, chunk["sequence_end"] + 1), 0.0))
        gain = weight * best
        result.append(dataclasses.replace(item, score=item.score + gain, neighbour=gain))
    return result


def _end(chunks: Mapping[str, Mapping[str, Any]], chunk_id: str) -> int:
    chunk = chunks.get(chunk_id)
    return int(chunk["sequence_end"]) if chunk is not None else 0
