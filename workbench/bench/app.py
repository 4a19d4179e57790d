"""``workbench bench app``: how soon the app paints, lists sessions and has its model.

The app runs in a fresh process (so imports count, as when a person types ``workbench``),
headless at 160×48; the parent takes the time before it starts the process, the child
reports the wall-clock moments it reaches each point.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from core.locations import Location

CHILD = r"""
import asyncio, json, sys, time
from workbench.app.app import AppSettings, WorkbenchApp

marks = {}

class Timed(WorkbenchApp):
    def on_mount(self):
        super().on_mount()
        self.call_after_refresh(lambda: marks.setdefault("first_paint", time.time()))

async def main():
    given = json.loads(sys.stdin.readline())
    app = Timed(given["db"], given["config"], AppSettings())
    async with app.run_test(size=(160, 48)) as pilot:
        sessions = app.query_one("#sessions")
        while True:
            if app.engine is not None:
                marks.setdefault("engine_open", time.time())
                busy = [w for w in app.workers if w.group == "sessions" and w.is_running]
                if not sessions._stale and not busy:
                    marks.setdefault("sessions_listed", time.time())
                if app.engine.model_loaded:
                    marks.setdefault("model_loaded", time.time())
            if len(marks) == 4 or time.time() - marks.get("first_paint", time.time()) > 60:
                break
            await asyncio.sleep(0.002)
    print(json.dumps(marks))

asyncio.run(main())
"""


def run_app_bench(db: Location, config: dict[str, Any] | None, runs: int,
                  say: Callable[[str], None]) -> dict[str, list[float]]:
    """Start the app ``runs`` times on ``db``; milliseconds to each point, per run."""
    figures: dict[str, list[float]] = {}
    for _ in range(runs):
        started = time.time()
        # The memory and the config go through stdin: as arguments, a URL's password and
        # the config's API keys would be in every process listing on the machine.
        given = {"db": db.target, "config": config}
        out = subprocess.run([sys.executable, "-c", CHILD], input=json.dumps(given) + "\n",
                             capture_output=True, text=True, timeout=120)
        if out.returncode != 0:
            raise RuntimeError(out.stderr.strip().splitlines()[-1] if out.stderr else "failed")
        marks = json.loads(out.stdout.strip().splitlines()[-1])
        for name, moment in marks.items():
            figures.setdefault(name, []).append((moment - started) * 1000)
    for name in ("first_paint", "engine_open", "sessions_listed", "model_loaded"):
        values = sorted(figures.get(name, []))
        if values:
            say(f"{name.replace('_', ' '):<16} median {values[len(values) // 2]:7.0f} ms"
                f"   (min {values[0]:.0f}, max {values[-1]:.0f}; {len(values)} runs, from the "
                "command's start)")
    return figures
