"""Long work from the palette: it runs with progress and reports its outcome."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.app_support import running_app, settle
from tests.test_evaluation import tiny_locomo
from workbench.app import long_work


async def test_importing_locomo_twice_adds_nothing_the_second_time(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = tmp_path / "locomo.json"
    source.write_text(json.dumps([tiny_locomo()]))
    db = tmp_path / "fixture.db"
    outcomes: list[str] = []
    async with running_app(db, size=(120, 30)) as (app, pilot):
        await settle(pilot)
        monkeypatch.setattr(app, "notify", lambda message, **kw: outcomes.append(message))
        for _ in range(2):
            long_work.import_locomo(app)
            await settle(pilot)
            app.screen.dismiss(str(source))
            await settle(pilot)
        sessions = {s.session_id for s in await app.engine.list_sessions()}
    assert outcomes[0].startswith("imported ") and "(0 were already there)" in outcomes[0]
    assert outcomes[1].startswith("imported 0 messages")
    assert any(session.startswith("locomo") for session in sessions)


async def test_export_notes_offers_the_exports_folder_beside_the_memory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    db = tmp_path / "fixture.db"
    outcomes: list[str] = []
    async with running_app(db, size=(120, 30)) as (app, pilot):
        await settle(pilot)
        monkeypatch.setattr(app, "notify", lambda message, **kw: outcomes.append(message))
        long_work.export_notes(app)
        await settle(pilot)
        offered = app.screen.query_one("#prompt-input").value  # type: ignore[attr-defined]
        namespace = app.engine.notes.namespace(None)
        app.screen.dismiss("team.json")
        await settle(pilot)
    exports = (tmp_path / "exports").resolve()
    assert offered == str(exports / f"notes-{namespace}.json")
    assert outcomes[-1].endswith(f" to {exports / 'team.json'}"), outcomes
    assert json.loads((exports / "team.json").read_text())["format"] == "memory-workbench-notes"
    assert list(elsewhere.iterdir()) == []
