"""A score a person can read: every ranked result's score is its named parts added up, and
each front end (JSON, the CLI table, MCP, the app's rows) shows those parts."""

from __future__ import annotations

import json
import math

from hypothesis import given, settings
from hypothesis import strategies as st

from core.retrieval.fusion import FUSIONS, LegHit
from core.retrieval.search import KeptLegs, Ranking, fusion_scale, rank

SPEAKERS = ("Caroline", "Melanie")


def _chunk(sequence: int, name: str, day: int) -> dict[str, object]:
    metadata = {"role": "user", "name": name, "session_date": f"2023-05-{day:02d}"}
    return {"session_id": "s", "text": f"message {sequence}", "sequence_start": sequence,
            "sequence_end": sequence, "metadata_json": json.dumps(metadata),
            "context_text": ""}


@st.composite
def kept_legs(draw: st.DrawFn) -> KeptLegs:
    """Random legs over up to 12 chunks of one session: each leg returns a random subset
    with random raw scores, the chunks said by random speakers on random days."""
    count = draw(st.integers(1, 12))
    # Days 1-20 of May 2023: the query's "8 May 2023" holds some of them.
    ids = [f"c{n}" for n in range(count)]
    chunks = {cid: _chunk(n, draw(st.sampled_from(SPEAKERS)), draw(st.integers(1, 20)))
              for n, cid in enumerate(ids)}
    raw = st.floats(-50, 50, allow_nan=False, allow_infinity=False)

    def leg() -> list[LegHit]:
        chosen = draw(st.lists(st.sampled_from(ids), unique=True, max_size=count))
        scores = sorted((draw(raw) for _ in chosen), reverse=True)
        return [LegHit(cid, score, place) for place, (cid, score)
                in enumerate(zip(chosen, scores, strict=True), 1)]

    return KeptLegs(query="What did Melanie say on 8 May 2023?", scope="session 's'",
                    mode=draw(st.sampled_from(("hybrid", "hybrid", "keyword", "vector"))),
                    terms=[], tags=[], fts_expression=None, vector=leg(), fts=leg(),
                    chunks=chunks)


weights = st.floats(0, 1, allow_nan=False)


@settings(max_examples=300, deadline=None)
@given(legs=kept_legs(), vector_weight=weights, fts_weight=weights,
       fusion=st.sampled_from(FUSIONS), speaker=weights, date=weights, neighbour=weights,
       window=st.integers(1, 3))
def test_the_named_parts_add_up_to_the_score(legs: KeptLegs, vector_weight: float,
                                             fts_weight: float, fusion: str, speaker: float,
                                             date: float, neighbour: float,
                                             window: int) -> None:
    found = rank(legs, Ranking(vector_weight, fts_weight, fusion=fusion, top_k=20,
                               speaker_boost=speaker, date_boost=date,
                               neighbour_weight=neighbour, neighbour_window=window))
    applied_vector, applied_fts = found.ranking.applied_weights(legs.mode)
    for result in found.results:
        parts = result.parts
        assert parts is not None
        total = parts.fused + parts.speaker + parts.date + parts.neighbour
        assert math.isclose(total, result.score, rel_tol=1e-12, abs_tol=1e-12)
        # The fused part is the formula the header shows, over the legs' normalised scores.
        assert math.isclose(parts.fused, applied_vector * result.vector_score
                            + applied_fts * result.fts_score, rel_tol=1e-12, abs_tol=1e-12)
        # explain names the same parts, and the same boosts it always listed.
        explained = found.explain_result(result)
        assert explained["parts"] == {"fused": parts.fused, "speaker": parts.speaker,
                                      "date": parts.date, "neighbour": parts.neighbour}
        assert explained["boosts"] == {name: explained["parts"][name]
                                       for name in ("speaker", "date", "neighbour")}
        assert result.to_dict()["parts"] == explained["parts"]
        boosted.update(name for name, value in explained["boosts"].items() if value)


boosted: set[str] = set()


def test_the_random_rankings_exercised_every_boost() -> None:
    """The property above ran with each boost adding something (run after it)."""
    if not boosted:  # run alone: draw the examples first
        test_the_named_parts_add_up_to_the_score()
    assert boosted == {"speaker", "date", "neighbour"}


def test_each_fusion_says_its_scale() -> None:
    assert fusion_scale(Ranking(0.3, 0.7)) == (
        "minmax: each leg 0–1 (its lowest hit 0, its best 1); "
        "fused = 0.30 × vector + 0.70 × fts (0–1); boosts added on top")
    assert fusion_scale(Ranking(1.0, 1.0, fusion="rrf", rrf_k=60)).startswith(
        "rrf: each leg 1/(60+rank): 0.0164 at rank 1; fused = 1.00 × vector + 1.00 × fts "
        "(0–0.0328)")
    assert "mean ± 3σ" in fusion_scale(Ranking(0.3, 0.7, fusion="dbsf"))
    # keyword mode switches the vector leg off: the formula says so.
    assert "0.00 × vector" in fusion_scale(Ranking(0.3, 0.7), "keyword")
