"""A file whose vectors another model made says so in the app for as long as it is open:
in the header (not only a passing toast) and on every Search row's vector cell, with the
reason in the status line's legend and in the row's explain."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual.widgets import Static

from tests.app_support import FIXTURE_CONFIG, build_fixture, fixture_clock, settle
from tests.test_pane_playground import ask, open_playground, option_texts, plain
from tests.tiny_model import build_tiny_model
from workbench.app.app import AppSettings, WorkbenchApp
from workbench.app.playground.results import ResultsList
from workbench.app.screens.explain import ExplainScreen
from workbench.app.themes import PROJECT_THEMES
from workbench.app.widgets.header import StatusHeader


def other_model_app(path: Path, model: Path) -> WorkbenchApp:
    """The app on ``path`` with ``model`` (64 dimensions, as the fixture's vectors)."""
    config: dict[str, Any] = {**FIXTURE_CONFIG,
                              "embedding": {"backend": "model2vec", "model": str(model)}}
    return WorkbenchApp(path, config, AppSettings(
        still=True, theme="workbench-dusk", theme_dirs=(PROJECT_THEMES,), defer_model=False))


def header_text(app: WorkbenchApp) -> str:
    return str(app.query_one(StatusHeader).render())


async def test_the_header_keeps_saying_the_vectors_are_another_models(tmp_path: Path) -> None:
    path = tmp_path / "fixture.db"
    with fixture_clock():
        await build_fixture(path)  # vectors from the deterministic backend, 64 dimensions
    model = build_tiny_model(tmp_path / "other-m2v", dim=64)
    said = "vectors OFF: made by deterministic-"
    with fixture_clock():
        app = other_model_app(path, model)
        async with app.run_test(size=(160, 48)) as pilot:
            await settle(pilot)
            assert said in header_text(app)
            assert "engine runs model2vec:other-m2v" in header_text(app)
            # 20 s on: the toast has expired and the header has been redrawn from new polls.
            app.clear_notifications()
            for _ in range(3):
                app.memory_written()
                await settle(pilot)
            assert said in header_text(app)
        # Reopened: said again, from the file, not from a toast.
        app = other_model_app(path, model)
        async with app.run_test(size=(160, 48)) as pilot:
            await settle(pilot)
            app.clear_notifications()
            assert said in header_text(app)


async def test_search_rows_show_the_vector_leg_off_with_the_reason(tmp_path: Path) -> None:
    path = tmp_path / "fixture.db"
    with fixture_clock():
        await build_fixture(path)
    model = build_tiny_model(tmp_path / "other-m2v", dim=64)
    with fixture_clock():
        app = other_model_app(path, model)
        async with app.run_test(size=(160, 48)) as pilot:
            pane = await open_playground(pilot)
            await ask(pilot, pane, "peanut allergy huts")
            texts = option_texts(pane.query_one("#pg-results", ResultsList))
            assert texts and all("vec off" in text for text in texts)
            status = plain(pane.query_one("#pg-status", Static))
            assert "vec off = vectors OFF: made by deterministic-" in status
            await pilot.press("e")
            await settle(pilot)
            assert isinstance(app.screen, ExplainScreen)
            shown = "\n".join(plain(s) for s in app.screen.query(Static))
            assert "the vector leg is off: vectors made by deterministic-" in shown
