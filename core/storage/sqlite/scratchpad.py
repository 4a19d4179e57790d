"""SQL for the scratchpad: one JSON field of a session's ``session_state`` (oxydra).

The field is ``{"items": [...], "updated_at": "..."}`` beside ``last_sequence`` and
``summary_state``; ``json_set`` and ``json_remove`` change it alone, so a scratchpad write
and a message store never undo each other.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from core.errors import OutOfNamespace
from core.storage.messages import out_of_namespace
from core.storage.rows import scratchpad_state
from core.storage.sqlite.connection import transaction
from core.storage.sqlite.events import session_agents
from core.types import ScratchpadState


def read_scratchpad(conn: Any, session_id: str) -> ScratchpadState | None:
    """The session's scratchpad field, or None when it has none."""
    row = conn.execute(
        "SELECT json_extract(state_json, '$.scratchpad') FROM session_state"
        " WHERE session_id = ?", (session_id,)).fetchone()
    return (None if row is None or row[0] is None
            else scratchpad_state(session_id, json.loads(row[0])))


def write_scratchpad(conn: Any, session_id: str, agent_identity: str, items: Sequence[str],
                     now: str, bound: bool = False) -> ScratchpadState:
    """Replace the session's scratchpad with ``items`` (creating the session if it is new).

    ``bound``: the session must belong to ``agent_identity``; another agent's is refused
    (``OutOfNamespace``) in the same transaction, so nothing is written.
    """
    value = json.dumps({"items": list(items), "updated_at": now}, ensure_ascii=False)
    with transaction(conn):
        conn.execute(
            "INSERT INTO sessions(session_id, agent_identity, created_at, updated_at)"
            " VALUES (?, ?, ?, ?)"
            " ON CONFLICT(session_id) DO UPDATE SET updated_at = excluded.updated_at",
            (session_id, agent_identity, now, now))
        if bound and session_agents(conn, [session_id])[session_id] != agent_identity:
            raise OutOfNamespace(out_of_namespace(session_id, agent_identity))
        conn.execute(
            "INSERT INTO session_state(session_id, state_json, updated_at)"
            " VALUES (?1, json_object('scratchpad', json(?2)), ?3)"
            " ON CONFLICT(session_id) DO UPDATE SET"
            "  state_json = json_set(state_json, '$.scratchpad', json(?2)), updated_at = ?3",
            (session_id, value, now))
    return ScratchpadState(session_id, list(items), now)


def clear_scratchpad(conn: Any, session_id: str, now: str,
                     agent_identity: str | None = None) -> bool:
    """Remove the session's scratchpad; False when it had none (or, with ``agent_identity``,
    when the session is another agent's)."""
    owned = ("" if agent_identity is None else
             " AND session_id IN (SELECT session_id FROM sessions WHERE agent_identity = ?)")
    with transaction(conn):
        cursor = conn.execute(
            "UPDATE session_state SET state_json = json_remove(state_json, '$.scratchpad'),"
            " updated_at = ? WHERE session_id = ?"
            " AND json_type(state_json, '$.scratchpad') IS NOT NULL" + owned,
            (now, session_id) + (() if agent_identity is None else (agent_identity,)))
        return bool(cursor.rowcount > 0)


def scratchpad_sessions(conn: Any, limit: int) -> list[ScratchpadState]:
    """The sessions that have a scratchpad, most recently written first, with their items."""
    rows = conn.execute(
        "SELECT session_id, json_extract(state_json, '$.scratchpad') AS pad FROM session_state"
        " WHERE json_type(state_json, '$.scratchpad') IS NOT NULL"
        " ORDER BY json_extract(pad, '$.updated_at') DESC, session_id LIMIT ?",
        (limit,)).fetchall()
    return [scratchpad_state(session_id, json.loads(pad)) for session_id, pad in rows]
