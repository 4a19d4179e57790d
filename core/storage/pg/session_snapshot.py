"""PostgreSQL: one session read whole and consistently: its row, its events and its state.

:class:`PgDatabase.read` runs this in one REPEATABLE READ snapshot, so a writer committing
meanwhile can never make the events and the state disagree in what they return.
"""

from __future__ import annotations

from typing import Any

from core.storage.pg.connection import Conn
from core.storage.pg.events import read_events, read_session_state


async def read_session_snapshot(conn: Conn, session_id: str) -> dict[str, Any] | None:
    """``{"session", "events", "state"}`` for the session, or None when there is none."""
    cursor = await conn.execute(
        "SELECT session_id, agent_identity, created_at, updated_at FROM sessions"
        " WHERE session_id = %s", (session_id,))
    row = await cursor.fetchone()
    if row is None:
        return None
    return {
        "session": {"session_id": row[0], "agent_identity": row[1],
                    "created_at": str(row[2]), "updated_at": str(row[3])},
        "events": await read_events(conn, session_id),
        "state": await read_session_state(conn, session_id) or {},
    }
