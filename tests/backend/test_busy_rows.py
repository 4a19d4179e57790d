"""The tests of tests/test_busy.py that read or stage the memory's tables directly (a held lock
leaves no row behind)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from core import Engine
from core.errors import MemoryBusy
from tests.cli_helpers import invoke
from tests.conftest import rows
from tests.test_busy import BUSY, BUSY_MS, CONFIG, mcp_session, write_lock


def events(path: Path, session: str = "s") -> int:
    return rows(path, "SELECT count(*) FROM conversation_events WHERE session_id = ?",
                session)[0][0]


def notes(path: Path) -> int:
    return rows(path, "SELECT count(*) FROM notes")[0][0]


async def test_a_store_and_a_note_under_a_held_lock_are_busy_and_write_nothing(
        db_path: Path) -> None:
    async with Engine.open(db_path, config=CONFIG, start_worker=False) as engine:
        await engine.store("s", 1, {"role": "user", "content": "first"})
        with write_lock(db_path):
            with pytest.raises(MemoryBusy, match="holds the write lock") as refused:
                await engine.store("s", 2, {"role": "user", "content": "second"})
            assert BUSY in str(refused.value) and "nothing was written; try again" in str(
                refused.value)
            assert refused.value.waited_s == BUSY_MS / 1000
            with pytest.raises(MemoryBusy, match="nothing was written"):
                await engine.notes.add("plan", "a note written while the file is busy")
            assert events(db_path) == 1 and notes(db_path) == 0
        await engine.store("s", 2, {"role": "user", "content": "second"})
        await engine.notes.add("plan", "a note written once the lock is let go")
    assert events(db_path) == 2 and notes(db_path) == 1


def test_a_cli_write_under_a_held_lock_is_one_busy_line_then_succeeds(
        db_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    settings = tmp_path / "busy.toml"
    settings.write_text('[embedding]\nbackend = "deterministic"\nfallback_dimensions = 64\n'
                        f'[storage]\nbusy_timeout_ms = {BUSY_MS}\n')
    monkeypatch.setenv("WORKBENCH_CONFIG", str(settings))
    runner = CliRunner()
    append = ("sessions", "append", "s", "--db", db_path, "--role", "user", "--content", "hi")
    invoke(runner, *append)  # makes the file
    with write_lock(db_path):
        refused = invoke(runner, *append)
        assert refused.exit_code == 1, refused.output
        (line,) = refused.stderr.splitlines()
        assert line.startswith("error: ") and BUSY in line, line
        assert "internal error" not in line and "Traceback" not in refused.output
        assert events(db_path) == 1
    assert invoke(runner, *append).exit_code == 0
    assert events(db_path) == 2


async def test_an_mcp_tool_call_under_a_held_lock_is_a_busy_refusal(
        db_path: Path, tmp_path: Path) -> None:
    async with mcp_session(db_path, tmp_path) as session:
        arguments = {"session_id": "chat", "role": "user", "content": "while it is busy"}
        with write_lock(db_path):
            result = await session.call_tool("conversation_append", arguments)
            assert result.is_error
            (content,) = result.content
            assert content.text.startswith("conversation_append: ") and BUSY in content.text
            assert "internal error" not in content.text and "\n" not in content.text
            assert events(db_path, "chat") == 0
        result = await session.call_tool("conversation_append", arguments)
        assert not result.is_error, result.content[0].text
        assert json.loads(result.content[0].text)["sequence"] == 1
    assert events(db_path, "chat") == 1
