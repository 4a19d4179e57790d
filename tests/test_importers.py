"""Importers of the other seeds' stores and of JSONL conversations, on fixture files each
test builds in its seed's shape: counts, content landed and searchable, idempotence,
malformed input refused before anything is written, skips listed with reasons, namespaces."""

from __future__ import annotations

import json
import struct
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from core import Engine
from core.clock import frozen
from core.errors import InvalidInput
from core.importers import check_source, import_file
from core.importers.report import ImportReport
from core.storage.sqlite.connection import sqlite_module
from tests.conftest import DETERMINISTIC

CONFIG = {**DETERMINISTIC, "summary": {"auto": False}, "consolidation": {"enabled": False}}


@pytest.fixture
async def engine(memory: str):
    async with Engine.open(memory, config=CONFIG) as opened:
        yield opened


def counts(report: ImportReport, kind: str) -> tuple[int, int, int]:
    c = report.counts[kind]
    return c.added, c.already, c.skipped


def reasons(report: ImportReport, kind: str) -> list[str]:
    return [s.reason for s in report.skipped if s.kind == kind]


# -- fixture files in each seed's shape ----------------------------------------------------


def write_jsonl(path: Path, lines: list[Any]) -> Path:
    path.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n"
                            for line in lines), encoding="utf-8")
    return path


def _connect(path: Path) -> Any:
    return sqlite_module().connect(str(path))


def make_seed000(path: Path, messages: list[dict[str, Any]],
                 facts: list[tuple[str, str, str, str]] = ()) -> Path:
    """aidaemon's ``messages`` and ``facts`` tables, as its schema gives them."""
    conn = _connect(path)
    conn.executescript("""
        CREATE TABLE messages (
            id TEXT PRIMARY KEY, session_id TEXT NOT NULL, role TEXT NOT NULL,
            content TEXT, tool_call_id TEXT, tool_name TEXT, tool_calls_json TEXT,
            created_at TEXT NOT NULL, importance REAL DEFAULT 0.5, embedding BLOB,
            embedding_error TEXT, consolidated_at TEXT);
        CREATE INDEX idx_messages_session ON messages(session_id);
        CREATE TABLE facts (
            id INTEGER PRIMARY KEY AUTOINCREMENT, category TEXT NOT NULL, key TEXT NOT NULL,
            value TEXT NOT NULL, source TEXT DEFAULT '', created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL, UNIQUE(category, key));
    """)
    for m in messages:
        conn.execute(
            "INSERT INTO messages (id, session_id, role, content, tool_call_id, tool_name,"
            " tool_calls_json, created_at, importance, embedding, embedding_error)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (m["id"], m["session_id"], m["role"], m.get("content"), m.get("tool_call_id"),
             m.get("tool_name"), m.get("tool_calls_json"), m["created_at"],
             m.get("importance", 0.5), m.get("embedding"), m.get("embedding_error")))
    for category, key, value, source in facts:
        conn.execute("INSERT INTO facts (category, key, value, source, created_at, updated_at)"
                     " VALUES (?, ?, ?, ?, '2024-05-01T12:00:00Z', '2024-05-01T12:00:00Z')",
                     (category, key, value, source))
    conn.commit()
    conn.close()
    return path


def make_seed002(path: Path, rows: list[tuple[str, str, str]]) -> Path:
    """pynchy's ``memories.db``: key, content, category."""
    conn = _connect(path)
    conn.execute("CREATE TABLE memories (key TEXT NOT NULL, content TEXT NOT NULL,"
                 " category TEXT NOT NULL DEFAULT 'core', created_at TEXT)")
    conn.executemany("INSERT INTO memories VALUES (?, ?, ?, '2024-03-01 09:30:00')", rows)
    conn.commit()
    conn.close()
    return path


def make_seed004(path: Path, entries: list[Any]) -> Path:
    """crabtalk's single-file entry store, exported as JSON."""
    path.write_text(json.dumps({"entries": entries}), encoding="utf-8")
    return path


def vector32(values: list[float]) -> bytes:
    """libSQL's ``vector32``: little-endian float32 bytes (what ``F32_BLOB`` holds)."""
    return struct.pack(f"<{len(values)}f", *values)


def make_seed001(path: Path) -> Path:
    """A seed-001 libSQL memory file: its tables, a native vector index, one conversation,
    one notes session with two notes, session state, a file row and a schedule."""
    conn = _connect(path)
    # libSQL's index function does not exist here; stand in for it so the schema holds the
    # same index a libSQL file does (reading must not need it).
    conn.create_function("libsql_vector_idx", 1, lambda blob: blob, deterministic=True)
    conn.executescript("""
        CREATE TABLE sessions (session_id TEXT PRIMARY KEY, agent_identity TEXT,
            created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
            updated_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP);
        CREATE TABLE conversation_events (
            session_id TEXT NOT NULL REFERENCES sessions(session_id) ON DELETE CASCADE,
            sequence INTEGER NOT NULL, payload_json TEXT NOT NULL,
            created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP, PRIMARY KEY (session_id, sequence));
        CREATE TABLE session_state (
            session_id TEXT PRIMARY KEY REFERENCES sessions(session_id) ON DELETE CASCADE,
            state_json TEXT NOT NULL DEFAULT '{}',
            updated_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP);
        CREATE TABLE files (file_id INTEGER PRIMARY KEY AUTOINCREMENT,
            session_id TEXT NOT NULL, source_uri TEXT NOT NULL, content_hash TEXT NOT NULL,
            metadata_json TEXT DEFAULT '{}', created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP);
        CREATE TABLE chunks (chunk_id TEXT PRIMARY KEY, session_id TEXT NOT NULL,
            chunk_text TEXT NOT NULL, content_hash TEXT NOT NULL,
            sequence_start INTEGER NOT NULL, sequence_end INTEGER NOT NULL,
            metadata_json TEXT DEFAULT '{}');
        CREATE TABLE chunks_vec (
            chunk_id TEXT PRIMARY KEY REFERENCES chunks(chunk_id) ON DELETE CASCADE,
            embedding_blob F32_BLOB(512) NOT NULL, embedding_model TEXT NOT NULL);
        CREATE INDEX chunks_vec_idx ON chunks_vec(libsql_vector_idx(embedding_blob));
        CREATE TABLE schedules (schedule_id TEXT PRIMARY KEY, user_id TEXT NOT NULL,
            name TEXT, goal TEXT NOT NULL, cadence_json TEXT NOT NULL,
            notification_policy TEXT NOT NULL DEFAULT 'always',
            status TEXT NOT NULL DEFAULT 'active', created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL, next_run_at TEXT, last_run_at TEXT,
            last_run_status TEXT, consecutive_failures INTEGER NOT NULL DEFAULT 0,
            channel_id TEXT, channel_context_id TEXT);
        CREATE TABLE schedule_runs (run_id TEXT PRIMARY KEY, schedule_id TEXT NOT NULL,
            started_at TEXT NOT NULL, finished_at TEXT NOT NULL, status TEXT NOT NULL,
            output_summary TEXT, output TEXT, turn_count INTEGER NOT NULL DEFAULT 0,
            cost REAL NOT NULL DEFAULT 0.0, notified INTEGER NOT NULL DEFAULT 0);
    """)
    conn.executemany("INSERT INTO sessions (session_id, agent_identity) VALUES (?, ?)",
                     [("s1", "bot"), ("memory:alice", "bot")])
    events = [
        ("s1", 1, {"role": "user", "content": "Where does the deploy pipeline run?"}),
        ("s1", 2, {"role": "assistant", "content": "",
                   "tool_calls": [{"id": "c1", "type": "function",
                                   "function": {"name": "lookup",
                                                "arguments": "{\"q\": \"pipeline\"}"}}]}),
        ("s1", 3, {"role": "tool", "tool_call_id": "c1", "content": "on the gravel runner"}),
        ("s1", 4, {"role": "narrator", "content": "not a role oxydra has"}),
        ("memory:alice", 1, {"note_id": "note-11111111-2222-4333-8444-555555555555",
                             "content": "Alice prefers tea over coffee", "source": "memory_save",
                             "tags": ["Prefs"]}),
        ("memory:alice", 2, {"content": "Standup moves to ten on Mondays"}),
    ]
    conn.executemany("INSERT INTO conversation_events (session_id, sequence, payload_json,"
                     " created_at) VALUES (?, ?, ?, '2024-04-02 08:15:00')",
                     [(s, n, json.dumps(p)) for s, n, p in events])
    chunks = [("c-1", "s1", "Where does the deploy pipeline run?", 1, {}),
              ("c-n1", "memory:alice", "Alice prefers tea over coffee", 1,
               {"note_id": "note-11111111-2222-4333-8444-555555555555", "tags": ["prefs"],
                "created_at": "2024-01-05T10:00:00Z", "schema_version": 1}),
              ("c-n2", "memory:alice", "Standup moves to ten on Mondays", 2,
               {"note_id": "note-99999999-8888-4777-8666-555555555555", "tags": []})]
    for chunk_id, session_id, text, sequence, metadata in chunks:
        conn.execute("INSERT INTO chunks VALUES (?, ?, ?, ?, ?, ?, ?)",
                     (chunk_id, session_id, text, f"h-{chunk_id}", sequence, sequence,
                      json.dumps(metadata)))
        conn.execute("INSERT INTO chunks_vec VALUES (?, ?, 'potion_32m')",
                     (chunk_id, vector32([0.01 * i for i in range(512)])))
    conn.execute("INSERT INTO session_state (session_id, state_json) VALUES (?, ?)",
                 ("s1", json.dumps({"last_sequence": 4,
                                    "summary_state": {"text": "- user asked about deploys",
                                                      "upper_sequence": 2, "epoch": 3},
                                    "scratchpad": {"items": ["check the runner"]}})))
    conn.execute("INSERT INTO files (session_id, source_uri, content_hash)"
                 " VALUES ('s1', 'file:///notes/runbook.md', 'abc')")
    conn.execute("INSERT INTO schedules (schedule_id, user_id, name, goal, cadence_json,"
                 " created_at, updated_at) VALUES ('sch-1', 'alice', 'digest', 'daily digest',"
                 " '{}', '2024-01-01T00:00:00Z', '2024-01-01T00:00:00Z')")
    conn.execute("INSERT INTO schedule_runs (run_id, schedule_id, started_at, finished_at,"
                 " status) VALUES ('r1', 'sch-1', 'a', 'b', 'ok')")
    conn.commit()
    conn.close()
    return path


SEED000_MESSAGES = [
    # Inserted out of time order: the import orders by created_at, then id.
    {"id": "b2", "session_id": "chat", "role": "assistant",
     "content": "The boiler was serviced in March.", "created_at": "2024-05-01T10:00:02Z",
     "embedding": json.dumps([0.1] * 384)},
    {"id": "a1", "session_id": "chat", "role": "user", "content": "When was the boiler serviced?",
     "created_at": "2024-05-01T10:00:01Z", "importance": 0.9,
     "embedding": json.dumps([0.2] * 384)},
    {"id": "c3", "session_id": "chat", "role": "assistant", "content": None,
     "tool_calls_json": json.dumps([{"id": "t1", "type": "function",
                                     "function": {"name": "calendar", "arguments": "{}"}}]),
     "created_at": "2024-05-01T10:00:03Z", "embedding_error": "model timed out"},
    {"id": "d4", "session_id": "chat", "role": "tool", "tool_call_id": "t1",
     "tool_name": "calendar", "content": "no events", "created_at": "2024-05-01T10:00:04Z",
     "importance": 0.3},
    {"id": "e5", "session_id": "other", "role": "user", "content": "Remind me about the gutters",
     "created_at": "2024-05-02T09:00:00Z"},
    {"id": "f6", "session_id": "other", "role": "wizard", "content": "refused role",
     "created_at": "2024-05-02T09:00:01Z"},
    {"id": "g7", "session_id": "other", "role": "assistant", "content": "x",
     "tool_calls_json": "{not json", "created_at": "2024-05-02T09:00:02Z"},
]
SEED000_FACTS = [("user", "name", "Ada", "user"), ("home", "boiler", "Vaillant", ""),
                 ("home", "k" * 300, "too long a key", "agent")]


# -- JSONL ---------------------------------------------------------------------------------


async def test_jsonl_lands_searchable_in_the_namespace_and_twice_adds_nothing(
        engine: Engine, tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "chats.jsonl", [
        {"session_id": "trip", "role": "user", "content": "Shall we hike the ridge in June?"},
        {"session_id": "trip", "message": {"role": "assistant", "content": "June is fine."}},
        "",
        {"session_id": "ops", "sequence": 5, "message": {
            "role": "assistant", "content": "",
            "tool_calls": [{"id": "c1", "type": "function",
                            "function": {"name": "restart", "arguments": "{\"svc\": \"db\"}"}}]}},
        {"session_id": "ops", "sequence": 7, "created_at": "2024-01-01T00:00:00.000Z",
         "role": "tool", "tool_call_id": "c1", "content": "restarted", "importance": 0.9},
    ])
    with frozen(datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)):
        first = await import_file("jsonl", engine, source, namespace="hiker")
    assert counts(first, "messages") == (4, 0, 0)
    assert first.namespace == "hiker" and first.source_format == "jsonl"
    assert [(r.sequence, r.payload["content"]) for r in await engine.recall("trip")] == [
        (1, "Shall we hike the ridge in June?"), (2, "June is fine.")]
    ops = await engine.recall("ops")
    assert [r.sequence for r in ops] == [5, 7] and ops[1].importance == 0.9
    # A line's created_at is the event's time; a line without one gets the import's.
    assert [r.created_at for r in ops] == ["2030-01-02T03:04:05.000Z",
                                           "2024-01-01T00:00:00.000Z"]
    assert ops[0].payload["tool_calls"][0]["function"]["name"] == "restart"
    owners = {s.session_id: s.agent_identity for s in await engine.list_sessions()}
    assert owners == {"trip": "hiker", "ops": "hiker"}
    found = await engine.hybrid_query(session_id="trip", query="ridge hike")
    assert found and "ridge" in found[0].text
    assert not any("created_at" in remark for remark in first.remarks)

    again = await import_file("jsonl", engine, source, namespace="hiker")
    assert counts(again, "messages") == (0, 4, 0)
    assert again.total_added == 0 and again.skipped == []


@pytest.mark.parametrize(("line", "expected"), [
    ("{not json", "line 2: not JSON"),
    ("[1, 2]", "line 2: a line must be a JSON object"),
    (json.dumps({"role": "user", "content": "no session"}), "line 2: session_id"),
    (json.dumps({"session_id": "s", "role": "robot", "content": "x"}), "line 2: message.role"),
    (json.dumps({"session_id": "s", "sequence": "3", "role": "user"}), "line 2: sequence"),
    (json.dumps({"session_id": "memory:me", "role": "user"}), "line 2: session 'memory:me'"),
    (json.dumps({"session_id": "s", "sequence": 1, "role": "user"}), "with and without"),
    (json.dumps({"session_id": "t", "message": {"role": "user"}, "extra": 1}), "extra"),
    (json.dumps({"session_id": "t", "created_at": "2024-02-30 10:00:00", "role": "user"}),
     "line 2: created_at '2024-02-30 10:00:00' is not a timestamp"),
    (json.dumps({"session_id": "t", "created_at": "yesterday", "role": "user"}),
     "line 2: created_at 'yesterday' is not a timestamp"),
    (json.dumps({"session_id": "t", "created_at": 1714564800, "role": "user"}),
     "line 2: created_at 1714564800 is not a timestamp"),
])
async def test_a_malformed_jsonl_line_is_named_and_nothing_is_written(
        engine: Engine, tmp_path: Path, line: str, expected: str) -> None:
    source = write_jsonl(tmp_path / "bad.jsonl", [
        {"session_id": "s", "role": "user", "content": "fine"}, line])
    with pytest.raises(InvalidInput, match=expected) as raised:
        await import_file("jsonl", engine, source)
    assert str(source) in str(raised.value)
    with pytest.raises(InvalidInput, match=expected):
        check_source("jsonl", source)
    assert await engine.list_sessions() == []


async def test_jsonl_sequence_given_twice_is_refused(engine: Engine, tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "dup.jsonl", [
        {"session_id": "s", "sequence": 2, "role": "user", "content": "a"},
        {"session_id": "s", "sequence": 2, "role": "user", "content": "b"}])
    with pytest.raises(InvalidInput, match="line 2: session 's' sequence 2 is also on line 1"):
        await import_file("jsonl", engine, source)
    assert await engine.list_sessions() == []


async def test_jsonl_conflicts_are_skipped_with_reasons_and_never_interleaved(
        engine: Engine, tmp_path: Path) -> None:
    await engine.store("mine", 1, {"role": "user", "content": "a different conversation"},
                       agent="hiker")
    await engine.store("theirs", 1, {"role": "user", "content": "another agent's"},
                       agent="someone-else")
    source = write_jsonl(tmp_path / "c.jsonl", [
        {"session_id": "mine", "role": "user", "content": "first"},
        {"session_id": "mine", "role": "assistant", "content": "second"},
        {"session_id": "theirs", "role": "user", "content": "intruder"},
        {"session_id": "new", "role": "user", "content": "lands"}])
    report = await import_file("jsonl", engine, source, namespace="hiker")
    assert counts(report, "messages") == (1, 0, 3)
    by_where = {s.where: s.reason for s in report.skipped}
    assert "holds other messages" in by_where["line 1"]
    assert "holds other messages" in by_where["line 2"]
    assert "belongs to another namespace" in by_where["line 3"]
    assert "someone-else" not in by_where["line 3"]  # never names the other namespace
    assert [r.payload["content"] for r in await engine.recall("mine")] == [
        "a different conversation"]
    assert [r.payload["content"] for r in await engine.recall("theirs")] == ["another agent's"]


async def test_jsonl_that_grew_is_imported_from_where_it_stopped(
        engine: Engine, tmp_path: Path) -> None:
    lines = [{"session_id": "s", "role": "user", "content": f"message {n}"} for n in range(3)]
    await import_file("jsonl", engine, write_jsonl(tmp_path / "a.jsonl", lines[:2]))
    seen: list[tuple[int, int]] = []
    report = await import_file("jsonl", engine, write_jsonl(tmp_path / "b.jsonl", lines),
                               progress=lambda done, total: seen.append((done, total)))
    assert counts(report, "messages") == (1, 2, 0)
    assert [r.sequence for r in await engine.recall("s")] == [1, 2, 3]
    assert seen[-1] == (3, 3) and seen == sorted(seen)


# -- aidaemon ------------------------------------------------------------------------------


async def test_seed000_messages_and_facts(engine: Engine, tmp_path: Path) -> None:
    source = make_seed000(tmp_path / "seed000.db", SEED000_MESSAGES, SEED000_FACTS)
    before = source.read_bytes()
    report = await import_file("aidaemon", engine, source, namespace="house")
    assert counts(report, "messages") == (5, 0, 2)
    assert counts(report, "facts") == (2, 0, 1)
    skipped = {s.where: s.reason for s in report.skipped}
    assert "message.role" in skipped["messages row 'f6'"]
    assert "tool_calls_json is not JSON" in skipped["messages row 'g7'"]
    assert any("200" in reason for reason in reasons(report, "facts"))

    chat = await engine.recall("chat")
    assert [r.payload["metadata"]["imported"]["id"] for r in chat] == ["a1", "b2", "c3", "d4"]
    assert [r.sequence for r in chat] == [1, 2, 3, 4]
    assert chat[0].importance == 0.9 and chat[3].importance == 0.3
    assert chat[0].payload["metadata"]["imported"]["created_at"] == "2024-05-01T10:00:01Z"
    assert [r.created_at for r in chat] == [f"2024-05-01T10:00:0{n}.000Z" for n in (1, 2, 3, 4)]
    assert chat[2].payload["tool_calls"][0]["function"]["name"] == "calendar"
    assert chat[3].payload["tool_name"] == "calendar"
    found = await engine.hybrid_query(session_id="chat", query="boiler serviced")
    assert found and "boiler" in found[0].text
    assert (await engine.get_fact("user", "name", namespace="house")).value == "Ada"
    boiler = await engine.get_fact("home", "boiler", namespace="house")
    assert (boiler.value, boiler.source) == ("Vaillant", "agent")
    assert await engine.list_facts(namespace="default") == []
    assert {s.agent_identity for s in await engine.list_sessions()} == {"house"}
    remarks = " ".join(report.remarks)
    assert "re-embedded with" in remarks and "2 of 384 dimensions" in remarks
    assert "1 rows with an embedding error" in remarks
    assert "stored as 'agent'" in remarks
    assert source.read_bytes() == before  # the source is only read

    again = await import_file("aidaemon", engine, source, namespace="house")
    assert counts(again, "messages") == (0, 5, 2)
    assert counts(again, "facts") == (0, 2, 1)


async def test_seed000_times_are_normalised_and_an_unreadable_one_is_skipped(
        engine: Engine, tmp_path: Path) -> None:
    source = make_seed000(tmp_path / "times.db", [
        {"id": "a", "session_id": "log", "role": "user", "content": "with an offset",
         "created_at": "2024-05-01T12:00:00.123456+02:00"},
        {"id": "b", "session_id": "log", "role": "user", "content": "without a zone",
         "created_at": "2024-05-01T11:00:00"},
        {"id": "c", "session_id": "log", "role": "user", "content": "garbled",
         "created_at": "2024-05-01Tnoon"},
    ])
    report = await import_file("aidaemon", engine, source)
    assert counts(report, "messages") == (2, 0, 1)
    assert "created_at '2024-05-01Tnoon' is not a timestamp" in reasons(report, "messages")[0]
    log = await engine.recall("log")  # aidaemon orders a session by its created_at text
    assert [(r.payload["content"], r.created_at) for r in log] == [
        ("without a zone", "2024-05-01T11:00:00.000Z"),
        ("with an offset", "2024-05-01T10:00:00.123Z")]
    (session,) = await engine.list_sessions()
    assert (session.created_at, session.updated_at) == (
        "2024-05-01T10:00:00.123Z", "2024-05-01T11:00:00.000Z")


async def test_seed000_fact_with_another_value_is_skipped_not_overwritten(
        engine: Engine, tmp_path: Path) -> None:
    await engine.upsert_fact("user", "name", "Grace", namespace="house")
    source = make_seed000(tmp_path / "s.db", [], [("user", "name", "Ada", "user")])
    report = await import_file("aidaemon", engine, source, namespace="house")
    assert counts(report, "facts") == (0, 0, 1)
    assert "another value" in reasons(report, "facts")[0]
    assert (await engine.get_fact("user", "name", namespace="house")).value == "Grace"


@pytest.mark.parametrize("source_format", ["aidaemon", "oxydra", "pynchy"])
async def test_a_file_that_is_not_the_seeds_store_is_refused(
        engine: Engine, tmp_path: Path, source_format: str) -> None:
    text = tmp_path / "notes.txt"
    text.write_text("just some text, not a database\n" * 50)
    with pytest.raises(InvalidInput, match="not an SQLite database|cannot open"):
        await import_file(source_format, engine, text)
    other = tmp_path / "other.db"
    conn = _connect(other)
    conn.execute("CREATE TABLE unrelated (x)")
    conn.commit()
    conn.close()
    with pytest.raises(InvalidInput, match=rf"{other} is not (an aidaemon|an oxydra|a pynchy)"):
        await import_file(source_format, engine, other)
    with pytest.raises(InvalidInput, match="no such file"):
        await import_file(source_format, engine, tmp_path / "missing.db")
    assert await engine.list_sessions() == []


# -- pynchy ------------------------------------------------------------------------------


async def test_seed002_memories_land_as_memories_of_the_namespace(
        engine: Engine, tmp_path: Path) -> None:
    source = make_seed002(tmp_path / "memories.db", [
        ("favorite color", "The user's favorite color is teal", "core"),
        ("standup", "Standup moved to 10:30 today", "daily"),
        ("archive 1", "Discussed the kitchen renovation budget", "conversation"),
        ("bad", "a category pynchy does not have", "weird"),
        ("favorite color", "The user's favorite color is teal", "core"),
    ])
    report = await import_file("pynchy", engine, source, namespace="group-a")
    assert counts(report, "memories") == (3, 0, 2)
    skipped = {s.where: s.reason for s in report.skipped}
    assert "category must be one of" in skipped["memories row 4 (key 'bad')"]
    assert "also claimed by memories row 1" in skipped["memories row 5 (key 'favorite color')"]
    assert await engine.notes.list_memories(namespace="group-a") == [
        "archive 1", "favorite color", "standup"]
    assert await engine.notes.list_memories(namespace="group-b") == []
    hits = await engine.notes.recall_memories("teal", namespace="group-a")
    assert [(h.key, h.category) for h in hits] == [("favorite color", "core")]
    note = await engine.get_note("standup", namespace="group-a")
    assert (note.category, note.created_at) == ("daily", "2024-03-01T09:30:00.000Z")

    again = await import_file("pynchy", engine, source, namespace="group-a")
    assert counts(again, "memories") == (0, 4, 1)  # the duplicate row is "already" now


async def test_seed002_key_with_other_content_is_skipped_not_overwritten(
        engine: Engine, tmp_path: Path) -> None:
    await engine.notes.save_memory("favorite color", "green", namespace="group-a")
    source = make_seed002(tmp_path / "memories.db", [("favorite color", "teal", "core")])
    report = await import_file("pynchy", engine, source, namespace="group-a")
    assert counts(report, "memories") == (0, 0, 1)
    assert "already names note 'favorite color'" in reasons(report, "memories")[0]
    assert (await engine.get_note("favorite color", namespace="group-a")).content == "green"


# -- crabtalk ------------------------------------------------------------------------------


async def test_seed004_entries_keep_names_aliases_kinds_and_times(
        engine: Engine, tmp_path: Path) -> None:
    await engine.add_note("taken", "an existing note", namespace="agent-4")
    source = make_seed004(tmp_path / "memory.json", [
        {"id": 1, "name": "deploy", "aliases": ["release", "ship"],
         "content": "Deploys run from the main branch on Fridays", "kind": "Note",
         "created_at": "2024-02-03T04:05:06Z"},
        {"id": 2, "name": "archive-1", "aliases": [], "content": "Summary: planned the trip",
         "kind": "Archive", "created_at": 1700000000},
        {"id": 3, "name": "clash", "aliases": ["taken"], "content": "alias already bound",
         "kind": "Note"},
        {"id": 4, "name": "odd", "content": "a kind crabtalk lacks", "kind": "Draft"},
    ])
    report = await import_file("crabtalk", engine, source, namespace="agent-4")
    assert counts(report, "notes") == (2, 0, 2)
    skipped = " | ".join(reasons(report, "notes"))
    assert "alias 'taken' already names note 'taken'" in skipped and "kind must be" in skipped
    deploy = await engine.get_note("ship", namespace="agent-4")
    assert (deploy.name, sorted(deploy.aliases), deploy.kind) == (
        "deploy", ["release", "ship"], "Note")
    assert deploy.created_at == "2024-02-03T04:05:06.000Z"
    archive = await engine.get_note("archive-1", namespace="agent-4")
    assert (archive.kind, archive.category, archive.tags) == ("Archive", "conversation",
                                                              ["archive"])
    assert archive.created_at == "2023-11-14T22:13:20.000Z"
    found = await engine.hybrid_query(session_id=engine.note_session("agent-4"),
                                      query="Fridays main branch")
    assert found and found[0].metadata["note_id"] == deploy.note_id
    assert (await engine.list_notes(namespace="default")).total == 0

    again = await import_file("crabtalk", engine, source, namespace="agent-4")
    assert counts(again, "notes") == (0, 2, 2)


@pytest.mark.parametrize(("document", "expected"), [
    ("{nope", "is not JSON"),
    (json.dumps({"items": []}), "needs a list of entries"),
    (json.dumps([{"name": "a", "content": "b"}, {"content": "no name"}]),
     r"entries\[1\]: name must be a string"),
    (json.dumps([{"name": "a", "content": "b", "aliases": "c"}]), "aliases must be a list"),
    (json.dumps([{"name": "a", "content": "b", "created_at": "yesterday"}]), "is not a time"),
])
async def test_a_malformed_seed004_file_is_refused_before_anything_is_written(
        engine: Engine, tmp_path: Path, document: str, expected: str) -> None:
    source = tmp_path / "memory.json"
    source.write_text(document)
    with pytest.raises(InvalidInput, match=expected):
        await import_file("crabtalk", engine, source)
    assert (await engine.list_notes()).total == 0


# -- oxydra ------------------------------------------------------------------------------


async def test_seed001_file_with_notes_state_and_vectors(engine: Engine, tmp_path: Path) -> None:
    source = make_seed001(tmp_path / "libsql.db")
    seen: list[tuple[int, int]] = []
    report = await import_file("oxydra", engine, source, namespace="team",
                               progress=lambda done, total: seen.append((done, total)))
    assert counts(report, "messages") == (3, 0, 1)
    assert counts(report, "notes") == (2, 0, 0)
    assert counts(report, "scratchpads") == (1, 0, 0)
    assert counts(report, "summaries") == (1, 0, 0)
    assert counts(report, "files") == (0, 0, 1) and counts(report, "schedules") == (0, 0, 1)
    assert "message.role" in reasons(report, "messages")[0]
    assert seen[-1] == (7, 7)

    events = await engine.recall("s1")
    assert [r.sequence for r in events] == [1, 2, 3]
    assert events[1].payload["tool_calls"][0]["function"]["name"] == "lookup"
    assert events[0].payload["metadata"]["imported"] == {"from": "oxydra",
                                                        "created_at": "2024-04-02 08:15:00"}
    assert {r.created_at for r in events} == {"2024-04-02T08:15:00.000Z"}  # UTC, normalised
    assert (await engine.read_scratchpad("s1")).items == ["check the runner"]
    summary = await engine.summary_state("s1")
    assert (summary.text, summary.upper_sequence) == ("- user asked about deploys", 2)
    tea = await engine.get_note("note-11111111-2222-4333-8444-555555555555", namespace="team")
    assert tea.name == "Alice prefers tea over coffee (11111111)"
    assert (tea.tags, tea.source, tea.created_at) == (["prefs"], "memory_save",
                                                     "2024-01-05T10:00:00.000Z")
    standup = await engine.get_note("note-99999999-8888-4777-8666-555555555555",
                                    namespace="team")
    assert standup.content == "Standup moves to ten on Mondays"
    hits = await engine.notes.recall_memories("tea", namespace="team")
    assert [h.note_id for h in hits] == [tea.note_id]
    owners = {s.session_id: s.agent_identity for s in await engine.list_sessions()}
    assert owners == {"s1": "team", "memory:team": "team"}
    assert (await engine.list_notes(namespace="default")).total == 0
    remarks = " ".join(report.remarks)
    assert "3 of 512 dimensions from 'potion_32m'" in remarks
    assert "re-embedded with" in remarks and "('bot')" in remarks
    assert "schedule_runs: the source's 1 rows" in remarks

    again = await import_file("oxydra", engine, source, namespace="team")
    assert again.total_added == 0
    assert counts(again, "messages") == (0, 3, 1) and counts(again, "notes") == (0, 2, 0)
    assert counts(again, "scratchpads") == (0, 1, 0) and counts(again, "summaries") == (0, 1, 0)


async def test_seed001_event_times_missing_or_unreadable(
        engine: Engine, tmp_path: Path) -> None:
    source = make_seed001(tmp_path / "libsql.db")
    conn = _connect(source)
    conn.execute("UPDATE conversation_events SET created_at = NULL"
                 " WHERE session_id = 's1' AND sequence = 2")
    conn.execute("UPDATE conversation_events SET created_at = 'last spring'"
                 " WHERE session_id = 's1' AND sequence = 3")
    conn.commit()
    conn.close()
    with frozen(datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)):
        report = await import_file("oxydra", engine, source, namespace="team")
    assert counts(report, "messages") == (2, 0, 2)
    skipped = {s.where: s.reason for s in report.skipped if s.kind == "messages"}
    assert "created_at 'last spring' is not a timestamp" in skipped[
        "conversation_events ('s1', #3)"]
    assert [(r.sequence, r.created_at) for r in await engine.recall("s1")] == [
        (1, "2024-04-02T08:15:00.000Z"), (2, "2030-01-02T03:04:05.000Z")]


async def test_seed001_into_a_session_of_another_namespace_lands_nothing_there(
        engine: Engine, tmp_path: Path) -> None:
    await engine.store("s1", 1, {"role": "user", "content": "ours"}, agent="other")
    await engine.write_scratchpad("s1", ["keep me"], agent="other")
    report = await import_file("oxydra", engine, make_seed001(tmp_path / "l.db"),
                               namespace="team")
    assert counts(report, "messages") == (0, 0, 4)
    assert counts(report, "scratchpads") == (0, 0, 1)
    assert counts(report, "summaries") == (0, 0, 1)
    assert counts(report, "notes") == (2, 0, 0)  # notes go to team's own notes session
    assert [r.payload["content"] for r in await engine.recall("s1")] == ["ours"]
    assert (await engine.read_scratchpad("s1")).items == ["keep me"]


async def test_oxydra_note_chunk_metadata_that_is_not_json_is_said(
        engine: Engine, tmp_path: Path) -> None:
    source = make_seed001(tmp_path / "libsql.db")
    conn = _connect(source)
    conn.execute("UPDATE chunks SET metadata_json = '{broken' WHERE session_id LIKE 'memory:%'")
    conn.commit()
    conn.close()
    report = await import_file("oxydra", engine, source, namespace="team")
    assert counts(report, "notes") == (2, 0, 0)
    (remark,) = [r for r in report.remarks if "not a JSON object" in r]
    assert remark.startswith("chunks: the metadata of 2 note chunks") and "event alone" in remark
