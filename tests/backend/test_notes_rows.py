"""The tests of tests/test_notes.py that read or stage the memory's tables directly (every row a
note owns, and the query plans)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core import Engine
from core.errors import InvalidInput
from core.storage.sqlite import note_listing
from core.storage.sqlite.connection import open_connection
from core.storage.sqlite.events import scope_token_for
from tests.conftest import DETERMINISTIC, execute, rows
from tests.test_notes import (
    fill_shelf,
    fts_key,
    fts_table,
    hits,
)


@pytest.fixture
async def engine(memory: str):
    async with Engine.open(memory, config=DETERMINISTIC) as opened:
        yield opened


def index_rows(path: Path, note_id: str) -> dict[str, int]:
    """Rows that index one note: chunks, their FTS rows and vectors, its event."""
    chunk_ids = [r[0] for r in rows(path, "SELECT chunk_id FROM chunks WHERE note_id = ?",
                                    note_id)]
    fts_rowids = [r[0] for r in rows(path, "SELECT fts_rowid FROM chunks WHERE note_id = ?",
                                     note_id)]
    marks = ",".join("?" * len(chunk_ids)) or "''"
    return {
        "chunks": len(chunk_ids),
        "vectors": rows(path, f"SELECT count(*) FROM chunks_vec WHERE chunk_id IN ({marks})",
                        *chunk_ids)[0][0],
        "fts": rows(path, f"SELECT count(*) FROM {fts_table(path)} WHERE {fts_key(path)} IN"
                          f" ({','.join('?' * len(fts_rowids)) or 'NULL'})", *fts_rowids)[0][0],
        "events": sum(json.loads(payload).get("metadata", {}).get("note_id") == note_id
                      for (payload,) in rows(path, "SELECT payload_json FROM conversation_events")),
    }


async def test_write_replaces_content_and_keeps_identity(engine: Engine, memory: str) -> None:
    note = await engine.add_note("plan", "pack the zebra costume", aliases=["p"],
                                 tags=["trip"])
    await engine.drain()
    before = index_rows(memory, note.note_id)
    written = await engine.write_note("p", "book the giraffe hotel")
    assert (written.note_id, written.name, written.aliases, written.created_at, written.tags) == (
        note.note_id, "plan", ["p"], note.created_at, ["trip"])
    assert written.content == "book the giraffe hotel" and written.updated_at >= note.updated_at
    assert not await hits(engine, "zebra")
    assert [h.text for h in await hits(engine, "giraffe")] == ["book the giraffe hotel"]
    await engine.drain()
    after = index_rows(memory, note.note_id)
    assert before == after == {"chunks": 1, "vectors": 1, "fts": 1, "events": 1}
    events = await engine.recall(engine.note_session())
    assert [e.payload["content"] for e in events] == ["book the giraffe hotel"]
    assert events[0].sequence == 2  # a new event at the next sequence, the old one gone


async def test_remove_takes_every_row_with_it(engine: Engine, memory: str) -> None:
    note = await engine.add_note("long", " ".join(f"word{i}" for i in range(400)),
                                 aliases=["l"], tags=["t"])
    kept = await engine.add_note("kept", "a survivor")
    await engine.drain()
    assert all(count > 0 for count in index_rows(memory, note.note_id).values())
    assert index_rows(memory, note.note_id)["chunks"] > 3
    assert await engine.remove_note("l") is True
    assert index_rows(memory, note.note_id) == {"chunks": 0, "vectors": 0, "fts": 0,
                                                 "events": 0}
    for table in ("notes", "note_names", "note_tags"):
        assert rows(memory, f"SELECT count(*) FROM {table} WHERE note_id = ?",
                    note.note_id) == [(0,)]
    assert await engine.remove_note(note.note_id) is False
    assert await engine.remove_note("long") is False
    assert index_rows(memory, kept.note_id) == {"chunks": 1, "vectors": 1, "fts": 1,
                                                 "events": 1}
    assert await engine.backend.integrity_check() == ["ok"]


async def test_every_listing_query_reaches_notes_through_an_index(db_path: Path) -> None:
    """No filter combination scans the notes or chunks tables (what keeps 100k notes fast).
    About SQLite's query plans, read from the file."""
    storage = note_listing
    async with Engine.open(db_path, config=DETERMINISTIC) as engine:
        await fill_shelf(engine)

    conn = open_connection(db_path, read_only=True, busy_timeout_ms=5000)
    statements: list[str] = []
    conn.set_trace_callback(statements.append)
    queries = [storage.NoteQuery("default"), storage.NoteQuery("default", category="core"),
               storage.NoteQuery("default", kind="Note", order="updated"),
               storage.NoteQuery("default", tags=("food",)),
               storage.NoteQuery("default", category="daily", tags=("food", "dessert")),
               storage.NoteQuery("default", text="bake"),
               storage.NoteQuery("default", text="bake", tags=("food",), kind="Note"),
               storage.NoteQuery("default", text="://")]
    try:
        for query in queries:
            storage.list_notes(conn, query)
        conn.set_trace_callback(None)
        plans = []
        for sql in statements:  # the listing's own statements, not FTS5's internal ones
            if sql.lstrip().startswith("SELECT") and "chunks_fts_" not in sql:
                plans += [row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + sql)]
    finally:
        conn.close()
    scans = [step for step in plans if step.startswith("SCAN")
             and "VIRTUAL TABLE" not in step]
    assert plans and scans == []


async def test_a_memory_session_another_agent_owns_is_refused(engine: Engine,
                                                              memory: str) -> None:
    execute(memory, "INSERT INTO sessions(session_id, agent_identity) VALUES ('memory:ns', 'x')")
    with pytest.raises(InvalidInput, match="belongs to agent 'x'"):
        await engine.add_note("n", "text", namespace="ns")
    assert (await engine.list_notes(namespace="ns")).total == 0


async def test_forgetting_the_memory_session_forgets_the_notes(engine: Engine,
                                                               memory: str) -> None:
    await engine.add_note("n", "x", aliases=["m"], tags=["t"])
    await engine.upsert_fact("user", "name", "Ann")
    assert await engine.forget(engine.note_session()) is True
    assert (await engine.list_notes()).total == 0
    for table in ("notes", "note_names", "note_tags", "chunks"):
        assert rows(memory, f"SELECT count(*) FROM {table}") == [(0,)]
    assert (await engine.get_fact("user", "name")).value == "Ann"  # facts are not notes


async def test_a_note_is_indexed_like_a_message(engine: Engine, memory: str) -> None:
    note = await engine.add_note("name words", "content words")
    (scope_token, context, status, metadata) = rows(
        memory, "SELECT scope_token, context_text, embedding_status, metadata_json"
                 " FROM chunks WHERE note_id = ?", note.note_id)[0]
    assert scope_token.split()[0] == scope_token_for(note.session_id)
    assert (context, status) == ("name words", "pending")
    for key in ("note_id", "source", "tags", "created_at", "updated_at", "schema_version"):
        assert key in metadata  # oxydra "Note Metadata"
    session = await engine.hybrid_query(session_id=note.session_id, query="content",
                                        mode="keyword")
    namespace = await engine.hybrid_query(namespace="default", query="content", mode="keyword")
    assert [h.chunk_id for h in session] == [h.chunk_id for h in namespace]
    assert session[0].metadata["note_id"] == note.note_id
