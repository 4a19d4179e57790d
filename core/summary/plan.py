"""The rolling summary's arithmetic (oxydra "Rolling Summarization"), free of I/O.

Token use is what ``restore`` would inject: the rolling summary as a system message, the
latest compact marker, and every message after the summary. A summary starts when

* the unsummarised messages number at least ``min_turns``, and
* token use is strictly above ``trigger_ratio`` of the budget;

it then condenses the fewest oldest messages that bring use to at most ``target_ratio`` of
the budget, counting the condensed block at the size the summarizer is allowed. That size is
all the room left under the target, but at least ``block_ratio`` of the tokens condensed (a
summary squeezed into less would say nothing), or half the room under the target when that
is less: a history far over budget (an import) keeps its newest messages verbatim in one
half and a summary of the rest in the other, rather than becoming all summary. When even
condensing every message leaves no room (the summary itself has grown too big), the old
summary is folded in with every message ("refold") and the result replaces it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

SUMMARY_PREFIX = "Rolling session summary: "
BLOCK_HEADER = "Recent condensed turns:"
BLOCK_SEPARATOR = "\n\n"


def summary_message(text: str) -> dict[str, str]:
    """The system message ``restore`` injects for a rolling summary."""
    return {"role": "system", "content": SUMMARY_PREFIX + text}


def with_block(text: str, block: str) -> str:
    """A summary text with one more condensed block appended."""
    section = f"{BLOCK_HEADER}\n{block}" if block else BLOCK_HEADER
    return f"{text}{BLOCK_SEPARATOR}{section}" if text else section


def ratio_of(ratio: float, budget: int) -> Fraction:
    """``ratio × budget`` exactly as written in decimal (0.8 × 8000 is 6400, not 6400.0000001)."""
    return Fraction(repr(ratio)) * budget


def block_need(condensed: int, cap: int, block_ratio: float) -> int:
    """The room a block condensing ``condensed`` tokens needs: ``block_ratio`` of them, but
    never more than ``cap`` (half the room under the target) and never less than one."""
    return max(1, min(math.ceil(condensed * block_ratio), cap))


@dataclass(frozen=True)
class Limits:
    """The knobs of the trigger and the target (``[summary]`` in the config)."""

    min_turns: int
    trigger_ratio: float
    target_ratio: float
    block_ratio: float


@dataclass(frozen=True)
class RollingPlan:
    """Whether to summarise, and how much."""

    triggered: bool
    reason: str
    use: int
    condense: int = 0        # oldest unsummarised messages to condense
    block_tokens: int = 0    # the summarizer's budget for them
    refold: bool = False     # the old summary goes in with them and is replaced


def plan_rolling(costs: Sequence[int], pinned: int, grown: int, refold_base: int,
                 budget: int, limits: Limits) -> RollingPlan:
    """Plan one rolling summary.

    ``costs``: each unsummarised message's tokens, oldest first. ``pinned``: the summary
    message and marker as they are. ``grown``: the same with an empty new block appended
    (the header's cost). ``refold_base``: a fresh summary message holding only a header,
    plus the marker.
    """
    total = sum(costs)
    use = pinned + total
    if len(costs) < limits.min_turns:
        return RollingPlan(False, f"{len(costs)} unsummarised messages, fewer than min_turns "
                                  f"{limits.min_turns}", use)
    trigger = ratio_of(limits.trigger_ratio, budget)
    if use <= trigger:
        return RollingPlan(False, f"token use {use} of {budget} is not above the trigger "
                                  f"{float(trigger):g} ({limits.trigger_ratio:g})", use)
    target = math.floor(ratio_of(limits.target_ratio, budget))
    cap = (target - grown) // 2
    condensed = 0
    for count, cost in enumerate(costs, start=1):
        condensed += cost
        room = target - grown - (total - condensed)
        if room >= block_need(condensed, cap, limits.block_ratio):
            return RollingPlan(True, f"token use {use} of {budget} is above the trigger; "
                                     f"condensing {count} messages to reach {target}", use,
                               count, min(room, condensed))
    room = target - refold_base
    if room < 1:
        return RollingPlan(False, f"the budget {budget} leaves no room for a summary under "
                                  f"the target {target}", use)
    return RollingPlan(True, f"token use {use} of {budget} is above the trigger and the "
                             f"summary has outgrown its room: folding it and all {len(costs)} "
                             f"messages into a new one", use, len(costs), room, refold=True)
