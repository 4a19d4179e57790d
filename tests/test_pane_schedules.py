"""The Schedules pane: the list, the editor's checks and preview, pause/resume, delete, run
history with outputs, copying, and live reloads that keep the user's place."""

from __future__ import annotations

import asyncio
import contextlib
import random
import uuid
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import DataTable, Input, Select, Static, TextArea

from core import Engine
from core.clock import format_utc
from core.storage.vocabulary import ScheduleChanges
from tests.app_support import (
    FIXTURE_CONFIG,
    FIXTURE_NOW,
    SIZE,
    build_fixture,
    fixture_clock,
    make_app,
    running_app,
    settle,
)
from workbench.app.app import WorkbenchApp
from workbench.app.panes.schedules import EMPTY, SchedulesPane
from workbench.app.screens.confirm import ConfirmScreen
from workbench.app.screens.prompt import PromptScreen
from workbench.app.screens.schedule_editor import ScheduleEditor


@pytest.fixture
def seeded_ids(monkeypatch: pytest.MonkeyPatch) -> None:
    """Schedule and run ids the same on every build, so snapshots can show them."""
    numbers = random.Random(7)
    monkeypatch.setattr(uuid, "uuid4",
                        lambda: uuid.UUID(int=numbers.getrandbits(128), version=4))


@pytest.fixture
def fixture_db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seeded_ids: None) -> Path:
    """The fixture memory, opened by a relative path so the header reads the same on every
    run."""
    monkeypatch.chdir(tmp_path)
    with fixture_clock():
        asyncio.run(build_fixture(tmp_path / "fixture.db"))
    return Path("fixture.db")


@contextlib.asynccontextmanager
async def schedules_pane(path: Path) -> AsyncIterator[tuple[WorkbenchApp, Any, SchedulesPane]]:
    """The app on the Schedules pane, its clock frozen at the fixture's now."""
    async with running_app(path, build=False) as (app, pilot):
        await settle(pilot)
        app.action_show_pane("schedules")  # not key 5: another pane's input may hold focus
        await settle(pilot)
        yield app, pilot, app.query_one(SchedulesPane)


def cells(table: DataTable, row: int) -> list[str]:
    return [str(getattr(cell, "plain", cell)) for cell in table.get_row_at(row)]


def text_of(widget: Static) -> str:
    return str(widget.render())


def schedule_table(pane: SchedulesPane) -> DataTable:
    return pane.query_one("#schedule-table", DataTable)


async def open_editor(pilot: Any, key: str = "n") -> ScheduleEditor:
    await pilot.press(key)
    await settle(pilot)
    editor = pilot.app.screen
    assert isinstance(editor, ScheduleEditor)
    return editor


async def fill(pilot: Any, editor: ScheduleEditor, **values: str) -> None:
    """Type into the editor's fields, each keystroke checked as a person's would be."""
    for field, value in values.items():
        if field == "goal":
            editor.query_one("#goal", TextArea).text = value
        elif field in ("kind", "notification_policy"):
            editor.query_one(f"#{field}", Select).value = value
        else:
            widget = editor.query_one(f"#{field}", Input)
            widget.value = ""
            widget.focus()
            await pilot.press(*value)
    await settle(pilot)


def error_at(editor: ScheduleEditor, field: str) -> str:
    return text_of(editor.query_one(f"#error-{field}", Static))


# --- the list ---------------------------------------------------------------------------------


async def test_the_list_shows_cadence_in_words_and_next_run_in_the_schedules_zone(
        fixture_db: Path) -> None:
    async with schedules_pane(fixture_db) as (app, pilot, pane):
        table = schedule_table(pane)
        assert table.row_count == 2
        assert cells(table, 0) == ["hut-check", "planner", "every day at 08:00 Europe/Rome",
                                   "2026-05-05 10:00 CEST (Europe/Rome)", "active", "1",
                                   "failed"]
        assert cells(table, 1) == ["refund-digest", "support", "every 6h",
                                   "2026-05-04 15:00 UTC", "active", "0", "—"]
        detail = text_of(pane.query_one("#schedule-detail", Static))
        assert "cron '0 8 * * *' in Europe/Rome" in detail
        assert "1 failure in a row" in detail
        assert "2026-05-05 10:00 CEST · 05-06 08:00 · 05-07 08:00" in detail
        assert app.focused is table


async def test_a_cadence_the_words_already_spell_is_shown_once(fixture_db: Path) -> None:
    async with schedules_pane(fixture_db) as (app, pilot, pane):
        await pilot.press("down")
        await settle(pilot)
        detail = text_of(pane.query_one("#schedule-detail", Static))
        cadence = next(line for line in detail.splitlines() if line.startswith("Cadence"))
        assert cadence.split() == ["Cadence", "every", "6h"]


async def test_a_schedule_days_past_its_next_run_shows_overdue(fixture_db: Path) -> None:
    missed = FIXTURE_NOW - timedelta(days=3, hours=1)
    async with Engine.open(fixture_db, config=FIXTURE_CONFIG) as engine:
        found = await engine.schedules.search_schedules(None, name="hut-check")
        await engine.backend.update_schedule(
            found.schedules[0].schedule_id, ScheduleChanges(next_run_at=format_utc(missed)),
            format_utc(missed))
    async with schedules_pane(fixture_db) as (app, pilot, pane):
        table = schedule_table(pane)
        assert cells(table, 0)[4] == "overdue by 3 days"
        assert cells(table, 1)[4] == "active"
        detail = text_of(pane.query_one("#schedule-detail", Static))
        assert ("Status     overdue by 3 days (next run 2026-05-01 13:00 CEST, Europe/Rome)"
                in detail), detail


async def test_an_empty_file_says_how_to_add_a_schedule(tmp_path: Path) -> None:
    path = tmp_path / "empty.db"
    async with Engine.open(path, config=FIXTURE_CONFIG):
        pass
    async with schedules_pane(path) as (app, pilot, pane):
        empty = pane.query_one("#schedules-empty", Static)
        assert empty.display and text_of(empty) == EMPTY
        assert schedule_table(pane).row_count == 0 and app.focused is schedule_table(pane)
        assert not pane.query_one("#schedule-lower").display
        await pilot.press("p")  # nothing selected: said, not crashed
        await settle(pilot)
        assert not isinstance(app.screen, PromptScreen)
        await open_editor(pilot, "n")


# --- the editor -------------------------------------------------------------------------------


async def test_the_editor_refuses_a_cron_firing_too_often_at_the_value_field(
        fixture_db: Path) -> None:
    async with schedules_pane(fixture_db) as (app, pilot, pane):
        editor = await open_editor(pilot)
        await fill(pilot, editor, value="*/1 * * * *")
        assert "fires as often as every 60 s; the minimum is 300 s" in error_at(editor, "value")
        assert editor.query_one("#value", Input).has_class("-invalid")
        assert text_of(editor.query_one("#preview", Static)) == ""


async def test_the_editor_refuses_an_unknown_zone_at_the_zone_field(fixture_db: Path) -> None:
    async with schedules_pane(fixture_db) as (app, pilot, pane):
        editor = await open_editor(pilot)
        await fill(pilot, editor, value="0 9 * * 1-5", timezone="Europe/Rom")
        assert "did you mean 'Europe/Rome'" in error_at(editor, "timezone")
        assert error_at(editor, "value") == ""
        await fill(pilot, editor, timezone="Europe/Rome")
        assert error_at(editor, "timezone") == ""


async def test_the_editor_previews_five_fire_times_in_the_schedules_zone(
        fixture_db: Path) -> None:
    async with schedules_pane(fixture_db) as (app, pilot, pane):
        editor = await open_editor(pilot)
        assert error_at(editor, "goal") == error_at(editor, "value") == ""  # not typed in yet
        assert "Type when it fires" in text_of(editor.query_one("#in-words", Static))
        await fill(pilot, editor, value="0 9 * * 1-5", timezone="Europe/Rome")
        assert "every Monday to Friday at 09:00 Europe/Rome" in text_of(
            editor.query_one("#in-words", Static))
        lines = text_of(editor.query_one("#preview", Static)).splitlines()
        assert lines[0] == "Next 5 fire times in Europe/Rome, if saved now"
        assert [line.strip() for line in lines[1:]] == [
            "Tue 2026-05-05 09:00 CEST", "Wed 2026-05-06 09:00 CEST",
            "Thu 2026-05-07 09:00 CEST", "Fri 2026-05-08 09:00 CEST",
            "Mon 2026-05-11 09:00 CEST"]


async def test_creating_a_schedule_adds_a_row_and_selects_it(fixture_db: Path) -> None:
    async with schedules_pane(fixture_db) as (app, pilot, pane):
        editor = await open_editor(pilot)
        await fill(pilot, editor, name="a-weekly", user_id="planner", goal="Plan the week",
                   kind="interval", value="1w", timezone="UTC", notification_policy="never")
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert not isinstance(app.screen, ScheduleEditor)
        table = schedule_table(pane)
        assert table.row_count == 3
        assert cells(table, table.cursor_row)[:4] == ["a-weekly", "planner", "every 1w",
                                                      "2026-05-11 12:00 UTC"]
        stored = await app.engine.schedules.get_schedule("a-weekly")
        assert (stored.goal, stored.notification_policy) == ("Plan the week", "never")


async def test_a_refused_save_writes_nothing_and_says_why_at_the_field(
        fixture_db: Path) -> None:
    async with schedules_pane(fixture_db) as (app, pilot, pane):
        editor = await open_editor(pilot)
        await fill(pilot, editor, user_id="planner", value="*/1 * * * *")
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert app.screen is editor
        assert "goal must be non-empty" in error_at(editor, "goal")
        assert "minimum is 300 s" in error_at(editor, "value")
        assert (await app.engine.schedules.search_schedules()).total == 2


async def test_editing_the_goal_keeps_the_next_run(fixture_db: Path) -> None:
    async with schedules_pane(fixture_db) as (app, pilot, pane):
        before = await app.engine.schedules.get_schedule("hut-check")
        editor = await open_editor(pilot, "e")
        assert editor.query_one("#user_id", Input).disabled
        assert "Next 5 fire times in Europe/Rome" in text_of(editor.query_one("#preview"))
        await fill(pilot, editor, goal="Check hut availability for 24 June")
        await pilot.press("ctrl+s")
        await settle(pilot)
        after = await app.engine.schedules.get_schedule("hut-check")
        assert after.goal == "Check hut availability for 24 June"
        assert after.next_run_at == before.next_run_at
        assert "for 24 June" in text_of(pane.query_one("#schedule-detail", Static))


async def test_an_engine_refusal_on_save_is_shown_in_the_editor(fixture_db: Path) -> None:
    async with schedules_pane(fixture_db) as (app, pilot, pane):
        editor = await open_editor(pilot, "e")
        await fill(pilot, editor, goal="Changed meanwhile")
        await app.engine.schedules.delete_schedule("hut-check")  # another process, say
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert app.screen is editor
        assert "no schedule with id or name" in error_at(editor, "general")


async def test_escape_with_changes_asks_before_discarding(fixture_db: Path) -> None:
    async with schedules_pane(fixture_db) as (app, pilot, pane):
        editor = await open_editor(pilot)
        await fill(pilot, editor, name="draft")
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("escape")  # keep editing
        await settle(pilot)
        assert app.screen is editor and editor.query_one("#name", Input).value == "draft"


# --- pause, resume, delete --------------------------------------------------------------------


async def test_pause_with_a_reason_then_resume(fixture_db: Path) -> None:
    async with schedules_pane(fixture_db) as (app, pilot, pane):
        table = schedule_table(pane)
        await pilot.press("p")
        await settle(pilot)
        assert isinstance(app.screen, PromptScreen)
        prompt = app.screen.query_one(Input)
        prompt.value = ""
        await pilot.press(*"huts closed", "enter")
        await settle(pilot)
        assert cells(table, 0)[3:5] == ["—", "paused: huts closed"]
        assert "If resumed" in text_of(pane.query_one("#schedule-detail", Static))
        await pilot.press("r")
        await settle(pilot)
        assert cells(table, 0)[3:6] == ["2026-05-05 08:00 CEST (Europe/Rome)", "active", "0"]


async def test_delete_names_the_schedule_and_its_runs_and_asks_first(fixture_db: Path) -> None:
    async with schedules_pane(fixture_db) as (app, pilot, pane):
        await pilot.press("d")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmScreen)
        assert "hut-check" in app.screen.question and "2 runs" in app.screen.question
        await pilot.press("escape")
        await settle(pilot)
        assert schedule_table(pane).row_count == 2
        await pilot.press("d")
        await settle(pilot)
        await pilot.press("y")
        await settle(pilot)
        table = schedule_table(pane)
        assert table.row_count == 1 and cells(table, 0)[0] == "refund-digest"
        assert "refund-digest has not run yet" in text_of(pane.query_one("#run-output-text"))


# --- run history ------------------------------------------------------------------------------


async def test_run_history_shows_the_failed_runs_output(fixture_db: Path) -> None:
    async with schedules_pane(fixture_db) as (app, pilot, pane):
        runs = pane.query_one("#run-table", DataTable)
        assert runs.row_count == 2
        assert cells(runs, 0) == ["2026-05-04 12:00 CEST", "failed", "4.0 s",
                                  "booking site answered 503"]
        output = pane.query_one("#run-output-text", Static)
        assert "failed" in text_of(output) and "booking site answered 503" in text_of(output)
        runs.focus()
        await pilot.press("down")
        await settle(pilot)
        assert "3 huts free on 24 June" in text_of(output)


async def test_copy_a_schedule_and_a_run_as_json(fixture_db: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    async with schedules_pane(fixture_db) as (app, pilot, pane):
        copied: list[tuple[Any, str]] = []
        monkeypatch.setattr(app, "copy_json", lambda value, what: copied.append((value, what)))
        await pilot.press("c", "C")
        schedule, run = copied
        assert schedule[1] == "schedule hut-check"
        assert schedule[0]["cadence_in_words"] == "every day at 08:00 Europe/Rome"
        assert len(schedule[0]["next_runs"]) == 5
        assert run[0].output == "booking site answered 503"


async def test_a_name_that_looks_like_markup_is_shown_as_typed(fixture_db: Path) -> None:
    async with schedules_pane(fixture_db) as (app, pilot, pane):
        await app.engine.schedules.create_schedule(
            "[ops]", "Back up", {"kind": "interval", "value": "1d"}, name="[/nightly]")
        pane.reload()
        await settle(pilot)
        table = schedule_table(pane)
        table.move_cursor(row=0)
        await settle(pilot)
        assert cells(table, 0)[:2] == ["[/nightly]", "[ops]"]
        assert "Run history of [/nightly]" in text_of(pane.query_one("#runs-title", Static))
        await pilot.press("d")
        await settle(pilot)
        assert "[/nightly] ([ops], every 1d)" in str(app.screen.query_one("#question").render())


# --- live refresh -----------------------------------------------------------------------------


async def test_a_reload_keeps_the_selected_row_and_the_edit_in_progress(
        fixture_db: Path) -> None:
    async with schedules_pane(fixture_db) as (app, pilot, pane):
        table = schedule_table(pane)
        await pilot.press("down")
        await settle(pilot)
        editor = await open_editor(pilot, "e")
        await fill(pilot, editor, goal="Half-typed goal")
        await app.engine.schedules.create_schedule(  # the agent writes meanwhile
            "planner", "First", {"kind": "interval", "value": "1h"}, name="aaa-first")
        app.memory_changed.publish(await app.engine.pulse())
        await settle(pilot)
        assert table.row_count == 3
        assert cells(table, table.cursor_row)[0] == "refund-digest"
        assert app.screen is editor
        assert editor.query_one("#goal", TextArea).text == "Half-typed goal"


# --- snapshots --------------------------------------------------------------------------------


def test_snapshot_schedules_list_with_history(snap_compare: Any, fixture_db: Path) -> None:
    async def run_before(pilot: Any) -> None:
        await settle(pilot)
        pilot.app.action_show_pane("schedules")
        await settle(pilot)

    with fixture_clock():
        assert snap_compare(make_app(fixture_db), run_before=run_before, terminal_size=SIZE)


def test_snapshot_schedule_editor_with_preview(snap_compare: Any, fixture_db: Path) -> None:
    async def run_before(pilot: Any) -> None:
        await settle(pilot)
        pilot.app.action_show_pane("schedules")
        await settle(pilot)
        table = pilot.app.query_one("#schedule-table", DataTable)
        for _ in range(50):  # the list behind the editor: laid out before it is covered
            if table.row_count and table.virtual_size.width > 100:
                break
            await pilot.pause()
        await pilot.press("n")
        await settle(pilot)
        editor = pilot.app.screen
        editor.query_one("#name", Input).value = "weekday-briefing"
        editor.query_one("#goal", TextArea).text = "Summarise overnight refund tickets."
        editor.query_one("#value", Input).value = "0 9 * * 1-5"
        editor.query_one("#timezone", Input).value = "Europe/Rome"
        editor.query_one("#value", Input).focus()
        await settle(pilot)

    with fixture_clock():
        assert snap_compare(make_app(fixture_db), run_before=run_before, terminal_size=SIZE)
