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
    loaded = modules_after("from core import Engine, load_config\nimport core.embed_worker")
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
