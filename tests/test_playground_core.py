"""The playground's core helpers: highlighting spans, ranking diffs, judged scores, sweeps."""

from __future__ import annotations

from pathlib import Path

from core import Engine
from core.evaluation.judged import (
    MAX_INTERVAL_WIDTH,
    MIN_JUDGED_QUERIES,
    JudgedSearches,
    JudgedSet,
    best_point,
    relevant_chunks,
    score_ranking,
    set_difference,
    set_score,
    set_sweep,
    sweep_point,
    sweep_verdict,
    weight_sweep,
)
from core.retrieval.compare import diff_rankings
from core.retrieval.fusion import LegHit
from core.retrieval.search import KeptLegs, Ranking, matched_spans, matched_terms, rank
from core.storage.rows import ChunkRow
from tests.conftest import DETERMINISTIC


def _chunk(chunk_id: str, sequence: int) -> ChunkRow:
    return ChunkRow(chunk_id, "s", f"text of {chunk_id}", sequence, sequence, "{}", "", None)


def _result(top_k: int = 3):
    """Kept legs where the vector leg prefers a, b, c and the full-text leg c, d, a."""
    legs = KeptLegs(query="q", scope="session s", mode="hybrid", terms=["q"],
                    fts_expression=None, tags=[],
                    vector=[LegHit("a", 0.9, 1), LegHit("b", 0.8, 2), LegHit("c", 0.1, 3)],
                    fts=[LegHit("c", 9.0, 1), LegHit("d", 5.0, 2), LegHit("a", 1.0, 3)],
                    chunks={cid: _chunk(cid, n) for n, cid in enumerate("abcd", 1)})
    return rank(legs, Ranking(vector_weight=0.5, fts_weight=0.5, top_k=top_k))


def test_matched_spans_mark_the_words_matched_terms_counts() -> None:
    text = "I am Allergic to peanuts; peanut butter is out."
    terms = ["peanut", "allergy", "butter", "hut"]
    spans = matched_spans(terms, text)
    assert [text[start:end] for start, end in spans] == ["Allergic", "peanuts", "peanut",
                                                          "butter"]
    assert matched_terms(terms, text) == ["peanut", "allergy", "butter"]
    assert matched_spans(["hut"], "huts and a hut") == [(11, 14)]  # short terms match whole
    assert matched_spans([], text) == []


def test_diff_rankings_says_what_moved_entered_and_left() -> None:
    diff = diff_rankings(["a", "b", "c", "d"], ["c", "a", "e", "b"])
    assert diff.moves == {"c": 2, "a": -1, "e": None, "b": -2}
    assert diff.entered == ["e"] and diff.left == ["d"] and diff.moved == ["c", "a", "b"]
    assert not diff.unchanged
    assert diff_rankings(["a", "b"], ["a", "b"]).unchanged


def test_judged_score_counts_only_grades_of_one_or_more() -> None:
    found = _result(top_k=3)
    assert [r.chunk_id for r in found.results] == ["c", "a", "b"]  # a tie: c is newer
    assert relevant_chunks({"a": 0, "d": 2, "b": 1}) == {"d", "b"}
    assert score_ranking(found, {"a": 0}) is None
    score = score_ranking(found, {"d": 3, "b": 1})
    assert score is not None
    assert (score.k, score.relevant, score.found) == (3, 2, 1)
    assert score.recall == 0.5
    assert 0 < score.ndcg < 1


def test_the_sweep_reranks_the_kept_legs_at_eleven_weights() -> None:
    found = _result(top_k=1)
    judgments = {"c": 2}  # the full-text leg's best: found only when full text weighs more
    points = list(weight_sweep(found, judgments))
    assert [p.vector_weight for p in points] == [i / 10 for i in range(11)]
    assert all(abs(p.vector_weight + p.fts_weight - 1) < 1e-9 for p in points)
    assert points[0].score.recall == 1.0 and points[-1].score.recall == 0.0
    assert best_point(points) == 0
    assert best_point([]) is None
    assert list(weight_sweep(found, {})) == [] and sweep_point(found, {}, 0.5) is None
    assert found.ranking.vector_weight == 0.5  # the sweep did not change the ranking it swept


def test_an_approximate_vector_leg_is_said_in_the_explanation() -> None:
    found = _result()
    assert not any(note.startswith("vector leg:") for note in found.explain()["notes"])
    found.legs.vector_approximate = "approximate (HNSW): may miss a few"
    assert "vector leg: approximate (HNSW): may miss a few" in found.explain()["notes"]


# -- every judged query of a scope ------------------------------------------------------------


def _judged_set(copies: int, grades: dict[str, int]) -> JudgedSet:
    """``copies`` queries over the same legs, each judging ``grades``."""
    return JudgedSet([f"q{i}" for i in range(copies)], [dict(grades)] * copies,
                     [_result(top_k=2)] * copies)


def test_a_judged_set_scores_with_intervals_and_warns_when_small() -> None:
    ranking = Ranking(vector_weight=0.5, fts_weight=0.5, top_k=2)
    assert set_score(JudgedSet([], [], []), ranking) is None
    small = set_score(_judged_set(3, {"a": 2, "d": 1}), ranking)
    assert small is not None and small.queries == 3
    assert small.recall.estimate == 0.5  # the top 2 (c, a) holds a, not d
    assert small.warning is not None and "only 3 judged queries" in small.warning
    enough = set_score(_judged_set(MIN_JUDGED_QUERIES, {"a": 2}), ranking)
    assert enough is not None and enough.warning is None  # all agree: a zero-width interval
    mixed = _judged_set(MIN_JUDGED_QUERIES, {"a": 2})
    mixed = JudgedSet(mixed.queries, [{"a": 2}] * 5 + [{"d": 2}] * 5, mixed.results)
    wide = set_score(mixed, ranking)
    assert wide is not None and wide.recall.width > MAX_INTERVAL_WIDTH
    assert wide.warning is not None and "judge more queries" in wide.warning


def test_the_judged_sweep_has_a_band_and_a_b_a_paired_difference() -> None:
    judged = JudgedSet([f"q{i}" for i in range(12)], [{"b": 2}] * 6 + [{"d": 2}] * 6,
                       [_result(top_k=2)] * 12)
    ranking = Ranking(vector_weight=0.5, fts_weight=0.5, top_k=2)
    points = list(set_sweep(judged, ranking))
    assert [p.vector_weight for p in points] == [i / 10 for i in range(11)]
    assert all(p.band is not None and p.band.low <= p.score.recall <= p.band.high
               for p in points)
    # Vector alone ranks a, b first (finds b); full text alone c, d (finds d): half each.
    assert points[0].score.recall == 0.5 and points[-1].score.recall == 0.5
    same = set_difference(judged, ranking, ranking)
    assert same is not None and same.width == 0.0 and same.estimate == 0.0
    vector_only = Ranking(vector_weight=1.0, fts_weight=0.0, top_k=2)
    difference = set_difference(judged, ranking, vector_only)
    current = set_score(judged, ranking)
    assert current is not None and difference is not None
    assert difference.estimate == 0.5 - current.recall.estimate
    verdict = sweep_verdict(judged, ranking, points[best_point(points) or 0])
    assert "over 12 judged queries" in verdict


async def test_judged_searches_search_each_query_once(tmp_path: Path) -> None:
    async with Engine.open(tmp_path / "m.db", config=DETERMINISTIC) as engine:
        await engine.store("s", 1, {"role": "user", "content": "the hut is booked for june"})
        await engine.store("s", 2, {"role": "user", "content": "peanut allergy noted"})
        await engine.drain()
        found = await engine.search(query="hut", session_id="s")
        await engine.judge("hut", found.results[0].chunk_id, 2, session_id="s")
        await engine.judge("peanut", found.results[0].chunk_id, 0, session_id="s")
        await engine.judge("hut", "other", 1, session_id="t")
        assert await engine.judged_queries(session_id="s") == {
            "hut": {found.results[0].chunk_id: 2}, "peanut": {found.results[0].chunk_id: 0}}
        searches = JudgedSearches()
        judged = await searches.load(engine, {"session_id": "s"})
        assert judged.queries == ["hut"]  # "peanut" has nothing judged relevant
        await searches.load(engine, {"session_id": "s"})
        logged = await engine.retrieval_log(caller="judged")
        assert [entry["query"] for entry in logged] == ["hut"]  # searched once, kept
        searches.keep({"session_id": "s"}, "peanut", found)
        await engine.judge("peanut", found.results[0].chunk_id, 3, session_id="s")
        judged = await searches.load(engine, {"session_id": "s"})
        assert judged.queries == ["hut", "peanut"] and judged.results[1] is found
        assert len(await engine.retrieval_log(caller="judged")) == 1  # kept, not searched
