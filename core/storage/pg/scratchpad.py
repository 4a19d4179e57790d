"""PostgreSQL: the scratchpad, one JSON field of a session's ``session_state`` (oxydra;
:mod:`core.storage.sqlite.scratchpad` on an async connection).

The field is changed alone (``jsonb_set``, ``-``) on a locked row, so a scratchpad write
and a message store never undo each other. A bound write locks the session's row (the
upsert does) before it reads the session's owner, so the owner it checks is the one the
write commits under.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from core.errors import OutOfNamespace
from core.storage.messages import out_of_namespace
from core.storage.pg.connection import Conn
from core.storage.pg.events import session_agents
from core.storage.rows import scratchpad_state
from core.types import ScratchpadState


async def read_scratchpad(conn: Conn, session_id: str) -> ScratchpadState | None:
    """The session's scratchpad field, or None when it has none."""
    cursor = await conn.execute(
        "SELECT state_json::jsonb -> 'scratchpad' FROM session_state WHERE session_id = %s",
        (session_id,))
    row = await cursor.fetchone()
    # psycopg reads jsonb as Python values already; a JSON null is no scratchpad, as
    # SQLite's json_extract gives NULL for it.
    return None if row is None or row[0] is None else scratchpad_state(session_id, row[0])


async def write_scratchpad(
    conn: Conn,
    session_id: str,
    agent_identity: str,
    items: Sequence[str],
    now: str,
    bound: bool = False,
) -> ScratchpadState:
    """Replace the session's scratchpad with ``items`` (creating the session if it is new).

    ``bound``: the session must belong to ``agent_identity``; another agent's is refused
    (``OutOfNamespace``) in the same transaction, so nothing is written.
    """
    value = json.dumps({"items": list(items), "updated_at": now}, ensure_ascii=False)
    await conn.execute(
        "INSERT INTO sessions(session_id, agent_identity, created_at, updated_at)"
        " VALUES (%s, %s, %s, %s)"
        " ON CONFLICT (session_id) DO UPDATE SET updated_at = excluded.updated_at",
        (session_id, agent_identity, now, now))
    if bound and (await session_agents(conn, [session_id]))[session_id] != agent_identity:
        raise OutOfNamespace(out_of_namespace(session_id, agent_identity))
    await conn.execute(
        "INSERT INTO session_state(session_id, state_json, updated_at)"
        " VALUES (%(sid)s, jsonb_build_object('scratchpad', %(value)s::jsonb)::text, %(at)s)"
        " ON CONFLICT (session_id) DO UPDATE SET"
        "  state_json = jsonb_set(coalesce(nullif(session_state.state_json, ''), '{}')::jsonb,"
        "  '{scratchpad}', %(value)s::jsonb)::text, updated_at = %(at)s",
        {"sid": session_id, "value": value, "at": now})
    return ScratchpadState(session_id, list(items), now)


async def clear_scratchpad(
    conn: Conn, session_id: str, now: str, agent_identity: str | None = None
) -> bool:
    """Remove the session's scratchpad; False when it had none (or, with ``agent_identity``,
    when the session is another agent's)."""
    owned = ("" if agent_identity is None else
             " AND session_id IN (SELECT session_id FROM sessions WHERE agent_identity = %s)")
    cursor = await conn.execute(
        "UPDATE session_state SET state_json = (state_json::jsonb - 'scratchpad')::text,"
        " updated_at = %s WHERE session_id = %s AND state_json::jsonb ? 'scratchpad'" + owned,
        (now, session_id) + (() if agent_identity is None else (agent_identity,)))
    return cursor.rowcount > 0


async def scratchpad_sessions(conn: Conn, limit: int) -> list[ScratchpadState]:
    """The sessions that have a scratchpad, most recently written first, with their items."""
    cursor = await conn.execute(
        "SELECT session_id, state_json::jsonb -> 'scratchpad' AS pad FROM session_state"
        " WHERE state_json::jsonb ? 'scratchpad'"
        " ORDER BY (state_json::jsonb -> 'scratchpad' ->> 'updated_at') COLLATE \"C\""
        " DESC NULLS LAST, session_id LIMIT %s", (None if limit < 0 else limit,))
    return [scratchpad_state(session_id, pad) for session_id, pad in await cursor.fetchall()]
