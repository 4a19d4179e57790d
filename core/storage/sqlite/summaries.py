"""SQL for rolling summaries, compactions and consolidation (oxydra, crabtalk, aidaemon).

The rolling summary is the ``summary_state`` field of a session's ``session_state``; the
latest compaction is its ``compaction`` field. Both change only inside ``BEGIN IMMEDIATE``
transactions that first check what the caller read (the summary's epoch, the session's last
sequence), so of two writers that read the same state exactly one wins, in any process.
"""

from __future__ import annotations

import json
from typing import Any

from core.errors import NotFound, SummaryConflict
from core.inputs import shown
from core.storage.rows import (
    ARCHIVE_COLUMNS,
    MARKER_IMPORTANCE,
    CommittedCompaction,
    UnwrittenArchive,
    archives,
    epoch_of,
    swapped_summary,
    unwritten,
)
from core.storage.sqlite.connection import transaction
from core.storage.sqlite.notes import add_note
from core.storage.vocabulary import MEMORY_PREFIX, CompactionPlan, NoteDraft, SummaryDraft
from core.types import Archive


def _state(conn: Any, session_id: str) -> dict[str, Any]:
    row = conn.execute("SELECT state_json FROM session_state WHERE session_id = ?",
                       (session_id,)).fetchone()
    if row is None:
        raise NotFound(f"no session {shown(session_id)}")
    state: dict[str, Any] = json.loads(row[0])
    return state


def write_summary_state(conn: Any, session_id: str, summary: SummaryDraft,
                        expected_epoch: int, now: str) -> int | None:
    """Compare-and-swap the rolling summary: written with ``epoch = expected_epoch + 1`` when
    the stored epoch is still ``expected_epoch``; None (nothing written) when it is not."""
    with transaction(conn):
        value = swapped_summary(_state(conn, session_id), summary, expected_epoch, now)
        if value is None:
            return None
        conn.execute(
            "UPDATE session_state SET state_json = json_set(state_json, '$.summary_state',"
            " json(?)), updated_at = ? WHERE session_id = ?",
            (json.dumps(value, ensure_ascii=False), now, session_id))
        return expected_epoch + 1


def record_summary_error(conn: Any, session_id: str, error: str | None, now: str) -> None:
    """Keep the last summarizer failure in the session state (None clears it)."""
    value = None if error is None else json.dumps({"error": error, "at": now})
    with transaction(conn):
        if value is None:
            conn.execute("UPDATE session_state SET state_json = json_remove(state_json,"
                         " '$.summary_error') WHERE session_id = ?", (session_id,))
        else:
            conn.execute("UPDATE session_state SET state_json = json_set(state_json,"
                         " '$.summary_error', json(?)) WHERE session_id = ?",
                         (value, session_id))


def commit_compaction(conn: Any, plan: CompactionPlan, archive: NoteDraft,
                      now: str) -> CommittedCompaction:
    """Archive note, marker event, folded events, reset summary and archive row, at once.

    ``SummaryConflict`` (nothing written) when the conversation moved on since it was read:
    a new message, or another summary or compaction.
    """
    with transaction(conn):
        state = _state(conn, plan.session_id)
        last = int(state.get("last_sequence") or 0)
        if last != plan.expected_last or epoch_of(state) != plan.expected_epoch:
            raise SummaryConflict(
                f"session {shown(plan.session_id)} changed while it was being compacted (last "
                f"sequence {plan.expected_last} -> {last}, summary epoch "
                f"{plan.expected_epoch} -> {epoch_of(state)}); nothing was written")
        note = add_note(conn, archive, now)
        marker_sequence = last + 1
        conn.execute(
            "INSERT INTO conversation_events(session_id, sequence, payload_json, created_at,"
            " role, importance, consolidated_at) VALUES (?, ?, ?, ?, 'system', ?, ?)",
            (plan.session_id, marker_sequence, json.dumps(plan.marker, ensure_ascii=False), now,
             MARKER_IMPORTANCE, now))
        conn.execute(
            "UPDATE conversation_events SET consolidated_at = ? WHERE session_id = ?"
            " AND sequence BETWEEN ? AND ? AND consolidated_at IS NULL",
            (now, plan.session_id, plan.first_sequence, last))
        compaction = {"marker_sequence": marker_sequence, "archive_name": note.name,
                      "archived_at": now, "count": int((state.get("compaction") or {})
                                                       .get("count", 0)) + 1}
        summary = {"text": "", "upper_sequence": marker_sequence,
                   "epoch": plan.expected_epoch + 1, "updated_at": now,
                   "summarizer": plan.summarizer}
        conn.execute(
            "UPDATE session_state SET state_json = json_remove(json_set(state_json,"
            " '$.last_sequence', ?, '$.compaction', json(?), '$.summary_state', json(?)),"
            " '$.summary_error'), updated_at = ? WHERE session_id = ?",
            (marker_sequence, json.dumps(compaction, ensure_ascii=False),
             json.dumps(summary, ensure_ascii=False), now, plan.session_id))
        conn.execute(
            "INSERT INTO archives(session_id, marker_sequence, archive_name, namespace, note_id,"
            " first_sequence, last_sequence, message_count, archived_at, summarizer)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (plan.session_id, marker_sequence, note.name, archive.namespace, note.note_id,
             plan.first_sequence, last, plan.message_count, now, plan.summarizer))
        return CommittedCompaction(marker_sequence, note.note(), now)


def archive_count(conn: Any, session_id: str) -> int:
    """Compactions a session has had."""
    return int(conn.execute("SELECT count(*) FROM archives WHERE session_id = ?",
                            (session_id,)).fetchone()[0])


def list_archives(conn: Any, session_id: str | None = None) -> list[Archive]:
    """A session's archives (every session's without one), oldest first."""
    where, params = ("WHERE session_id = ?", (session_id,)) if session_id else ("", ())
    return archives(conn.execute(
        f"SELECT {', '.join(ARCHIVE_COLUMNS)} FROM archives {where}"
        " ORDER BY archived_at, session_id, marker_sequence", params).fetchall())


def unwritten_archives(conn: Any) -> list[UnwrittenArchive]:
    """Archives whose markdown file has not been written yet, with their note's content."""
    rows = conn.execute(
        f"SELECT {', '.join('a.' + c for c in ARCHIVE_COLUMNS)}, n.content FROM archives a"
        " JOIN notes n ON n.note_id = a.note_id WHERE a.file_path IS NULL"
        " ORDER BY a.archived_at").fetchall()
    return unwritten(rows)


def record_archive_file(conn: Any, session_id: str, marker_sequence: int,
                        file_path: str | None, error: str | None) -> None:
    """Note where an archive's markdown went, or why it could not be written."""
    with transaction(conn):
        conn.execute("UPDATE archives SET file_path = ?, file_error = ?"
                     " WHERE session_id = ? AND marker_sequence = ?",
                     (file_path, error, session_id, marker_sequence))


def idle_sessions(conn: Any, idle_before: str) -> list[str]:
    """Conversations last active before ``idle_before`` that hold events not yet folded into
    an archive, least recently active first (note sessions are never consolidated)."""
    rows = conn.execute(
        "SELECT s.session_id FROM sessions s WHERE s.updated_at < ?"
        " AND substr(s.session_id, 1, ?) <> ?"
        " AND EXISTS (SELECT 1 FROM conversation_events e WHERE e.session_id = s.session_id"
        "             AND e.consolidated_at IS NULL)"
        " ORDER BY s.updated_at, s.session_id",
        (idle_before, len(MEMORY_PREFIX), MEMORY_PREFIX)).fetchall()
    return [row[0] for row in rows]


def read_meta(conn: Any, key: str) -> str | None:
    """A value from ``memory_meta``."""
    row = conn.execute("SELECT value FROM memory_meta WHERE key = ?", (key,)).fetchone()
    return None if row is None else row[0]


def write_meta(conn: Any, key: str, value: str) -> None:
    """Set a value in ``memory_meta``."""
    with transaction(conn):
        conn.execute("INSERT INTO memory_meta(key, value) VALUES (?, ?)"
                     " ON CONFLICT(key) DO UPDATE SET value = excluded.value", (key, value))
