"""Theme files: the project's load, a user's are validated with every problem named."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.app_support import build_fixture, fixture_clock, make_app, settle
from workbench.app.themes import PROJECT_THEMES, load_theme_dirs, parse_theme


def test_the_project_themes_load_without_problems() -> None:
    loaded = load_theme_dirs(PROJECT_THEMES)
    assert loaded.problems == []
    assert {"workbench-dusk", "workbench-paper"} <= {t.name for t in loaded.themes}


def test_every_problem_of_a_theme_is_reported_at_once() -> None:
    theme, problems = parse_theme({"primary": "not-a-colour", "dark": "yes", "shade": 1})
    assert theme is None
    joined = "\n".join(problems)
    assert "unknown key 'shade'" in joined
    assert "'name' is required" in joined
    assert "primary = 'not-a-colour' is not a colour" in joined
    assert "dark = 'yes' must be true or false" in joined


def test_a_missing_folder_is_no_problem(tmp_path: Path) -> None:
    assert load_theme_dirs(tmp_path / "nowhere").problems == []


async def test_user_themes_register_and_bad_files_are_named_in_one_notification(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    user = tmp_path / "themes"
    user.mkdir()
    (user / "mine.toml").write_text('name = "mine"\nprimary = "#ff8800"\ndark = false\n')
    (user / "broken.toml").write_text('name = "broken"\nprimary = "#zzz"\n')
    (user / "garbled.toml").write_text("name = \n")
    db = tmp_path / "fixture.db"
    with fixture_clock():
        await build_fixture(db)
    app = make_app(db, theme_dirs=(PROJECT_THEMES, user), theme="mine")
    notes: list[tuple[str, str]] = []
    original = app.notify

    def record(message: str, **kwargs: object) -> None:
        notes.append((message, str(kwargs.get("title", ""))))
        original(message, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(app, "notify", record)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        assert app.theme == "mine"
        assert "mine" in app.available_themes and "broken" not in app.available_themes
        problems = [m for m, title in notes if "theme files were not loaded" in title]
        assert len(problems) == 1
        assert "broken.toml: primary = '#zzz' is not a colour" in problems[0]
        assert "garbled.toml: not readable TOML" in problems[0]
