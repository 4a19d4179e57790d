"""SQL for one session read whole and consistently: its row, its events and its state.

The reads run in one (deferred, read-only) transaction, so an agent writing to the file at
the same time can never make the events and the state disagree in what they return.
"""

from __future__ import annotations

from typing import Any

from core.storage.rows import SessionSnapshot
from core.storage.sqlite.events import read_events, read_session_state


def read_session_snapshot(conn: Any, session_id: str) -> SessionSnapshot | None:
    """The session's row, events and state, or None when there is no such session."""
    conn.execute("BEGIN")
    try:
        row = conn.execute(
            "SELECT session_id, agent_identity, created_at, updated_at FROM sessions"
            " WHERE session_id = ?", (session_id,)).fetchone()
        if row is None:
            return None
        return SessionSnapshot(row[0], row[1], str(row[2]), str(row[3]),
                               read_events(conn, session_id),
                               read_session_state(conn, session_id) or {})
    finally:
        conn.execute("COMMIT")
