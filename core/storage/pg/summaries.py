"""PostgreSQL: TO BE WRITTEN — core/storage/summaries.py's operations on an async connection."""

from __future__ import annotations

from typing import Any

from core.storage.notes import NoteDraft
from core.storage.pg.connection import Conn
from core.storage.summaries import CompactionPlan


async def write_summary_state(
    conn: Conn, session_id: str, summary: dict[str, Any], expected_epoch: int, now: str
) -> int | None:
    """Compare-and-swap the rolling summary: written with ``epoch = expected_epoch + 1`` when"""
    raise NotImplementedError("PostgreSQL: write_summary_state")


async def record_summary_error(conn: Conn, session_id: str, error: str | None, now: str) -> None:
    """Keep the last summarizer failure in the session state (None clears it)."""
    raise NotImplementedError("PostgreSQL: record_summary_error")


async def commit_compaction(
    conn: Conn, plan: CompactionPlan, archive: NoteDraft, now: str
) -> dict[str, Any]:
    """Archive note, marker event, folded events, reset summary and archive row, at once."""
    raise NotImplementedError("PostgreSQL: commit_compaction")


async def archive_count(conn: Conn, session_id: str) -> int:
    """Compactions a session has had."""
    raise NotImplementedError("PostgreSQL: archive_count")


async def list_archives(conn: Conn, session_id: str | None = None) -> list[dict[str, Any]]:
    """A session's archives (every session's without one), oldest first."""
    raise NotImplementedError("PostgreSQL: list_archives")


async def unwritten_archives(conn: Conn) -> list[dict[str, Any]]:
    """Archives whose markdown file has not been written yet, with their note's content."""
    raise NotImplementedError("PostgreSQL: unwritten_archives")


async def record_archive_file(
    conn: Conn, session_id: str, marker_sequence: int, file_path: str | None, error: str | None
) -> None:
    """Note where an archive's markdown went, or why it could not be written."""
    raise NotImplementedError("PostgreSQL: record_archive_file")


async def idle_sessions(conn: Conn, idle_before: str) -> list[str]:
    """Conversations last active before ``idle_before`` that hold events not yet folded into"""
    raise NotImplementedError("PostgreSQL: idle_sessions")


async def read_meta(conn: Conn, key: str) -> str | None:
    """A value from ``memory_meta``."""
    cursor = await conn.execute("SELECT value FROM memory_meta WHERE key = %s", (key,))
    row = await cursor.fetchone()
    return None if row is None else row[0]


async def write_meta(conn: Conn, key: str, value: str) -> None:
    """Set a value in ``memory_meta``."""
    await conn.execute("INSERT INTO memory_meta(key, value) VALUES (%s, %s)"
                       " ON CONFLICT (key) DO UPDATE SET value = excluded.value", (key, value))
