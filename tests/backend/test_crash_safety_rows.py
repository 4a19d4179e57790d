"""The tests of tests/test_crash_safety.py that read or stage the memory's tables directly (a file
broken on purpose)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from core import Engine
from core.storage.sqlite.connection import open_connection
from core.storage.sqlite.invariants import check_file
from tests.conftest import DETERMINISTIC


def _findings(path: Path) -> Any:
    conn = open_connection(path, read_only=False, busy_timeout_ms=5000)
    try:
        return check_file(conn, max_chars=640, overlap_chars=96)
    finally:
        conn.close()


def _break(path: Path, sql: str, *params: Any) -> None:
    conn = open_connection(path, read_only=False, busy_timeout_ms=5000)
    try:
        conn.execute(sql, params)
    finally:
        conn.close()


async def test_the_file_check_finds_each_kind_of_half_stored_or_orphaned_row(
        db_path: Path) -> None:
    async with Engine.open(db_path, config=DETERMINISTIC) as engine:
        for i in range(1, 7):
            await engine.append("chat", {"role": "user", "content": f"message {i} " * 30})
        await engine.append("chat", {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "function": {"name": "lookup", "arguments": '{"q": "weather"}'}}]})
        await engine.compact("chat")
        await engine.append("other", {"role": "user", "content": "kept apart"})
        note = await engine.add_note("groceries", "milk and bread", namespace="ns")
        kept = await engine.add_note("kept", "a note left whole", namespace="ns")
        await engine.drain()
    found = _findings(db_path)
    assert found.sound, (found.integrity, found.half_stored, found.orphans)
    assert found.events == 12 and found.pending_chunks == 0  # with the marker, the archive note

    def message_chunk(sequence: int) -> tuple[str, int]:
        conn = open_connection(db_path, read_only=True, busy_timeout_ms=5000)
        try:
            return conn.execute("SELECT chunk_id, fts_rowid FROM chunks WHERE session_id ="
                                " 'chat' AND sequence_start = ?", (sequence,)).fetchone()
        finally:
            conn.close()

    def expect(fragment: str, *, orphan: bool = False) -> None:
        found = _findings(db_path)
        listed = found.orphans if orphan else found.half_stored
        assert any(fragment in problem for problem in listed), (fragment, listed)

    _break(db_path, "DELETE FROM chunks_fts WHERE rowid = ?", message_chunk(1)[1])
    expect("chat: 1 chunks without a full-text row")
    _break(db_path, "DELETE FROM chunks WHERE chunk_id = ?", message_chunk(2)[0])
    expect("message chat#2: a chunk of its text is missing")
    _break(db_path, "DELETE FROM chunks_vec WHERE chunk_id = ?", message_chunk(3)[0])
    expect("1 chunks marked embedded without a vector")
    _break(db_path, "DELETE FROM conversation_events WHERE session_id = 'chat' AND sequence = 4")
    expect("no event chat#4", orphan=True)
    _break(db_path, "DELETE FROM archives")
    expect("compact marker chat#8: no archive row names it")
    _break(db_path, "UPDATE session_state SET state_json = json_set(state_json,"
                    " '$.last_sequence', 0) WHERE session_id = 'other'")
    expect("session other: last_sequence 0 is behind its events (1)")
    _break(db_path, "DELETE FROM conversation_events WHERE session_id = 'memory:ns'"
                    " AND sequence = 1")
    expect(f"note {note.note_id} ('groceries'): its event is missing")
    _break(db_path, "DELETE FROM notes WHERE note_id = ?", note.note_id)
    expect(f"chunks of note {note.note_id}, which does not exist", orphan=True)
    _break(db_path, "DELETE FROM chunks WHERE note_id = ?", kept.note_id)
    expect(f"note {kept.note_id} ('kept'): 1 chunks missing")
    assert _findings(db_path).integrity == []  # none of this is SQLite's own corruption
