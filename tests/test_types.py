"""The type checker and the linter report nothing: run as a user would run them.

mypy reads its settings (files, Python version, untyped extensions) from pyproject.toml, so
this test and a person typing ``mypy`` check the same thing.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=600)


@pytest.mark.slow
def test_mypy_finds_no_type_errors_in_core_and_workbench() -> None:
    result = _run("mypy")
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_finds_nothing_in_the_code_and_tests() -> None:
    result = _run("ruff", "check", "core", "workbench", "tests")
    assert result.returncode == 0, result.stdout + result.stderr
