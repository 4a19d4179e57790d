"""PostgreSQL: TO BE WRITTEN — core/storage/session_snapshot.py on an async connection."""

from __future__ import annotations

from typing import Any

from core.storage.pg.connection import Conn


async def read_session_snapshot(conn: Conn, session_id: str) -> dict[str, Any] | None:
    """``{"session", "events", "state"}`` for the session, or None when there is none."""
    raise NotImplementedError("PostgreSQL: read_session_snapshot")
