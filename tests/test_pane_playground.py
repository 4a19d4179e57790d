"""The Search playground: querying, re-ranking without I/O, explaining, judging, sweeping,
A | B, replaying the retrieval log, tri-hybrid; and snapshots of the pane and the explain view."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Input, Select, Static

from core.evaluation.judged import score_ranking
from tests.app_support import (
    built_fixture,
    fixture_clock,
    make_app,
    running_app,
    settle,
)
from workbench.app.playground.controls import WeightSlider
from workbench.app.playground.log import LogList
from workbench.app.playground.pane import PlaygroundPane
from workbench.app.playground.plot import SweepPlot
from workbench.app.playground.ranking import NO_RESULTS
from workbench.app.playground.results import ResultsList
from workbench.app.playground.sweep import NO_JUDGMENTS_SWEEP
from workbench.app.screens.explain import ExplainScreen

SIZE = (160, 48)


@pytest.fixture
def fixture_db(tmp_path: Path) -> Path:
    return built_fixture(tmp_path)


async def open_playground(pilot: Any, session: str = "trip-dolomites") -> PlaygroundPane:
    """Select ``session`` as Sessions would, then show the Search pane."""
    app = pilot.app
    await settle(pilot)
    app.current_session = session
    app.screen.set_focus(None)
    app.action_show_pane("playground")
    await settle(pilot)
    return app.query_one(PlaygroundPane)


async def ask(pilot: Any, pane: PlaygroundPane, text: str, mode: str | None = None) -> None:
    """Type a query in the query box (in ``mode``) and press enter."""
    if mode is not None:
        pane.query_one("#pg-mode", Select).value = mode
    box = pane.query_one("#pg-query", Input)
    box.focus()
    box.value = ""
    await pilot.press(*text, "enter")
    await settle(pilot)


def plain(widget: Static) -> str:
    return str(widget.render())


def fixed_timings(engine: Any) -> None:
    """Make the legs' timings constant, so a snapshot does not show measured times."""
    search = engine.search

    async def timed_search(**request: Any) -> Any:
        found = await search(**request)
        found.legs.timings_ms = {name: 0.4 for name in sorted(found.legs.timings_ms)}
        return found

    engine.search = timed_search


def option_texts(results: ResultsList) -> list[str]:
    return [str(option.prompt) for option in results.options]


async def test_a_keyword_query_shows_ranked_results(fixture_db: Path) -> None:
    async with running_app(fixture_db, build=False) as (app, pilot):
        pane = await open_playground(pilot)
        assert "Type a query and press enter" in plain(pane.query_one("#pg-empty", Static))
        assert pane.query_one("#pg-scope", Select).value == ("session", "trip-dolomites")
        await ask(pilot, pane, "peanut allergy", mode="keyword")
        assert pane.found is not None and pane.found.legs.mode == "keyword"
        texts = option_texts(pane.query_one("#pg-results", ResultsList))
        assert texts and "peanuts" in texts[0]
        assert all(r.vector_score == 0 for r in pane.found.results)
        assert "results" in plain(pane.query_one("#pg-status", Static))
        assert app.focused is pane.query_one("#pg-results", ResultsList)


async def test_moving_a_weight_reranks_the_kept_legs_without_the_engine(
        fixture_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async with running_app(fixture_db, build=False) as (app, pilot):
        pane = await open_playground(pilot)
        await ask(pilot, pane, "rain in june")
        assert pane.found is not None
        before = [r.chunk_id for r in pane.found.results]
        calls: list[dict[str, Any]] = []
        engine = app.engine
        assert engine is not None

        async def counted(**request: Any) -> Any:
            calls.append(request)
            raise AssertionError("re-ranking must not query the engine")

        monkeypatch.setattr(engine, "search", counted)
        slider = pane.query_one("#pg-vector", WeightSlider)
        slider.focus()
        await pilot.press("right", "right", "right", "right")  # 0.30 -> 0.50
        await settle(pilot)
        assert slider.value == pytest.approx(0.5)
        assert pane.found.ranking.vector_weight == pytest.approx(0.5)
        after = [r.chunk_id for r in pane.found.results]
        assert after != before and pane.previous is not None  # the step before the last
        assert any(mark in "".join(option_texts(pane.query_one("#pg-results", ResultsList)))
                   for mark in ("↑", "↓"))
        await pilot.press("[")  # the pane's key moves the vector weight back a step
        pane.query_one("#pg-fusion", Select).value = "rrf"
        await settle(pilot)
        assert pane.found.ranking.fusion == "rrf"
        assert pane.found.ranking.vector_weight == pytest.approx(0.45)
        assert calls == []


async def test_explain_shows_the_legs_terms_and_notes(fixture_db: Path) -> None:
    async with running_app(fixture_db, build=False) as (app, pilot):
        pane = await open_playground(pilot)
        await ask(pilot, pane, "peanut allergy huts")
        await pilot.press("e")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, ExplainScreen) and screen.rank == 1
        shown = "\n".join(plain(s) for s in screen.query(Static))
        assert "matched in the text" in shown
        assert screen.result_explained is not None
        assert "peanut" in screen.result_explained["matched_terms"]
        assert "peanut" in shown and "Timings" in shown
        await pilot.press("escape")
        # A threshold the vector leg alone cannot reach, even with the neighbour boost
        # (0.3 + 0.3 × 1.0): the notes say so.
        pane.query_one("#pg-min", Input).value = "0.65"
        await settle(pilot)
        await pilot.press("e")
        await settle(pilot)
        shown = "\n".join(plain(s) for s in app.screen.query(Static))
        assert "can never be returned" in shown


async def test_explain_names_what_answered_each_leg_and_whether_it_is_exact(
        fixture_db: Path) -> None:
    async with running_app(fixture_db, build=False) as (app, pilot):
        pane = await open_playground(pilot)
        await ask(pilot, pane, "peanut allergy huts")
        await pilot.press("e")
        await settle(pilot)
        shown = "\n".join(plain(s) for s in app.screen.query(Static))
        # The fixture's saved indexes answer when they were loaded; SQL when they were not.
        assert ("vector sqlite-vec · full text database · exact" in shown
                or "vector session rows of the namespace matrix (numpy, exact) · full text"
                   " derived index · exact" in shown), shown
        await pilot.press("escape")
        # A namespace's legs from the indexes derived from the file, once they are built.
        assert app.engine is not None
        holder = app.engine.backend.derived  # type: ignore[attr-defined]
        for name in ("namespace-vectors", "full-text"):
            await asyncio.to_thread(holder.build_now, name)
        pane.query_one("#pg-scope", Select).value = ("namespace", "support")
        await settle(pilot)
        await ask(pilot, pane, "charged twice")
        await pilot.press("e")
        await settle(pilot)
        shown = "\n".join(plain(s) for s in app.screen.query(Static))
        assert ("vector namespace matrix (int8 scan, exact) · full text derived index · exact"
                in shown)
        await pilot.press("escape")
        # An approximate answer (PostgreSQL's HNSW) says so.
        assert pane.found is not None
        pane.found.legs.vector_approximate = "approximate (HNSW): may miss a few"
        await pilot.press("e")
        await settle(pilot)
        shown = "\n".join(plain(s) for s in app.screen.query(Static))
        assert "approximate: approximate (HNSW): may miss a few" in shown


async def test_judging_updates_recall_and_ndcg_live(fixture_db: Path) -> None:
    async with running_app(fixture_db, build=False) as (app, pilot):
        pane = await open_playground(pilot)
        await ask(pilot, pane, "peanut allergy huts")
        judged = pane.query_one("#pg-judged", Static)
        assert "space marks" in plain(judged)
        assert pane.found is not None
        first, second = (r.chunk_id for r in pane.found.results[:2])
        await pilot.press("space")  # relevant (grade 2)
        await settle(pilot)
        await pilot.press("down", "plus", "plus", "plus")
        await settle(pilot)
        assert pane.judgments == {first: 2, second: 3}
        assert app.engine is not None
        assert await app.engine.judgments("peanut allergy huts",
                                          session_id="trip-dolomites") == pane.judgments
        assert "recall@10" in plain(judged) and "1.00" in plain(judged)
        top_k = pane.query_one("#pg-topk", Input)
        top_k.value = "1"
        await settle(pilot)
        score = score_ranking(pane.found, pane.judgments)
        assert score is not None and score.recall == 0.5
        assert "recall@1" in plain(judged) and "0.50" in plain(judged)
        await pilot.press("space")  # the highlighted result stays highlighted: toggles off
        await settle(pilot)
        assert pane.judgments[first] == 0


async def test_the_sweep_draws_eleven_weights_against_the_judgments(
        fixture_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async with running_app(fixture_db, build=False) as (app, pilot):
        pane = await open_playground(pilot)
        await ask(pilot, pane, "rain in june")
        plot = pane.query_one(SweepPlot)
        assert plot.message == NO_JUDGMENTS_SWEEP and "mark relevant" in str(plot.render())
        await pilot.press("w")  # nothing judged yet: it says what to do
        await settle(pilot)
        assert plot.points == ()
        await pilot.press("space")
        await settle(pilot)
        reports: list[tuple[int, int | None]] = []
        run_long = app.run_long

        def spied(label: str, job: Any) -> Any:
            async def reported(report: Any) -> str:
                def spy(done: int, total: int | None, new_label: str | None = None) -> None:
                    reports.append((done, total))
                    report(done, total, new_label)
                return await job(spy)
            return run_long(label, reported)

        monkeypatch.setattr(app, "run_long", spied)
        await pilot.press("w")
        await settle(pilot)
        assert reports == [(done, 11) for done in range(1, 12)]  # progress per weight
        assert len(plot.points) == 11
        assert [p.vector_weight for p in plot.points] == [i / 10 for i in range(11)]
        assert plot.best is not None
        drawn = str(plot.render())
        assert "★" in drawn and "▲ now 0.30" in drawn


async def test_the_judged_set_shows_intervals_a_b_and_a_warning(fixture_db: Path) -> None:
    async with running_app(fixture_db, build=False) as (app, pilot):
        pane = await open_playground(pilot)
        judged = pane.query_one("#pg-judged", Static)
        for text in ("rain in june", "peanut allergy huts"):
            await ask(pilot, pane, text)
            await pilot.press("space")
            await settle(pilot)
        assert pane.judged_set is not None and pane.judged_set.queries == [
            "rain in june", "peanut allergy huts"]
        shown = plain(judged)
        assert "all 2 judged queries here, 95%" in shown and "recall@10 " in shown
        assert "only 2 judged queries: too few to tell settings apart" in shown
        await pilot.press("p")
        await settle(pilot)
        for _ in range(6):
            await pilot.press("]")
        await settle(pilot)
        assert "B − A recall@10 " in plain(judged) and "noise" in plain(judged)
        await ask(pilot, pane, "rain in june")
        # Each judged query was searched when it was asked: the set runs none again.
        assert not [e for e in pane.log_entries if e["caller"] == "judged"]


async def test_a_b_shows_both_rankings_and_what_moved(fixture_db: Path) -> None:
    async with running_app(fixture_db, build=False) as (app, pilot):
        pane = await open_playground(pilot)
        await ask(pilot, pane, "rain in june")
        await pilot.press("p")
        await settle(pilot)
        for _ in range(6):
            await pilot.press("]")
        await settle(pilot)
        a_list = pane.query_one("#pg-a", ResultsList)
        b_list = pane.query_one("#pg-results", ResultsList)
        assert a_list.display and a_list.option_count == b_list.option_count
        assert str(a_list.border_title).startswith("A  vector 0.30")
        assert str(b_list.border_title).startswith("B  vector 0.60")
        assert "B vs A" in plain(pane.query_one("#pg-status", Static))
        await pilot.press("p")
        await settle(pilot)
        assert not a_list.display


async def test_replaying_the_agents_query_from_the_log(fixture_db: Path) -> None:
    async with running_app(fixture_db, build=False) as (app, pilot):
        pane = await open_playground(pilot, session="billing-4471")
        entries = pane.log_entries
        index = next(i for i, e in enumerate(entries)
                     if e["query"] == "peanut allergy" and e["caller"] == "agent")
        log = pane.query_one(LogList)
        log.focus()
        log.highlighted = index
        await pilot.press("enter")
        await settle(pilot)
        assert pane.query_one("#pg-query", Input).value == "peanut allergy"
        assert pane.query_one("#pg-scope", Select).value == ("session", "trip-dolomites")
        assert pane.query_one("#pg-mode", Select).value == "hybrid"
        assert pane.found is not None and pane.found.results
        assert pane.query_one("#pg-vector", WeightSlider).value == pytest.approx(0.3)
        assert "peanuts" in "".join(option_texts(pane.query_one("#pg-results",
                                                               ResultsList)))
        assert pane.log_entries[0]["caller"] == "replay"


async def test_escape_leaves_the_query_box_before_any_query_and_after_one(
        fixture_db: Path) -> None:
    async with running_app(fixture_db, build=False) as (app, pilot):
        pane = await open_playground(pilot)
        box = pane.query_one("#pg-query", Input)
        box.focus()
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.focused, LogList)  # no results yet: the log, not stuck
        await ask(pilot, pane, "peanut allergy", mode="keyword")
        box.focus()
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.focused, ResultsList)


async def test_tri_hybrid_shows_each_events_reasons(fixture_db: Path) -> None:
    async with running_app(fixture_db, build=False) as (app, pilot):
        pane = await open_playground(pilot)
        await ask(pilot, pane, "peanut allergy", mode="tri-hybrid")
        assert pane.context is not None and pane.found is None
        texts = option_texts(pane.query_one("#pg-results", ResultsList))
        assert any("recency" in text and "salience" in text and "allergic" in text
                   for text in texts)
        assert pane.query_one("#pg-vector", WeightSlider).disabled
        assert "salient" in plain(pane.query_one("#pg-status", Static))


async def test_no_results_explain_says_why_and_reload_keeps_the_query(
        fixture_db: Path) -> None:
    async with running_app(fixture_db, build=False) as (app, pilot):
        pane = await open_playground(pilot)
        await ask(pilot, pane, "xylophone", mode="keyword")
        assert pane.found is not None and not pane.found.results
        assert option_texts(pane.query_one("#pg-results", ResultsList)) == [NO_RESULTS]
        await pilot.press("e")
        await settle(pilot)
        assert isinstance(app.screen, ExplainScreen) and app.screen.result is None
        await pilot.press("escape")
        found = pane.found
        pane.reload()  # what a live refresh does: the query and its answer stay
        await settle(pilot)
        assert pane.query_one("#pg-query", Input).value == "xylophone"
        assert pane.found is found


async def test_the_scope_follows_the_session_selected_in_sessions(fixture_db: Path) -> None:
    async with running_app(fixture_db, build=False) as (app, pilot):
        pane = await open_playground(pilot)
        await ask(pilot, pane, "charged twice")
        found = pane.found
        app.current_session = "billing-4471"
        await settle(pilot)
        assert pane.query_one("#pg-scope", Select).value == ("session", "billing-4471")
        assert pane.found is found  # the next query's scope; nothing runs until asked
        await pilot.press("r")
        await settle(pilot)
        assert pane.found is not None
        assert {r.session_id for r in pane.found.results} == {"billing-4471"}
        pane.query_one("#pg-scope", Select).value = ("namespace", "support")
        await settle(pilot)
        assert pane.asked is not None and pane.asked.scope == {"namespace": "support"}


async def test_copying_a_result_as_json(fixture_db: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    async with running_app(fixture_db, build=False) as (app, pilot):
        pane = await open_playground(pilot)
        await ask(pilot, pane, "peanut allergy huts")
        copied: list[tuple[Any, str]] = []
        monkeypatch.setattr(app, "copy_json", lambda value, what: copied.append(
            (value, what)))
        await pilot.press("c")
        assert copied and copied[0][1] == "result #1"
        assert copied[0][0]["rank"] == 1 and "fts" in copied[0][0]


def _snapshot_app(fixture_db: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The app on the fixture, named by a relative path: the header shows the file's path,
    and tmp_path's differs from run to run."""
    monkeypatch.chdir(fixture_db.parent)
    return make_app(Path(fixture_db.name))


def test_snapshot_playground(snap_compare: Any, fixture_db: Path,
                             monkeypatch: pytest.MonkeyPatch) -> None:
    async def run_before(pilot: Any) -> None:
        pane = await open_playground(pilot)
        fixed_timings(pilot.app.engine)
        pane.query_one("#pg-topk", Input).value = "5"
        await ask(pilot, pane, "rain in june")
        for grade_keys in (("plus", "plus", "plus"), ("down", "plus", "plus"),
                           ("down", "down", "space")):
            await pilot.press(*grade_keys)
            await settle(pilot)
        await pilot.press("home")
        await pilot.press("w")
        await settle(pilot)
        for _ in range(4):
            await pilot.press("]")
        await settle(pilot)
        pilot.app.clear_notifications()
        await settle(pilot)

    with fixture_clock():
        assert snap_compare(_snapshot_app(fixture_db, monkeypatch), run_before=run_before,
                            terminal_size=SIZE)


def test_snapshot_explain(snap_compare: Any, fixture_db: Path,
                          monkeypatch: pytest.MonkeyPatch) -> None:
    async def run_before(pilot: Any) -> None:
        pane = await open_playground(pilot)
        fixed_timings(pilot.app.engine)
        pane.query_one("#pg-min", Input).value = "0.35"  # the vector leg alone cannot pass
        await ask(pilot, pane, "peanut allergy huts")
        await pilot.press("down", "e")
        await settle(pilot)

    with fixture_clock():
        assert snap_compare(_snapshot_app(fixture_db, monkeypatch), run_before=run_before,
                            terminal_size=SIZE)


async def test_a_long_session_name_is_cut_in_the_scope_box_not_wrapped() -> None:
    from textual.app import App, ComposeResult

    from core.types import SessionInfo
    from workbench.app.playground.ask import AskBar

    class Bar(App[None]):
        def compose(self) -> ComposeResult:
            yield AskBar(id="ask")

    app = Bar()
    async with app.run_test(size=SIZE) as pilot:
        name = "research-alta-via-1-planning-for-the-summer"
        session = SessionInfo(session_id=name, agent_identity=None, created_at="", updated_at="",
                              event_count=0, chunk_count=0, last_sequence=None)
        app.query_one(AskBar).show_scopes([session], name)
        await pilot.pause()
        label = app.query_one("#pg-scope SelectCurrent #label", Static)
        assert label.size.height == 1
        shown = label.render_line(0).text
        assert shown.startswith("session research-") and shown.rstrip().endswith("…")
