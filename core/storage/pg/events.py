"""PostgreSQL: TO BE WRITTEN — core/storage/events.py's operations on an async connection."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from core.storage.events import PreparedMessage, WriteOutcome
from core.storage.pg.connection import Conn


async def session_agents(conn: Conn, session_ids: Sequence[str]) -> dict[str, str]:
    """The agent identity ('' when none) each of these sessions was created under."""
    raise NotImplementedError("PostgreSQL: session_agents")


async def last_sequence(conn: Conn, session_id: str) -> int | None:
    """The highest stored sequence of a session (None when it has no events)."""
    raise NotImplementedError("PostgreSQL: last_sequence")


async def write_messages(
    conn: Conn,
    messages: Sequence[PreparedMessage],
    all_or_nothing: bool,
    vectors: np.ndarray | None = None,
    vector_model: str | None = None,
    *,
    context_messages: int = 0,
    context_chars: int = 400,
) -> list[WriteOutcome]:
    """Store messages in one transaction (seed 001 steps 1-4, 8, 9, FTS rows included)."""
    raise NotImplementedError("PostgreSQL: write_messages")


async def session_tails(conn: Conn, session_ids: Sequence[str], count: int) -> dict[str, list[str]]:
    """:func:`previous_texts` for several sessions in one hop (the bulk path's contexts)."""
    raise NotImplementedError("PostgreSQL: session_tails")


async def read_events(
    conn: Conn, session_id: str, limit: int | None = None, after_sequence: int | None = None
) -> list[dict[str, Any]]:
    """A session's events oldest first; with ``limit``, the most recent ``limit`` of them."""
    raise NotImplementedError("PostgreSQL: read_events")


async def list_sessions(
    conn: Conn, agent_identity: str | None = None, limit: int | None = None, offset: int = 0
) -> list[dict[str, Any]]:
    """Sessions by most recent activity, with event and chunk counts."""
    raise NotImplementedError("PostgreSQL: list_sessions")


async def delete_session(conn: Conn, session_id: str) -> bool:
    """Delete a session; foreign keys and triggers remove every dependent row."""
    raise NotImplementedError("PostgreSQL: delete_session")


async def read_session_state(conn: Conn, session_id: str) -> dict[str, Any] | None:
    """The session's ``state_json`` as a dict (None when the session has no state row)."""
    raise NotImplementedError("PostgreSQL: read_session_state")


async def table_counts(conn: Conn) -> dict[str, int]:
    """Row counts of the main tables, for doctor and for tests that check cascades."""
    raise NotImplementedError("PostgreSQL: table_counts")


async def session_row_counts(conn: Conn, session_id: str) -> dict[str, int]:
    """Rows one session owns in every table, for verifying that forget removed them all."""
    raise NotImplementedError("PostgreSQL: session_row_counts")


async def salient_events(conn: Conn, session_id: str, threshold: float) -> list[dict[str, Any]]:
    """Events of a session with importance at or above ``threshold`` (seed 000 salience)."""
    raise NotImplementedError("PostgreSQL: salient_events")


async def integrity_problems(conn: Conn) -> list[str]:
    """The invariants the schema does not enforce by itself, each broken one described;
    ``["ok"]`` when every one holds (what SQLite's integrity check returns when sound)."""
    raise NotImplementedError("PostgreSQL: integrity_problems")
