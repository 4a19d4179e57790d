"""The Scratchpad pane: following the session, add, edit in place, reorder, remove, clear,
the limits drawn as they near, refusals that keep the user's text, live reload."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Label, ListView, Select, Static

from core import Engine
from tests import app_support
from tests.app_support import (
    FIXTURE_CONFIG,
    SIZE,
    build_fixture,
    fixture_clock,
    make_app,
    running_app,
    settle,
)
from workbench.app.panes.scratchpad import ItemInput, ScratchpadPane, near_limit
from workbench.app.screens.confirm import ConfirmScreen

TRIP = "trip-dolomites"
STORED = ["book Rifugio Lagazuoi", "check cable car times"]


@pytest.fixture
def fixture_db(tmp_path: Path) -> Path:
    return tmp_path / "fixture.db"


async def open_pad(pilot: Any, session: str | None = TRIP) -> ScratchpadPane:
    await settle(pilot)
    if session is not None:
        pilot.app.show_session(session)
    await pilot.press("3")
    await settle(pilot)
    return pilot.app.query_one(ScratchpadPane)


def rows(pane: ScratchpadPane) -> list[str]:
    return [str(row.query_one(".text", Static).render()) if row.edit is None else "<editing>"
            for row in pane.query_one(ListView).children]  # type: ignore[attr-defined]


def text_of(pane: ScratchpadPane, selector: str) -> str:
    return str(pane.query_one(selector).render())


async def stored(app: Any, session: str = TRIP) -> list[str] | None:
    state = await app.engine.read_scratchpad(session)
    return None if state is None else state.items


async def press(pilot: Any, *keys: str) -> None:
    await pilot.press(*keys)
    await settle(pilot)


def test_the_counter_colours_near_and_at_the_limit() -> None:
    assert [near_limit(n, 32) for n in (0, 27, 28, 31, 32, 33)] == [
        "", "", "-near", "-near", "-full", "-over"]
    assert [near_limit(n, 240) for n in (209, 210, 240, 241)] == [
        "", "-near", "-full", "-over"]


async def test_no_session_selected_says_where_to_pick_one(tmp_path: Path) -> None:
    app = make_app(tmp_path / "empty.db")
    async with app.run_test(size=SIZE) as pilot:
        pane = await open_pad(pilot, session=None)
        assert "select a session in Sessions (1)" in text_of(pane, "#scratch-empty")
        assert not pane.query_one(ListView).display
        await press(pilot, "a")
        assert pane.edit is None


async def test_a_session_picked_here_is_selected_everywhere(fixture_db: Path) -> None:
    async with running_app(fixture_db) as (app, pilot):
        pane = await open_pad(pilot)
        select = pane.query_one("#scratch-session", Select)
        values = [value for _, value in select._options][1:]
        assert values[:1] == [TRIP] and "billing-4471" in values
        assert not any(value.startswith("memory:") for value in values)
        select.value = "billing-4471"
        await settle(pilot)
        assert app.current_session == "billing-4471"
        assert "has no scratchpad yet" in text_of(pane, "#scratch-empty")
        await press(pilot, "a")
        pane.query_one(ItemInput).value = "refund the second charge"
        await press(pilot, "enter")
        assert await stored(app, "billing-4471") == ["refund the second charge"]
        assert rows(pane) == ["refund the second charge"]


async def test_the_selected_sessions_items_and_their_count(fixture_db: Path) -> None:
    async with running_app(fixture_db) as (app, pilot):
        pane = await open_pad(pilot)
        assert rows(pane) == STORED
        assert text_of(pane, "#scratch-count") == "2 / 32 items"
        assert "written 2026-05-04 09:00" in text_of(pane, "#scratch-updated")
        app.show_session("billing-4471")
        await settle(pilot)
        assert "'billing-4471' has no scratchpad yet" in text_of(pane, "#scratch-empty")


async def test_add_edit_in_place_and_cancel(fixture_db: Path) -> None:
    async with running_app(fixture_db) as (app, pilot):
        pane = await open_pad(pilot)
        await press(pilot, "a")
        assert rows(pane) == [*STORED, "<editing>"]
        await press(pilot, *"pack the liner")
        assert text_of(pane, "#item-chars") == "14 / 240"
        await press(pilot, "enter")
        assert await stored(app) == [*STORED, "pack the liner"]
        assert text_of(pane, "#scratch-count") == "3 / 32 items"
        assert pane.query_one(ListView).index == 2
        await press(pilot, "up")
        await press(pilot, "e")
        assert rows(pane) == [STORED[0], "<editing>", "pack the liner"]
        edited = pane.query_one(ItemInput)
        assert edited.value == STORED[1] and app.focused is edited
        await press(pilot, *" (Falzarego)")
        await press(pilot, "enter")
        assert await stored(app) == [STORED[0], STORED[1] + " (Falzarego)", "pack the liner"]
        assert pane.query_one(ListView).index == 1
        await press(pilot, "enter")  # enter on a row edits it too
        await press(pilot, *"xyz")
        await press(pilot, "escape")
        assert rows(pane) == [STORED[0], STORED[1] + " (Falzarego)", "pack the liner"]
        assert await stored(app) == [STORED[0], STORED[1] + " (Falzarego)", "pack the liner"]


async def test_reorder_remove_and_clear(fixture_db: Path) -> None:
    async with running_app(fixture_db) as (app, pilot):
        pane = await open_pad(pilot)
        await press(pilot, "shift+down")
        assert await stored(app) == STORED[::-1]
        assert rows(pane) == STORED[::-1] and pane.query_one(ListView).index == 1
        await press(pilot, "shift+down")  # already last: nothing moves
        await press(pilot, "shift+up")
        assert await stored(app) == STORED
        await press(pilot, "d")  # asks first (tests/test_app_keys.py): yes
        await press(pilot, "y")
        assert await stored(app) == STORED[1:]
        await press(pilot, "x")
        assert isinstance(app.screen, ConfirmScreen)
        assert "It goes whole, with its 1 item;" in app.screen.question
        await press(pilot, "escape")
        assert await stored(app) == STORED[1:]
        await press(pilot, "x")
        await press(pilot, "y")
        assert await stored(app) is None
        assert "has no scratchpad yet" in text_of(pane, "#scratch-empty")


async def test_the_item_counter_warns_near_the_limit_and_a_refusal_keeps_the_text(
        fixture_db: Path) -> None:
    async with running_app(fixture_db) as (app, pilot):
        await settle(pilot)
        await app.engine.write_scratchpad(TRIP, [f"step {n}" for n in range(28)])
        pane = await open_pad(pilot)
        count = pane.query_one("#scratch-count", Static)
        assert text_of(pane, "#scratch-count") == "28 / 32 items"
        assert count.has_class("-near") and not count.has_class("-full")
        await press(pilot, "e")
        typed = pane.query_one(ItemInput)
        typed.value = "y" * 230
        await settle(pilot)
        chars = pane.query_one("#item-chars", Label)
        assert text_of(pane, "#item-chars") == "230 / 240" and chars.has_class("-near")
        typed.value = "y" * 241
        await settle(pilot)
        assert chars.has_class("-over")
        await press(pilot, "enter")
        assert "item 1 is 241 characters; the limit is 240" in text_of(
            pane, "#scratch-message")
        assert pane.query_one(ItemInput).value == "y" * 241
        assert (await stored(app))[0] == "step 0"
        await press(pilot, "escape")
        await app.engine.write_scratchpad(TRIP, [f"step {n}" for n in range(32)])
        await app._poll_once()
        await settle(pilot)
        assert text_of(pane, "#scratch-count") == "32 / 32 items"
        assert count.has_class("-full")
        await press(pilot, "a")
        pane.query_one(ItemInput).value = "one too many"
        await press(pilot, "enter")
        assert "at most 32 items; 33 were given" in text_of(pane, "#scratch-message")
        assert pane.query_one(ItemInput).value == "one too many"
        assert len(await stored(app)) == 32


async def test_the_limits_come_from_the_config(fixture_db: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    with fixture_clock():
        await build_fixture(fixture_db)
        monkeypatch.setattr(app_support, "FIXTURE_CONFIG", {
            **FIXTURE_CONFIG, "scratchpad": {"max_items": 3, "max_item_chars": 40}})
        app = make_app(fixture_db)
        async with app.run_test(size=SIZE) as pilot:
            pane = await open_pad(pilot)
            assert text_of(pane, "#scratch-count") == "2 / 3 items"
            assert pane.query_one("#scratch-count").has_class("-near")
            await press(pilot, "e")
            assert text_of(pane, "#item-chars") == "21 / 40"


async def test_a_live_reload_keeps_the_cursor_and_the_edit(fixture_db: Path) -> None:
    async with running_app(fixture_db) as (app, pilot):
        pane = await open_pad(pilot)
        await press(pilot, "down", "e", "end", *" before 10:00")
        async with Engine.open(fixture_db, config=FIXTURE_CONFIG) as agent:
            await agent.write_scratchpad(TRIP, ["pack the liner", *STORED])
        await app._poll_once()
        await settle(pilot)
        assert rows(pane) == ["pack the liner", STORED[0], "<editing>"]
        typed = pane.query_one(ItemInput)
        assert typed.value == STORED[1] + " before 10:00"
        assert typed.cursor_position == len(typed.value) and app.focused is typed
        assert pane.query_one(ListView).index == 2
        assert text_of(pane, "#scratch-count") == "3 / 32 items"
        await press(pilot, "enter")
        assert await stored(app) == ["pack the liner", STORED[0],
                                     STORED[1] + " before 10:00"]
        async with Engine.open(fixture_db, config=FIXTURE_CONFIG) as agent:
            await agent.write_scratchpad(TRIP, ["new first", "pack the liner", STORED[0],
                                                STORED[1] + " before 10:00"])
        await app._poll_once()
        await settle(pilot)
        assert pane.query_one(ListView).index == 3  # the cursor stays on its item


def test_snapshot_scratchpad(snap_compare: Any, tmp_path: Path,
                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # the header shows the file as given: the same every run
    path = Path("fixture.db")
    with fixture_clock():
        asyncio.run(build_fixture(path))
    app = make_app(path)

    async def run_before(pilot: Any) -> None:
        await settle(pilot)
        pilot.app.show_session(TRIP)
        await pilot.press("3")
        await settle(pilot)

    with fixture_clock():
        assert snap_compare(app, run_before=run_before, terminal_size=SIZE)
