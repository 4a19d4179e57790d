"""The screenshot script drives the app on the demo and saves what it drew."""

from __future__ import annotations

from pathlib import Path

from workbench.app.screenshots import main_async


async def test_a_scene_is_saved_as_the_apps_own_svg(tmp_path: Path) -> None:
    (path,) = await main_async(tmp_path / "shots", None, ["scratchpad"])
    svg = path.read_text()
    assert path.name == "scratchpad.svg" and svg.startswith("<svg")
    assert "research-gear-list" in svg.replace("&#160;", " ")
    assert "data/demo.db" in svg.replace("&#160;", " ")
