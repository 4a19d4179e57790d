"""PostgreSQL: one session read whole and consistently: its row, its events and its state.

:class:`PgDatabase.read` runs this in one REPEATABLE READ snapshot, so a writer committing
meanwhile can never make the events and the state disagree in what they return.
"""

from __future__ import annotations

from core.storage.pg.connection import Conn
from core.storage.pg.events import read_events, read_session_state
from core.storage.rows import SessionSnapshot


async def read_session_snapshot(conn: Conn, session_id: str) -> SessionSnapshot | None:
    """The session's row, events and state, or None when there is no such session."""
    cursor = await conn.execute(
        "SELECT session_id, agent_identity, created_at, updated_at FROM sessions"
        " WHERE session_id = %s", (session_id,))
    row = await cursor.fetchone()
    if row is None:
        return None
    return SessionSnapshot(row[0], row[1], str(row[2]), str(row[3]),
                           await read_events(conn, session_id),
                           await read_session_state(conn, session_id) or {})
