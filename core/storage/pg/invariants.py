"""The rules that tie a PostgreSQL memory's message tables together, checked from outside the
engine (``workbench bench crash --db postgresql://…``), as :mod:`core.storage.sqlite.invariants`
checks a SQLite file:

- **half-stored**: a message whose event lacks one of the chunks its text makes (computed
  again with :mod:`core.indexing`, so the check is exact); a chunk marked embedded without
  its vector; a session whose ``last_sequence`` is behind its events;
- **orphans**: a chunk without its event (or note), a vector without its chunk;
- full text's postings (migration 0002) recomputed from the chunks: one missing is
  half-stored, one too many an orphan.

There is no ``integrity`` list to fill: PostgreSQL has no whole-database check like
``PRAGMA integrity_check``, and its foreign keys are enforced, never deferred. The full
text is a generated column of the chunk's own row, so a chunk cannot lack it. Notes and
compactions are not checked here yet.
"""

from __future__ import annotations

from typing import Any

from core.storage.rows import FileFindings, check_messages


def check_database(conn: Any, *, max_chars: int, overlap_chars: int) -> FileFindings:
    """Every invariant above, read through ``conn`` (an autocommit psycopg connection) in
    one snapshot; ``max_chars``/``overlap_chars`` are the memory's chunking."""
    conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
    try:
        found = FileFindings()
        chunks = {str(row[0]): tuple(row[1:]) for row in conn.execute(
            "SELECT chunk_id, session_id, sequence_start, sequence_end, NULL, note_id,"
            " embedding_status FROM chunks").fetchall()}
        found.chunks = len(chunks)
        found.pending_chunks = sum(1 for row in chunks.values() if row[5] == "pending")
        events = {(str(row[0]), int(row[1])): tuple(row[2:]) for row in conn.execute(
            "SELECT session_id, sequence, payload_json, consolidated_at"
            " FROM conversation_events").fetchall()}
        found.events = len(events)
        check_messages(found, events, chunks, max_chars, overlap_chars)
        vectors = {str(row[0]) for row in conn.execute(
            "SELECT chunk_id FROM chunks_vec").fetchall()}
        if vectors - chunks.keys():
            found._orphan(f"{len(vectors - chunks.keys())} vectors without a chunk")
        unvectored = [c for c, row in chunks.items() if row[5] == "done" and c not in vectors]
        if unvectored:
            found._half(f"{len(unvectored)} chunks marked embedded without a vector")
        for session_id, recorded, highest in conn.execute(
                "SELECT s.session_id, s.state_json::jsonb ->> 'last_sequence',"
                " (SELECT max(sequence) FROM conversation_events e"
                "  WHERE e.session_id = s.session_id)"
                " FROM session_state s").fetchall():
            if highest is not None and (recorded is None or int(recorded) < int(highest)):
                found._half(f"session {session_id}: last_sequence {recorded} is behind its"
                            f" events ({highest})")
        _check_postings(conn, found)
    finally:
        conn.execute("ROLLBACK")
    return found


_POSTINGS = ("SELECT p.* FROM chunks c, memory_chunk_postings(c.session_id, c.fts_rowid, c.fts,"
             " c.fts_length) p")

def _check_postings(conn: Any, found: FileFindings) -> None:
    """Full text's postings (migration 0002) against the chunks' tsvectors: a posting
    missing is half-stored, one too many an orphan."""
    missing, extra = conn.execute(
        f"SELECT (SELECT count(*) FROM ({_POSTINGS} EXCEPT ALL SELECT * FROM chunk_terms) m),"
        f" (SELECT count(*) FROM (SELECT * FROM chunk_terms EXCEPT ALL {_POSTINGS}) e)"
    ).fetchone()
    if missing:
        found._half(f"{missing} full-text postings missing for their chunks")
    if extra:
        found._orphan(f"{extra} full-text postings without their chunk")


__all__ = ["check_database"]
