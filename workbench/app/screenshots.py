"""Make the README's screenshots: the app itself, driven on the demo memory.

``python -m workbench.app.screenshots [--out screenshots] [--model FOLDER]`` builds the demo
in a temporary folder, opens the app headless at 160×48 with the engine clock stopped at
the demo's "now", walks each pane through a short scene and saves what the app drew as
SVG (``App.save_screenshot``). Every scene is keys a person could press.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from core import clock
from workbench.app.app import AppSettings, WorkbenchApp
from workbench.app.themes import PROJECT_THEMES
from workbench.demo.build import build_demo
from workbench.demo.content import ANCHOR

SIZE = (160, 48)
Scene = Callable[[Any], Awaitable[None]]


async def settle(pilot: Any) -> None:
    """Wait until the app's workers are done and the screen has caught up (never sleeps
    for a fixed time): again while handling what finished starts more work. The tests
    drive the app with it too."""
    for _ in range(10):
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        if not any(worker.is_running for worker in pilot.app.workers):
            await pilot.pause()  # one more idle pass: tables size their columns on idle
            return


async def press(pilot: Any, *keys: str) -> None:
    for key in keys:
        await pilot.press(key)
        await settle(pilot)


async def type_text(pilot: Any, text: str) -> None:
    await pilot.press(*text)
    await settle(pilot)


async def sessions_scene(pilot: Any) -> None:
    """The long trip-planning session: its rolling summary, the restore preview, a tool
    call unfolded."""
    await press(pilot, "1", "slash")
    await type_text(pilot, "alta")
    await press(pilot, "enter", "tab", "tab", "tab")
    await press(pilot, "down", "down", "down", "down", "down", "down")
    await press(pilot, "enter")


async def notes_scene(pilot: Any) -> None:
    """A note open in the editor, with its aliases and tags."""
    await press(pilot, "2", "down", "enter")


async def scratchpad_scene(pilot: Any) -> None:
    """The gear list's scratchpad, near the 32-item limit."""
    await press(pilot, "1", "slash")
    await type_text(pilot, "gear")
    await press(pilot, "enter", "3")


async def playground_scene(pilot: Any) -> None:
    """A query in the ops agent's namespace, judged, swept, with the vector weight moved."""
    await press(pilot, "4")
    await type_text(pilot, "deploy on a friday")
    await press(pilot, "enter", "escape", "space", "down", "down", "space", "w")
    await press(pilot, "left_square_bracket", "left_square_bracket")


async def schedules_scene(pilot: Any) -> None:
    """The schedules with their run history, a failed run selected."""
    await press(pilot, "5", "down")


SCENES: dict[str, Scene] = {
    "sessions": sessions_scene,
    "notes": notes_scene,
    "scratchpad": scratchpad_scene,
    "playground": playground_scene,
    "schedules": schedules_scene,
}


async def shoot(db_path: Path, config: dict[str, Any], out: Path,
                names: list[str]) -> list[Path]:
    """Run each named scene in a fresh app and save its screen as ``out/<name>.svg``."""
    written = []
    for name in names:
        app = WorkbenchApp(db_path, config, AppSettings(
            still=True, theme="workbench-dusk", theme_dirs=(PROJECT_THEMES,),
            defer_model=False))
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            await SCENES[name](pilot)
            await settle(pilot)
            app.save_screenshot(f"{name}.svg", str(out))
        written.append(out / f"{name}.svg")
    return written


async def main_async(out: Path, model: str | None, names: list[str]) -> list[Path]:
    embedding: dict[str, Any] = ({"backend": "model2vec", "model": model} if model else
                                 {"backend": "deterministic"})
    config = {"embedding": embedding, "consolidation": {"enabled": False},
              "summary": {"auto": False}}
    out = out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    home = Path.cwd()
    with tempfile.TemporaryDirectory() as folder:
        os.chdir(folder)  # the header shows data/demo.db, as after `workbench demo`
        try:
            db_path = Path("data") / "demo.db"
            await build_demo(db_path, config)
            with clock.frozen(ANCHOR):
                return await shoot(db_path, config, out, names)
        finally:
            os.chdir(home)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("screenshots"),
                        help="folder for the SVGs (default: screenshots)")
    parser.add_argument("--model", default=None,
                        help="a model2vec folder (default: the deterministic backend)")
    parser.add_argument("scenes", nargs="*", default=list(SCENES),
                        help=f"which panes (default: all of {', '.join(SCENES)})")
    args = parser.parse_args()
    for path in asyncio.run(main_async(args.out, args.model, args.scenes)):
        print(path)


if __name__ == "__main__":
    main()
