"""``workbench scratchpad …``: list, show, write (whole-replace, refused whole) and clear."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from core import Engine
from tests.cli_helpers import invoke, memory_file, ok, ok_json, refused


@pytest.fixture
def db(tmp_path: Path) -> Path:
    """A file with a conversation that has a scratchpad, one that has none, and a note."""
    async def fill(engine: Engine) -> None:
        await engine.store("planning", 1, {"role": "user", "content": "plan the trip"})
        await engine.write_scratchpad("planning", ["goal: plan the trip", "done: nothing"])
        await engine.store("chatter", 1, {"role": "user", "content": "hello"})
        await engine.add_note("gear", "crampons")

    return memory_file(tmp_path / "memory.db", fill)


def items(runner: CliRunner, db: Path, session: str) -> list[str]:
    return ok_json(runner, "scratchpad", "show", session, "--db", db)["items"]


def test_list_shows_the_sessions_with_a_scratchpad(runner: CliRunner, db: Path) -> None:
    lines = ok(runner, "scratchpad", "list", "--db", db).stdout.splitlines()
    assert lines[0].split() == ["session", "items", "written", "first", "item"]
    assert lines[1].startswith("planning  2  ") and lines[1].endswith("goal: plan the trip")
    assert lines[-1] == "1 scratchpad"
    listed = ok_json(runner, "scratchpad", "list", "--db", db)
    assert [(pad["session_id"], pad["items"]) for pad in listed] == [
        ("planning", ["goal: plan the trip", "done: nothing"])]
    ok(runner, "scratchpad", "write", "chatter", "say hello", "--db", db)
    newest = ok_json(runner, "scratchpad", "list", "--db", db, "--limit", "1")
    assert [pad["session_id"] for pad in newest] == ["chatter"]
    assert invoke(runner, "scratchpad", "list", "--db", db, "--limit", "0").exit_code == 2


def test_list_of_a_file_without_scratchpads(runner: CliRunner, db: Path) -> None:
    ok(runner, "scratchpad", "clear", "planning", "--db", db)
    assert ok(runner, "scratchpad", "list", "--db", db).stdout == "no session has a scratchpad\n"
    assert ok_json(runner, "scratchpad", "list", "--db", db) == []


def test_show(runner: CliRunner, db: Path, tmp_path: Path) -> None:
    text = ok(runner, "scratchpad", "show", "planning", "--db", db).stdout.splitlines()
    assert text[0].startswith("planning: 2 items, written ")
    assert text[1:] == ["  1. goal: plan the trip", "  2. done: nothing"]
    shown = ok_json(runner, "scratchpad", "show", "planning", "--db", db)
    assert (shown["session_id"], shown["items"]) == ("planning",
                                                     ["goal: plan the trip", "done: nothing"])
    assert shown["updated_at"]
    assert ok(runner, "scratchpad", "show", "chatter", "--db", db).stdout == (
        "chatter has no scratchpad\n")
    assert ok_json(runner, "scratchpad", "show", "chatter", "--db", db) == {
        "session_id": "chatter", "items": [], "updated_at": None}
    assert refused(runner, "scratchpad", "show", "nope", "--db", db) == (
        "error: no session 'nope'")
    assert "does not exist" in refused(runner, "scratchpad", "show", "planning", "--db",
                                       tmp_path / "typo.db")


def test_write_replaces_the_whole_list(runner: CliRunner, db: Path, tmp_path: Path) -> None:
    assert ok(runner, "scratchpad", "write", "planning", "goal: plan the trip",
              "done: booked the hut", "next: pack", "--db", db).stdout == (
        "wrote 3 items to the scratchpad of planning\n")
    assert items(runner, db, "planning") == ["goal: plan the trip", "done: booked the hut",
                                             "next: pack"]
    source = tmp_path / "pad.txt"
    source.write_text("from a file\n\n  indented stays  \nlast", encoding="utf-8")
    written = ok_json(runner, "scratchpad", "write", "planning", "--file", source, "--db", db)
    assert written["items"] == ["from a file", "  indented stays  ", "last"]
    assert written["new_session"] is False
    ok(runner, "scratchpad", "write", "planning", "-", "--db", db, stdin="one\ntwo\n")
    assert items(runner, db, "planning") == ["one", "two"]
    ok(runner, "scratchpad", "write", "planning", "--file", "-", "--db", db, stdin="three\n")
    assert items(runner, db, "planning") == ["three"]


def test_write_to_a_new_session_makes_it_and_says_so(runner: CliRunner, db: Path) -> None:
    text = ok(runner, "scratchpad", "write", "fresh", "set the goals", "--db", db).stdout
    assert text == "wrote 1 item to the scratchpad of fresh (a new session)\n"
    assert items(runner, db, "fresh") == ["set the goals"]
    again = ok_json(runner, "scratchpad", "write", "fresh", "a", "b", "--db", db)
    assert (again["items"], again["new_session"]) == (["a", "b"], False)


def test_write_over_the_limits_is_refused_whole(runner: CliRunner, db: Path) -> None:
    before = items(runner, db, "planning")
    many = "\n".join(f"step {n}" for n in range(33))
    assert refused(runner, "scratchpad", "write", "planning", "-", "--db", db, stdin=many) == (
        "error: a scratchpad holds at most 32 items; 33 were given, and the scratchpad was "
        "left as it was")
    assert "the limit is 240 per item" in refused(
        runner, "scratchpad", "write", "planning", "fine", "x" * 241, "--db", db)
    assert items(runner, db, "planning") == before
    ok(runner, "scratchpad", "write", "planning", *["y" * 240] * 32, "--db", db)
    assert len(items(runner, db, "planning")) == 32
    assert "holds a namespace's notes" in refused(
        runner, "scratchpad", "write", "memory:default", "x", "--db", db)


def test_write_usage_errors(runner: CliRunner, db: Path, tmp_path: Path) -> None:
    source = tmp_path / "pad.txt"
    source.write_text("a\n", encoding="utf-8")
    assert invoke(runner, "scratchpad", "write", "planning", "--db", db).exit_code == 2
    assert invoke(runner, "scratchpad", "write", "planning", "a", "--file", source,
                  "--db", db).exit_code == 2
    assert invoke(runner, "scratchpad", "write", "planning", "--file", tmp_path / "none.txt",
                  "--db", db).exit_code == 2
    assert invoke(runner, "scratchpad", "write", "--db", db).exit_code == 2
    assert items(runner, db, "planning") == ["goal: plan the trip", "done: nothing"]


def test_clear(runner: CliRunner, db: Path) -> None:
    assert ok(runner, "scratchpad", "clear", "planning", "--db", db).stdout == (
        "cleared the scratchpad of planning\n")
    assert ok_json(runner, "scratchpad", "show", "planning", "--db", db)["updated_at"] is None
    assert ok_json(runner, "scratchpad", "clear", "planning", "--db", db) == {
        "session_id": "planning", "cleared": False}
    assert ok(runner, "scratchpad", "clear", "chatter", "--db", db).stdout == (
        "chatter had no scratchpad\n")
    assert refused(runner, "scratchpad", "clear", "nope", "--db", db) == (
        "error: no session 'nope'")
    # The session itself stays.
    assert ok_json(runner, "sessions", "show", "planning", "--db", db)["last_sequence"] == 1
