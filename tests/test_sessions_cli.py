"""``workbench sessions …``: list, show, export and rm, their JSON, their refusals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from core import Engine
from tests.cli_helpers import invoke, memory_file, ok, ok_json, refused

LONG_ARGUMENT = "north face " * 30


@pytest.fixture
def db(tmp_path: Path) -> Path:
    """A file with a conversation that calls a tool (with a rolling summary and a
    scratchpad), another agent's conversation, and a note (so a memory: session)."""
    async def fill(engine: Engine) -> None:
        await engine.store("trip", 1, {"role": "user", "content": "Weather at Cortina?\n"
                                                                 "And on Sunday?"})
        await engine.store("trip", 2, {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call-1", "type": "function", "function": {
                "name": "forecast",
                "arguments": json.dumps({"place": "Cortina", "route": LONG_ARGUMENT})}}]})
        await engine.store("trip", 3, {"role": "tool", "tool_call_id": "call-1",
                                       "content": json.dumps({"sky": "snow " * 60})})
        await engine.store("trip", 4, {"role": "assistant", "content": "Snow all weekend."})
        await engine.write_summary_state("trip", "The user plans a trip to Cortina.", 2, 0)
        await engine.write_scratchpad("trip", ["check the forecast", "book the hut"])
        await engine.store("other", 1, {"role": "user", "content": "hello"}, agent="bot-b")
        await engine.add_note("gear", "crampons and an ice axe")

    return memory_file(tmp_path / "memory.db", fill)


def session_ids(runner: CliRunner, db: Path) -> set[str]:
    return {s["session_id"] for s in ok_json(runner, "sessions", "list", "--db", db)["sessions"]}


def test_list_marks_the_sessions_that_hold_notes(runner: CliRunner, db: Path) -> None:
    lines = ok(runner, "sessions", "list", "--db", db).stdout.splitlines()
    assert lines[0].split() == ["id", "agent", "kind", "events", "last", "updated"]
    trip = next(line.split() for line in lines if line.startswith("trip "))
    assert trip[:5] == ["trip", "default", "conversation", "4", "#4"]
    notes = next(line.split() for line in lines if line.startswith("memory:default "))
    assert notes[2] == "notes"
    assert "sessions 1-3" in lines[-2] and "workbench notes list" in lines[-1]

    listed = ok_json(runner, "sessions", "list", "--db", db)
    by_id = {s["session_id"]: s for s in listed["sessions"]}
    assert set(by_id) == {"trip", "other", "memory:default"}
    assert by_id["trip"] | {"created_at": None, "updated_at": None} == {
        "session_id": "trip", "agent_identity": "default", "created_at": None,
        "updated_at": None, "event_count": 4, "chunk_count": by_id["trip"]["chunk_count"],
        "last_sequence": 4, "kind": "conversation", "notes_namespace": None}
    assert (by_id["memory:default"]["kind"], by_id["memory:default"]["notes_namespace"]) == (
        "notes", "default")


def test_list_filters_by_agent_and_pages(runner: CliRunner, db: Path) -> None:
    only_b = ok_json(runner, "sessions", "list", "--db", db, "--agent", "bot-b")["sessions"]
    assert [s["session_id"] for s in only_b] == ["other"]
    pages = [ok_json(runner, "sessions", "list", "--db", db, "--limit", "1", "--offset", n)
             ["sessions"] for n in ("0", "1", "2", "3")]
    assert [len(page) for page in pages] == [1, 1, 1, 0]
    assert {page[0]["session_id"] for page in pages[:3]} == {"trip", "other", "memory:default"}
    assert "--offset shows more" in ok(runner, "sessions", "list", "--db", db,
                                       "--limit", "1").stdout
    assert ok(runner, "sessions", "list", "--db", db, "--agent", "nobody").stdout == (
        "no sessions of agent 'nobody'\n")
    assert invoke(runner, "sessions", "list", "--db", db, "--limit", "0").exit_code == 2


def test_show_prints_summary_scratchpad_and_messages_with_tools_on_one_line(
        runner: CliRunner, db: Path) -> None:
    text = ok(runner, "sessions", "show", "trip", "--db", db).stdout
    lines = text.splitlines()
    assert lines[0] == "session     trip (conversation)"
    assert "covers up to #2 (epoch 1" in text and "  The user plans a trip to Cortina." in lines
    assert "  1. check the forecast" in lines and "  2. book the hut" in lines
    assert "messages    4 messages, #1-#4" in lines
    assert "  Weather at Cortina?" in lines and "  And on Sunday?" in lines
    call = next(line for line in lines if "→ " in line)
    assert call.startswith('  → forecast(place="Cortina", route="north face') and len(call) <= 104
    result = next(line for line in lines if "← " in line)
    assert result.startswith('  ← forecast: {"sky": "snow') and result.endswith("…")
    assert "  Snow all weekend." in lines


def test_show_json_holds_everything_whole(runner: CliRunner, db: Path) -> None:
    shown = ok_json(runner, "sessions", "show", "trip", "--db", db)
    assert (shown["session_id"], shown["kind"], shown["last_sequence"]) == ("trip",
                                                                            "conversation", 4)
    assert shown["summary"]["text"] == "The user plans a trip to Cortina."
    assert shown["summary"]["upper_sequence"] == 2
    assert shown["scratchpad"]["items"] == ["check the forecast", "book the hut"]
    assert [m["sequence"] for m in shown["messages"]] == [1, 2, 3, 4]
    arguments = shown["messages"][1]["payload"]["tool_calls"][0]["function"]["arguments"]
    assert json.loads(arguments)["route"] == LONG_ARGUMENT
    assert shown["messages"][2]["payload"]["content"] == json.dumps({"sky": "snow " * 60})
    assert ok_json(runner, "sessions", "show", "other", "--db", db)["scratchpad"] is None


def test_show_limits_to_the_latest_messages(runner: CliRunner, db: Path) -> None:
    latest = ok(runner, "sessions", "show", "trip", "--db", db, "--limit", "2").stdout
    assert "2 messages, #3-#4 (the latest; --all shows every one)" in latest
    assert "#1 " not in latest and "#4 " in latest
    shown = ok_json(runner, "sessions", "show", "trip", "--db", db, "--limit", "1")
    assert [m["sequence"] for m in shown["messages"]] == [4]
    every = ok_json(runner, "sessions", "show", "trip", "--db", db, "--limit", "1", "--all")
    assert len(every["messages"]) == 4 and every["limit"] is None


def test_show_refuses_a_missing_session_and_a_missing_file(runner: CliRunner, db: Path,
                                                           tmp_path: Path) -> None:
    assert refused(runner, "sessions", "show", "nope", "--db", db) == "error: no session 'nope'"
    assert "does not exist" in refused(runner, "sessions", "show", "trip", "--db",
                                       tmp_path / "typo.db")
    assert not (tmp_path / "typo.db").exists()
    assert invoke(runner, "sessions", "show", "--db", db).exit_code == 2


def test_export_writes_the_session_file(runner: CliRunner, db: Path, tmp_path: Path) -> None:
    out = tmp_path / "trip.json"
    text = ok(runner, "sessions", "export", "trip", "--db", db, "--out", out).stdout
    assert text == (f"wrote trip to {out}: 4 messages, a rolling summary, "
                    "2 scratchpad items\n")
    document = json.loads(out.read_text())
    assert (document["format"], document["session"]["session_id"]) == (
        "memory-workbench-session", "trip")
    assert [event["sequence"] for event in document["events"]] == [1, 2, 3, 4]
    assert document["scratchpad"]["items"] == ["check the forecast", "book the hut"]

    again = ok_json(runner, "sessions", "export", "other", "--db", db, "--out", out)
    assert again == {"path": str(out), "session_id": "other", "events": 1,
                     "has_summary": False, "scratchpad_items": 0}
    assert json.loads(out.read_text())["session"]["session_id"] == "other"


def test_export_refuses_a_missing_session_and_needs_out(runner: CliRunner, db: Path,
                                                        tmp_path: Path) -> None:
    out = tmp_path / "none.json"
    assert refused(runner, "sessions", "export", "nope", "--db", db, "--out", out) == (
        "error: no session 'nope'")
    assert not out.exists()
    assert invoke(runner, "sessions", "export", "trip", "--db", db).exit_code == 2


def test_rm_asks_and_declining_keeps_the_session(runner: CliRunner, db: Path) -> None:
    declined = invoke(runner, "sessions", "rm", "trip", "--db", db, stdin="n\n")
    assert declined.exit_code == 1
    assert "remove session 'trip' and its messages, summary and scratchpad?" in declined.stderr
    assert "trip" in session_ids(runner, db)

    accepted = ok(runner, "sessions", "rm", "trip", "--db", db, stdin="y\n")
    assert accepted.stdout == "removed session trip\n"
    assert "trip" not in session_ids(runner, db)
    assert refused(runner, "sessions", "show", "trip", "--db", db) == "error: no session 'trip'"
    assert ok_json(runner, "scratchpad", "list", "--db", db) == []


def test_rm_yes_json_and_a_missing_session(runner: CliRunner, db: Path) -> None:
    assert ok_json(runner, "sessions", "rm", "other", "--db", db, "--yes") == {
        "removed": "other", "kind": "conversation", "notes_namespace": None,
        "last_sequence": 1}
    assert session_ids(runner, db) == {"trip", "memory:default"}
    assert refused(runner, "sessions", "rm", "other", "--db", db, "--yes") == (
        "error: no session 'other'")


def test_rm_of_a_notes_session_says_it_removes_the_namespaces_notes(runner: CliRunner,
                                                                     db: Path) -> None:
    declined = invoke(runner, "sessions", "rm", "memory:default", "--db", db, stdin="n\n")
    assert declined.exit_code == 1 and "every note of namespace 'default'" in declined.stderr
    assert ok_json(runner, "notes", "list", "--db", db)["total"] == 1
    ok(runner, "sessions", "rm", "memory:default", "--db", db, "--yes")
    assert ok_json(runner, "notes", "list", "--db", db)["total"] == 0
