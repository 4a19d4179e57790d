"""Hybrid retrieval: fusion arithmetic, SQL-level tags, fallback, scope, kept legs, explain."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core import Engine
from core.errors import InvalidInput
from core.retrieval import LegHit, fuse, query_terms
from core.storage.sqlite.fts_maxscore import plain_expression
from tests.conftest import DETERMINISTIC

# --- fusion against hand-computed numbers ------------------------------------------------------

VECTOR = [LegHit("a", 0.9, 1), LegHit("b", 0.6, 2), LegHit("c", 0.3, 3)]
FTS = [LegHit("c", 12.0, 1), LegHit("d", 4.0, 2)]


def scores(fused):
    return {f.chunk_id: round(f.score, 6) for f in fused}


def test_min_max_fusion() -> None:
    # vector: a 1, b 0.5, c 0 ; fts: c 1, d 0
    fused = fuse(VECTOR, FTS, vector_weight=0.7, fts_weight=0.3, method="minmax")
    assert scores(fused) == {"a": 0.7, "b": 0.35, "c": 0.3, "d": 0.0}
    assert [f.chunk_id for f in fused] == ["a", "b", "c", "d"]


def test_reciprocal_rank_fusion() -> None:
    fused = fuse(VECTOR, FTS, vector_weight=1.0, fts_weight=1.0, method="rrf", rrf_k=60)
    assert scores(fused) == {"a": round(1 / 61, 6), "b": round(1 / 62, 6),
                             "c": round(1 / 63 + 1 / 61, 6), "d": round(1 / 62, 6)}
    assert fused[0].chunk_id == "c"


def test_distribution_based_fusion() -> None:
    # vector mean 0.6, sigma sqrt(0.06); fts mean 8, sigma 4
    fused = fuse(VECTOR, FTS, vector_weight=0.5, fts_weight=0.5, method="dbsf")
    sigma = 0.06 ** 0.5
    v = {k: (x - (0.6 - 3 * sigma)) / (6 * sigma) for k, x in (("a", 0.9), ("b", 0.6),
                                                               ("c", 0.3))}
    f = {"c": (12 - (8 - 12)) / 24, "d": (4 - (8 - 12)) / 24}
    expected = {k: round(0.5 * v.get(k, 0) + 0.5 * f.get(k, 0), 6) for k in "abcd"}
    assert scores(fused) == expected


def test_ties_go_to_the_most_recent_then_the_smallest_id() -> None:
    hits = [LegHit("x", 1.0, 1), LegHit("y", 1.0, 2), LegHit("z", 1.0, 3)]
    fused = fuse(hits, [], vector_weight=1, fts_weight=0, recency={"x": 1, "y": 5, "z": 5})
    assert [f.chunk_id for f in fused] == ["y", "z", "x"]


# --- the query sanitiser -----------------------------------------------------------------------

def test_only_words_reach_match_and_stop_words_go() -> None:
    assert query_terms('When is my "flight" to Lisbon? NOT (AND) NEAR*') == [
        "flight", "lisbon", "near"]
    assert query_terms("to be or not to be") == ["to", "be", "or", "not"]
    assert query_terms("") == [] and query_terms("?!* ()") == []
    # The backend quotes each term: an operator word or a quote is a word to look for.
    assert plain_expression(query_terms('say "hi" NEAR'), 'scope_token : "a"') == (
        '{chunk_text context} : ("say" OR "hi" OR "near") AND scope_token : "a"')


@pytest.fixture
async def engine(memory: str):
    async with Engine.open(memory, config=DETERMINISTIC) as opened:
        texts = ["I booked a flight to Lisbon for May", "my dog Max loves the beach",
                 "see https://example.com/a_b?x=1 for the docs", "NEAR the old AND new town"]
        for seq, text in enumerate(texts, 1):
            await opened.store("s", seq, {"role": "user", "content": text})
        await opened.drain()
        yield opened


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(typed=st.text(alphabet=st.sampled_from(list('abc "*-:()^+NEARORANDNOT{}[]\\\'🎉é\x00\n')),
                     max_size=40) | st.text(max_size=40))
async def test_anything_typed_is_a_valid_query(engine: Engine, typed: str) -> None:
    results = await engine.hybrid_query(session_id="s", query=typed, top_k=3)
    assert all(r.session_id == "s" for r in results)
    # A namespace query builds its MATCH another way (plain words and the agent's token).
    across = await engine.hybrid_query(namespace=engine.config.agent, query=typed, top_k=3)
    assert all(r.session_id == "s" for r in across)


async def test_like_fallback_catches_what_fts_cannot(engine: Engine) -> None:
    found = await engine.search(session_id="s", query="xampl", mode="keyword")  # part of a word
    assert found.legs.fts_fallback == "like"
    assert found.results and "example.com" in found.results[0].text
    assert any("LIKE" in note for note in found.explain()["notes"])


# --- tags, scope, modes ------------------------------------------------------------------------

async def test_tags_filter_before_the_cut_on_both_legs(memory: str) -> None:
    async with Engine.open(memory, config=DETERMINISTIC) as engine:
        items = [("s", i, {"role": "user", "content": f"apple pie recipe number {i} apple"})
                 for i in range(1, 120)]
        items.append(("s", 200, {"role": "user", "content": "an apple mentioned once",
                                 "metadata": {"tags": ["Fruit", "rare"]}}))
        await engine.store_many(items)
        await engine.drain()
        for mode in ("keyword", "vector", "hybrid"):
            found = await engine.search(session_id="s", query="apple pie recipe", top_k=5,
                                        tags=["fruit"], mode=mode)
            assert [r.sequence_start for r in found.results] == [200], mode
        untagged = await engine.hybrid_query(session_id="s", query="apple pie recipe", top_k=5)
        assert 200 not in [r.sequence_start for r in untagged]
        assert await engine.hybrid_query(session_id="s", query="apple",
                                         tags=["fruit", "missing"]) == []


async def test_a_namespace_query_sees_only_its_agents_sessions(memory: str) -> None:
    async with Engine.open(memory, config=DETERMINISTIC) as engine:
        await engine.store("a1", 1, {"role": "user", "content": "secret plan alpha"}, agent="ann")
        await engine.store("a2", 1, {"role": "user", "content": "secret plan beta"}, agent="ann")
        await engine.store("b1", 1, {"role": "user", "content": "secret plan gamma"}, agent="bob")
        await engine.drain()
        for mode in ("keyword", "vector", "hybrid"):
            results = await engine.hybrid_query(namespace="ann", query="secret plan",
                                                mode=mode)
            assert {r.session_id for r in results} == {"a1", "a2"}, mode
        bob = await engine.hybrid_query(namespace="bob", query="secret plan")
        assert {r.session_id for r in bob} == {"b1"}
        assert await engine.hybrid_query(namespace="nobody", query="secret plan") == []
        with pytest.raises(InvalidInput, match="session_id or a namespace"):
            await engine.hybrid_query(session_id="a1", namespace="ann", query="x")


async def test_modes_use_only_their_leg(engine: Engine) -> None:
    keyword = await engine.hybrid_query(session_id="s", query="Lisbon flight", mode="keyword")
    assert keyword and all(r.vector_rank is None and r.vector_score == 0 for r in keyword)
    vector = await engine.hybrid_query(session_id="s", query="Lisbon flight", mode="vector")
    assert vector and all(r.fts_rank is None and r.fts_score == 0 for r in vector)
    with pytest.raises(InvalidInput, match="mode must be one of"):
        await engine.hybrid_query(session_id="s", query="x", mode="semantic")


# --- kept legs and explanations ----------------------------------------------------------------

async def test_reranking_never_touches_the_database(engine: Engine, monkeypatch) -> None:
    found = await engine.search(session_id="s", query="flight to Lisbon with my dog", top_k=4)

    def no_database(*args, **kwargs):
        raise AssertionError("re-ranking went to the database")

    for name in ("vector_search", "fts_search", "full_text_leg", "run_legs", "fetch_chunks"):
        monkeypatch.setattr(engine.backend, name, no_database)
    keyword_only = found.rerank(vector_weight=0.0, fts_weight=1.0)
    vector_only = found.rerank(vector_weight=1.0, fts_weight=0.0, fusion="rrf", top_k=2)
    assert len(vector_only.results) == 2
    assert [r.chunk_id for r in keyword_only.results] != [r.chunk_id for r in found.results] \
        or keyword_only.results[0].score != found.results[0].score


async def test_a_threshold_that_one_leg_cannot_reach_is_explained(engine: Engine) -> None:
    # Without the neighbour boost, which could lift a full-text hit beside a strong one.
    found = await engine.search(session_id="s", query="Lisbon", top_k=5, vector_weight=0.7,
                                fts_weight=0.3, min_score=0.35, mode="keyword",
                                neighbour_weight=0)
    explained = found.explain()
    assert any("full-text leg alone scores at most 0.300" in n for n in explained["notes"])
    assert not any("full-text leg alone" in n
                   for n in found.rerank(neighbour_weight=0.3).explain()["notes"])
    assert found.results == []
    assert any("below min_score 0.35" in c["reason"] for c in explained["cut"])
    everything = found.rerank(min_score=None)
    result = everything.explain()["results"][0]
    assert result["matched_terms"] == ["lisbon"]
    assert result["fts"]["rank"] == 1 and result["vector"]["rank"] is None
    assert explained["parsed_terms"] == ["lisbon"] and explained["filters"] == {"tags": []}


async def test_raw_fts_mode_passes_syntax_and_reports_errors(memory: str) -> None:
    async with Engine.open(memory, config=DETERMINISTIC) as engine:
        if engine.backend.features.raw_full_text_syntax != "fts5":
            # The expressions below (phrases, column filters, NEAR, a syntax error) are
            # FTS5's; another backend's raw language reads them otherwise.
            pytest.skip("raw full-text syntax here is not FTS5's")
        await engine.store("mine", 1, {"role": "user", "content": "the quick brown fox jumps"})
        await engine.store("mine", 2, {"role": "user", "content": "a brown dog sleeps"})
        await engine.store("theirs", 1, {"role": "user", "content": "secret brown fox plans"})
        await engine.drain()
        phrase = await engine.hybrid_query(session_id="mine", query='"brown fox"',
                                           raw_fts=True, mode="keyword")
        # Message 2 holds the phrase only in its context (message 1, before it).
        assert [r.sequence_start for r in phrase] == [1, 2]
        own_text = await engine.hybrid_query(session_id="mine", query='chunk_text : "brown fox"',
                                             raw_fts=True, mode="keyword")
        assert [r.sequence_start for r in own_text] == [1]
        near = await engine.hybrid_query(session_id="mine", query="NEAR(quick jumps, 3)",
                                         raw_fts=True, mode="keyword")
        assert [r.sequence_start for r in near] == [1, 2]
        with pytest.raises(InvalidInput, match="FTS syntax error in raw mode"):
            await engine.hybrid_query(session_id="mine", query='brown AND (', raw_fts=True)
        # Syntax that would break out of an ANDed scope token cannot reach another session.
        for escape in ["x) OR (brown", "brown OR scope_token : s", "{scope_token}: brown OR fox"]:
            try:
                leaked = await engine.hybrid_query(session_id="mine", query=escape,
                                                   raw_fts=True, mode="keyword")
            except InvalidInput:
                continue
            assert all(r.session_id == "mine" for r in leaked), escape
        logged = next(e for e in await engine.retrieval_log(20)
                      if e["query"] == "NEAR(quick jumps, 3)")
        assert logged["params"]["raw_fts"] is True
        replayed = await engine.replay(logged["log_id"])
        # Still raw syntax, as it ran: on the chunk's text and context, the scope in SQL.
        (ran,) = replayed.legs.fts_ran
        assert ran.expression == "{chunk_text context} : (NEAR(quick jumps, 3))"
        assert ran.filter == "c.session_id = 'mine'"
        assert [r.chunk_id for r in replayed.results] == [r.chunk_id for r in near]
