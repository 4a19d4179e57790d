"""The speaker and neighbour boosts: arithmetic on kept legs, explain, the log and replay."""

from __future__ import annotations

import json

import pytest

from core import Engine
from core.errors import InvalidInput
from core.retrieval.boosts import named_speakers
from core.retrieval.fusion import LegHit
from core.retrieval.search import KeptLegs, Ranking, rank
from tests.conftest import DETERMINISTIC


def _chunk(sequence: int, name: str | None = None, session: str = "s") -> dict[str, object]:
    metadata = {"role": "user"} if name is None else {"role": "user", "name": name}
    return {"session_id": session, "text": f"message {sequence}", "sequence_start": sequence,
            "sequence_end": sequence, "metadata_json": json.dumps(metadata),
            "context_text": ""}


def _legs(query: str, chunks: dict[str, dict[str, object]], fts: list[LegHit]) -> KeptLegs:
    return KeptLegs(query=query, scope="session 's'", mode="hybrid", terms=[], tags=[],
                    fts_expression=None, fts=fts, chunks=chunks)


# Full text prefers a (1.0 after min-max), then b (0.5), then c (0.0).
FTS = [LegHit("a", 10.0, 1), LegHit("b", 5.0, 2), LegHit("c", 0.0, 3)]
NAMED = {"a": _chunk(1, "Caroline"), "b": _chunk(5, "Melanie"), "c": _chunk(9, "Melanie")}


def test_a_named_speakers_messages_gain_a_share_of_the_fused_maximum() -> None:
    legs = _legs("What do Melanie's kids like?", NAMED, FTS)
    plain = rank(legs, Ranking(vector_weight=0.0, fts_weight=1.0))
    assert [r.chunk_id for r in plain.results] == ["a", "b", "c"]
    found = rank(legs, Ranking(vector_weight=0.0, fts_weight=1.0, speaker_boost=0.6))
    assert found.speakers == ["Melanie"]
    assert {r.chunk_id: round(r.score, 6) for r in found.results} == {
        "b": 1.1, "a": 1.0, "c": 0.6}
    assert [r.chunk_id for r in found.results] == ["b", "a", "c"]
    explained = found.explain()
    assert explained["boosts"] == {"speaker_boost": 0.6, "speakers_named": ["Melanie"],
                                   "neighbour_weight": 0.0}
    assert [r["boosts"]["speaker"] for r in explained["results"]] == [0.6, 0.0, 0.6]
    # The playground's re-rank switches it off without I/O.
    assert [r.chunk_id for r in found.rerank(speaker_boost=0.0).results] == ["a", "b", "c"]


def test_the_speaker_boost_is_scaled_to_the_fusion() -> None:
    legs = _legs("Melanie", NAMED, FTS)
    found = rank(legs, Ranking(vector_weight=0.0, fts_weight=2.0, fusion="rrf", rrf_k=60,
                               speaker_boost=0.5))
    # Under RRF one leg gives at most weight / (rrf_k + 1): the boost is half of that.
    assert found.boosts["b"][0] == pytest.approx(0.5 * 2.0 / 61)


def test_a_speaker_is_named_only_by_all_the_words_of_their_name() -> None:
    chunks = {"a": _chunk(1, "Mary Ann"), "b": _chunk(2, "Jon"), "c": _chunk(3),
              "d": {**_chunk(4), "metadata_json": '{"role": "tool", "name": "search"}'}}
    assert named_speakers("what did mary say to jonathan?", chunks) == []
    assert named_speakers("What did Ann and Mary tell JON?", chunks) == ["Jon", "Mary Ann"]
    assert named_speakers("search for it", chunks) == []  # a tool is no speaker
    assert named_speakers("", chunks) == []


def test_a_candidate_gains_from_the_best_adjacent_candidate_of_its_session() -> None:
    chunks = {"a": _chunk(4), "b": _chunk(9), "c": _chunk(5), "d": _chunk(3, session="t"),
              "e": _chunk(10)}
    fts = [LegHit("a", 10.0, 1), LegHit("b", 8.0, 2), LegHit("c", 2.0, 3),
           LegHit("d", 1.0, 4), LegHit("e", 0.0, 5)]
    found = rank(_legs("q", chunks, fts), Ranking(vector_weight=0.0, fts_weight=1.0,
                                                 neighbour_weight=0.5))
    scores = {r.chunk_id: round(r.score, 6) for r in found.results}
    # c (5) follows a (4): 0.2 + 0.5 * 1.0; e (10) follows b (9): 0 + 0.5 * 0.8;
    # a gains from c; b none (e scores 0); d (3, another session) is beside nothing of its own.
    assert scores == {"a": 1.1, "c": 0.7, "b": 0.8, "e": 0.4, "d": 0.1}
    assert found.explain()["results"][0]["boosts"] == {"speaker": 0.0, "neighbour": 0.1}


def test_the_min_score_note_counts_what_the_boosts_can_add() -> None:
    legs = _legs("Melanie", NAMED, FTS)
    note = "the full-text leg alone scores at most"
    unboosted = rank(legs, Ranking(vector_weight=0.0, fts_weight=1.0, min_score=1.2))
    assert any(note in n for n in unboosted.explain()["notes"])
    boosted = rank(legs, Ranking(vector_weight=0.0, fts_weight=1.0, min_score=1.2,
                                 speaker_boost=0.3))
    assert not any(note in n for n in boosted.explain()["notes"])


async def test_the_boosts_are_configured_logged_and_replayed(memory: str) -> None:
    config = {**DETERMINISTIC, "retrieval": {"speaker_boost": 5.0}}
    async with Engine.open(memory, config=config) as engine:
        await engine.store("talk", 1, {"role": "user", "name": "Caroline",
                                       "content": "I love painting sunsets"})
        await engine.store("talk", 2, {"role": "assistant", "name": "Melanie",
                                       "content": "painting is lovely"})
        await engine.store("talk", 3, {"role": "user", "name": "Caroline",
                                       "content": "we went camping"})
        await engine.drain()
        question = "what does Melanie think of painting"
        found = await engine.search(session_id="talk", query=question, mode="keyword")
        assert found.speakers == ["Melanie"]
        assert found.results[0].sequence_start == 2
        assert found.ranking.speaker_boost == 5.0
        off = await engine.search(session_id="talk", query=question, mode="keyword",
                                  speaker_boost=0, neighbour_weight=0.25)
        assert off.speakers == [] and off.ranking.neighbour_weight == 0.25
        log = await engine.retrieval_log(2)
        assert [(e["params"]["speaker_boost"], e["params"]["neighbour_weight"])
                for e in log] == [(0.0, 0.25), (5.0, 0.0)]
        replayed = await engine.replay(log[0]["log_id"])
        assert replayed.ranking.speaker_boost == 0.0
        assert replayed.ranking.neighbour_weight == 0.25
        assert [r.chunk_id for r in replayed.results] == [r.chunk_id for r in off.results]
        with pytest.raises(InvalidInput, match="speaker_boost must be a non-negative number"):
            await engine.search(session_id="talk", query="paint", speaker_boost=-1)
        with pytest.raises(InvalidInput, match="neighbour_weight must be"):
            await engine.search(session_id="talk", query="paint", neighbour_weight=float("nan"))
