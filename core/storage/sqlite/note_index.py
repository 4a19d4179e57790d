"""The rows that index a note: its event and chunks in its memory session.

Each note is one event of its memory session, at the session's next
sequence, and its chunks, written in the rows a message's chunks have: the same ``chunks``
columns, the same ``chunks_fts`` rows (:func:`core.storage.fts_rows.fts_rows`: plain words,
scope token, session-prefixed words) and vectors left to the embedding worker. It differs
in three ways, each for a reason:

- A chunk's context is the note's name. crabtalk searches a note by the words of its content
  and its name; aliases add no words. The context is matched at the configured context
  weight and blended into the chunk's vector, as a message's earlier turns are.
- A chunk's id is made from the note id, the name and the chunk's content hash, not the
  session's: two notes sharing a paragraph each keep their own chunk, so removing one never
  takes the other out of the index (message dedup would share it). The id also fixes all a
  vector is made from (text and context), so a vector the worker computed before a rename
  can never be saved onto the renamed chunk.
- ``chunks.note_id`` names the note, so writing or removing it finds its chunks by index.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from core.storage.fts_rows import FTS_COLUMNS, fts_rows
from core.storage.messages import PreparedChunk
from core.storage.rows import NoteRow, note_rows
from core.storage.sqlite.events import CHUNK_COLUMNS, insert_rows, next_fts_rowid


def _next_sequence(conn: Any, session_id: str) -> int:
    """The session's next sequence, above every sequence it ever had (a removed note's too)."""
    row = conn.execute(
        "SELECT max(coalesce((SELECT json_extract(state_json, '$.last_sequence')"
        "                     FROM session_state WHERE session_id = ?1), 0),"
        "           coalesce((SELECT max(sequence) FROM conversation_events"
        "                     WHERE session_id = ?1), 0))", (session_id,)).fetchone()
    return int(row[0]) + 1


def index_notes(conn: Any, entries: Sequence[tuple[NoteRow, Iterable[PreparedChunk]]],
           now: str) -> None:
    """Store each note's event and chunks (oxydra ``store_note`` steps 2, 3 and 6).

    Set-based, one statement per kind of row whatever the number of notes, so an import of
    100k notes holds the write lock for seconds rather than half a minute.
    """
    if not entries:
        return
    sequences: dict[str, int] = {}
    events: list[tuple[Any, ...]] = []
    chunk_rows: list[tuple[Any, ...]] = []
    fts_rowid = next_fts_rowid(conn)
    for note, chunks in entries:
        session_id = note.session_id
        if session_id not in sequences:
            sequences[session_id] = _next_sequence(conn, session_id) - 1
        sequences[session_id] += 1
        sequence = sequences[session_id]
        event, metadata, scope_token, distinct = note_rows(note, chunks, sequence, now)
        events.append(event)
        for chunk_id, chunk in distinct:
            chunk_rows.append((chunk_id, session_id, chunk.text, chunk.content_hash, sequence,
                               sequence, metadata, fts_rowid, scope_token, now, "pending",
                               note.name, note.note_id))
            fts_rowid += 1
    insert_rows(conn, "conversation_events",
                ["session_id", "sequence", "payload_json", "created_at", "importance", "role"],
                [(*event[:5], "system") for event in events])
    conn.executemany(
        "UPDATE session_state SET state_json = json_set(state_json, '$.last_sequence', ?),"
        " updated_at = ? WHERE session_id = ?",
        [(last, now, session_id) for session_id, last in sequences.items()])
    insert_rows(conn, "chunks", [*CHUNK_COLUMNS, "note_id"], chunk_rows)
    insert_rows(conn, "chunks_fts", FTS_COLUMNS,
                fts_rows((row[7], row[1], row[2], row[8], row[11]) for row in chunk_rows))
    conn.executemany("UPDATE notes SET event_sequence = ? WHERE note_id = ?",
                     [(event[1], event[5]) for event in events])


def unindex_note(conn: Any, note: NoteRow) -> None:
    """Delete the note's chunks (triggers take their FTS rows and vectors) and its event."""
    conn.execute("DELETE FROM chunks WHERE note_id = ?", (note.note_id,))
    if note.event_sequence is not None:
        conn.execute("DELETE FROM conversation_events WHERE session_id = ? AND sequence = ?",
                     (note.session_id, note.event_sequence))


def chunks_of(conn: Any, note_id: str) -> list[PreparedChunk]:
    """The note's chunks as stored, in order: a rename indexes the same text again."""
    return [PreparedChunk(text, content_hash) for text, content_hash in conn.execute(
        "SELECT chunk_text, content_hash FROM chunks WHERE note_id = ? ORDER BY fts_rowid",
        (note_id,))]


def touch_note(conn: Any, note_id: str, now: str) -> None:
    """Mark the note changed where its chunks do not need indexing again (aliases)."""
    conn.execute("UPDATE notes SET updated_at = ? WHERE note_id = ?", (now, note_id))
    conn.execute("UPDATE chunks SET metadata_json = json_set(metadata_json, '$.updated_at', ?)"
                 " WHERE note_id = ?", (now, note_id))
