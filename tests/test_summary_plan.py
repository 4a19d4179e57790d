"""The rolling summary's trigger and target arithmetic, at its boundaries, by hand."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from core.summary.plan import Limits, block_need, plan_rolling, ratio_of, with_block

SEED = Limits(min_turns=4, trigger_ratio=0.80, target_ratio=0.50, block_ratio=0.25)


def test_the_trigger_is_strictly_above_eighty_percent() -> None:
    # 8000 tokens: 0.80 × 8000 = 6400 exactly. Use 6400 does not trigger, 6401 does.
    at = plan_rolling([1600] * 4, 0, 0, 0, 8000, SEED)
    assert (at.triggered, at.use) == (False, 6400)
    assert "not above the trigger 6400" in at.reason
    above = plan_rolling([1600, 1600, 1600, 1601], 0, 0, 0, 8000, SEED)
    assert (above.triggered, above.use) == (True, 6401)


def test_pinned_summary_and_marker_count_toward_use() -> None:
    assert not plan_rolling([1000] * 4, 2400, 2400, 0, 8000, SEED).triggered
    assert plan_rolling([1000] * 4, 2401, 2401, 0, 8000, SEED).triggered


def test_min_turns_is_a_floor_on_unsummarised_messages() -> None:
    three = plan_rolling([3000, 3000, 3000], 0, 0, 0, 8000, SEED)
    assert not three.triggered and "3 unsummarised messages, fewer than min_turns 4" in three.reason
    four = plan_rolling([2250] * 4, 0, 0, 0, 8000, SEED)
    assert four.triggered


def test_condenses_the_fewest_oldest_messages_that_reach_the_target() -> None:
    # Budget 8000, target 4000, ten messages of 700 (7000 > 6400). A header costs 10.
    # n=5: remaining 3500, room 4000-10-3500 = 490 < 875 (a quarter of 3500): not enough.
    # n=6: remaining 2800, room 1190 >= 1050 (a quarter of 4200): condense 6, block <= 1190.
    plan = plan_rolling([700] * 10, 0, 10, 10, 8000, SEED)
    assert (plan.triggered, plan.condense, plan.block_tokens, plan.refold) == (
        True, 6, 1190, False)
    # With a smaller block ratio five are enough: room 490 >= 0.1 × 3500 = 350.
    lax = Limits(4, 0.80, 0.50, 0.10)
    assert plan_rolling([700] * 10, 0, 10, 10, 8000, lax).condense == 5


def test_the_block_never_gets_more_room_than_it_replaces() -> None:
    # One huge old message and small recent ones: condensing the first leaves lots of room,
    # but the block may not be longer than the 6000 tokens it stands for.
    plan = plan_rolling([6000, 100, 100, 100, 100], 0, 0, 0, 20000, Limits(4, 0.3, 0.5, 0.25))
    assert (plan.condense, plan.block_tokens) == (1, 6000)


def test_a_history_far_over_budget_keeps_its_newest_half_verbatim() -> None:
    # 40 messages of 450 (18000 tokens) into 8000: a quarter of what is condensed is never
    # room enough, so the block gets half the room under the target, (4000 - 10) // 2 = 1995,
    # and the newest messages keep the rest: 4 of them (1800 <= 1995).
    plan = plan_rolling([450] * 40, 0, 10, 10, 8000, SEED)
    assert (plan.condense, plan.refold) == (36, False)
    assert plan.block_tokens == 4000 - 10 - 4 * 450


def test_a_summary_that_outgrew_its_room_is_folded_again() -> None:
    # The summary alone takes 3990 of a 4000 target: no prefix leaves a quarter for a block.
    plan = plan_rolling([700] * 4, 3990, 4000, 30, 8000, SEED)
    assert plan.triggered and plan.refold
    assert (plan.condense, plan.block_tokens) == (4, 4000 - 30)


def test_no_room_at_all_is_said_not_attempted() -> None:
    plan = plan_rolling([100] * 4, 0, 60, 60, 100, SEED)  # target 50 < a bare header's 60
    assert not plan.triggered and "no room for a summary" in plan.reason


def test_ratios_are_exact_decimal_products() -> None:
    assert ratio_of(0.8, 8000) == 6400 and ratio_of(0.1, 30) == 3
    assert math.floor(ratio_of(0.5, 8001)) == 4000


def test_blocks_append_under_a_header() -> None:
    assert with_block("", "- user #1: hi") == "Recent condensed turns:\n- user #1: hi"
    assert with_block("old", "- a") == "old\n\nRecent condensed turns:\n- a"


@given(costs=st.lists(st.integers(0, 3000), min_size=0, max_size=40),
       pinned=st.integers(0, 4000), header=st.integers(1, 40),
       budget=st.integers(64, 20000))
def test_any_plan_that_fires_lands_at_or_under_the_target(costs: list[int], pinned: int,
                                                          header: int, budget: int) -> None:
    plan = plan_rolling(costs, pinned, pinned + header, header, budget, SEED)
    target = math.floor(ratio_of(SEED.target_ratio, budget))
    if not plan.triggered:
        assert len(costs) < 4 or plan.use <= ratio_of(0.8, budget) or "no room" in plan.reason
        return
    assert len(costs) >= 4 and plan.use > ratio_of(0.8, budget)
    assert 1 <= plan.condense <= len(costs) and plan.block_tokens >= 1
    rest = sum(costs[plan.condense:])
    fixed = header if plan.refold else pinned + header
    assert fixed + plan.block_tokens + rest <= target
    if not plan.refold:  # the fewest: one message fewer would not have left the room
        fewer = plan.condense - 1
        room = target - fixed - sum(costs[fewer:])
        cap = (target - fixed) // 2
        assert fewer == 0 or room < block_need(sum(costs[:fewer]), cap, SEED.block_ratio)
