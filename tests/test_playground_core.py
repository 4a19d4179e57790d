"""The playground's core helpers: highlighting spans, ranking diffs, judged scores, sweeps."""

from __future__ import annotations

from core.evaluation.judged import (
    best_point,
    relevant_chunks,
    score_ranking,
    sweep_point,
    weight_sweep,
)
from core.retrieval.compare import diff_rankings
from core.retrieval.fusion import LegHit
from core.retrieval.search import KeptLegs, Ranking, matched_spans, matched_terms, rank


def _chunk(chunk_id: str, sequence: int) -> dict[str, object]:
    return {"session_id": "s", "text": f"text of {chunk_id}", "sequence_start": sequence,
            "sequence_end": sequence, "metadata_json": "{}", "context_text": ""}


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
