"""SQLite: the items of an OpenAI Agents SDK session, kept as the session's events.

An Agents SDK session is one of our sessions. Each item the SDK adds is an event (the
Message dict :mod:`core.integrations.openai_agents.items` maps it to, so the Sessions pane,
retrieval and summaries read it) and a ``framework_items`` row of framework
``openai-agents`` holding the item's JSON exactly as the SDK's own SQLiteSession stores it
(``raw_json``), which is what the session gives back. Both are written in one transaction.
An item the SDK removed (``pop_item``, ``clear_session``) keeps its event and is marked
``removed_at``; the session gives back only the items not marked.

Every function takes a connection and runs on its lane's thread; each write is one
transaction. A session is of one agent namespace: a write makes it when new and refuses,
with ``OutOfNamespace``, one another agent made; a read of another namespace's session
finds nothing. Only ``framework_items`` rows of framework ``openai-agents`` are read or
changed here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from core.storage.messages import PreparedMessage
from core.storage.rows import AGENTS_FRAMEWORK, item_key
from core.storage.sqlite import events
from core.storage.sqlite.connection import transaction
from core.storage.sqlite.langgraph_rows import ensure_session

_LIVE = ("FROM framework_items f JOIN sessions s ON s.session_id = f.session_id"
         " WHERE f.session_id = ? AND f.framework = ? AND f.removed_at IS NULL"
         " AND coalesce(s.agent_identity, '') = ?")


def add_items(conn: Any, session_id: str, agent_identity: str, now: str,
              prepared: Sequence[PreparedMessage], raw_json: Sequence[str], replace: bool,
              context_messages: int, context_chars: int) -> list[int]:
    """Store items as the session's next events with their ``framework_items`` rows, in one
    transaction (all or none); with ``replace`` the items the session held are first marked
    removed at ``now``. The new events' sequences."""
    with transaction(conn):
        ensure_session(conn, session_id, agent_identity, now)
        if replace:
            conn.execute("UPDATE framework_items SET removed_at = ? WHERE session_id = ?"
                         " AND framework = ? AND removed_at IS NULL",
                         (now, session_id, AGENTS_FRAMEWORK))
        if not prepared:
            return []
        outcomes = events.write_messages(conn, prepared, True,
                                         context_messages=context_messages,
                                         context_chars=context_chars)
        sequences = [int(outcome.sequence) for outcome in outcomes
                     if outcome.sequence is not None]
        conn.executemany(
            "INSERT INTO framework_items(session_id, sequence, framework, item_key, raw_json)"
            " VALUES (?, ?, ?, ?, ?)",
            [(session_id, sequence, AGENTS_FRAMEWORK, item_key(sequence), raw)
             for sequence, raw in zip(sequences, raw_json, strict=True)])
        return sequences


def live_items(conn: Any, agent_identity: str, session_id: str,
               limit: int | None) -> list[str]:
    """The JSON of the session's items not removed, oldest first: the latest ``limit`` of
    them (None or negative: all, as SQLite's LIMIT takes a negative one)."""
    params: list[Any] = [session_id, AGENTS_FRAMEWORK, agent_identity]
    if limit is None or limit < 0:
        rows = conn.execute(f"SELECT f.raw_json {_LIVE} ORDER BY f.sequence", params)
        return [row[0] for row in rows.fetchall()]
    rows = conn.execute(f"SELECT f.raw_json {_LIVE} ORDER BY f.sequence DESC LIMIT ?",
                        [*params, limit]).fetchall()
    return [row[0] for row in reversed(rows)]


def pop_item(conn: Any, session_id: str, agent_identity: str, now: str) -> str | None:
    """Mark the session's latest item not removed as removed at ``now`` (its event stays),
    in one transaction; its JSON, None when the session holds none."""
    with transaction(conn):
        found = conn.execute(f"SELECT f.sequence, f.raw_json {_LIVE}"
                             " ORDER BY f.sequence DESC LIMIT 1",
                             (session_id, AGENTS_FRAMEWORK, agent_identity)).fetchone()
        if found is None:
            return None
        conn.execute("UPDATE framework_items SET removed_at = ? WHERE session_id = ?"
                     " AND sequence = ?", (now, session_id, found[0]))
        return str(found[1])


def clear_items(conn: Any, session_id: str, agent_identity: str, now: str) -> int:
    """Mark every item of the session not removed yet as removed at ``now`` (the events
    stay), in one transaction; how many were marked."""
    with transaction(conn):
        cursor = conn.execute(
            "UPDATE framework_items SET removed_at = ? WHERE session_id = ? AND framework = ?"
            " AND removed_at IS NULL AND EXISTS (SELECT 1 FROM sessions s"
            " WHERE s.session_id = framework_items.session_id"
            " AND coalesce(s.agent_identity, '') = ?)",
            (now, session_id, AGENTS_FRAMEWORK, agent_identity))
        return int(cursor.rowcount)
