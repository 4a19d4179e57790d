"""The speaker, date and neighbour boosts: arithmetic on kept legs, explain, the log and replay."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from core import Engine
from core.errors import InvalidInput
from core.retrieval.boosts import (
    CACHED_METADATA_CHARS,
    _with_neighbours,
    named_speakers,
    speaker_name,
)
from core.retrieval.dates import candidate_dates, message_date, parse_date, query_period
from core.retrieval.fusion import Fused, LegHit
from core.retrieval.search import KeptLegs, Ranking, rank
from core.storage.rows import ChunkRow
from tests.conftest import DETERMINISTIC
from workbench.cli.root import main


def _chunk(sequence: int, name: str | None = None, session: str = "s",
           end: int | None = None) -> ChunkRow:
    metadata = {"role": "user"} if name is None else {"role": "user", "name": name}
    return ChunkRow(f"c{sequence}", session, f"message {sequence}", sequence,
                    sequence if end is None else end, json.dumps(metadata), "", None)


def _metadata(metadata: dict[str, object] | str) -> ChunkRow:
    """A chunk whose metadata JSON is ``metadata`` (a string as it is)."""
    return _chunk(1)._replace(
        metadata_json=metadata if isinstance(metadata, str) else json.dumps(metadata))


def _legs(query: str, chunks: dict[str, ChunkRow], fts: list[LegHit],
          *, vector_too: bool = True) -> KeptLegs:
    """Kept legs whose vector leg (unless not ``vector_too``) ranks as full text does, so
    that at equal weights the fused score is the full-text leg's normalised score."""
    return KeptLegs(query=query, scope="session 's'", mode="hybrid", terms=[], tags=[],
                    fts_expression=None, fts=fts, vector=list(fts) if vector_too else [],
                    chunks=chunks)


# Boosts join a fused hybrid: both legs weighted. Equal weights over the mirrored legs above.
HYBRID = {"vector_weight": 0.5, "fts_weight": 0.5}


# Full text prefers a (1.0 after min-max), then b (0.5), then c (0.0).
FTS = [LegHit("a", 10.0, 1), LegHit("b", 5.0, 2), LegHit("c", 0.0, 3)]
NAMED = {"a": _chunk(1, "Caroline"), "b": _chunk(5, "Melanie"), "c": _chunk(9, "Melanie")}


def test_a_named_speakers_messages_gain_a_share_of_the_fused_maximum() -> None:
    legs = _legs("What do Melanie's kids like?", NAMED, FTS)
    plain = rank(legs, Ranking(**HYBRID))
    assert [r.chunk_id for r in plain.results] == ["a", "b", "c"]
    found = rank(legs, Ranking(**HYBRID, speaker_boost=0.6))
    assert found.speakers == ["Melanie"]
    assert {r.chunk_id: round(r.score, 6) for r in found.results} == {
        "b": 1.1, "a": 1.0, "c": 0.6}
    assert [r.chunk_id for r in found.results] == ["b", "a", "c"]
    explained = found.explain()
    assert explained["boosts"] == {"speaker_boost": 0.6, "speakers_named": ["Melanie"],
                                   "date_boost": 0.0, "period": None,
                                   "neighbour_weight": 0.0, "neighbour_window": 1}
    assert [r["boosts"]["speaker"] for r in explained["results"]] == [0.6, 0.0, 0.6]
    # The playground's re-rank switches it off without I/O.
    assert [r.chunk_id for r in found.rerank(speaker_boost=0.0).results] == ["a", "b", "c"]


def test_the_speaker_boost_is_scaled_to_the_fusion() -> None:
    legs = _legs("Melanie", NAMED, FTS)
    found = rank(legs, Ranking(vector_weight=1.0, fts_weight=1.0, fusion="rrf", rrf_k=60,
                               speaker_boost=0.5))
    # Under RRF a leg gives at most weight / (rrf_k + 1): the boost is half of their sum.
    assert found.boosts["b"]["speaker"] == pytest.approx(0.5 * 2.0 / 61)


@pytest.mark.parametrize("weights", [(0.0, 1.0), (1.0, 0.0)])
def test_a_ranking_of_one_leg_alone_is_that_legs_order_whatever_the_boosts(
        weights: tuple[float, float]) -> None:
    chunks = {cid: NAMED[cid]._replace(metadata_json=json.dumps(
        {"role": "user", "name": "Melanie", "session_date": "9 June, 2023"})) for cid in NAMED}
    legs = _legs("What did Melanie cook in June?", chunks, FTS)
    found = rank(legs, Ranking(vector_weight=weights[0], fts_weight=weights[1],
                               speaker_boost=0.9, date_boost=0.9, neighbour_weight=0.9,
                               neighbour_window=50))
    assert [r.chunk_id for r in found.results] == ["a", "b", "c"]
    assert not found.boosts
    assert [r.score for r in found.results] == [
        weights[0] * r.vector_score + weights[1] * r.fts_score for r in found.results]


def test_a_speaker_is_named_only_by_all_the_words_of_their_name() -> None:
    chunks = {"a": _chunk(1, "Mary Ann"), "b": _chunk(2, "Jon"), "c": _chunk(3),
              "d": _chunk(4)._replace(metadata_json='{"role": "tool", "name": "search"}')}
    assert named_speakers("what did mary say to jonathan?", chunks) == ([], frozenset())
    assert named_speakers("What did Ann and Mary tell JON?", chunks) == (
        ["Jon", "Mary Ann"], frozenset({"a", "b"}))
    assert named_speakers("search for it", chunks)[0] == []  # a tool is no speaker
    assert named_speakers("", chunks) == ([], frozenset())


def test_a_candidate_gains_from_the_best_adjacent_candidate_of_its_session() -> None:
    chunks = {"a": _chunk(4), "b": _chunk(9), "c": _chunk(5), "d": _chunk(3, session="t"),
              "e": _chunk(10)}
    fts = [LegHit("a", 10.0, 1), LegHit("b", 8.0, 2), LegHit("c", 2.0, 3),
           LegHit("d", 1.0, 4), LegHit("e", 0.0, 5)]
    found = rank(_legs("q", chunks, fts), Ranking(**HYBRID, neighbour_weight=0.5))
    scores = {r.chunk_id: round(r.score, 6) for r in found.results}
    # c (5) follows a (4): 0.2 + 0.5 * 1.0; e (10) follows b (9): 0 + 0.5 * 0.8;
    # a gains from c; b none (e scores 0); d (3, another session) is beside nothing of its own.
    assert scores == {"a": 1.1, "c": 0.7, "b": 0.8, "e": 0.4, "d": 0.1}
    assert found.explain()["results"][0]["boosts"] == {"speaker": 0.0, "date": 0.0,
                                                       "neighbour": 0.1}
    # Within 5 messages a (4) also sees b (9): 1.0 + 0.5 * 0.8; b sees a: 0.8 + 0.5 * 1.0;
    # c (5) sees a; e (10) sees b; d still has nothing of its own session.
    wider = found.rerank(neighbour_window=5)
    assert {r.chunk_id: round(r.score, 6) for r in wider.results} == {
        "a": 1.4, "b": 1.3, "c": 0.7, "e": 0.4, "d": 0.1}


def test_the_min_score_note_counts_what_the_boosts_can_add() -> None:
    legs = _legs("Melanie", NAMED, FTS, vector_too=False)
    note = "the full-text leg alone scores at most"
    unboosted = rank(legs, Ranking(vector_weight=0.0, fts_weight=1.0, min_score=1.2))
    assert any(note in n for n in unboosted.explain()["notes"])
    boosted = rank(legs, Ranking(vector_weight=0.0, fts_weight=1.0, min_score=1.2,
                                 speaker_boost=0.3))
    assert not any(note in n for n in boosted.explain()["notes"])


async def test_the_boosts_are_configured_logged_and_replayed(memory: str) -> None:
    config = {**DETERMINISTIC, "retrieval": {"speaker_boost": 5.0, "neighbour_window": 2}}
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
        assert [(e["params"]["speaker_boost"], e["params"]["date_boost"],
                 e["params"]["neighbour_weight"], e["params"]["neighbour_window"])
                for e in log] == [(0.0, 0.2, 0.25, 2), (5.0, 0.2, 0.3, 2)]
        replayed = await engine.replay(log[0]["log_id"])
        assert replayed.ranking.speaker_boost == 0.0
        assert replayed.ranking.neighbour_weight == 0.25
        assert replayed.ranking.neighbour_window == 2
        assert [r.chunk_id for r in replayed.results] == [r.chunk_id for r in off.results]
        with pytest.raises(InvalidInput, match="speaker_boost must be a non-negative number"):
            await engine.search(session_id="talk", query="paint", speaker_boost=-1)
        with pytest.raises(InvalidInput, match="neighbour_weight must be"):
            await engine.search(session_id="talk", query="paint", neighbour_weight=float("nan"))
        with pytest.raises(InvalidInput, match="neighbour_window must be an integer from 1"):
            await engine.search(session_id="talk", query="paint", neighbour_window=0)


# --- the date boost -----------------------------------------------------------------------------

NOW = dt.date(2023, 10, 20)


@pytest.mark.parametrize(("query", "first", "last"), [
    ("When did Melanie go camping in June?", "2023-06-01", "2023-06-30"),
    ("What did she paint in July 2023?", "2023-07-01", "2023-07-31"),
    ("What did he find on 1 February, 2023?", "2023-02-01", "2023-02-01"),
    ("What was accepted on May 23, 2023?", "2023-05-23", "2023-05-23"),
    ("What happened in November?", "2022-11-01", "2022-11-30"),  # after now: last year's
    ("beach trips in 2023", "2023-01-01", "2023-12-31"),
    ("what did we do last week", "2023-10-13", "2023-10-20"),
    ("anything yesterday?", "2023-10-19", "2023-10-19"),
])
def test_a_query_names_a_period(query: str, first: str, last: str) -> None:
    period = query_period(query, NOW)
    assert period is not None
    assert (period.first.isoformat(), period.last.isoformat()) == (first, last)


@pytest.mark.parametrize("query", [
    "May I ask what you think?", "We march on", "jan said hello", "my 18th birthday",
    "a 2023 budget", "nothing about time", "on 31 June, 2023", "the market in 2 decades"])
def test_words_that_name_no_period(query: str) -> None:
    assert query_period(query, NOW) is None


def test_message_dates_are_read_from_metadata() -> None:
    assert parse_date("1:56 pm on 8 May, 2023") == dt.date(2023, 5, 8)
    assert parse_date("2024-02-29T10:00:00Z") == dt.date(2024, 2, 29)
    assert parse_date("March 3, 2021") == dt.date(2021, 3, 3)
    assert parse_date("2023-02-30") is None and parse_date("soon") is None
    dated = {"a": _metadata({"session_date": "8 May, 2023"}),
             "b": _metadata({"date": "2023-06-02"}),
             "c": _metadata({"date": "someday"}), "d": _metadata("")}
    assert candidate_dates(dated) == {"a": dt.date(2023, 5, 8), "b": dt.date(2023, 6, 2)}


def test_a_message_dated_in_the_named_period_gains() -> None:
    chunks = {cid: _chunk(n)._replace(metadata_json=json.dumps({"session_date": day}))
              for n, (cid, day) in enumerate([("a", "3 May, 2023"), ("b", "9 June, 2023"),
                                              ("c", "30 June, 2023")], 1)}
    legs = _legs("What did we cook in June?", chunks, FTS)
    plain = rank(legs, Ranking(**HYBRID))
    assert plain.period is None and [r.chunk_id for r in plain.results] == ["a", "b", "c"]
    found = rank(legs, Ranking(**HYBRID, date_boost=0.7))
    assert [r.chunk_id for r in found.results] == ["b", "a", "c"]  # 1.2, 1.0, 0.7
    explained = found.explain()
    assert explained["boosts"]["period"] == {"words": "June", "from": "2023-06-01",
                                             "to": "2023-06-30"}
    assert [r["boosts"]["date"] for r in explained["results"]] == [0.7, 0.0, 0.7]
    # No period in the query: nothing is dated, nothing gains.
    other = rank(_legs("What did we cook?", chunks, FTS), found.ranking)
    assert other.period is None and not other.boosts


def test_search_explain_prints_the_boosts(runner: CliRunner, tmp_path: Path) -> None:
    db = tmp_path / "m.db"

    async def fill() -> None:
        async with Engine.open(db, config=DETERMINISTIC) as engine:
            await engine.store("s", 1, {"role": "user", "name": "Ann", "content": "a hike",
                                        "metadata": {"date": "2023-06-04"}})
            await engine.store("s", 2, {"role": "assistant", "name": "Bo", "content": "a hike",
                                        "metadata": {"date": "2023-07-09"}})
            await engine.drain()

    asyncio.run(fill())
    shown = runner.invoke(main, ["search", "Did Ann hike in June?", "--db", str(db),
                                 "--session", "s", "--explain"])
    assert shown.exit_code == 0, shown.output
    assert ("boosts: speaker 0.2 (named: Ann), date 0.2 (period: 'June' 2023-06-01 to "
            "2023-06-30), neighbour 0.3 within 5 messages") in shown.output
    assert "; boosted: speaker +0.200, date +0.200" in shown.output
    assert "; boosted: neighbour +" in shown.output  # the next message, beside Ann's


def test_a_speaker_is_read_alike_from_short_and_long_metadata() -> None:
    short = _metadata({"role": "user", "name": " Ann "})
    long = _metadata({"role": "user", "name": "Ann", "note": "x" * CACHED_METADATA_CHARS})
    tool = _metadata({"role": "tool", "name": "search"})
    assert [speaker_name(c) for c in (short, short, long, long, tool)] == [
        "Ann", "Ann", "Ann", "Ann", None]


def test_a_message_date_is_read_alike_from_short_and_long_metadata() -> None:
    short = _metadata({"session_date": "1:56 pm on 8 May, 2023"})
    long = _metadata({"date": "2023-05-08", "note": "x" * CACHED_METADATA_CHARS})
    undated = _metadata({"date": "soon"})
    assert [message_date(c) for c in (short, short, long, long, undated)] == [
        dt.date(2023, 5, 8), dt.date(2023, 5, 8), dt.date(2023, 5, 8), dt.date(2023, 5, 8),
        None]


def _neighbour_gains_one_by_one(items: list[Fused], chunks: dict[str, ChunkRow],
                                weight: float, window: int) -> list[float]:
    """The neighbour boost as the docstring states it, comparing every pair of candidates."""
    gains = []
    for item in items:
        mine = chunks[item.chunk_id]
        best = 0.0
        for other in items:
            theirs = chunks[other.chunk_id]
            start = theirs.sequence_start
            if theirs.session_id == mine.session_id and (
                    mine.sequence_start - window <= start < mine.sequence_start
                    or mine.sequence_end < start <= mine.sequence_end + window):
                best = max(best, other.score)
        gains.append(weight * best)
    return gains


@settings(max_examples=150, deadline=None)
@given(spans=st.lists(st.tuples(st.sampled_from("ab"), st.integers(1, 30), st.integers(0, 3),
                                st.floats(0, 1)), min_size=1, max_size=25),
       window=st.integers(1, 6), weight=st.floats(0.01, 1))
def test_the_neighbour_boost_is_the_best_candidate_within_the_window(
        spans: list[tuple[str, int, int, float]], window: int, weight: float) -> None:
    chunks = {f"c{n}": _chunk(start, session=session, end=start + length)
              for n, (session, start, length, _) in enumerate(spans)}
    items = [Fused(f"c{n}", score, score, 0.0) for n, (*_, score) in enumerate(spans)]
    boosted = _with_neighbours(items, chunks, weight, window)
    assert [item.neighbour for item in boosted] == pytest.approx(
        _neighbour_gains_one_by_one(items, chunks, weight, window), abs=0.0)
