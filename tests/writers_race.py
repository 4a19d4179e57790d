"""Writer processes started together on one memory: the concurrency tests' shared start.

The writers are forked from one launcher process that has already imported what the
script imports (the Agents SDK alone takes ~1 s of CPU to import), so each is its own
process, with its own connections, without paying for the imports again.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from core import Engine

ROOT = Path(__file__).resolve().parents[1]

LAUNCHER = """
import ast, os, sys, time, traceback

script, writers, rest = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
source = open(script, encoding="utf-8").read()
tree = ast.parse(source)
imports = [node for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))]
exec(compile(ast.Module(body=imports, type_ignores=[]), script, "exec"), {})
code = compile(tree, script, "exec")
children = []
for writer in range(writers):
    pid = os.fork()
    if pid == 0:
        sys.argv = [script, rest[0], str(writer), *rest[1:]]
        try:
            exec(code, {"__name__": "__main__"})
        except BaseException:
            traceback.print_exc()
            sys.stderr.flush()
            os._exit(1)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
    children.append(pid)
time.sleep(0.3)  # the writers are opening the memory; the go file starts them together
open(rest[-1], "w").close()
failed = [pid for pid in children if os.waitpid(pid, 0)[1] != 0]
sys.exit(f"{len(failed)} of {writers} writers failed" if failed else 0)
"""


async def run_together(path: str, tmp_path: Path, script: str, writers: int, steps: int,
                       config: dict[str, Any]) -> None:
    """Make and migrate ``path`` once, then run ``writers`` copies of ``script`` (argv: path,
    writer number, steps, go file) released together by the go file (the launcher makes it
    once all are forked); each must exit 0."""
    async with Engine.open(path, config=config):
        pass  # made and migrated once, before the writers race
    go = tmp_path / "go"
    script_path = tmp_path / "writer.py"
    script_path.write_text(script, encoding="utf-8")
    launcher = subprocess.Popen(
        [sys.executable, "-c", LAUNCHER, str(script_path), str(writers), str(path), str(steps),
         str(go)], cwd=ROOT, stderr=subprocess.PIPE, text=True)
    try:
        _, errors = launcher.communicate(timeout=180)
        assert launcher.returncode == 0, errors[-4000:]
    finally:
        launcher.kill()
