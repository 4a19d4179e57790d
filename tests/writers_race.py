"""Writer processes started together on one memory: the concurrency tests' shared start."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from core import Engine

ROOT = Path(__file__).resolve().parents[1]


async def run_together(path: str, tmp_path: Path, script: str, writers: int, steps: int,
                       config: dict[str, Any]) -> None:
    """Make and migrate ``path`` once, then run ``writers`` copies of ``script`` (argv: path,
    writer number, steps, go file) released together by a go file; each must exit 0."""
    async with Engine.open(path, config=config):
        pass  # made and migrated once, before the writers race
    go = tmp_path / "go"
    started = [subprocess.Popen([sys.executable, "-c", script, str(path), str(n), str(steps),
                                 str(go)], cwd=ROOT, stderr=subprocess.PIPE, text=True)
               for n in range(writers)]
    time.sleep(0.5)  # the writers are opening the file; the go file starts them together
    go.touch()
    try:
        for writer in started:
            _, errors = writer.communicate(timeout=180)
            assert writer.returncode == 0, errors[-2000:]
    finally:
        for writer in started:
            writer.kill()
