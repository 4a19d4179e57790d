"""How the code is laid out, written down, and the parts of it a machine can check.

The code is formatted by hand, not by ``ruff format``: a formatter would rewrite every file
(one commit touching all of them, fighting every branch in flight) and undo the alignment
below, which is what lets a reader scan a long call. The style:

- Lines at most 100 characters; four spaces, never tabs; no trailing whitespace; a newline at
  the end of every file.
- A continuation line is aligned under what it continues: the first argument after an open
  bracket, or the first operand of a wrapped expression; when nothing fits after the bracket,
  break after it and indent eight spaces (four for the closing lines of a literal).
- Every module opens with a docstring saying what it is for; docstrings say what in one
  sentence, then why where it is not obvious. Comments explain why, never history.
- ``from __future__ import annotations`` in every module with code.
- Imports sorted as ``ruff check`` (rule ``I``) sorts them.

``ruff check`` (``tests/test_types.py``, over core, workbench and tests) checks the line
length, tabs in indentation, trailing whitespace and import order in Python files. The tests
here check what it does not: module docstrings, and the same whitespace rules in the files
that are not Python (migrations, themes, configuration, README). Alignment itself is left to
the reader's eye and to review.

They also keep raw SQL where the storage-level tests live (``tests/backend/``, ``tests/pg/``):
elsewhere a test says what it checks through the engine's or the backend's own API.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PYTHON_FOLDERS = ("core", "workbench", "tests")
TEXT_SUFFIXES = {".sql", ".toml", ".md", ".tcss", ".css", ".txt", ".json", ".yml", ".yaml"}
SKIPPED_FOLDERS = {"__pycache__", "__snapshots__", ".venv", ".git", ".hypothesis",
                   ".ruff_cache", ".mypy_cache", "memory_workbench.egg-info"}
# The helpers of tests/conftest.py that run SQL on a memory, and the ways to open one.
RAW_SQL = re.compile(r"from tests\.conftest import [^\n]*\b(rows|execute)\b"
                     r"|\bopen_connection\(|\bpsycopg\.connect\(")
SQL_FOLDERS = ("backend", "pg")
SQL_HELPER_FILES = {"conftest.py", "pg_server.py"}  # where those helpers are defined


def _files(folder: Path) -> Iterator[Path]:
    for path in sorted(folder.iterdir()):
        if path.name in SKIPPED_FOLDERS:
            continue
        if path.is_dir():
            yield from _files(path)
        else:
            yield path


def python_files() -> list[Path]:
    return [path for folder in PYTHON_FOLDERS for path in _files(ROOT / folder)
            if path.suffix == ".py"]


def text_files() -> list[Path]:
    """The files that are neither Python nor generated (snapshots, screenshots)."""
    found = [ROOT / name for name in ("pyproject.toml", "README.md", ".ci/run")]
    for folder in (*PYTHON_FOLDERS, "themes"):
        found += [path for path in _files(ROOT / folder) if path.suffix in TEXT_SUFFIXES]
    return [path for path in found if path.exists()]


def test_every_module_opens_with_a_docstring() -> None:
    missing = []
    for path in python_files():
        text = path.read_text(encoding="utf-8")
        if text.strip() and ast.get_docstring(ast.parse(text)) is None:
            missing.append(str(path.relative_to(ROOT)))
    assert not missing, f"modules without a docstring: {missing}"


def test_files_that_are_not_python_keep_the_same_whitespace_rules() -> None:
    found = []
    for path in text_files():
        text = path.read_text(encoding="utf-8")
        where = path.relative_to(ROOT)
        if text and not text.endswith("\n"):
            found.append(f"{where}: no newline at the end")
        for number, line in enumerate(text.splitlines(), 1):
            if "\t" in line:
                found.append(f"{where}:{number}: a tab")
            if line != line.rstrip():
                found.append(f"{where}:{number}: trailing whitespace")
    assert not found, "\n".join(found)


def test_the_whitespace_check_sees_what_it_looks_for() -> None:
    """The file walk finds the kinds of files the rules are about, so the check above cannot
    pass by looking at nothing."""
    suffixes = {path.suffix for path in text_files()}
    assert {".sql", ".toml", ".md"} <= suffixes
    assert len(python_files()) > 300


def test_raw_sql_in_tests_stays_with_the_storage_level_tests() -> None:
    tests = ROOT / "tests"
    found = []
    for path in python_files():
        relative = path.relative_to(tests) if path.is_relative_to(tests) else None
        if relative is None or relative.parts[0] in SQL_FOLDERS:
            continue
        if len(relative.parts) == 1 and relative.name in SQL_HELPER_FILES:
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if RAW_SQL.search(line):
                found.append(f"tests/{relative}:{number}: {line.strip()}")
    assert not found, ("raw SQL outside tests/backend/ and tests/pg/ (use the engine's or "
                       "the backend's API, or move the test there):\n" + "\n".join(found))
