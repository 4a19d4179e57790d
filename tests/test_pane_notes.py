"""The Notes pane: filters, the editor, save, rename, aliases, delete, live reload."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from textual.geometry import Region
from textual.widgets import DataTable, Input, Select, Static, TextArea

from core import Engine
from core.errors import NotFound
from tests.app_support import (
    FIXTURE_CONFIG,
    SIZE,
    build_fixture,
    fixture_clock,
    make_app,
    running_app,
    settle,
)
from workbench.app.panes.notes import NotesPane
from workbench.app.screens.confirm import ConfirmScreen
from workbench.app.screens.prompt import PromptScreen
from workbench.app.widgets.note_editor import NoteEditor


@pytest.fixture
def fixture_db(tmp_path: Path) -> Path:
    return tmp_path / "fixture.db"


async def open_notes(pilot: Any) -> NotesPane:
    await settle(pilot)
    await pilot.press("2")
    await settle(pilot)
    return pilot.app.query_one(NotesPane)


def listed(pane: NotesPane) -> list[str]:
    table = pane.query_one(DataTable)
    return [str(table.get_row_at(index)[0]) for index in range(table.row_count)]


def status(pane: NotesPane) -> str:
    return str(pane.query_one("#notes-status", Static).render())


def field_error(pane: NotesPane, field: str) -> str:
    return str(pane.query_one(f"#error-{field}").render())


def heading(pane: NotesPane) -> str:
    return "\n".join(str(pane.query_one(f"#note-{part}", Static).render())
                     for part in ("heading", "meta", "notice"))


async def choose(pilot: Any, pane: NotesPane, selector: str, value: Any) -> None:
    pane.query_one(selector, Select).value = value
    await settle(pilot)


async def type_into(pilot: Any, pane: NotesPane, selector: str, value: str) -> None:
    widget = pane.query_one(selector)
    if isinstance(widget, TextArea):
        widget.load_text(value)
    else:
        assert isinstance(widget, Input)
        widget.value = value
    await settle(pilot)


async def stored(app: Any, ref: str, namespace: str) -> Any:
    return await app.engine.get_note(ref, namespace=namespace)


async def test_the_list_filters_by_namespace_category_kind_tag_and_text(
        fixture_db: Path) -> None:
    async with running_app(fixture_db) as (app, pilot):
        pane = await open_notes(pilot)
        assert pane.namespace == "planner" and listed(pane) == ["packing-list"]
        assert pane.query_one(NoteEditor).note.name == "packing-list"
        await choose(pilot, pane, "#notes-namespace", "support")
        assert listed(pane) == ["refund-policy", "standup"]
        assert "2 notes in support" in status(pane)
        await choose(pilot, pane, "#notes-category", "daily")
        assert listed(pane) == ["standup"]
        await choose(pilot, pane, "#notes-category", Select.NULL)
        await type_into(pilot, pane, "#notes-tags", "billing")
        assert listed(pane) == ["refund-policy"]
        await type_into(pilot, pane, "#notes-tags", "")
        await type_into(pilot, pane, "#notes-text", "tuesdays")
        assert listed(pane) == ["standup"]
        await type_into(pilot, pane, "#notes-text", "")
        await choose(pilot, pane, "#notes-kind", "Archive")
        assert listed(pane) == []
        assert "No notes match these filters" in status(pane)
        assert "holds 2" in status(pane)
        await choose(pilot, pane, "#notes-kind", Select.NULL)
        assert listed(pane) == ["refund-policy", "standup"]
        await pilot.press("down")
        await settle(pilot)
        assert pane.query_one(NoteEditor).note.name == "standup"


async def test_an_empty_namespace_says_what_to_do(fixture_db: Path) -> None:
    async with running_app(fixture_db) as (app, pilot):
        pane = await open_notes(pilot)
        await choose(pilot, pane, "#notes-namespace", "default")
        assert listed(pane) == []
        assert "No notes in namespace 'default' yet" in status(pane)
        assert "ctrl+n" in status(pane)
        assert "New note" in heading(pane)


async def test_edit_and_save_writes_every_field(fixture_db: Path) -> None:
    async with running_app(fixture_db) as (app, pilot):
        pane = await open_notes(pilot)
        await type_into(pilot, pane, "#note-content", "Boots, shell, liner, headlamp.")
        await type_into(pilot, pane, "#note-tags", "trip, gear, checklist")
        await type_into(pilot, pane, "#note-importance", "0.9")
        await choose(pilot, pane, "#note-category", "daily")
        assert "modified" in heading(pane)
        await pilot.press("ctrl+s")
        await settle(pilot)
        note = await stored(app, "packing-list", "planner")
        assert note.content == "Boots, shell, liner, headlamp."
        assert (note.tags, note.importance, note.category) == (
            ["trip", "gear", "checklist"], 0.9, "daily")
        assert note.aliases == ["packing"]
        assert "modified" not in heading(pane)
        assert pane.query_one(DataTable).get_row_at(0)[1] == "daily"


async def test_invalid_fields_show_the_engines_message_at_each_field(fixture_db: Path) -> None:
    async with running_app(fixture_db) as (app, pilot):
        pane = await open_notes(pilot)
        before = await stored(app, "packing-list", "planner")
        await type_into(pilot, pane, "#note-name", "  ")
        await type_into(pilot, pane, "#note-importance", "lots")
        await type_into(pilot, pane, "#note-tags", ", ".join(f"t{i}" for i in range(17)))
        await type_into(pilot, pane, "#note-content", "Changed.")
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert "name must not be empty" in field_error(pane, "name")
        assert "importance must be a number from 0 to 1; got 'lots'" in field_error(
            pane, "importance")
        assert "17 tags given; the limit is 16" in field_error(pane, "tags")
        assert field_error(pane, "content") == ""
        assert pane.query_one("#field-importance").has_class("-refused")
        await type_into(pilot, pane, "#note-importance", "1.5")
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert "got 1.5" in field_error(pane, "importance")
        assert await stored(app, before.note_id, "planner") == before
        assert pane.query_one("#note-content", TextArea).text == "Changed."


async def test_a_field_error_is_shown_whole_within_its_field(fixture_db: Path) -> None:
    async with running_app(fixture_db) as (app, pilot):
        pane = await open_notes(pilot)
        await type_into(pilot, pane, "#note-importance", "lots")
        await pilot.press("ctrl+s")
        await settle(pilot)
        label = pane.query_one("#error-importance")
        field = pane.query_one("#field-importance")
        assert field.region.contains_region(label.region), (label.region, field.region)
        lines = label.render_lines(Region(0, 0, *label.region.size))
        assert " ".join(" ".join(line.text.split()) for line in lines) == (
            "importance must be a number from 0 to 1; got 'lots'")


async def test_a_taken_name_shows_at_the_name_field_and_nothing_changes(
        fixture_db: Path) -> None:
    async with running_app(fixture_db) as (app, pilot):
        pane = await open_notes(pilot)
        await choose(pilot, pane, "#notes-namespace", "support")
        await pilot.press("down")
        await settle(pilot)
        standup = await stored(app, "standup", "support")
        assert pane.query_one(NoteEditor).note == standup
        await type_into(pilot, pane, "#note-name", "refund-policy")
        await type_into(pilot, pane, "#note-content", "Standup moved to 10:00.")
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert "'refund-policy' is already the name of note" in field_error(pane, "name")
        assert await stored(app, standup.note_id, "support") == standup
        assert pane.query_one("#note-content", TextArea).text == "Standup moved to 10:00."
        assert "modified" in heading(pane)
        await type_into(pilot, pane, "#note-name", "standup-notes")
        assert field_error(pane, "name") == ""
        await pilot.press("ctrl+s")
        await settle(pilot)
        saved = await stored(app, "standup-notes", "support")
        assert (saved.note_id, saved.content) == (standup.note_id, "Standup moved to 10:00.")


async def test_rename_and_aliases_through_their_keys(fixture_db: Path) -> None:
    async with running_app(fixture_db) as (app, pilot):
        pane = await open_notes(pilot)
        await pilot.press("f6")
        await settle(pilot)
        assert isinstance(app.screen, PromptScreen)
        app.screen.query_one(Input).value = "kit"
        await pilot.press("enter")
        await settle(pilot)
        assert (await stored(app, "kit", "planner")).aliases == ["packing"]
        assert listed(pane) == ["kit"]
        assert pane.query_one("#note-name", Input).value == "kit"
        await pilot.press("f7")
        await settle(pilot)
        app.screen.query_one(Input).value = "gear-list"
        await pilot.press("enter")
        await settle(pilot)
        assert (await stored(app, "gear-list", "planner")).name == "kit"
        assert pane.query_one("#note-aliases", Input).value == "gear-list, packing"
        await pilot.press("f9")
        await settle(pilot)
        app.screen.query_one(Input).value = "packing"
        await pilot.press("enter")
        await settle(pilot)
        assert (await stored(app, "kit", "planner")).aliases == ["gear-list"]
        with pytest.raises(NotFound):
            await stored(app, "packing", "planner")
        assert pane.query_one("#note-aliases", Input).value == "gear-list"


async def test_a_taken_name_in_rename_or_alias_is_shown_at_its_field(fixture_db: Path) -> None:
    async with running_app(fixture_db) as (app, pilot):
        pane = await open_notes(pilot)
        await choose(pilot, pane, "#notes-namespace", "support")
        await pilot.press("f6")
        await settle(pilot)
        app.screen.query_one(Input).value = "standup"
        await pilot.press("enter")
        await settle(pilot)
        assert "'standup' is already the name of note" in field_error(pane, "name")
        assert (await stored(app, "refund-policy", "support")).name == "refund-policy"
        await pilot.press("f7")
        await settle(pilot)
        app.screen.query_one(Input).value = "standup"
        await pilot.press("enter")
        await settle(pilot)
        assert "'standup' is already the name of note" in field_error(pane, "aliases")
        assert (await stored(app, "refund-policy", "support")).aliases == []


async def test_delete_asks_first(fixture_db: Path) -> None:
    async with running_app(fixture_db) as (app, pilot):
        pane = await open_notes(pilot)
        await choose(pilot, pane, "#notes-namespace", "support")
        await pilot.press("f8")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmScreen)
        assert "refund-policy" in app.screen.question
        await pilot.press("escape")
        await settle(pilot)
        assert listed(pane) == ["refund-policy", "standup"]
        await pilot.press("f8")
        await settle(pilot)
        await pilot.press("y")
        await settle(pilot)
        assert listed(pane) == ["standup"]
        with pytest.raises(NotFound):
            await stored(app, "refund-policy", "support")
        assert pane.query_one(NoteEditor).note.name == "standup"


async def test_a_new_note_is_added_to_the_namespace_shown(fixture_db: Path) -> None:
    async with running_app(fixture_db) as (app, pilot):
        pane = await open_notes(pilot)
        await pilot.press("ctrl+n")
        await settle(pilot)
        assert "New note" in heading(pane)
        await pilot.press(*"route")
        await type_into(pilot, pane, "#note-aliases", "itinerary")
        await type_into(pilot, pane, "#note-content", "Cortina, Lagazuoi, Cinque Torri.")
        await pilot.press("ctrl+s")
        await settle(pilot)
        note = await stored(app, "itinerary", "planner")
        assert (note.name, note.source, note.category) == ("route", "workbench", "core")
        assert listed(pane) == ["packing-list", "route"]
        assert pane.query_one(NoteEditor).note == note


async def test_copy_gives_the_stored_note_as_json(fixture_db: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    async with running_app(fixture_db) as (app, pilot):
        await open_notes(pilot)
        copied: list[tuple[Any, str]] = []
        monkeypatch.setattr(app, "copy_json", lambda value, what: copied.append((value,
                                                                                what)))
        await pilot.press("f10")
        assert copied and copied[0][0].name == "packing-list"


async def test_a_live_reload_keeps_an_unsaved_edit(fixture_db: Path) -> None:
    async with running_app(fixture_db) as (app, pilot):
        pane = await open_notes(pilot)
        await type_into(pilot, pane, "#note-content", "My own packing list.")
        async with Engine.open(fixture_db, config=FIXTURE_CONFIG) as agent:
            await agent.write_note("packing-list", "The agent's list.", namespace="planner")
            await agent.add_note("maps", "Tabacco 03.", namespace="planner")
        await app._poll_once()
        await settle(pilot)
        assert listed(pane) == ["maps", "packing-list"]
        assert pane.query_one(DataTable).cursor_row == 1
        assert pane.query_one("#note-content", TextArea).text == "My own packing list."
        assert "modified" in heading(pane) and "Changed on disk" in heading(pane)
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert (await stored(app, "packing-list", "planner")).content == (
            "My own packing list.")
        assert "Changed on disk" not in heading(pane)


async def test_a_live_reload_follows_a_clean_editor(fixture_db: Path) -> None:
    async with running_app(fixture_db) as (app, pilot):
        pane = await open_notes(pilot)
        async with Engine.open(fixture_db, config=FIXTURE_CONFIG) as agent:
            await agent.write_note("packing-list", "The agent's list.", namespace="planner")
        await app._poll_once()
        await settle(pilot)
        assert pane.query_one("#note-content", TextArea).text == "The agent's list."
        assert "modified" not in heading(pane)


def test_snapshot_notes(snap_compare: Any, tmp_path: Path,
                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # the header shows the file as given: the same every run
    path = Path("fixture.db")
    with fixture_clock():
        asyncio.run(build_fixture(path))
    app = make_app(path)

    async def run_before(pilot: Any) -> None:
        await settle(pilot)
        await pilot.press("2")
        await settle(pilot)

    with fixture_clock():
        assert snap_compare(app, run_before=run_before, terminal_size=SIZE)
