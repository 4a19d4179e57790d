"""PostgreSQL: TO BE WRITTEN — core/storage/scratchpad.py's operations on an async connection."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from core.storage.pg.connection import Conn


async def read_scratchpad(conn: Conn, session_id: str) -> dict[str, Any] | None:
    """The session's scratchpad field, or None when it has none."""
    raise NotImplementedError("PostgreSQL: read_scratchpad")


async def write_scratchpad(
    conn: Conn,
    session_id: str,
    agent_identity: str,
    items: Sequence[str],
    now: str,
    bound: bool = False,
) -> dict[str, Any]:
    """Replace the session's scratchpad with ``items`` (creating the session if it is new)."""
    raise NotImplementedError("PostgreSQL: write_scratchpad")


async def clear_scratchpad(
    conn: Conn, session_id: str, now: str, agent_identity: str | None = None
) -> bool:
    """Remove the session's scratchpad; False when it had none (or, with ``agent_identity``,"""
    raise NotImplementedError("PostgreSQL: clear_scratchpad")


async def scratchpad_sessions(conn: Conn, limit: int) -> list[dict[str, Any]]:
    """The sessions that have a scratchpad, most recently written first, with their items."""
    raise NotImplementedError("PostgreSQL: scratchpad_sessions")
