"""The Sessions pane: the list and its filter, the timeline with folded tool calls, the
restore preview, delete, summarize, compact, export, copy and live refresh."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from core import Engine
from tests.app_support import (
    FIXTURE_CONFIG,
    build_fixture,
    fixture_clock,
    make_app,
    running_app,
    settle,
)
from workbench.app.panes.sessions import SessionsPane, export_file_name
from workbench.app.screens.confirm import ConfirmScreen
from workbench.app.screens.prompt import PromptScreen
from workbench.app.widgets.timeline import Timeline

SIZE = (160, 48)


@pytest.fixture
def fixture_db(tmp_path: Path) -> Path:
    return tmp_path / "fixture.db"


def pane_of(app: Any) -> SessionsPane:
    return app.query_one("#sessions", SessionsPane)


def table_ids(pane: SessionsPane) -> list[str]:
    return [key.value for key in pane.table.rows]


def text_of(pane: SessionsPane, selector: str) -> str:
    return str(pane.query_one(selector).render())


def prompt_of(timeline: Timeline, sequence: int) -> str:
    return timeline.get_option(f"e{sequence}").prompt.plain  # type: ignore[union-attr]


def captured(app: Any, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    messages: list[str] = []
    monkeypatch.setattr(app, "notify", lambda message, **kw: messages.append(str(message)))
    return messages


async def highlight(pilot: Any, sequence: int) -> Timeline:
    timeline = pilot.app.query_one(Timeline)
    timeline.focus()
    timeline.highlighted = timeline.index_of(sequence)
    await settle(pilot)
    return timeline


async def test_sessions_newest_first_and_the_filter(fixture_db: Path) -> None:
    async with running_app(fixture_db) as (app, pilot):
        await settle(pilot)
        pane = pane_of(app)
        assert table_ids(pane) == ["trip-dolomites", "billing-4471"]
        assert "2 note stores hidden" in text_of(pane, "#sessions-count")
        assert pane.selected == app.current_session == "trip-dolomites"
        await pilot.press("slash", *"support")
        await settle(pilot)
        assert table_ids(pane) == ["billing-4471"]
        assert pane.selected == app.current_session == "billing-4471"
        assert "1 of 2 sessions" in text_of(pane, "#sessions-count")
        pane.query_one("#sessions-filter").value = "nothing-like-it"  # type: ignore[attr-defined]
        await settle(pilot)
        assert table_ids(pane) == []
        assert "No session matches" in text_of(pane, "#session-title")


async def test_selecting_shows_the_timeline_with_tool_calls_folded(fixture_db: Path) -> None:
    async with running_app(fixture_db) as (app, pilot):
        await settle(pilot)
        pane = pane_of(app)
        pane.table.focus()
        await pilot.press("down")
        await settle(pilot)
        assert app.current_session == "billing-4471"
        assert [r.sequence for r in pane.timeline.records] == [1, 2, 3, 4]
        assert "← lookup_invoice: " in prompt_of(pane.timeline, 3)
        await pilot.press("up")
        await settle(pilot)
        assert app.current_session == "trip-dolomites"
        timeline = pane.timeline
        assert len(timeline.records) == 8
        folded = prompt_of(timeline, 4)
        assert '▸ → weather_forecast(place="Cortina", month=6)' in folded
        assert '"place": "Cortina",' not in folded
        assert "← weather_forecast: " in prompt_of(timeline, 5)  # named from its call
        assert "★ 0.95" in prompt_of(timeline, 7)  # salient
        await highlight(pilot, 4)
        await pilot.press("enter")
        await settle(pilot)
        unfolded = prompt_of(timeline, 4)
        assert "▾ → weather_forecast" in unfolded and '"place": "Cortina",' in unfolded
        await pilot.press("space")
        await settle(pilot)
        assert prompt_of(timeline, 4) == folded


async def test_a_small_restore_budget_drops_the_oldest_messages(fixture_db: Path) -> None:
    async with running_app(fixture_db) as (app, pilot):
        await settle(pilot)
        pane = pane_of(app)
        assert pane.restore_result is not None and pane.restore_result.dropped == 0
        budget = pane.query_one("#restore-budget")
        budget.value = "60"  # type: ignore[attr-defined]
        await settle(pilot)
        result = pane.restore_result
        assert result is not None and result.token_budget == 60
        assert 0 < result.dropped < 8
        kept = {s for s in result.sequences if s is not None}
        assert 8 in kept and 1 not in kept
        assert prompt_of(pane.timeline, 1).startswith("○")
        assert prompt_of(pane.timeline, 8).startswith("●")
        status = text_of(pane, "#restore-status")
        assert f"{result.tokens_used} / 60 tokens" in status
        assert f"{result.dropped} dropped" in status
        budget.value = ""  # type: ignore[attr-defined]
        await settle(pilot)
        assert "enter a token budget" in text_of(pane, "#restore-status")
        assert prompt_of(pane.timeline, 8).startswith("  #8")


async def test_delete_asks_first_and_says_what_goes(fixture_db: Path) -> None:
    async with running_app(fixture_db) as (app, pilot):
        await settle(pilot)
        pane = pane_of(app)
        await pilot.press("d")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmScreen)
        question = app.screen.question
        assert "8 events" in question and "8 chunks" in question
        assert "the scratchpad (2 items)" in question
        await pilot.press("escape")
        await settle(pilot)
        assert table_ids(pane) == ["trip-dolomites", "billing-4471"]
        assert [s.session_id for s in await app.engine.list_sessions()].count(
            "trip-dolomites") == 1
        await pilot.press("d")
        await settle(pilot)
        await pilot.press("y")
        await settle(pilot)
        assert table_ids(pane) == ["billing-4471"]
        assert pane.selected == app.current_session == "billing-4471"
        assert "trip-dolomites" not in [s.session_id for s in await app.engine.list_sessions()]


async def test_summarize_and_compact_now_say_what_they_did(
        fixture_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async with running_app(fixture_db) as (app, pilot):
        await settle(pilot)
        pane = pane_of(app)
        messages = captured(app, monkeypatch)
        await pilot.press("s")
        await settle(pilot)
        assert any(m.startswith("No summary written: ") for m in messages), messages
        await pilot.press("a")  # compact asks first (tests/test_app_keys.py): yes
        await settle(pilot)
        await pilot.press("y")
        await settle(pilot)
        assert any("Compacted 8 messages (#1–#8) into “archive trip-dolomites #1”" in m
                   for m in messages), messages
        marker = pane.timeline.records[-1]
        assert marker.sequence == 9
        shown = prompt_of(pane.timeline, 9)
        assert "◆ compact marker" in shown and "archive trip-dolomites #1" in shown
        assert "archived" in prompt_of(pane.timeline, 2)
        await pilot.press("a")
        await settle(pilot)
        assert any("Nothing to compact" in m for m in messages), messages


async def test_export_writes_the_events_to_the_file_named(fixture_db: Path,
                                                          tmp_path: Path) -> None:
    target = tmp_path / "out" / "trip.json"
    target.parent.mkdir()
    async with running_app(fixture_db) as (app, pilot):
        await settle(pilot)
        await pilot.press("e")
        await settle(pilot)
        assert isinstance(app.screen, PromptScreen)
        field = app.screen.query_one("#prompt-input")
        field.value = str(target)  # type: ignore[attr-defined]
        await pilot.press("enter")
        await settle(pilot)
    document = json.loads(target.read_text(encoding="utf-8"))
    assert [e["sequence"] for e in document["events"]] == list(range(1, 9))
    assert document["scratchpad"]["items"] == ["book Rifugio Lagazuoi", "check cable car times"]
    assert export_file_name("a/b c") == "a_b_c.json"


async def test_export_offers_the_exports_folder_beside_the_memory_not_the_current_folder(
        fixture_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    exports = (tmp_path / "exports").resolve()
    messages: list[str] = []
    async with running_app(fixture_db) as (app, pilot):
        await settle(pilot)
        monkeypatch.setattr(app, "notify", lambda message, **kw: messages.append(message))
        for typed in (None, "mine.json"):
            await pilot.press("e")
            await settle(pilot)
            field = app.screen.query_one("#prompt-input")
            assert field.value == str(exports / "trip-dolomites.json")  # type: ignore[attr-defined]
            if typed is not None:
                field.value = typed  # type: ignore[attr-defined]
            await pilot.press("enter")
            await settle(pilot)
    assert messages[0].endswith(f" to {exports / 'trip-dolomites.json'}"), messages
    assert messages[1].endswith(f" to {exports / 'mine.json'}"), messages
    assert json.loads((exports / "mine.json").read_text())["events"]
    assert list(elsewhere.iterdir()) == []


async def test_copy_event_copies_the_highlighted_record(
        fixture_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async with running_app(fixture_db) as (app, pilot):
        await settle(pilot)
        copied: list[tuple[Any, str]] = []
        monkeypatch.setattr(app, "copy_json", lambda value, what: copied.append(
            (value, what)))
        await highlight(pilot, 4)
        await pilot.press("c")
        assert copied[0][1] == "event #4"
        assert copied[0][0]["payload"]["tool_calls"][0]["function"]["name"] == (
            "weather_forecast")


async def test_live_refresh_keeps_the_selection_and_shows_new_messages(
        fixture_db: Path) -> None:
    async with running_app(fixture_db) as (app, pilot):
        await settle(pilot)
        pane = pane_of(app)
        pane.table.focus()
        await pilot.press("down")
        await settle(pilot)
        assert pane.selected == "billing-4471"
        async with Engine.open(fixture_db, config=FIXTURE_CONFIG) as agent:
            await agent.append("billing-4471", {"role": "user",
                                                "content": "Thanks, refund received."})
            await agent.write_summary_state("billing-4471", "- user #1: charged twice", 1, 0)
        await app._poll_once()
        await settle(pilot)
        assert table_ids(pane) == ["billing-4471", "trip-dolomites"]  # newest first
        assert pane.selected == app.current_session == "billing-4471"
        assert pane.table.cursor_row == 0
        assert pane.timeline.records[-1].payload["content"] == "Thanks, refund received."
        summary = text_of(pane, "#session-summary")
        assert "epoch 1" in summary and "covers up to #1" in summary
        assert "summarized" in prompt_of(pane.timeline, 1)


async def test_long_sessions_load_the_latest_events_then_earlier_ones(
        fixture_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import workbench.app.panes.sessions as sessions_module

    monkeypatch.setattr(sessions_module, "PAGE", 3)
    async with running_app(fixture_db) as (app, pilot):
        await settle(pilot)
        pane = pane_of(app)
        assert [r.sequence for r in pane.timeline.records] == [6, 7, 8]
        assert "5 earlier events" in str(pane.timeline.get_option("earlier").prompt)
        await pilot.press("l")
        await settle(pilot)
        assert [r.sequence for r in pane.timeline.records] == [3, 4, 5, 6, 7, 8]
        assert pane.timeline.highlighted_record.sequence == 5  # type: ignore[union-attr]
        pane.timeline.focus()
        pane.timeline.highlighted = 0
        await pilot.press("enter")
        await settle(pilot)
        assert len(pane.timeline.records) == 8 and not pane.timeline.earlier


async def test_an_empty_file_says_what_to_do(tmp_path: Path) -> None:
    app = make_app(tmp_path / "empty.db")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        pane = pane_of(app)
        assert pane.query_one("#sessions-empty").display
        assert "No sessions yet" in text_of(pane, "#sessions-empty")
        await pilot.press("d")
        await settle(pilot)
        assert not isinstance(app.screen, ConfirmScreen)


def test_snapshot_sessions_with_a_tool_call_unfolded(
        snap_compare: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # the header shows the path as given: keep it the same
    with fixture_clock():
        asyncio.run(build_fixture(tmp_path / "fixture.db"))
    app = make_app(Path("fixture.db"))

    async def run_before(pilot: Any) -> None:
        await settle(pilot)
        pilot.app.query_one("#restore-budget").value = "90"
        await settle(pilot)
        await highlight(pilot, 4)
        await pilot.press("enter")
        await settle(pilot)

    with fixture_clock():
        assert snap_compare(app, run_before=run_before, terminal_size=SIZE)


def test_snapshot_sessions_empty(snap_compare: Any, tmp_path: Path,
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    app = make_app(Path("empty.db"))

    async def run_before(pilot: Any) -> None:
        await settle(pilot)

    with fixture_clock():
        assert snap_compare(app, run_before=run_before, terminal_size=SIZE)


async def test_a_message_its_framework_removed_is_tagged_removed(fixture_db: Path) -> None:
    from langchain_core.messages import HumanMessage

    from core.integrations.langgraph import WorkbenchSaver
    from tests.test_langgraph_saver import chat_graph

    with fixture_clock():
        await build_fixture(fixture_db)
        async with Engine.open(fixture_db, config=FIXTURE_CONFIG) as engine:
            graph = chat_graph(WorkbenchSaver(engine))
            thread = {"configurable": {"thread_id": "graph-thread"}}
            await graph.ainvoke({"messages": [HumanMessage("Lisbon", id="u-1")]}, thread)
            await graph.ainvoke({"messages": [HumanMessage("forget:tool-Lisbon", id="u-2")]},
                                thread)
    async with running_app(fixture_db, build=False) as (app, pilot):
        await settle(pilot)
        await pilot.press("slash", *"graph-thread")
        await settle(pilot)
        pane = pane_of(app)
        assert pane.selected == "graph-thread"
        assert [r.sequence for r in pane.timeline.records] == [1, 2, 3, 4]
        assert "removed" in prompt_of(pane.timeline, 3).splitlines()[0]
        assert all("removed" not in prompt_of(pane.timeline, s).splitlines()[0]
                   for s in (1, 2, 4))
