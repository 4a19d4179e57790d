"""The app's shell: opening, the header, pane keys, help, the command palette, copying."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.widgets._footer import FooterKey

from core.storage.sqlite.migrations import latest_version
from tests.app_support import build_fixture, fixture_clock, make_app, running_app, settle
from workbench.app.app import WorkbenchApp
from workbench.app.widgets.footer import KeyFooter
from workbench.app.widgets.header import StatusHeader


@pytest.fixture
def fixture_db(tmp_path: Path) -> Path:
    path = tmp_path / "fixture.db"
    return path


async def test_the_header_shows_file_schema_model_and_backlog(fixture_db: Path) -> None:
    async with running_app(fixture_db, size=(160, 48)) as (app, pilot):
        await settle(pilot)
        text = str(app.query_one(StatusHeader).render())
        assert "fixture.db" in text and f"schema {latest_version()}" in text
        assert "deterministic" in text and "backlog 0" in text


async def test_number_keys_switch_panes_and_help_lists_keys(fixture_db: Path) -> None:
    async with running_app(fixture_db, size=(160, 48)) as (app, pilot):
        await settle(pilot)
        for key, pane_id in (("f2", "notes"), ("f4", "playground"), ("f5", "schedules"),
                             ("f1", "sessions"), ("f4", "playground")):
            await pilot.press(key)
            await settle(pilot)
            assert app.active_pane is not None and app.active_pane.id == pane_id
        await pilot.press("5")  # the query box has focus: a digit is text, not a pane
        await settle(pilot)
        assert app.active_pane.id == "playground"
        await pilot.press("escape", "5")  # out of the box, a digit switches panes
        await settle(pilot)
        assert app.active_pane.id == "schedules"
        await pilot.press("2")  # the schedules table has focus: digits switch panes
        await settle(pilot)
        assert app.active_pane.id == "notes"
        await pilot.press("f5", "question_mark")
        await settle(pilot)
        assert type(app.screen).__name__ == "HelpScreen"
        await pilot.press("escape")
        assert type(app.screen).__name__ != "HelpScreen"


def footer_keys(app: WorkbenchApp) -> list[Any]:
    return list(app.query_one(KeyFooter).query(FooterKey))


def bound_actions(app: WorkbenchApp) -> list[str]:
    """The actions of the keys the screen's bindings say to show, one key an action."""
    return list(dict.fromkeys(binding.action for _, binding, _, _
                              in app.screen.active_bindings.values() if binding.show))


async def test_the_footer_shows_each_panes_keys_and_is_rebuilt_only_when_they_change(
        fixture_db: Path) -> None:
    async with running_app(fixture_db, size=(160, 48)) as (app, pilot):
        await settle(pilot)
        shown: list[list[str]] = []
        for key in ("f1", "f2", "f3", "f4", "f5"):
            await pilot.press(key)
            await settle(pilot)
            actions = [footer_key.action for footer_key in footer_keys(app)
                       if not footer_key.has_class("-command-palette")]
            assert actions == bound_actions(app), key
            shown.append(actions)
        assert len({tuple(actions) for actions in shown}) == 5  # each pane's keys differ
        before = footer_keys(app)
        app.screen.refresh_bindings()  # what a focus move says: updated, though the same
        await settle(pilot)
        assert all(now is then for now, then in zip(footer_keys(app), before, strict=True))


async def test_a_file_that_cannot_open_says_why_in_the_header(tmp_path: Path) -> None:
    folder = tmp_path / "a-folder.db"
    folder.mkdir()
    app = make_app(folder)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        assert app.engine is None
        assert "cannot open" in str(app.query_one(StatusHeader).render())


async def test_copy_json_says_when_there_is_no_clipboard(
        fixture_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import pyperclip

    def no_clipboard(text: str) -> None:
        raise pyperclip.PyperclipException("could not find a copy/paste mechanism")

    monkeypatch.setattr(pyperclip, "copy", no_clipboard)
    async with running_app(fixture_db, size=(160, 48)) as (app, pilot):
        await settle(pilot)
        messages: list[str] = []
        monkeypatch.setattr(app, "notify", lambda message, **kw: messages.append(message))
        app.copy_json({"a": 1}, "the thing")
        assert any("no system clipboard" in m and "the thing" in m for m in messages)


async def test_the_app_notices_another_process_writing_the_file(fixture_db: Path) -> None:
    import asyncio
    import subprocess
    import sys

    from tests.app_support import FIXTURE_CONFIG

    with fixture_clock():
        await build_fixture(fixture_db)
    app = make_app(fixture_db, still=False, poll_interval=0.05)
    seen: list[int] = []
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        app.memory_changed.subscribe(app, lambda pulse: seen.append(pulse.data_version))
        script = ("import asyncio, sys\nfrom core import Engine\n"
                  "async def main():\n"
                  f"    async with Engine.open(sys.argv[1], config={FIXTURE_CONFIG!r}) as e:\n"
                  "        await e.append('agent-live', {'role': 'user', 'content': 'hello'})\n"
                  "asyncio.run(main())\n")
        await asyncio.to_thread(subprocess.run, [sys.executable, "-c", script,
                                                 str(fixture_db)], check=True, timeout=60)
        for _ in range(400):  # polls every 0.05 s; gives up after a generous wait
            if seen:
                break
            await pilot.pause(0.05)
        assert seen, "the app never saw the other process's write"


async def test_a_screenshot_keeps_the_space_between_the_title_and_the_file(
        fixture_db: Path) -> None:
    from xml.etree import ElementTree

    async with running_app(fixture_db, size=(160, 48)) as (app, pilot):
        await settle(pilot)
        svg = app.export_screenshot()
    root = ElementTree.fromstring(svg)
    # Each styled run is a <text> of its own; SVG renderers (librsvg, browsers) strip a
    # run's leading spaces unless told to keep them, so the title ran into the file name.
    assert root.get("{http://www.w3.org/XML/1998/namespace}space") == "preserve"
    runs = [text.text or "" for text in root.iter("{http://www.w3.org/2000/svg}text")]
    title = runs.index("Memory\xa0Workbench", 1)  # the first is the window's title bar
    assert runs[title + 1].startswith("\xa0\xa0/") and runs[title + 1].endswith("fixture.db")


async def test_opening_a_missing_file_creates_it_and_says_so(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    said: list[str] = []
    for _ in range(2):  # the second opening finds the file
        app = make_app(tmp_path / "new.db")
        monkeypatch.setattr(app, "notify", lambda message, **kw: said.append(message))
        async with app.run_test(size=(160, 48)) as pilot:
            await settle(pilot)
            assert app.engine is not None
    assert said.count(f"created {tmp_path / 'new.db'}: a new memory file") == 1


async def test_a_refused_model_is_said_in_the_header_not_left_loading(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.embedding_server import isolate_hub_cache
    from workbench.app.app import AppSettings, WorkbenchApp
    from workbench.app.themes import PROJECT_THEMES

    isolate_hub_cache(tmp_path, monkeypatch)
    config = {"embedding": {"model": "no-such-org/no-such-model", "allow_download": False,
                            "on_missing_model": "refuse"}}
    app = WorkbenchApp(tmp_path / "memory.db", config, AppSettings(
        still=True, theme="workbench-dusk", theme_dirs=(PROJECT_THEMES,), defer_model=True))
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        text = str(app.query_one(StatusHeader).render())
    assert "(loading)" not in text
    assert "model did not load: embedding model 'no-such-org/no-such-model'" in text


@pytest.mark.parametrize("downloads", [True, False])
async def test_the_palettes_screenshot_is_saved_with_or_without_a_downloads_folder(
        fixture_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        downloads: bool) -> None:
    import asyncio

    import platformdirs

    folder = tmp_path / "Downloads"
    if downloads:
        folder.mkdir()
    workdir = tmp_path / "work"
    workdir.mkdir()
    monkeypatch.setattr(platformdirs, "user_downloads_dir", lambda: str(folder))
    monkeypatch.chdir(workdir)
    async with running_app(fixture_db, size=(160, 48)) as (app, pilot):
        await settle(pilot)
        for command in app.get_system_commands(app.screen):  # as the palette runs it
            if command.title == "Screenshot":
                command.callback()
        saved_in = folder if downloads else workdir
        for _ in range(200):  # the file is written by a worker, at most 10 s
            if list(saved_in.glob("*.svg")):
                break
            await asyncio.sleep(0.05)
    assert [path.suffix for path in saved_in.glob("*")] == [".svg"]
    assert not list(workdir.glob("*.svg")) if downloads else not folder.exists()
