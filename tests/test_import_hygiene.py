"""core/ never drags in the UI: checked in a fresh interpreter, as STYLE.md asks."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def modules_after(code: str) -> set[str]:
    probe = code + "\nimport sys\nprint('\\n'.join(sorted({m.split('.')[0] for m in sys.modules})))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         cwd=ROOT, check=True)
    return set(out.stdout.split())


def test_importing_core_loads_nothing_heavy() -> None:
    loaded = modules_after("import core")
    assert not loaded & {"textual", "workbench", "numpy", "sqlean", "model2vec", "click",
                          "pydantic"}


def test_the_engine_never_imports_textual_or_the_app() -> None:
    loaded = modules_after("from core import Engine, load_config\nimport core.embeddings.worker")
    assert "textual" not in loaded and "workbench" not in loaded
    assert "model2vec" not in loaded  # the model library loads with the model, not before


def test_no_module_in_core_imports_the_ui() -> None:
    offenders = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in (ROOT / "core").rglob("*.py")
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if line.lstrip().startswith(("import textual", "from textual", "import workbench",
                                     "from workbench"))
    ]
    assert offenders == []


def importing_lines(folder: Path, prefixes: tuple[str, ...]) -> list[str]:
    """``file:line`` of every import under ``folder`` naming a module that starts with one of
    ``prefixes`` (deferred imports inside functions included)."""
    starts = tuple(f"{word} {prefix}" for prefix in prefixes for word in ("import", "from"))
    return [
        f"{path.relative_to(ROOT)}:{number}"
        for path in folder.rglob("*.py")
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if line.lstrip().startswith(starts)
    ]


def test_the_app_never_imports_the_other_front_ends() -> None:
    # The CLI opens the app (lazily, in the commands that open it), never the other way.
    assert importing_lines(ROOT / "workbench" / "app", (
        "workbench.cli", "workbench.mcp", "workbench.bench")) == []


def test_panes_screens_widgets_and_long_work_never_import_the_app_module() -> None:
    # They see the app as workbench.app.host.WorkbenchHost; importing the App back would
    # make a cycle with the App, which imports them all.
    app_folder = ROOT / "workbench" / "app"
    offenders = [line for part in ("panes", "screens", "widgets")
                 for line in importing_lines(app_folder / part, ("workbench.app.app",))]
    long_work = (app_folder / "long_work.py").read_text()
    assert offenders == [] and "workbench.app.app" not in long_work


def test_the_command_line_loads_no_textual_until_a_command_opens_the_app() -> None:
    loaded = modules_after("import workbench.cli.root")
    assert "textual" not in loaded


def test_core_and_the_engine_never_import_an_agent_framework() -> None:
    # The frameworks are extras: core.integrations imports them, nothing else in core does.
    for code in ("import core", "import core.engine", "import core.importers"):
        loaded = modules_after(code)
        assert not loaded & {"langgraph", "langchain_core", "agents"}, code
