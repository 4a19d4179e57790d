"""PostgreSQL: LangGraph's checkpoints, pending writes and the messages they carry
(:mod:`core.storage.sqlite.langgraph_rows`'s operations on an async connection, with the same
semantics and refusals).

What SQLite's single writer gave for free is a lock here: a write locks the thread's
session row (``FOR UPDATE``) before it reads which messages the session holds, so of two
writers putting checkpoints of one thread the second waits, then sees the first's messages
and stores none of them twice.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from core.errors import OutOfNamespace
from core.storage.langgraph_types import (
    FRAMEWORK,
    CheckpointPut,
    CheckpointQuery,
    CheckpointRow,
    StoredCheckpoint,
    StoredItem,
    WriteRow,
    checkpoint_row,
    metadata_matches,
    write_row,
)
from core.storage.messages import PreparedMessage, out_of_namespace
from core.storage.pg import events
from core.storage.pg.connection import Conn

_CHECKPOINT_COLUMNS = ("session_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id,"
                       " checkpoint_type, checkpoint, metadata_json, created_at")
_WRITE_COLUMNS = ("session_id, checkpoint_ns, checkpoint_id, task_id, task_path, idx,"
                  " channel, value_type, value")
_IN_NAMESPACE = ("EXISTS (SELECT 1 FROM sessions s WHERE s.session_id = c.session_id"
                 " AND coalesce(s.agent_identity, '') = %s)")


async def ensure_session(conn: Conn, session_id: str, agent_identity: str,
                         created_at: str) -> None:
    """Make the thread's session when it is new and lock it until the transaction ends;
    ``OutOfNamespace`` when another agent's."""
    await conn.execute("INSERT INTO sessions(session_id, agent_identity, created_at, updated_at)"
                       " VALUES (%s, %s, %s, %s) ON CONFLICT (session_id) DO NOTHING",
                       (session_id, agent_identity, created_at, created_at))
    cursor = await conn.execute("SELECT coalesce(agent_identity, '') FROM sessions"
                                " WHERE session_id = %s FOR UPDATE", (session_id,))
    row = await cursor.fetchone()
    if row is None or row[0] != agent_identity:
        raise OutOfNamespace(out_of_namespace(session_id, agent_identity))


async def put_checkpoint(conn: Conn, put: CheckpointPut) -> list[int]:
    """Store a checkpoint, the messages of it the session does not hold yet (as its next
    events) and the removal marks, in the caller's transaction; the new events' sequences."""
    row = put.row
    await ensure_session(conn, row.session_id, put.agent_identity, row.created_at)
    await conn.execute(
        f"INSERT INTO langgraph_checkpoints({_CHECKPOINT_COLUMNS})"
        " VALUES (%s, %s, %s, %s, %s, %s, %s, %s)"
        " ON CONFLICT (session_id, checkpoint_ns, checkpoint_id) DO UPDATE SET"
        " parent_checkpoint_id = excluded.parent_checkpoint_id,"
        " checkpoint_type = excluded.checkpoint_type, checkpoint = excluded.checkpoint,"
        " metadata_json = excluded.metadata_json, created_at = excluded.created_at",
        _checkpoint_values(row))
    if put.message_keys is None:
        return []
    keys = list(put.message_keys)
    cursor = await conn.execute(
        "SELECT item_key, removed_at FROM framework_items WHERE session_id = %s"
        " AND framework = %s", (row.session_id, FRAMEWORK))
    stored = {str(found[0]): found[1] for found in await cursor.fetchall()}
    held = stored.keys() & set(keys)
    missing = _missing_positions(keys, held)
    sequences: list[int] = []
    if missing:
        assert put.prepare is not None
        outcomes = await events.write_messages(
            conn, put.prepare(missing), True, context_messages=put.context_messages,
            context_chars=put.context_chars)
        sequences = [int(outcome.sequence) for outcome in outcomes
                     if outcome.sequence is not None]
        async with conn.cursor() as many:
            await many.executemany(
                "INSERT INTO framework_items(session_id, sequence, framework, item_key)"
                " VALUES (%s, %s, %s, %s)",
                [(row.session_id, sequence, FRAMEWORK, keys[position])
                 for position, sequence in zip(missing, sequences, strict=True)])
    await _mark(conn, row.session_id, [key for key in held if stored[key] is not None], None)
    await _mark(conn, row.session_id, [key for key in put.removed_keys
                                       if key in stored and stored[key] is None], put.now)
    return sequences


def _missing_positions(keys: Sequence[str], held: set[str]) -> list[int]:
    seen = set(held)
    missing = []
    for position, key in enumerate(keys):
        if key not in seen:
            seen.add(key)
            missing.append(position)
    return missing


async def _mark(conn: Conn, session_id: str, keys: list[str], removed_at: str | None) -> None:
    if not keys:
        return
    condition = "removed_at IS NOT NULL" if removed_at is None else "removed_at IS NULL"
    await conn.execute(f"UPDATE framework_items SET removed_at = %s WHERE session_id = %s"
                       f" AND framework = %s AND {condition} AND item_key = ANY(%s)",
                       (removed_at, session_id, FRAMEWORK, keys))


async def put_writes(conn: Conn, session_id: str, agent_identity: str, now: str,
                     rows: Sequence[WriteRow], replace: bool) -> None:
    """Store a task's pending writes in the caller's transaction (see the SQLite side)."""
    await ensure_session(conn, session_id, agent_identity, now)
    conflict = ("DO UPDATE SET task_path = excluded.task_path, channel = excluded.channel,"
                " value_type = excluded.value_type, value = excluded.value"
                if replace else "DO NOTHING")
    async with conn.cursor() as cursor:
        await cursor.executemany(
            f"INSERT INTO langgraph_writes({_WRITE_COLUMNS})"
            " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)"
            f" ON CONFLICT (session_id, checkpoint_ns, checkpoint_id, task_id, idx) {conflict}",
            [_write_values(row) for row in rows])


async def get_checkpoint(conn: Conn, agent_identity: str, session_id: str, checkpoint_ns: str,
                         checkpoint_id: str | None) -> StoredCheckpoint | None:
    """The checkpoint (the latest when ``checkpoint_id`` is None) with its pending writes."""
    where = "c.session_id = %s AND c.checkpoint_ns = %s"
    params: list[Any] = [session_id, checkpoint_ns]
    if checkpoint_id is not None:
        where += " AND c.checkpoint_id = %s"
        params.append(checkpoint_id)
    cursor = await conn.execute(
        f"SELECT {_prefixed(_CHECKPOINT_COLUMNS)} FROM langgraph_checkpoints c"
        f" WHERE {where} AND {_IN_NAMESPACE} ORDER BY c.checkpoint_id DESC LIMIT 1",
        [*params, agent_identity])
    found = await cursor.fetchone()
    if found is None:
        return None
    row = checkpoint_row(found)
    return StoredCheckpoint(row, await _writes_of(conn, row))


async def list_checkpoints(conn: Conn, query: CheckpointQuery) -> list[StoredCheckpoint]:
    """The checkpoints ``query`` names, newest first, each with its pending writes."""
    wheres = [_IN_NAMESPACE]
    params: list[Any] = [query.agent_identity]
    for column, value in (("session_id", query.session_id),
                          ("checkpoint_ns", query.checkpoint_ns),
                          ("checkpoint_id", query.checkpoint_id)):
        if value is not None:
            wheres.append(f"c.{column} = %s")
            params.append(value)
    if query.before_id is not None:
        wheres.append("c.checkpoint_id < %s")
        params.append(query.before_id)
    sql = (f"SELECT {_prefixed(_CHECKPOINT_COLUMNS)} FROM langgraph_checkpoints c"
           f" WHERE {' AND '.join(wheres)} ORDER BY c.checkpoint_id DESC")
    if query.limit is not None and not query.metadata_filter:
        sql += " LIMIT %s"
        params.append(max(0, query.limit))
    cursor = await conn.execute(sql, params)
    found: list[StoredCheckpoint] = []
    for values in await cursor.fetchall():
        row = checkpoint_row(values)
        if not metadata_matches(row.metadata_json, query.metadata_filter):
            continue
        found.append(StoredCheckpoint(row, await _writes_of(conn, row)))
        if query.limit is not None and len(found) >= query.limit:
            break
    return found


async def delete_for_runs(conn: Conn, agent_identity: str, run_ids: Sequence[str]) -> int:
    """Delete the namespace's checkpoints made by these runs and their pending writes."""
    if not run_ids:
        return 0
    cursor = await conn.execute(
        "SELECT c.session_id, c.checkpoint_ns, c.checkpoint_id FROM langgraph_checkpoints c"
        f" WHERE {_IN_NAMESPACE} AND (c.metadata_json::jsonb ->> 'run_id') = ANY(%s)",
        (agent_identity, list(run_ids)))
    doomed = [tuple(row) for row in await cursor.fetchall()]
    await _delete_checkpoints(conn, doomed)
    return len(doomed)


async def prune(conn: Conn, agent_identity: str, session_ids: Sequence[str],
                keep_latest: bool) -> int:
    """Delete these threads' checkpoints and writes, all or all but each checkpoint
    namespace's latest (the sessions and their events stay)."""
    if not session_ids:
        return 0
    latest = (" AND c.checkpoint_id < (SELECT max(l.checkpoint_id)"
              " FROM langgraph_checkpoints l WHERE l.session_id = c.session_id"
              " AND l.checkpoint_ns = c.checkpoint_ns)" if keep_latest else "")
    cursor = await conn.execute(
        "SELECT c.session_id, c.checkpoint_ns, c.checkpoint_id FROM langgraph_checkpoints c"
        f" WHERE {_IN_NAMESPACE}{latest} AND c.session_id = ANY(%s)",
        (agent_identity, list(session_ids)))
    doomed = [tuple(row) for row in await cursor.fetchall()]
    await _delete_checkpoints(conn, doomed)
    if not keep_latest:
        await conn.execute(
            "DELETE FROM langgraph_writes w WHERE w.session_id = ANY(%s) AND EXISTS (SELECT 1"
            " FROM sessions s WHERE s.session_id = w.session_id"
            " AND coalesce(s.agent_identity, '') = %s)", (list(session_ids), agent_identity))
    return len(doomed)


async def _delete_checkpoints(conn: Conn, keys: Sequence[tuple[Any, ...]]) -> None:
    if not keys:
        return
    async with conn.cursor() as cursor:
        for table in ("langgraph_checkpoints", "langgraph_writes"):
            await cursor.executemany(
                f"DELETE FROM {table} WHERE session_id = %s AND checkpoint_ns = %s"
                " AND checkpoint_id = %s", list(keys))


async def thread_items(conn: Conn, agent_identity: str, session_id: str) -> list[StoredItem]:
    """The thread's LangGraph items with their events, in sequence order."""
    cursor = await conn.execute(
        "SELECT f.item_key, f.sequence, f.removed_at, e.payload_json, e.created_at"
        " FROM framework_items f JOIN conversation_events e"
        "  ON e.session_id = f.session_id AND e.sequence = f.sequence"
        " JOIN sessions s ON s.session_id = f.session_id"
        " WHERE f.session_id = %s AND f.framework = %s AND coalesce(s.agent_identity, '') = %s"
        " ORDER BY f.sequence", (session_id, FRAMEWORK, agent_identity))
    return [StoredItem(str(r[0]), int(r[1]), r[2], str(r[3]), str(r[4]))
            for r in await cursor.fetchall()]


async def copy_thread(conn: Conn, agent_identity: str, source_id: str, target_id: str,
                      now: str, items: Sequence[tuple[StoredItem, PreparedMessage]],
                      context_messages: int, context_chars: int) -> None:
    """Copy a thread's checkpoints, writes and messages to another thread of the namespace
    (see the SQLite side)."""
    cursor = await conn.execute("SELECT 1 FROM sessions WHERE session_id = %s"
                                " AND coalesce(agent_identity, '') = %s",
                                (source_id, agent_identity))
    if await cursor.fetchone() is None:
        return
    await ensure_session(conn, target_id, agent_identity, now)
    rest_checkpoint = _CHECKPOINT_COLUMNS.split(", ", 1)[1]
    rest_write = _WRITE_COLUMNS.split(", ", 1)[1]
    await conn.execute(f"INSERT INTO langgraph_checkpoints({_CHECKPOINT_COLUMNS})"
                       f" SELECT %s, {rest_checkpoint} FROM langgraph_checkpoints"
                       " WHERE session_id = %s ON CONFLICT DO NOTHING", (target_id, source_id))
    await conn.execute(f"INSERT INTO langgraph_writes({_WRITE_COLUMNS})"
                       f" SELECT %s, {rest_write} FROM langgraph_writes"
                       " WHERE session_id = %s ON CONFLICT DO NOTHING", (target_id, source_id))
    cursor = await conn.execute(
        "SELECT item_key FROM framework_items WHERE session_id = %s AND framework = %s",
        (target_id, FRAMEWORK))
    held = {str(row[0]) for row in await cursor.fetchall()}
    fresh = [(item, prepared) for item, prepared in items if item.item_key not in held]
    if not fresh:
        return
    outcomes = await events.write_messages(conn, [prepared for _, prepared in fresh], True,
                                           context_messages=context_messages,
                                           context_chars=context_chars)
    async with conn.cursor() as many:
        await many.executemany(
            "INSERT INTO framework_items(session_id, sequence, framework, item_key, removed_at)"
            " VALUES (%s, %s, %s, %s, %s)",
            [(target_id, outcome.sequence, FRAMEWORK, item.item_key, item.removed_at)
             for (item, _), outcome in zip(fresh, outcomes, strict=True)])


async def removed_sequences(conn: Conn, session_id: str) -> list[int]:
    """The sequences of the session's events whose framework item was removed."""
    cursor = await conn.execute(
        "SELECT sequence FROM framework_items WHERE session_id = %s AND removed_at IS NOT NULL"
        " ORDER BY sequence", (session_id,))
    return [int(row[0]) for row in await cursor.fetchall()]


async def _writes_of(conn: Conn, row: CheckpointRow) -> list[WriteRow]:
    cursor = await conn.execute(
        f"SELECT {_WRITE_COLUMNS} FROM langgraph_writes WHERE session_id = %s"
        " AND checkpoint_ns = %s AND checkpoint_id = %s ORDER BY task_path, task_id, idx",
        (row.session_id, row.checkpoint_ns, row.checkpoint_id))
    return [write_row(values) for values in await cursor.fetchall()]


def _checkpoint(values: Sequence[Any]) -> CheckpointRow:
    return checkpoint_row(values)


def _checkpoint_values(row: CheckpointRow) -> tuple[Any, ...]:
    return (row.session_id, row.checkpoint_ns, row.checkpoint_id, row.parent_checkpoint_id,
            row.checkpoint_type, row.checkpoint, row.metadata_json, row.created_at)


def _write_values(row: WriteRow) -> tuple[Any, ...]:
    return (row.session_id, row.checkpoint_ns, row.checkpoint_id, row.task_id, row.task_path,
            row.idx, row.channel, row.value_type, row.value)


def _prefixed(columns: str) -> str:
    return ", ".join(f"c.{column}" for column in columns.split(", "))
