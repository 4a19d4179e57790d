"""SQL for one session read whole and consistently: its row, its events and its state.

The reads run in one (deferred, read-only) transaction, so an agent writing to the file at
the same time can never make the events and the state disagree in what they return.
"""

from __future__ import annotations

from typing import Any

from core.storage.sqlite.events import read_events, read_session_state


def read_session_snapshot(conn: Any, session_id: str) -> dict[str, Any] | None:
    """``{"session", "events", "state"}`` for the session, or None when there is none."""
    conn.execute("BEGIN")
    try:
        row = conn.execute(
            "SELECT session_id, agent_identity, created_at, updated_at FROM sessions"
            " WHERE session_id = ?", (session_id,)).fetchone()
        if row is None:
            return None
        return {
            "session": {"session_id": row[0], "agent_identity": row[1],
                        "created_at": str(row[2]), "updated_at": str(row[3])},
            "events": read_events(conn, session_id),
            "state": read_session_state(conn, session_id) or {},
        }
    finally:
        conn.execute("COMMIT")
