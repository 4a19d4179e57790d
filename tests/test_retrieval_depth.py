"""How many candidates each leg returns (``candidate_depth``): chosen, logged, replayed."""

from __future__ import annotations

import pytest

from core import Engine
from core.errors import InvalidInput
from core.retrieval.depth import MAX_DEPTH, SHALLOW_DEPTH, leg_depth
from core.retrieval.search import SearchResult
from tests.conftest import DETERMINISTIC


def test_a_hybrid_session_query_takes_the_configured_depth_any_other_the_shallow_one() -> None:
    assert leg_depth(250, None, fused_session=True, top_k=10) == 250
    assert leg_depth(250, None, fused_session=False, top_k=10) == SHALLOW_DEPTH
    assert leg_depth(250, 30, fused_session=False, top_k=2) == 30  # asked: any query
    assert leg_depth(250, 30, fused_session=True, top_k=2) == 30


def test_the_depth_is_never_below_five_times_top_k_nor_above_the_limit() -> None:
    assert leg_depth(20, None, fused_session=True, top_k=10) == 50
    assert leg_depth(250, None, fused_session=True, top_k=4000) == MAX_DEPTH


@pytest.mark.parametrize("asked", [0, -1, MAX_DEPTH + 1, 2.5, True, "50"])
def test_a_depth_out_of_range_is_refused(asked: object) -> None:
    with pytest.raises(InvalidInput, match="candidate_depth must be an integer from 1"):
        leg_depth(250, asked, fused_session=True, top_k=10)


async def test_the_depth_is_configured_explained_logged_and_replayed(memory: str) -> None:
    config = {**DETERMINISTIC, "retrieval": {"candidate_depth": 7}}
    async with Engine.open(memory, config=config) as engine:
        for sequence in range(1, 13):
            await engine.store("talk", sequence, {
                "role": "user", "content": "painting " * sequence + f"day {sequence}"})
        await engine.drain()
        found = await engine.search(session_id="talk", query="painting", top_k=1)
        assert found.legs.depth == 7
        assert len(found.legs.fts) == len(found.legs.vector) == 7
        assert found.explain()["legs"]["depth"] == 7
        across = await engine.search(namespace=engine.config.agent, query="painting", top_k=1)
        assert across.legs.depth == SHALLOW_DEPTH and len(across.legs.fts) == 12
        one_leg = await engine.search(session_id="talk", query="painting", top_k=1,
                                      mode="keyword")
        assert one_leg.legs.depth == SHALLOW_DEPTH and len(one_leg.legs.fts) == 12

        asked = await engine.search(session_id="talk", query="painting", top_k=1,
                                    candidate_depth=9)
        assert len(asked.legs.fts) == 9
        log = await engine.retrieval_log(1)
        assert log[0]["params"]["candidate_depth"] == 9
        replayed = await engine.replay(log[0]["log_id"])
        assert replayed.legs.depth == 9 and len(replayed.legs.fts) == 9
        with pytest.raises(InvalidInput, match="candidate_depth must be an integer"):
            await engine.search(session_id="talk", query="painting", candidate_depth=0)


async def test_a_deeper_pool_changes_how_the_fusion_scales_the_same_candidate(
        memory: str) -> None:
    """Min-max scales a leg over what it returned: the weakest of 6 scores 0 on full text,
    the same chunk among 12 scores above 0, so the depth moves a query's top results."""
    async with Engine.open(memory, config=DETERMINISTIC) as engine:
        for sequence in range(1, 13):
            await engine.store("talk", sequence, {
                "role": "user", "content": "painting " * sequence + f"day {sequence}"})
        await engine.drain()

        def fts_scores(found: SearchResult) -> dict[str, float]:
            # Re-ranked to show every kept candidate: the legs stay as deep as they were.
            return {r.chunk_id: r.fts_score for r in found.rerank(top_k=12).results}

        shallow = await engine.search(session_id="talk", query="painting", top_k=1,
                                      mode="keyword", candidate_depth=6)
        deep = await engine.search(session_id="talk", query="painting", top_k=1,
                                   mode="keyword", candidate_depth=12)
        weakest_of_six = shallow.legs.fts[5].chunk_id
        assert fts_scores(shallow)[weakest_of_six] == 0.0
        assert fts_scores(deep)[weakest_of_six] > 0.0


async def test_get_context_asks_no_deeper_than_its_vector_ranking_needs(memory: str) -> None:
    async with Engine.open(memory, config=DETERMINISTIC) as engine:
        await engine.store("talk", 1, {"role": "user", "content": "painting the fence"})
        await engine.drain()
        await engine.get_context("talk", "painting")
        log = await engine.retrieval_log(1, caller="get_context")
        # top_k 20 (4 x relevance_limit 5), at least 5 x top_k: the configured 250 is not read.
        assert log[0]["params"]["candidate_depth"] == 100
