"""``workbench sessions …``: list, show, export and rm, their JSON, their refusals."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from core import Engine
from tests.cli_helpers import FIXTURE_CONFIG, invoke, memory_file, ok, ok_json, refused

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


def test_export_refuses_a_missing_session(runner: CliRunner, db: Path,
                                         tmp_path: Path) -> None:
    out = tmp_path / "none.json"
    assert refused(runner, "sessions", "export", "nope", "--db", db, "--out", out) == (
        "error: no session 'nope'")
    assert not out.exists()


def test_export_without_out_writes_beside_the_memory_and_says_where(
        runner: CliRunner, db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    written = (tmp_path / "exports" / "trip.json").resolve()
    text = ok(runner, "sessions", "export", "trip", "--db", db).stdout
    assert text.startswith(f"wrote trip to {written}: 4 messages")
    assert json.loads(written.read_text())["session"]["session_id"] == "trip"
    assert list(elsewhere.iterdir()) == []


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


def on_file(db: Path, read: Any) -> Any:
    """What ``read(engine)`` returns on an Engine of its own: a write read back."""
    async def run() -> Any:
        async with Engine.open(db, config=FIXTURE_CONFIG, start_worker=False) as engine:
            return await read(engine)

    return asyncio.run(run())


def test_append_stores_at_the_next_sequence_and_embeds_it(runner: CliRunner, db: Path,
                                                          tmp_path: Path) -> None:
    text = ok(runner, "sessions", "append", "trip", "--db", db, "--role", "user",
              "--content", "Is the hut open?").stdout
    assert text == "appended #5 (user) to trip\n"
    reply = tmp_path / "reply.txt"
    reply.write_text("open until 18:00\n", encoding="utf-8")
    stored = ok_json(runner, "sessions", "append", "trip", "--db", db, "--role", "tool",
                     "--file", reply, "--tool-name", "huts", "--tool-call-id", "call-2",
                     "--importance", "0.9", "--metadata", '{"source": "cli", "n": 1}')
    assert (stored["session_id"], stored["sequence"], stored["new_session"]) == ("trip", 6,
                                                                                 False)
    ok(runner, "sessions", "append", "trip", "--db", db, "--role", "assistant", "--file", "-",
       stdin="It is open.")

    records = on_file(db, lambda engine: engine.recall("trip"))
    assert [r.sequence for r in records] == [1, 2, 3, 4, 5, 6, 7]
    assert records[4].payload == {"role": "user", "content": "Is the hut open?"}
    assert records[5].payload == {"role": "tool", "content": "open until 18:00\n",
                                  "tool_name": "huts", "tool_call_id": "call-2",
                                  "importance": 0.9, "metadata": {"source": "cli", "n": 1}}
    assert records[5].importance == 0.9
    assert records[6].payload == {"role": "assistant", "content": "It is open."}
    status = on_file(db, lambda engine: engine.embedding_status())
    assert status.backlog == 0 and status.embedded > 0


def test_append_to_a_new_session_makes_it_for_the_agent(runner: CliRunner, db: Path) -> None:
    text = ok(runner, "sessions", "append", "fresh", "--db", db, "--role", "system",
              "--content", "Be brief.", "--agent", "bot-c").stdout
    assert text == "appended #1 (system) to fresh (a new session)\n"
    listed = ok_json(runner, "sessions", "list", "--db", db, "--agent", "bot-c")["sessions"]
    assert [(s["session_id"], s["last_sequence"]) for s in listed] == [("fresh", 1)]
    again = ok_json(runner, "sessions", "append", "fresh", "--db", db, "--role", "user",
                    "--content", "ok")
    assert (again["sequence"], again["new_session"]) == (2, False)


def test_append_refuses_usage_errors_with_2_and_engine_refusals_with_1(
        runner: CliRunner, db: Path, tmp_path: Path) -> None:
    base = ["sessions", "append", "trip", "--db", db]
    for wrong in (["--content", "x"], ["--role", "robot", "--content", "x"], ["--role", "user"],
                  ["--role", "user", "--content", "x", "--file", "-"],
                  ["--role", "user", "--content", "x", "--importance", "2"],
                  ["--role", "user", "--content", "x", "--metadata", "{oops"],
                  ["--role", "user", "--content", "x", "--metadata", "[1, 2]"],
                  ["--role", "user", "--file", tmp_path / "missing.txt"]):
        assert invoke(runner, *base, *wrong).exit_code == 2, wrong
    assert "must be a JSON object" in invoke(runner, *base, "--role", "user", "--content", "x",
                                             "--metadata", "[1, 2]").stderr
    assert refused(runner, *base, "--role", "user", "--content", "x", "--metadata",
                   '{"n": 99999999999999999999999}') == (
        "error: message.metadata.n is an integer outside the signed 64-bit range")
    assert "holds a namespace's notes" in refused(runner, "sessions", "append",
                                                  "memory:default", "--db", db, "--role",
                                                  "user", "--content", "x")
    assert "must not be empty" in refused(runner, "sessions", "append", " ", "--db", db,
                                         "--role", "user", "--content", "x")
    assert [r.sequence for r in on_file(db, lambda engine: engine.recall("trip"))] == [1, 2, 3,
                                                                                      4]


@pytest.fixture
def dogs(tmp_path: Path) -> Path:
    """A file with one embedded conversation, and a config whose tri-hybrid context takes
    the 2 latest events and counts only a near-identical vector as relevant."""
    config = Path(os.environ["WORKBENCH_CONFIG"])
    config.write_text(config.read_text() + "[retrieval]\nrecency_limit = 2\n"
                                           "relevance_threshold = 0.95\n")

    async def fill(engine: Engine) -> None:
        await engine.store("dogs", 1, {"role": "user", "content": "Which hut takes dogs?"})
        await engine.store("dogs", 2, {"role": "assistant", "content": "The Rifugio Auronzo.",
                                       "importance": 0.9})
        await engine.store("dogs", 3, {"role": "user", "content": "Thanks"})
        await engine.store("dogs", 4, {"role": "assistant", "content": "Enjoy the walk."})
        await engine.drain()

    return memory_file(tmp_path / "dogs.db", fill)


def test_context_says_why_each_event_was_chosen(runner: CliRunner, dogs: Path) -> None:
    lines = ok(runner, "sessions", "context", "dogs", "--db", dogs, "--query",
               "Which hut takes dogs?").stdout.splitlines()
    assert lines[0].split() == ["seq", "role", "chosen", "by", "text"]
    assert [line.split()[:3] for line in lines[1:5]] == [
        ["#1", "user", "relevance"], ["#2", "assistant", "salience"],
        ["#3", "user", "recency"], ["#4", "assistant", "recency"]]
    assert lines[1].endswith("Which hut takes dogs?") and "relevance 1.00" in lines[1]
    assert lines[5] == ("4 events for 'Which hut takes dogs?': 2 by recency, 1 by salience, "
                        "1 by relevance")

    found = ok_json(runner, "sessions", "context", "dogs", "--db", dogs, "--query",
                    "Which hut takes dogs?")
    assert found["counts"] == {"recency": 2, "salience": 1, "relevance": 1}
    assert [(m["sequence"], m["reasons"]) for m in found["messages"]] == [
        (1, ["relevance"]), (2, ["salience"]), (3, ["recency"]), (4, ["recency"])]
    assert found["messages"][0]["similarity"] > 0.95
    assert found["messages"][1]["message"] == {"role": "assistant",
                                               "content": "The Rifugio Auronzo.",
                                               "importance": 0.9}

    unasked = ok(runner, "sessions", "context", "dogs", "--db", dogs).stdout.splitlines()
    assert [line.split()[0] for line in unasked[1:-1]] == ["#2", "#3", "#4"]
    assert unasked[-1] == ("3 events (no query: no relevance): 2 by recency, 1 by salience, "
                           "0 by relevance")


def test_context_with_a_budget_is_what_restore_replays(runner: CliRunner, db: Path) -> None:
    lines = ok(runner, "sessions", "context", "trip", "--db", db, "--budget",
               "1000").stdout.splitlines()
    assert [line.split()[:2] for line in lines[1:4]] == [["summary", "system"], ["#3", "tool"],
                                                         ["#4", "assistant"]]
    assert lines[1].endswith("Rolling session summary: The user plans a trip to Cortina.")
    assert lines[4].startswith("3 messages in ") and lines[4].endswith("; 0 older dropped")
    assert lines[5] == "rolling summary through #2 injected"

    restored = ok_json(runner, "sessions", "context", "trip", "--db", db, "--budget", "1000")
    assert restored == on_file(db, lambda engine: engine.restore("trip", 1000)).to_dict()
    assert (restored["sequences"], restored["token_budget"]) == ([None, 3, 4], 1000)

    tight = ok(runner, "sessions", "context", "trip", "--db", db, "--budget", "1").stdout
    assert tight.splitlines() == [
        f"0 messages in 0 of 1 tokens ({restored['token_counting']}); 2 older dropped",
        "rolling summary through #2 did not fit the budget"]


def test_context_shows_a_tool_call_without_text_as_its_call(runner: CliRunner,
                                                            db: Path) -> None:
    lines = ok(runner, "sessions", "context", "trip", "--db", db).stdout.splitlines()
    (call,) = [line for line in lines if line.startswith("#2 ")]
    assert '→ forecast(place="Cortina", route=' in call


def test_context_refuses_a_missing_session_and_usage_errors(runner: CliRunner, db: Path,
                                                            tmp_path: Path) -> None:
    assert refused(runner, "sessions", "context", "nope", "--db", db) == (
        "error: no session 'nope'")
    assert refused(runner, "sessions", "context", "nope", "--db", db, "--budget", "50") == (
        "error: no session 'nope'")
    assert "does not exist" in refused(runner, "sessions", "context", "trip", "--db",
                                       tmp_path / "typo.db")
    for wrong in (["--budget", "0"], ["--budget", "ten"], ["--budget", "50", "--query", "x"]):
        assert invoke(runner, "sessions", "context", "trip", "--db", db,
                      *wrong).exit_code == 2, wrong
    assert invoke(runner, "sessions", "context", "--db", db).exit_code == 2
