"""Keys that do what they say: no pane switches or queries from another pane's cursor,
digits that switch panes everywhere, grading keys that cannot be mistaken for them, a
question before anything is destroyed, home and end in every table, a replay that loads
its judgments, and a timeline that opens at its newest event and says when new ones
arrive below the cursor."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.widgets import DataTable, Input, ListView, Select, Static

from core import Engine
from tests.app_support import (
    FIXTURE_CONFIG,
    built_fixture,
    fixture_clock,
    running_app,
    settle,
)
from workbench.app.long_work import consolidate
from workbench.app.panes.scratchpad import ScratchpadPane
from workbench.app.panes.sessions import SessionsPane
from workbench.app.playground.log import LogList
from workbench.app.playground.pane import PlaygroundPane
from workbench.app.playground.plot import SweepPlot
from workbench.app.playground.results import ResultsList
from workbench.app.screens.confirm import ConfirmScreen

SIZE = (160, 48)


@pytest.fixture
def fixture_db(tmp_path: Path) -> Path:
    return built_fixture(tmp_path)


def active(app: Any) -> str:
    return str(app.query_one("TabbedContent").active)


async def search(pilot: Any, text: str) -> PlaygroundPane:
    """Show Search (F4, which works from anywhere), type ``text`` and run it."""
    await pilot.press("f4")
    await settle(pilot)
    pane = pilot.app.query_one(PlaygroundPane)
    box = pane.query_one("#pg-query", Input)
    box.focus()
    box.value = ""
    await pilot.press(*text, "enter")
    await settle(pilot)
    return pane


async def logged(app: Any) -> int:
    return len(await app.engine.retrieval_log(limit=1000))


async def test_browsing_sessions_after_a_search_stays_in_sessions(fixture_db: Path) -> None:
    async with running_app(fixture_db, build=False) as (app, pilot):
        await settle(pilot)
        playground = await search(pilot, "peanut allergy")
        asked, found = playground.asked, playground.found
        assert asked is not None and asked.scope == {"session_id": "trip-dolomites"}
        queries = await logged(app)
        await pilot.press("f1")
        await settle(pilot)
        sessions = app.query_one(SessionsPane)
        assert app.focused is sessions.table
        await pilot.press("down")
        await settle(pilot)
        # Still browsing sessions; nothing ran in Search.
        assert active(app) == "tab-sessions" and app.focused is sessions.table
        assert sessions.selected == "billing-4471"
        await pilot.press("up")
        await settle(pilot)
        assert active(app) == "tab-sessions" and sessions.selected == "trip-dolomites"
        # A click on a row is the same.
        await pilot.click("#sessions-table", offset=(5, 2))
        await settle(pilot)
        assert active(app) == "tab-sessions" and sessions.selected == "billing-4471"
        assert await logged(app) == queries
        assert playground.asked == asked and playground.found is found
        # Search follows the scope for its next query and says whose the shown answer is.
        await pilot.press("f4")
        await settle(pilot)
        assert playground.query_one("#pg-scope").value == ("session", "billing-4471")  # type: ignore[attr-defined]
        status = str(playground.query_one("#pg-status", Static).render())
        assert "results for trip-dolomites; r runs it in billing-4471" in status
        playground.query_one(ResultsList).focus()
        await pilot.press("r")
        await settle(pilot)
        assert playground.asked is not None
        assert playground.asked.scope == {"session_id": "billing-4471"}
        assert "results for" not in str(playground.query_one("#pg-status", Static).render())


async def test_digits_switch_panes_from_the_results_and_plus_minus_grade(
        fixture_db: Path) -> None:
    async with running_app(fixture_db, build=False) as (app, pilot):
        await settle(pilot)
        pane = await search(pilot, "peanut allergy huts")
        results = pane.query_one("#pg-results", ResultsList)
        assert app.focused is results and pane.found is not None
        first = pane.found.results[0].chunk_id
        await pilot.press("3")
        await settle(pilot)
        assert active(app) == "tab-scratchpad"
        assert pane.judgments == {}
        assert app.engine is not None
        assert await app.engine.judgments("peanut allergy huts",
                                          session_id="trip-dolomites") == {}
        await pilot.press("4")
        await settle(pilot)
        assert active(app) == "tab-playground"
        results.focus()
        await settle(pilot)
        # The grading keys are in the footer while the results have the cursor.
        shown = {binding.key_display or binding.key: binding.description
                 for _, binding, enabled, _tooltip in app.screen.active_bindings.values()
                 if binding.show}
        assert shown.get("+/-") == "Grade up/down" and "space" in shown
        await pilot.press("plus", "plus", "plus", "plus")
        await settle(pilot)
        assert pane.judgments == {first: 3}  # four steps up stop at 3
        await pilot.press("minus")
        await settle(pilot)
        assert pane.judgments == {first: 2}
        assert await app.engine.judgments("peanut allergy huts",
                                          session_id="trip-dolomites") == {first: 2}


async def test_compact_asks_first_and_says_what_goes_and_c_copies(
        fixture_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async with running_app(fixture_db, build=False) as (app, pilot):
        await settle(pilot)
        pane = app.query_one(SessionsPane)
        assert app.engine is not None
        copied: list[str] = []
        monkeypatch.setattr(app, "copy_json", lambda value, what: copied.append(what))
        await pilot.press("c")  # copy, as in every other pane: nothing is compacted
        await settle(pilot)
        assert copied == ["event #8"]
        assert not isinstance(app.screen, ConfirmScreen)
        await pilot.press("a")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmScreen)
        question = app.screen.question
        assert "Compact session “trip-dolomites” now?" in question
        assert "Its 8 messages (#1–#8)" in question
        assert "“archive trip-dolomites #1” in namespace 'planner'" in question
        assert "cannot be undone" in question
        await pilot.press("escape")
        await settle(pilot)
        assert await app.engine.list_archives("trip-dolomites") == []
        assert len(pane.timeline.records) == 8
        await pilot.press("a")
        await settle(pilot)
        await pilot.press("y")
        await settle(pilot)
        assert [a.archive_name for a in await app.engine.list_archives(
            "trip-dolomites")] == ["archive trip-dolomites #1"]
        # Nothing left since the new marker: it says so instead of asking.
        messages: list[str] = []
        monkeypatch.setattr(app, "notify", lambda message, **kw: messages.append(str(message)))
        await pilot.press("a")
        await settle(pilot)
        assert not isinstance(app.screen, ConfirmScreen)
        assert any("Nothing to compact in 'trip-dolomites'" in m for m in messages), messages


async def test_removing_a_scratchpad_item_asks_first_and_names_it(fixture_db: Path) -> None:
    async with running_app(fixture_db, build=False) as (app, pilot):
        await settle(pilot)
        await pilot.press("3")
        await settle(pilot)
        pane = app.query_one(ScratchpadPane)
        assert pane.items == ["book Rifugio Lagazuoi", "check cable car times"]
        await pilot.press("down", "d")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmScreen)
        assert ("Remove item 2 of the scratchpad of 'trip-dolomites'?" in app.screen.question
                and "“check cable car times” goes" in app.screen.question)
        await pilot.press("escape")
        await settle(pilot)
        assert pane.items == ["book Rifugio Lagazuoi", "check cable car times"]
        await pilot.press("d", "y")
        await settle(pilot)
        assert pane.items == ["book Rifugio Lagazuoi"]
        assert app.engine is not None
        state = await app.engine.read_scratchpad("trip-dolomites")
        assert state is not None and state.items == ["book Rifugio Lagazuoi"]


async def test_consolidate_from_the_palette_asks_first(fixture_db: Path) -> None:
    async with running_app(fixture_db, build=False) as (app, pilot):
        await settle(pilot)
        consolidate(app)
        await settle(pilot)
        assert isinstance(app.screen, ConfirmScreen)
        assert "Compact every conversation idle for more than" in app.screen.question
        await pilot.press("escape")
        await settle(pilot)
        assert app.engine is not None
        assert await app.engine.list_archives() == []


@pytest.mark.parametrize(("key", "table_id"), [
    ("1", "#sessions-table"), ("2", "#notes-table"), ("5", "#schedule-table")])
async def test_home_and_end_move_the_cursor_in_every_table(
        fixture_db: Path, key: str, table_id: str) -> None:
    async with running_app(fixture_db, build=False) as (app, pilot):
        await settle(pilot)
        await pilot.press(key)
        await settle(pilot)
        if key == "2":  # the namespace with two notes
            app.query_one("#notes-namespace", Select).value = "support"
            await settle(pilot)
        table = app.query_one(table_id, DataTable)
        table.focus()
        table.move_cursor(row=0)
        await settle(pilot)
        assert table.row_count >= 2
        await pilot.press("end")
        await settle(pilot)
        assert table.cursor_row == table.row_count - 1
        await pilot.press("home")
        await settle(pilot)
        assert table.cursor_row == 0


async def test_home_and_end_move_the_cursor_in_the_scratchpad(fixture_db: Path) -> None:
    async with running_app(fixture_db, build=False) as (app, pilot):
        await settle(pilot)
        await pilot.press("3")
        await settle(pilot)
        items = app.query_one("#scratch-items", ListView)
        assert app.focused is items and items.index == 0
        await pilot.press("end")
        await settle(pilot)
        assert items.index == 1
        await pilot.press("home")
        await settle(pilot)
        assert items.index == 0


async def test_a_replayed_judged_query_sweeps(fixture_db: Path) -> None:
    async with running_app(fixture_db, build=False) as (app, pilot):
        await settle(pilot)
        engine = app.engine
        assert engine is not None
        found = await engine.search(query="peanut allergy", session_id="trip-dolomites")
        await engine.judge("peanut allergy", found.results[0].chunk_id, 3,
                           session_id="trip-dolomites")
        # Search opens on another session's scope, then replays the agent's query.
        app.current_session = "billing-4471"
        await pilot.press("4")
        await settle(pilot)
        pane = app.query_one(PlaygroundPane)
        index = next(i for i, e in enumerate(pane.log_entries)
                     if e["query"] == "peanut allergy" and e["caller"] == "agent")
        log = pane.query_one(LogList)
        log.focus()
        log.highlighted = index
        await pilot.press("enter")
        await settle(pilot)
        assert pane.judgments == {found.results[0].chunk_id: 3}
        assert pane.judged_set is not None and pane.judged_set.queries == ["peanut allergy"]
        await pilot.press("w")
        await settle(pilot)
        assert len(pane.query_one(SweepPlot).points) == 11


async def write_summary(path: Path, session_id: str, lines: int) -> None:
    """A rolling summary of ``lines`` lines: its box above the timeline grows with it."""
    with fixture_clock():
        async with Engine.open(path, config=FIXTURE_CONFIG) as engine:
            text = "\n".join(f"- line {n} of what was said" for n in range(lines))
            await engine.write_summary_state(session_id, text, 3, 0)


@pytest.mark.parametrize("height", [28, 32])
async def test_a_session_picked_with_the_arrows_opens_at_its_newest_event(
        fixture_db: Path, height: int) -> None:
    await write_summary(fixture_db, "trip-dolomites", 8)
    async with running_app(fixture_db, build=False, size=(160, height)) as (app, pilot):
        await settle(pilot)
        pane = app.query_one(SessionsPane)
        timeline = pane.timeline
        assert timeline.max_scroll_y > 0  # the timeline is taller than its box
        assert timeline.scroll_y == timeline.max_scroll_y
        pane.table.focus()
        await pilot.press("down")
        await settle(pilot)
        await pilot.press("up")
        await settle(pilot)
        assert pane.selected == "trip-dolomites"
        assert timeline.highlighted_record is not None
        assert timeline.highlighted_record.sequence == 8
        assert timeline.scroll_y == timeline.max_scroll_y


async def test_new_events_below_the_cursor_are_counted_until_it_reaches_them(
        fixture_db: Path) -> None:
    async with running_app(fixture_db, build=False) as (app, pilot):
        await settle(pilot)
        pane = app.query_one(SessionsPane)
        timeline = pane.timeline
        legend = pane.query_one("#timeline-legend", Static)
        timeline.focus()
        timeline.highlighted = timeline.index_of(3)
        await settle(pilot)
        async with Engine.open(fixture_db, config=FIXTURE_CONFIG) as agent:
            for text in ("Are the huts open on 24 June?", "Book two nights."):
                await agent.append("trip-dolomites", {"role": "user", "content": text})
        await app._poll_once()
        await settle(pilot)
        assert [r.sequence for r in timeline.records][-2:] == [9, 10]
        assert timeline.highlighted_record is not None
        assert timeline.highlighted_record.sequence == 3  # the cursor stays
        assert "▼ 2 new below (end goes there)" in str(legend.render())
        await pilot.press("end")
        await settle(pilot)
        assert "new below" not in str(legend.render())
        # At the newest event, the next one is followed, not counted.
        async with Engine.open(fixture_db, config=FIXTURE_CONFIG) as agent:
            await agent.append("trip-dolomites", {"role": "user", "content": "Thanks."})
        await app._poll_once()
        await settle(pilot)
        assert timeline.highlighted_record is not None
        assert timeline.highlighted_record.sequence == 11
        assert "new below" not in str(legend.render())
