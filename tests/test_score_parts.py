"""A score a person can read: every ranked result's score is its named parts added up, and
each front end (JSON, the CLI table, MCP, the app's rows) shows those parts."""

from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from core import Engine
from core.retrieval.fusion import FUSIONS, LegHit
from core.retrieval.search import KeptLegs, Ranking, fusion_scale, rank
from core.storage.rows import ChunkRow
from tests.app_support import built_fixture, running_app, settle
from tests.conftest import DETERMINISTIC
from tests.test_pane_playground import ask, open_playground
from workbench.app.playground.ranking import score_scale
from workbench.app.playground.results import SHORT_BOOST_NAMES, ResultsList
from workbench.cli.root import main
from workbench.demo.build import build_demo
from workbench.mcp.tools import TOOLS, MemorySaveArgs, MemorySearchArgs, MemoryTools

SPEAKERS = ("Caroline", "Melanie")


def _chunk(sequence: int, name: str, day: int) -> ChunkRow:
    metadata = {"role": "user", "name": name, "session_date": f"2023-05-{day:02d}"}
    return ChunkRow(f"c{sequence}", "s", f"message {sequence}", sequence, sequence,
                    json.dumps(metadata), "", None)


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


def _fill_ann_and_bo(db: Path) -> None:
    """Two messages that both legs find, Ann's dated in June: under the default boosts
    (speaker 0.2, date 0.2, neighbour 0.3) Ann's gains all three for "Did Ann hike in June?"."""
    async def fill() -> None:
        async with Engine.open(db, config=DETERMINISTIC) as engine:
            await engine.store("s", 1, {"role": "user", "name": "Ann", "content": "a hike",
                                        "metadata": {"date": "2023-06-04"}})
            await engine.store("s", 2, {"role": "assistant", "name": "Bo", "content": "a hike",
                                        "metadata": {"date": "2023-07-09"}})
            await engine.drain()

    asyncio.run(fill())


def test_the_cli_table_shows_the_score_as_named_parts(runner: CliRunner,
                                                      tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    _fill_ann_and_bo(db)
    shown = runner.invoke(main, ["search", "Did Ann hike in June?", "--db", str(db),
                                 "--session", "s"])
    assert shown.exit_code == 0, shown.output
    lines = shown.output.splitlines()
    scale = next(line for line in lines if line.startswith("scale: "))
    assert scale.startswith("scale: minmax: each leg 0–1 (its lowest hit 0, its best 1); "
                            "fused = ")
    header = next(line for line in lines if line.lstrip().startswith("#"))
    assert header.split()[:8] == ["#", "score", "=", "fused", "speaker", "date",
                                  "neighbour", "vector"]
    rows = [line.split()[1:7] for line in lines[lines.index(header) + 1:]]
    assert len(rows) == 2
    # A boost that added nothing shows as "·"; the parts still add up to the score.
    cells = [[0.0 if cell == "·" else float(cell) for cell in row if cell != "="]
             for row in rows]
    for score, *parts in cells:
        assert score == pytest.approx(sum(parts), abs=0.002)
    assert cells[0][2:4] == [0.2, 0.2]  # Ann's: speaker and date
    assert cells[1][4] > 0  # Bo's: beside Ann's, the neighbour boost


def test_search_json_and_its_explanation_name_the_parts(runner: CliRunner,
                                                        tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    _fill_ann_and_bo(db)
    args = ["search", "Did Ann hike in June?", "--db", str(db), "--session", "s", "--json"]
    results = json.loads(runner.invoke(main, args).output)
    explained = json.loads(runner.invoke(main, [*args, "--explain"]).output)
    assert explained["scale"].startswith("minmax: each leg 0–1")
    for result, item in zip(results, explained["results"], strict=True):
        parts = result["parts"]
        assert set(parts) == {"fused", "speaker", "date", "neighbour"}
        assert item["parts"] == parts
        assert sum(parts.values()) == pytest.approx(result["score"])
        assert {"score", "vector_score", "fts_score"} <= result.keys()
    assert results[0]["parts"]["speaker"] == results[0]["parts"]["date"] == 0.2


async def test_mcp_memory_search_names_the_parts(tmp_path: Path) -> None:
    async with Engine.open(tmp_path / "m.db", config=DETERMINISTIC) as engine:
        tools = MemoryTools(engine, "alice")
        await tools.memory_save(MemorySaveArgs(content="Deploys run on Fridays."))
        await engine.drain()
        found = await tools.memory_search(MemorySearchArgs(query="Fridays deploys"))
    [hit] = found["results"]
    assert set(hit["parts"]) == {"fused", "speaker", "date", "neighbour"}
    assert sum(hit["parts"].values()) == pytest.approx(hit["score"])
    description = next(tool.description for tool in TOOLS if tool.name == "memory_search")
    assert "score = parts.fused" in description


@pytest.fixture
def fixture_db(tmp_path: Path) -> Path:
    return built_fixture(tmp_path)


LONG_NAMES = {short: name for name, short in SHORT_BOOST_NAMES.items()}


def _row_parts(prompt: str) -> tuple[float, dict[str, float]]:
    """A result row's score (line 1) and the named parts its second line shows."""
    head, second = prompt.split("\n")[:2]
    score = float(next(word for word in head.split()[1:] if "." in word))
    named = second.split("│")[0].split() if "│" in second else []
    parts = {LONG_NAMES.get(name, name): float(value)
             for name, value in zip(named[::3], named[1::3], strict=True)}
    assert named[2::3] == ["+"] * (len(parts) - 1)  # "fused 0.806 + neighbour 0.210"
    return score, parts


async def test_the_search_rows_show_fused_plus_named_boosts(fixture_db: Path) -> None:
    async with running_app(fixture_db, build=False) as (app, pilot):
        pane = await open_playground(pilot)
        await ask(pilot, pane, "rain in june")
        results = pane.query_one("#pg-results", ResultsList)
        assert str(results.border_title) == (
            "Results · score = fused (0.30 × vec + 0.70 × fts; each leg 0–1: its lowest hit 0)"
            " + boosts")
        rows = [_row_parts(str(option.prompt)) for option in results.options
                if option.id != "none"]
        assert rows and all(parts for _, parts in rows)  # the neighbour boost is on
        for (score, parts), result in zip(rows, pane.found.results, strict=True):
            assert result.parts is not None
            assert parts == {"fused": round(result.parts.fused, 3),
                             **{name: round(value, 3)
                                for name, value in result.parts.boosted.items()}}
            assert score == pytest.approx(sum(parts.values()), abs=0.0025)
        await pilot.press("p")  # pin A: both lists show the compact rows
        await settle(pilot)
        compact = pane.query_one("#pg-a", ResultsList)
        assert compact.option_count and compact.display
        assert all(_row_parts(str(option.prompt))[1] for option in compact.options)
        assert "+ nbr " in str(compact.options[0].prompt)


async def test_the_readmes_explained_score_is_what_the_demo_shows(tmp_path: Path) -> None:
    """README step 3 quotes the explain view's score line for the first result of the
    agent's 'db pool exhausted connection' replayed on the demo, offline (the deterministic
    fallback): the same figures come out of the running code."""
    path = tmp_path / "demo.db"
    config = {"embedding": {"backend": "deterministic"}, "consolidation": {"enabled": False}}
    await build_demo(path, config)
    async with Engine.open(path, config=config) as engine:
        [entry] = [entry for entry in await engine.retrieval_log(50, caller="agent")
                   if entry["query"] == "db pool exhausted connection"]
        found = await engine.replay(entry["log_id"])
    first = found.results[0]
    vector_weight, fts_weight = found.ranking.applied_weights(found.legs.mode)
    assert first.parts is not None
    shown = (f"{first.score:.3f} = {vector_weight:.2f} × vector {first.vector_score:.3f} + "
             f"{fts_weight:.2f} × full text {first.fts_score:.3f}"
             + "".join(f" + {name} {value:.3f}" for name, value in first.parts.boosted.items()))
    readme = " ".join((Path(__file__).parent.parent / "README.md").read_text().split())
    assert f"(`{shown}` on the deterministic fallback)" in readme
    assert f"(`fused {first.parts.fused:.3f} + neighbour {first.parts.neighbour:.3f}`)" \
        in readme


def test_the_results_title_says_each_fusions_scale() -> None:
    ranking = Ranking(0.3, 0.7)
    assert score_scale(ranking, "hybrid") == (
        "score = fused (0.30 × vec + 0.70 × fts; each leg 0–1: its lowest hit 0) + boosts")
    assert "each leg 1/(60+rank)" in score_scale(Ranking(0.3, 0.7, fusion="rrf"), "hybrid")
    assert "mean ± 3σ" in score_scale(Ranking(0.3, 0.7, fusion="dbsf"), "hybrid")
    assert score_scale(ranking, "keyword").startswith("score = fused (0.00 × vec + 0.70 × fts")
