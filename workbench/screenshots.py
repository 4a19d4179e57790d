"""Make the README's screenshots: the app itself, driven on the demo memory.

``python -m workbench.screenshots [--out screenshots] [--model FOLDER]`` builds the demo
in a temporary folder, opens the app headless at 160×48 with the engine clock stopped at
the demo's "now", walks each pane through a short scene and saves what the app drew as
SVG (``App.save_screenshot``). Every scene is keys a person could press.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from core import clock
from workbench.app import AppSettings, WorkbenchApp
from workbench.demo import build_demo
from workbench.demo_content import ANCHOR
from workbench.themes import PROJECT_THEMES

SIZE = (160, 48)
Scene = Callable[[Any], Awaitable[None]]


async def settle(pilot: Any) -> None:
    """Wait for the app's workers and a repaint (no fixed sleeps)."""
    for _ in range(3):
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()


async def press(pilot: Any, *keys: str) -> None:
    for key in keys:
        await pilot.press(key)
        await settle(pilot)


async def type_text(pilot: Any, text: str) -> None:
    await pilot.press(*text)
    await settle(pilot)


async def sessions_scene(pilot: Any) -> None:
    await press(pilot, "1")


async def notes_scene(pilot: Any) -> None:
    await press(pilot, "2")


async def scratchpad_scene(pilot: Any) -> None:
    await press(pilot, "3")


async def playground_scene(pilot: Any) -> None:
    await press(pilot, "4")


async def schedules_scene(pilot: Any) -> None:
    await press(pilot, "5")


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
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as folder:
        db_path = Path(folder) / "demo.db"
        await build_demo(db_path, config)
        with clock.frozen(ANCHOR):
            return await shoot(db_path, config, out, names)


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
