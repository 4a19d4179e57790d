"""The rules that tie a memory file's tables together, checked from outside the engine.

A store, a note operation or a compaction writes several tables in one transaction; a crash
must leave all of its rows or none. :func:`check_file` reads a file through a connection of
its own (as a person checking a file an agent crashed on would) and lists every place where
that does not hold:

- **integrity**: ``PRAGMA integrity_check``, ``PRAGMA foreign_key_check`` and FTS5's own
  ``integrity-check`` of ``chunks_fts``;
- **half-stored**: a message whose event lacks one of the chunks its text makes (each chunk
  covering the event's sequence) or a chunk's full-text row; a note without its event, its
  primary name or exactly the chunks its content and name make; a compaction without its
  marker event, its archive row, its Archive note or its folded events marked; a session
  whose ``last_sequence`` is behind its events; an embedded chunk without its vector;
- **orphans**: rows whose owner is gone: a chunk without its event (or note), a full-text
  row or a vector without its chunk, an event of a memory session without its note.

The chunks a message's text makes are computed again with :mod:`core.indexing` and the
file's chunking settings, so the check is exact, not a count. Compact markers are system
events written without chunks (their archive note is what is indexed); they are checked
through their archive instead.
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

from core import indexing
from core.storage.rows import FileFindings, check_messages, note_chunk_id
from core.storage.vocabulary import MEMORY_PREFIX, scope_token_for


def check_integrity(conn: Any) -> list[str]:
    """SQLite's and FTS5's own checks, and the foreign keys; [] when all pass."""
    problems = [row[0] for row in conn.execute("PRAGMA integrity_check").fetchall()
                if row[0] != "ok"]
    problems += [f"foreign key: {row[0]} rowid {row[1]} -> {row[2]}"
                 for row in conn.execute("PRAGMA foreign_key_check").fetchall()]
    try:
        conn.execute("INSERT INTO chunks_fts(chunks_fts, rank) VALUES ('integrity-check', 1)")
    except Exception as exc:  # the driver's own DatabaseError type
        problems.append(f"chunks_fts: {exc}")
    return problems


def check_file(conn: Any, *, max_chars: int, overlap_chars: int) -> FileFindings:
    """Every invariant above, on a connection that may write (FTS5's check is an INSERT
    that changes nothing); ``max_chars``/``overlap_chars`` are the file's chunking."""
    found = FileFindings(integrity=check_integrity(conn))
    chunks = {row[0]: row[1:] for row in conn.execute(
        "SELECT chunk_id, session_id, sequence_start, sequence_end, fts_rowid, note_id,"
        " embedding_status FROM chunks")}
    found.chunks = len(chunks)
    found.pending_chunks = sum(1 for row in chunks.values() if row[5] == "pending")
    events = {(row[0], row[1]): row[2:] for row in conn.execute(
        "SELECT session_id, sequence, payload_json, consolidated_at FROM conversation_events")}
    found.events = len(events)
    check_messages(found, events, chunks, max_chars, overlap_chars)
    _check_notes(conn, found, events, chunks, max_chars, overlap_chars)
    _check_compactions(conn, found, events)
    _check_full_text(conn, found, chunks)
    _check_vectors(conn, found, chunks)
    _check_session_state(conn, found)
    return found


def _check_notes(conn: Any, found: FileFindings,
                 events: dict[tuple[str, int], tuple[Any, ...]],
                 chunks: dict[str, tuple[Any, ...]], max_chars: int,
                 overlap_chars: int) -> None:
    by_note: dict[str, set[str]] = defaultdict(set)
    for chunk_id, row in chunks.items():
        if row[4] is not None:
            by_note[row[4]].add(chunk_id)
    named = {row[0] for row in conn.execute("SELECT note_id FROM note_names WHERE is_alias = 0")}
    noted_events: set[tuple[str, int]] = set()
    for note_id, session_id, name, content, sequence in conn.execute(
            "SELECT note_id, session_id, name, content, event_sequence FROM notes"):
        noted_events.add((session_id, sequence))
        event = events.get((session_id, sequence))
        if event is None or json.loads(event[0]).get("content") != content:
            found._half(f"note {note_id} ({name!r}): its event is missing or stale")
        if note_id not in named:
            found._half(f"note {note_id} ({name!r}): its name is not bound")
        pieces = indexing.chunk_text(indexing.normalize_text(content), max_chars, overlap_chars)
        expected = {note_chunk_id(note_id, name, indexing.content_hash(p)) for p in pieces}
        have = by_note.pop(note_id, set())
        if have != expected:
            found._half(f"note {note_id} ({name!r}): {len(expected - have)} chunks missing,"
                        f" {len(have - expected)} stale")
        elif any(chunks[c][1] != sequence for c in have):
            found._half(f"note {note_id} ({name!r}): chunks point at another event")
    for note_id, chunk_ids in by_note.items():
        found._orphan(f"{len(chunk_ids)} chunks of note {note_id}, which does not exist")
    for session_id, sequence in events:
        if session_id.startswith(MEMORY_PREFIX) and (session_id, sequence) not in noted_events:
            found._orphan(f"event {session_id}#{sequence}: no note owns it")


def _check_compactions(conn: Any, found: FileFindings,
                       events: dict[tuple[str, int], tuple[Any, ...]]) -> None:
    archives = {(row[0], row[1]): row[2:] for row in conn.execute(
        "SELECT a.session_id, a.marker_sequence, a.archive_name, a.first_sequence,"
        " a.last_sequence, n.kind FROM archives a LEFT JOIN notes n ON n.note_id = a.note_id")}
    for (session_id, sequence), (payload_json, _) in events.items():
        marker = (json.loads(payload_json).get("metadata") or {}).get("compact_marker")
        if marker is None or session_id.startswith(MEMORY_PREFIX):
            continue
        archive = archives.get((session_id, sequence))
        if archive is None or archive[0] != marker.get("archive_name"):
            found._half(f"compact marker {session_id}#{sequence}: no archive row names it")
    for (session_id, sequence), (name, first, last, kind) in archives.items():
        if (session_id, sequence) not in events:
            found._half(f"archive {name!r}: its marker {session_id}#{sequence} is missing")
        if kind != "Archive":
            found._half(f"archive {name!r}: its Archive note is missing")
        unfolded = [seq for seq in range(first, last + 1)
                    if (session_id, seq) in events and events[(session_id, seq)][1] is None]
        if unfolded:
            found._half(f"archive {name!r}: {len(unfolded)} folded events not marked")


def _check_full_text(conn: Any, found: FileFindings, chunks: dict[str, tuple[Any, ...]]) -> None:
    """Each chunk has its row (by key, and found by its session's scope token); no row
    is left without a chunk."""
    keyed = {row[0] for row in conn.execute("SELECT id FROM chunks_fts_docsize")}
    by_session: dict[str, set[int]] = defaultdict(set)
    for session_id, _start, _end, fts_rowid, _note, _status in chunks.values():
        by_session[session_id].add(fts_rowid)
    for session_id, expected in by_session.items():
        matched = {row[0] for row in conn.execute(
            "SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ?",
            (f'scope_token : "{scope_token_for(session_id)}"',))}
        missing = (expected - keyed) | (expected - matched)
        if missing:
            found._half(f"session {session_id}: {len(missing)} chunks without a full-text row")
        if matched - expected:
            found._orphan(f"session {session_id}: {len(matched - expected)} full-text rows"
                          " match it without a chunk")
    every = set().union(*by_session.values()) if by_session else set()
    if keyed - every:
        found._orphan(f"{len(keyed - every)} full-text rows without a chunk")


def _check_vectors(conn: Any, found: FileFindings, chunks: dict[str, tuple[Any, ...]]) -> None:
    if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'chunks_vec'").fetchone() is None:
        return
    vectors = {row[0] for row in conn.execute("SELECT chunk_id FROM chunks_vec")}
    orphaned = vectors - chunks.keys()
    if orphaned:
        found._orphan(f"{len(orphaned)} vectors without a chunk")
    unvectored = [c for c, row in chunks.items() if row[5] == "done" and c not in vectors]
    if unvectored:
        found._half(f"{len(unvectored)} chunks marked embedded without a vector")


def _check_session_state(conn: Any, found: FileFindings) -> None:
    for session_id, recorded, highest in conn.execute(
            "SELECT s.session_id, json_extract(s.state_json, '$.last_sequence'),"
            " (SELECT max(sequence) FROM conversation_events e"
            "  WHERE e.session_id = s.session_id)"
            " FROM session_state s"):
        if highest is not None and (recorded is None or int(recorded) < int(highest)):
            found._half(f"session {session_id}: last_sequence {recorded} is behind its"
                        f" events ({highest})")


__all__ = ["FileFindings", "check_file", "check_integrity", "check_messages"]
