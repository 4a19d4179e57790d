"""PostgreSQL: the items of an OpenAI Agents SDK session (:mod:`core.storage.sqlite.agent_items`'s
operations on an async connection, with the same semantics and refusals).

What SQLite's single writer gave for free is a lock here: every write locks the session's
row (``FOR UPDATE``) before it reads or changes the session's items, so concurrent writers
of one session take turns: two ``add_items`` get consecutive sequences, and two
``pop_item`` calls take two different items.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from core.storage.messages import PreparedMessage
from core.storage.pg import events
from core.storage.pg.connection import Conn
from core.storage.pg.langgraph_rows import ensure_session
from core.storage.rows import AGENTS_FRAMEWORK, item_key

_LIVE = ("FROM framework_items f JOIN sessions s ON s.session_id = f.session_id"
         " WHERE f.session_id = %s AND f.framework = %s AND f.removed_at IS NULL"
         " AND coalesce(s.agent_identity, '') = %s")


async def add_items(conn: Conn, session_id: str, agent_identity: str, now: str,
                    prepared: Sequence[PreparedMessage], raw_json: Sequence[str], replace: bool,
                    context_messages: int, context_chars: int) -> list[int]:
    """Store items as the session's next events with their ``framework_items`` rows, in the
    caller's transaction (see the SQLite side)."""
    await ensure_session(conn, session_id, agent_identity, now)
    if replace:
        await conn.execute("UPDATE framework_items SET removed_at = %s WHERE session_id = %s"
                           " AND framework = %s AND removed_at IS NULL",
                           (now, session_id, AGENTS_FRAMEWORK))
    if not prepared:
        return []
    outcomes = await events.write_messages(conn, prepared, True,
                                           context_messages=context_messages,
                                           context_chars=context_chars)
    sequences = [int(outcome.sequence) for outcome in outcomes if outcome.sequence is not None]
    async with conn.cursor() as many:
        await many.executemany(
            "INSERT INTO framework_items(session_id, sequence, framework, item_key, raw_json)"
            " VALUES (%s, %s, %s, %s, %s)",
            [(session_id, sequence, AGENTS_FRAMEWORK, item_key(sequence), raw)
             for sequence, raw in zip(sequences, raw_json, strict=True)])
    return sequences


async def live_items(conn: Conn, agent_identity: str, session_id: str,
                     limit: int | None) -> list[str]:
    """The JSON of the session's items not removed, oldest first, the latest ``limit``."""
    params: list[Any] = [session_id, AGENTS_FRAMEWORK, agent_identity]
    if limit is None or limit < 0:
        cursor = await conn.execute(f"SELECT f.raw_json {_LIVE} ORDER BY f.sequence", params)
        return [str(row[0]) for row in await cursor.fetchall()]
    cursor = await conn.execute(f"SELECT f.raw_json {_LIVE} ORDER BY f.sequence DESC LIMIT %s",
                                [*params, limit])
    return [str(row[0]) for row in reversed(await cursor.fetchall())]


async def _lock_own(conn: Conn, session_id: str, agent_identity: str) -> bool:
    """Lock the session's row until the transaction ends; False when it is not a session of
    ``agent_identity``."""
    cursor = await conn.execute("SELECT 1 FROM sessions WHERE session_id = %s"
                                " AND coalesce(agent_identity, '') = %s FOR UPDATE",
                                (session_id, agent_identity))
    return await cursor.fetchone() is not None


async def pop_item(conn: Conn, session_id: str, agent_identity: str, now: str) -> str | None:
    """Mark the session's latest item not removed as removed (see the SQLite side)."""
    if not await _lock_own(conn, session_id, agent_identity):
        return None
    cursor = await conn.execute(f"SELECT f.sequence, f.raw_json {_LIVE}"
                                " ORDER BY f.sequence DESC LIMIT 1",
                                (session_id, AGENTS_FRAMEWORK, agent_identity))
    found = await cursor.fetchone()
    if found is None:
        return None
    await conn.execute("UPDATE framework_items SET removed_at = %s WHERE session_id = %s"
                       " AND sequence = %s", (now, session_id, found[0]))
    return str(found[1])


async def clear_items(conn: Conn, session_id: str, agent_identity: str, now: str) -> int:
    """Mark every item of the session not removed yet as removed (see the SQLite side)."""
    if not await _lock_own(conn, session_id, agent_identity):
        return 0
    cursor = await conn.execute(
        "UPDATE framework_items SET removed_at = %s WHERE session_id = %s AND framework = %s"
        " AND removed_at IS NULL", (now, session_id, AGENTS_FRAMEWORK))
    return int(cursor.rowcount)
