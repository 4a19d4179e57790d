"""Boosts added to the fused score from what the candidates are, not how the legs scored them.

- **Speaker** (``speaker_boost``): a question about a person ("What do Melanie's kids
  like?") is mostly answered by what that person said; the name indexed with each message
  (``Melanie: …``) is one common word among many to bm25. A user's or assistant's
  message whose ``name`` (the Message dict's optional field) the query names gains
  ``speaker_boost`` times the most the fused legs can give together.
- **Date** (``date_boost``): a candidate whose message date (the one its metadata names,
  else the day of its own ``created_at``) falls in the period the query names
  (:mod:`core.retrieval.dates`) gains ``date_boost`` times the same maximum.
- **Neighbour** (``neighbour_weight``, ``neighbour_window``): evidence sits near evidence
  (a question and its answer, a story told over a few turns), so a candidate gains
  ``neighbour_weight`` times the best score of a candidate of its session that starts within
  ``neighbour_window`` messages of it: a passage that matches as a whole lifts its turns.

Both work on the candidates the legs already returned, so re-ranking stays free of I/O.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Mapping, Sequence, Set
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from core import inputs
from core.errors import InvalidInput
from core.retrieval.fusion import Fused

if TYPE_CHECKING:
    from core.storage.rows import ChunkRow

_WORD = re.compile(r"\w+", re.UNICODE)


def speaker_name(chunk: ChunkRow) -> str | None:
    """The name of who said a fetched chunk's message, when its message carries one."""
    raw = chunk.metadata_json
    if not raw or '"name"' not in raw:  # most chunks: no parse at all
        return None
    return _cached_name(raw) if len(raw) <= CACHED_METADATA_CHARS else _named_in(raw)


# A session query reads a few hundred candidates, mostly the same ones query after query:
# parsing each one's metadata again was a fifth of the ranking's time. Short metadata only,
# so the cache stays a few MB whatever the messages carry.
CACHED_METADATA_CHARS = 2048


def _named_in(raw: str) -> str | None:
    """The speaker name in a message's metadata JSON, as :func:`speaker_name` reads it."""
    metadata = json.loads(raw)
    name = metadata.get("name")
    # As indexing reads it: a tool's or the system's ``name`` is no participant's.
    if metadata.get("role") not in ("user", "assistant") or not isinstance(name, str):
        return None
    return name.strip() or None


_cached_name = functools.lru_cache(maxsize=4096)(_named_in)


def named_speakers(query: str, chunks: Mapping[str, ChunkRow],
                   ) -> tuple[list[str], frozenset[str]]:
    """The candidates' speaker names the query names (every word of the name, any case),
    and the candidates those speakers said."""
    words = {word.lower() for word in _WORD.findall(query)}
    if not words:
        return [], frozenset()
    names = {chunk_id: name for chunk_id, chunk in chunks.items()
             if (name := speaker_name(chunk))}
    named = sorted(name for name in set(names.values())
                   if (parts := _WORD.findall(name.lower())) and all(p in words for p in parts))
    wanted = set(named)
    return named, frozenset(chunk_id for chunk_id, name in names.items() if name in wanted)


BOOST_WEIGHTS = ("speaker_boost", "date_boost", "neighbour_weight")
MAX_NEIGHBOUR_WINDOW = 50


def boost_settings(configured: Any, **asked: Any) -> dict[str, Any]:
    """The boosts a query ranks with: those asked (not None), else the ``configured``
    ones (a RetrievalConfig); InvalidInput names a value out of range."""
    chosen = {name: getattr(configured, name) if asked.get(name) is None else asked[name]
              for name in (*BOOST_WEIGHTS, "neighbour_window")}
    for name in BOOST_WEIGHTS:
        value = chosen[name]
        if isinstance(value, bool) or not isinstance(value, int | float) or \
                not math.isfinite(value) or value < 0:
            raise InvalidInput(f"{name} must be a non-negative number, got {value!r}")
        chosen[name] = float(value)
    window = chosen["neighbour_window"]
    if isinstance(window, bool) or not isinstance(window, int) or \
            not 1 <= window <= MAX_NEIGHBOUR_WINDOW:
        raise InvalidInput(f"neighbour_window must be an integer from 1 to "
                           f"{MAX_NEIGHBOUR_WINDOW}, got {inputs.shown(window)}")
    return chosen


def apply_boosts(fused: Sequence[Fused], chunks: Mapping[str, ChunkRow], *,
                 by_speaker: Set[str], speaker_amount: float, in_period: Set[str],
                 date_amount: float, neighbour_weight: float,
                 neighbour_window: int = 1) -> list[Fused]:
    """``fused`` (in fusion's order) with the speaker, date and neighbour boosts added, best
    first again.

    A chunk of ``by_speaker`` (said by a speaker the query names) gains ``speaker_amount``,
    one of ``in_period`` ``date_amount`` (both already on the fused scale). Ties go to the
    more recent chunk, then the smaller id, as in fusion.
    """
    if not (by_speaker and speaker_amount > 0) and not (in_period and date_amount > 0) \
            and neighbour_weight <= 0:
        return list(fused)
    boosted = []
    for item in fused:
        gain = speaker_amount if item.chunk_id in by_speaker else 0.0
        dated = date_amount if item.chunk_id in in_period else 0.0
        boosted.append(item if not (gain or dated) else Fused(
            item.chunk_id, item.score + gain + dated, item.vector, item.fts, gain, 0.0, dated))
    if neighbour_weight > 0:
        boosted = _with_neighbours(boosted, chunks, neighbour_weight, neighbour_window)
    if all(after is before for after, before in zip(boosted, fused, strict=True)):
        # Nothing gained: ``fused`` is already in this order (fusion sorts by the same key).
        return boosted
    boosted.sort(key=lambda item: (-item.score, -_end(chunks, item.chunk_id), item.chunk_id))
    return boosted


def _with_neighbours(items: list[Fused], chunks: Mapping[str, ChunkRow],
                     weight: float, window: int) -> list[Fused]:
    """Each item plus ``weight`` times the best score of a candidate of its session that
    starts within ``window`` messages before it or after it (its own message's chunks aside)."""
    # session -> sequence_start -> best score (never below 0). A namespace's candidates come
    # from hundreds of sessions, most holding one or two: each item then scans its session's
    # few starts instead of looking up every sequence of its window.
    found = [chunks.get(item.chunk_id) for item in items]
    starting: dict[str, dict[int, float]] = {}
    for item, chunk in zip(items, found, strict=True):
        if chunk is not None:
            starts = starting.setdefault(chunk.session_id, {})
            start = chunk.sequence_start
            if item.score > starts.get(start, 0.0):
                starts[start] = item.score
            else:
                starts.setdefault(start, 0.0)
    # A session with many candidates (a session query's ~100): the best score of every
    # window of its sequences at once, so each candidate looks up two windows, not 2 x window
    # sequences.
    windows = {session_id: _window_bests(starts, window) for session_id, starts in
               starting.items() if len(starts) > 2 * window}
    result = []
    for item, chunk in zip(items, found, strict=True):
        if chunk is None:
            result.append(item)
            continue
        session_id = chunk.session_id
        starts = starting[session_id]
        if len(starts) == 1:  # only its own message's start: most of a namespace's candidates
            result.append(item)
            continue
        first, last = chunk.sequence_start, chunk.sequence_end
        if (bests := windows.get(session_id)) is not None:
            low, best_from = bests
            after = last + 1 - low
            best = best_from[first - window - low]
            if after < len(best_from) and best_from[after] > best:
                best = best_from[after]
        elif len(starts) > 2 * window:
            best = max(starts.get(sequence, 0.0) for sequence in (
                *range(first - window, first), *range(last + 1, last + window + 1)))
        else:
            best = max((score for start, score in starts.items()
                        if first - window <= start < first or last < start <= last + window),
                       default=0.0)
        gain = weight * best
        result.append(item if not gain else Fused(item.chunk_id, item.score + gain, item.vector,
                                                  item.fts, item.speaker, gain, item.date))
    return result


def _window_bests(starts: Mapping[int, float], window: int) -> tuple[int, list[float]] | None:
    """``(low, best_from)``: ``best_from[i]`` is the best score starting in sequences
    ``low + i`` to ``low + i + window - 1`` (0.0 where none does), from ``min(starts) - window``
    on; None when the starts are too sparse for an array of their span to pay."""
    low, high = min(starts) - window, max(starts)
    if high - low > 64 * len(starts):
        return None
    scores = np.zeros(high - low + 1 + window)
    scores[np.fromiter(starts, np.int64, len(starts)) - low] = np.fromiter(
        starts.values(), np.float64, len(starts))
    return low, sliding_window_view(scores, window).max(axis=1).tolist()


def _end(chunks: Mapping[str, ChunkRow], chunk_id: str) -> int:
    chunk = chunks.get(chunk_id)
    return chunk.sequence_end if chunk is not None else 0
