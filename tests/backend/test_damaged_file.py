"""The tests of tests/test_cli_bad_files.py that read or stage the memory's tables directly (a
memory damaged on purpose)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from click.testing import CliRunner

from tests.cli_helpers import invoke, memory_file
from tests.test_cli_bad_files import assert_one_line_refusal


def test_a_memory_damaged_inside_is_one_line_from_any_command(
        runner: CliRunner, tmp_path: Path) -> None:
    """Damage the schema check cannot see (a table's page overwritten) reaches a command
    as the driver's error, which the CLI says in one line, and doctor finds."""
    path = memory_file(tmp_path / "m.db", lambda engine: engine.append(
        "s1", {"role": "user", "content": "hello there"}))
    conn = sqlite3.connect(path)
    (root,) = conn.execute("SELECT rootpage FROM sqlite_schema WHERE name = 'sessions'").fetchone()
    conn.close()
    data = bytearray(path.read_bytes())
    data[(root - 1) * 4096:root * 4096] = b"\xee" * 4096
    path.write_bytes(bytes(data))
    result = invoke(runner, "sessions", "list", "--db", path)
    assert_one_line_refusal(result, Path("the memory file"), "is damaged")
    doctor = invoke(runner, "doctor", "--db", path)
    assert doctor.exit_code == 1 and "PROBLEM" in doctor.stdout and "damaged" in doctor.stdout
