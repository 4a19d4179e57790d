"""Copying a whole memory (``workbench migrate``): the tables, pages in key order, rows written
once however often they are sent, vectors as float32 bytes, refusals reported."""

from __future__ import annotations

from typing import Any

import pytest

from core.errors import InvalidInput, ReadOnlyDatabase
from core.storage.backend import Backend
from tests.backend.builders import DIMENSION, MODEL, NOW, unit
from tests.backend.conftest import Opener


def session(session_id: str) -> dict[str, Any]:
    return {"session_id": session_id, "agent_identity": "ana", "created_at": NOW,
            "updated_at": "2026-01-01 00:00:00"}


def event(session_id: str, sequence: int) -> dict[str, Any]:
    return {"session_id": session_id, "sequence": sequence, "role": "user",
            "payload_json": '{"role": "user", "content": "hi"}', "created_at": NOW,
            "importance": 0.1, "consolidated_at": None}


def chunk(chunk_id: str, fts_rowid: int, text: str) -> dict[str, Any]:
    return {"chunk_id": chunk_id, "session_id": "s1", "chunk_text": text,
            "content_hash": chunk_id, "sequence_start": fts_rowid, "sequence_end": fts_rowid,
            "metadata_json": "{}", "fts_rowid": fts_rowid, "scope_token": "stok",
            "embedding_status": "done", "embedding_error": None, "embedding_attempts": 0,
            "created_at": NOW, "context_text": "", "note_id": None}


async def all_rows(backend: Backend, table: str, limit: int) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    after = None
    while True:
        page = await backend.read_rows(table, after, limit)
        assert len(page.rows) <= limit
        rows.extend(page.rows)
        if (after := page.after) is None:
            return rows


async def test_the_tables_come_parents_first(backend: Backend) -> None:
    tables = await backend.copy_tables()
    for parent, child in [("sessions", "conversation_events"), ("chunks", "chunks_vec"),
                          ("notes", "note_names"), ("schedules", "schedule_runs")]:
        assert tables.index(parent) < tables.index(child)
    assert {"memory_meta", "facts", "archives", "retrieval_log",
            "relevance_judgments"} <= set(tables)
    with pytest.raises(InvalidInput, match="'chunks_fts' is not a table"):
        await backend.count_rows("chunks_fts")


async def test_pages_come_in_key_order_and_a_page_sent_twice_is_stored_once(
        backend: Backend) -> None:
    first = await backend.write_rows("sessions", [session("s3"), session("s1"), session("s2")],
                                     mark=("migrate.sessions.after", "done"))
    assert (first.written, first.present, first.refused) == (3, 0, [])
    again = await backend.write_rows("sessions", [session("s1"), session("s4")])
    assert (again.written, again.present) == (1, 1)
    page = await backend.read_rows("sessions", None, 3)
    assert [row["session_id"] for row in page.rows] == ["s1", "s2", "s3"]
    assert page.after == ["s3"] and page.rows[0] == session("s1")
    last = await backend.read_rows("sessions", page.after, 3)
    assert [row["session_id"] for row in last.rows] == ["s4"] and last.after is None
    assert await backend.count_rows("sessions") == 4
    assert {"key": "migrate.sessions.after", "value": "done"} in await all_rows(
        backend, "memory_meta", 10)
    await backend.write_rows("conversation_events",
                             [event("s2", 1), event("s1", 10), event("s1", 9)])
    events = await all_rows(backend, "conversation_events", 2)
    assert [(row["session_id"], row["sequence"]) for row in events] == [
        ("s1", 9), ("s1", 10), ("s2", 1)]
    assert events[0] == event("s1", 9)


async def test_vectors_travel_as_float32_bytes(backend: Backend) -> None:
    await backend.write_rows("sessions", [session("s1")])
    await backend.write_rows("chunks", [chunk("c2", 7, "second"), chunk("c1", 3, "first")])
    assert [row["chunk_id"] for row in await all_rows(backend, "chunks", 1)] == ["c1", "c2"]
    blob = unit(0.5, 0.25, 1.0).tobytes()
    vector = {"chunk_id": "c1", "agent_identity": "ana", "session_id": "s1",
              "embedding_blob": blob, "embedding_model": MODEL}
    assert (await backend.write_rows("chunks_vec", [vector])).written == 1
    assert (await backend.write_rows("chunks_vec", [vector])).present == 1
    assert await all_rows(backend, "chunks_vec", 1) == [vector]
    assert len(blob) == DIMENSION * 4
    assert await backend.count_rows("chunks_vec") == 1


async def test_a_row_whose_parent_is_missing_is_refused_and_the_rest_stored(
        backend: Backend) -> None:
    await backend.write_rows("sessions", [session("s1")])
    result = await backend.write_rows("conversation_events", [event("s1", 1), event("gone", 1)])
    assert result.written == 1
    assert result.refused == [(["gone", 1], "the row it belongs to was not copied")]
    assert await backend.count_rows("conversation_events") == 1


async def test_a_read_only_backend_copies_nothing_in(open_backend: Opener) -> None:
    await open_backend()
    reader = await open_backend(read_only=True)
    with pytest.raises(ReadOnlyDatabase):
        await reader.write_rows("sessions", [session("s1")])
    assert await reader.count_rows("sessions") == 0
