"""One rule for a memory file that does not exist yet: a command that adds to memory creates
it and says so; a command that reads or changes what is there refuses, naming the commands
that create one. Every command taking ``--db`` is on one side or is said to be neither."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from tests.cli_helpers import invoke
from workbench.cli.root import main

# Each command that adds to memory, with the arguments it needs.
ADDS: dict[str, list[str]] = {
    "sessions append": ["s1", "--role", "user", "--content", "hello"],
    "notes add": ["n1", "--content", "a note"],
    "notes import": ["NOTES_FILE"],
    "facts set": ["user", "name", "Ada"],
    "scratchpad write": ["s1", "an item"],
    "schedules add": ["--user", "u", "--goal", "g", "--every", "1h"],
    "import jsonl": ["JSONL_FILE"],
}

# Each command that reads or changes what is there, with arguments that would do so.
NEEDS: dict[str, list[str]] = {
    "sessions list": [], "sessions show": ["s1"], "sessions rm": ["s1", "--yes"],
    "sessions context": ["s1", "--query", "q"], "sessions export": ["s1", "--out", "x.jsonl"],
    "notes list": [], "notes show": ["n1"], "notes edit": ["n1", "--content", "x"],
    "notes rm": ["n1", "--yes"], "notes alias": ["n1", "a1"], "notes unalias": ["a1"],
    "notes rename": ["n1", "n2"], "notes export": ["--out", "x.json"],
    "scratchpad list": [], "scratchpad show": ["s1"], "scratchpad clear": ["s1"],
    "facts list": [], "facts get": ["user", "name"], "facts rm": ["user", "name"],
    "schedules list": [], "schedules show": ["x"], "schedules edit": ["x", "--goal", "g"],
    "schedules pause": ["x"], "schedules resume": ["x"], "schedules rm": ["x"],
    "schedules runs": ["x"], "scheduler run": ["--once"],
    "search": ["query", "--session", "s1"], "log": [], "summarize": ["s1"], "compact": ["s1"],
    "consolidate": [], "reindex": [], "eval": ["--dataset", "JSONL_FILE"],
    "tune": ["--dataset", "JSONL_FILE"],
    "export session": ["s1", "--format", "jsonl", "--out", "x.jsonl"],
    "export namespace": ["ns", "--format", "jsonl", "--out", "x.jsonl"],
}

# Commands whose --db is neither: they create by design (the app, the MCP server, the
# imports of other stores, tested with their formats), report on a missing file (doctor),
# or are benchmarks and server administration with their own rules.
NEITHER = {"open", "mcp", "doctor", "import locomo",
           "import aidaemon", "import oxydra", "import pynchy", "import crabtalk",
           "import langgraph-checkpoints", "import langgraph-store", "import openai-agents-session",
           "pg grant", "pg revoke", "pg roles"}


def commands_with_db(group: click.Group, prefix: str = "") -> set[str]:
    found = set()
    for name, command in group.commands.items():
        path = f"{prefix}{name}"
        if isinstance(command, click.Group):
            found |= commands_with_db(command, path + " ")
        elif any(param.name == "db" for param in command.params):
            found.add(path)
    return found


def test_every_command_with_a_db_follows_the_rule_or_says_why_not() -> None:
    every = {path for path in commands_with_db(main) if not path.startswith("bench ")}
    assert set(ADDS) | set(NEEDS) | NEITHER == every
    assert not (set(ADDS) & set(NEEDS))


def arguments(args: list[str], tmp_path: Path) -> list[str]:
    notes = tmp_path / "notes.json"
    notes.write_text(json.dumps({"format": "memory-workbench-notes", "version": 1,
                                 "namespace": "default", "notes": []}))
    chats = tmp_path / "chats.jsonl"
    chats.write_text(json.dumps({"session_id": "s", "role": "user", "content": "hi"}) + "\n")
    return [str(notes) if a == "NOTES_FILE" else str(chats) if a == "JSONL_FILE" else a
            for a in args]


@pytest.mark.parametrize("command", sorted(ADDS))
def test_a_command_that_adds_creates_the_file_and_says_so(
        runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str) -> None:
    monkeypatch.chdir(tmp_path)
    db = tmp_path / "new" / "memory.db"
    result = invoke(runner, *command.split(), *arguments(ADDS[command], tmp_path),
                    "--db", db)
    assert result.exit_code == 0, result.output
    assert db.exists()
    assert f"created {db}" in result.stderr
    again = invoke(runner, *command.split(), *arguments(ADDS[command], tmp_path), "--db", db)
    assert "created" not in again.stderr


@pytest.mark.parametrize("command", sorted(NEEDS))
def test_a_command_that_reads_or_changes_refuses_naming_the_creators(
        runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str) -> None:
    monkeypatch.chdir(tmp_path)
    db = tmp_path / "memory.db"
    result = invoke(runner, *command.split(), *arguments(NEEDS[command], tmp_path),
                    "--db", db)
    assert result.exit_code == 1, result.output
    assert not db.exists()
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"error: {db} does not exist")
    assert "workbench sessions append" in line and "workbench notes add" in line
