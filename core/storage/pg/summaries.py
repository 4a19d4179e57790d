"""PostgreSQL: rolling summaries, compactions and consolidation (aidaemon, oxydra,
crabtalk; :mod:`core.storage.sqlite.summaries` on an async connection).

The rolling summary is the ``summary_state`` field of a session's ``session_state``, the
latest compaction its ``compaction`` field. Each change first locks that row
(``SELECT … FOR UPDATE``) and then checks what the caller read (the summary's epoch, the
session's last sequence): of two writers that read the same state, the second waits for
the first's commit, reads the row again as it committed, and finds it moved, so exactly
one wins, in any process. A compaction locks the session's ``sessions`` row before that,
as a message write does before it reads the last sequence, so a message and a compaction
of one conversation take turns instead of both writing at one sequence.
"""

from __future__ import annotations

import json
from typing import Any

from core.errors import NotFound, SummaryConflict
from core.inputs import shown
from core.storage.pg.connection import Conn
from core.storage.pg.notes import add_note
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
from core.storage.vocabulary import MEMORY_PREFIX, CompactionPlan, NoteDraft, SummaryDraft
from core.types import Archive


async def _locked_state(conn: Conn, session_id: str) -> dict[str, Any]:
    """The session's state, its row locked until the transaction ends."""
    cursor = await conn.execute(
        "SELECT state_json FROM session_state WHERE session_id = %s FOR UPDATE",
        (session_id,))
    row = await cursor.fetchone()
    if row is None:
        raise NotFound(f"no session {shown(session_id)}")
    return dict(json.loads(row[0]))


async def write_summary_state(
    conn: Conn, session_id: str, summary: SummaryDraft, expected_epoch: int, now: str
) -> int | None:
    """Compare-and-swap the rolling summary: written with ``epoch = expected_epoch + 1`` when
    the stored epoch is still ``expected_epoch``; None (nothing written) when it is not."""
    value = swapped_summary(await _locked_state(conn, session_id), summary, expected_epoch,
                            now)
    if value is None:
        return None
    await conn.execute(
        "UPDATE session_state SET state_json = jsonb_set(state_json::jsonb,"
        " '{summary_state}', %s::jsonb)::text, updated_at = %s WHERE session_id = %s",
        (json.dumps(value, ensure_ascii=False), now, session_id))
    return expected_epoch + 1


async def record_summary_error(conn: Conn, session_id: str, error: str | None, now: str) -> None:
    """Keep the last summarizer failure in the session state (None clears it)."""
    if error is None:
        await conn.execute(
            "UPDATE session_state SET state_json = (state_json::jsonb - 'summary_error')::text"
            " WHERE session_id = %s", (session_id,))
    else:
        await conn.execute(
            "UPDATE session_state SET state_json = jsonb_set(state_json::jsonb,"
            " '{summary_error}', %s::jsonb)::text WHERE session_id = %s",
            (json.dumps({"error": error, "at": now}), session_id))


async def commit_compaction(
    conn: Conn, plan: CompactionPlan, archive: NoteDraft, now: str
) -> CommittedCompaction:
    """Archive note, marker event, folded events, reset summary and archive row, at once.

    ``SummaryConflict`` (nothing written) when the conversation moved on since it was read:
    a new message, or another summary or compaction.
    """
    await conn.execute("SELECT 1 FROM sessions WHERE session_id = %s FOR UPDATE",
                       (plan.session_id,))
    state = await _locked_state(conn, plan.session_id)
    last = int(state.get("last_sequence") or 0)
    if last != plan.expected_last or epoch_of(state) != plan.expected_epoch:
        raise SummaryConflict(
            f"session {shown(plan.session_id)} changed while it was being compacted (last "
            f"sequence {plan.expected_last} -> {last}, summary epoch "
            f"{plan.expected_epoch} -> {epoch_of(state)}); nothing was written")
    note = await add_note(conn, archive, now)
    marker_sequence = last + 1
    await conn.execute(
        "INSERT INTO conversation_events(session_id, sequence, payload_json, created_at,"
        " role, importance, consolidated_at) VALUES (%s, %s, %s, %s, 'system', %s, %s)",
        (plan.session_id, marker_sequence, json.dumps(plan.marker, ensure_ascii=False), now,
         MARKER_IMPORTANCE, now))
    await conn.execute(
        "UPDATE conversation_events SET consolidated_at = %s WHERE session_id = %s"
        " AND sequence BETWEEN %s AND %s AND consolidated_at IS NULL",
        (now, plan.session_id, plan.first_sequence, last))
    compaction = {"marker_sequence": marker_sequence, "archive_name": note.name,
                  "archived_at": now,
                  "count": int((state.get("compaction") or {}).get("count", 0)) + 1}
    summary = {"text": "", "upper_sequence": marker_sequence,
               "epoch": plan.expected_epoch + 1, "updated_at": now,
               "summarizer": plan.summarizer}
    await conn.execute(
        "UPDATE session_state SET state_json = (jsonb_set(jsonb_set(jsonb_set("
        " state_json::jsonb, '{last_sequence}', to_jsonb(%s::bigint)),"
        " '{compaction}', %s::jsonb), '{summary_state}', %s::jsonb) - 'summary_error')::text,"
        " updated_at = %s WHERE session_id = %s",
        (marker_sequence, json.dumps(compaction, ensure_ascii=False),
         json.dumps(summary, ensure_ascii=False), now, plan.session_id))
    await conn.execute(
        "INSERT INTO archives(session_id, marker_sequence, archive_name, namespace, note_id,"
        " first_sequence, last_sequence, message_count, archived_at, summarizer)"
        " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
        (plan.session_id, marker_sequence, note.name, archive.namespace, note.note_id,
         plan.first_sequence, last, plan.message_count, now, plan.summarizer))
    return CommittedCompaction(marker_sequence, note.note(), now)


async def archive_count(conn: Conn, session_id: str) -> int:
    """Compactions a session has had."""
    cursor = await conn.execute("SELECT count(*) FROM archives WHERE session_id = %s",
                                (session_id,))
    row = await cursor.fetchone()
    return 0 if row is None else int(row[0])


async def list_archives(conn: Conn, session_id: str | None = None) -> list[Archive]:
    """A session's archives (every session's without one), oldest first."""
    where, params = ("WHERE session_id = %s", (session_id,)) if session_id else ("", ())
    cursor = await conn.execute(
        f"SELECT {', '.join(ARCHIVE_COLUMNS)} FROM archives {where}"
        " ORDER BY archived_at, session_id, marker_sequence", params)
    return archives(await cursor.fetchall())


async def unwritten_archives(conn: Conn) -> list[UnwrittenArchive]:
    """Archives whose markdown file has not been written yet, with their note's content."""
    cursor = await conn.execute(
        f"SELECT {', '.join('a.' + c for c in ARCHIVE_COLUMNS)}, n.content FROM archives a"
        " JOIN notes n ON n.note_id = a.note_id WHERE a.file_path IS NULL"
        # SQLite breaks archived_at ties by rowid (insertion); the key is the closest here.
        " ORDER BY a.archived_at, a.session_id, a.marker_sequence")
    return unwritten(await cursor.fetchall())


async def record_archive_file(
    conn: Conn, session_id: str, marker_sequence: int, file_path: str | None, error: str | None
) -> None:
    """Note where an archive's markdown went, or why it could not be written."""
    await conn.execute("UPDATE archives SET file_path = %s, file_error = %s"
                       " WHERE session_id = %s AND marker_sequence = %s",
                       (file_path, error, session_id, marker_sequence))


async def idle_sessions(conn: Conn, idle_before: str) -> list[str]:
    """Conversations last active before ``idle_before`` that hold events not yet folded into
    an archive, least recently active first (note sessions are never consolidated)."""
    cursor = await conn.execute(
        "SELECT s.session_id FROM sessions s WHERE s.updated_at < %s"
        " AND substr(s.session_id, 1, %s) <> %s"
        " AND EXISTS (SELECT 1 FROM conversation_events e WHERE e.session_id = s.session_id"
        "             AND e.consolidated_at IS NULL)"
        " ORDER BY s.updated_at, s.session_id",
        (idle_before, len(MEMORY_PREFIX), MEMORY_PREFIX))
    return [str(row[0]) for row in await cursor.fetchall()]


async def read_meta(conn: Conn, key: str) -> str | None:
    """A value from ``memory_meta``: under a role bound to a namespace, the namespace's own
    (memory_meta_key, migration 0004), as its consolidation passes cover that namespace only."""
    cursor = await conn.execute("SELECT value FROM memory_meta WHERE key = memory_meta_key(%s)",
                                (key,))
    row = await cursor.fetchone()
    return None if row is None else row[0]


async def write_meta(conn: Conn, key: str, value: str) -> None:
    """Set a value in ``memory_meta`` (a bound role's: its namespace's own, as read_meta)."""
    await conn.execute("INSERT INTO memory_meta(key, value) VALUES (memory_meta_key(%s), %s)"
                       " ON CONFLICT (key) DO UPDATE SET value = excluded.value", (key, value))
