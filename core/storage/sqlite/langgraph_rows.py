"""SQLite: LangGraph's checkpoints, pending writes and the messages they carry.

Every function takes a connection and runs on its lane's thread; each write is one
transaction (a savepoint when the caller holds one). A thread is a session of the saver's
agent namespace: a write makes the session when it is new and refuses, with
``OutOfNamespace``, one another agent made; a read finds only its namespace's threads. The
messages of a checkpoint are stored through :func:`core.storage.sqlite.events.write_messages` in
the checkpoint's own transaction, so a checkpoint is never stored without its messages.
Only ``framework_items`` rows of framework ``langgraph`` are read or changed here.
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
from core.storage.sqlite import events
from core.storage.sqlite.connection import select_in, transaction

_CHECKPOINT_COLUMNS = ("session_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id,"
                       " checkpoint_type, checkpoint, metadata_json, created_at")
_WRITE_COLUMNS = ("session_id, checkpoint_ns, checkpoint_id, task_id, task_path, idx,"
                  " channel, value_type, value")
_IN_NAMESPACE = ("EXISTS (SELECT 1 FROM sessions s WHERE s.session_id = c.session_id"
                 " AND coalesce(s.agent_identity, '') = ?)")


def ensure_session(conn: Any, session_id: str, agent_identity: str, created_at: str) -> None:
    """Make the thread's session when it is new; ``OutOfNamespace`` when another agent's."""
    conn.execute("INSERT INTO sessions(session_id, agent_identity, created_at, updated_at)"
                 " VALUES (?, ?, ?, ?) ON CONFLICT(session_id) DO NOTHING",
                 (session_id, agent_identity, created_at, created_at))
    owner = conn.execute("SELECT coalesce(agent_identity, '') FROM sessions"
                         " WHERE session_id = ?", (session_id,)).fetchone()[0]
    if owner != agent_identity:
        raise OutOfNamespace(out_of_namespace(session_id, agent_identity))


def put_checkpoint(conn: Any, put: CheckpointPut) -> list[int]:
    """Store a checkpoint, the messages of it the session does not hold yet (as its next
    events) and the removal marks, in one transaction; the new events' sequences."""
    row = put.row
    with transaction(conn):
        ensure_session(conn, row.session_id, put.agent_identity, row.created_at)
        conn.execute(f"INSERT OR REPLACE INTO langgraph_checkpoints({_CHECKPOINT_COLUMNS})"
                     " VALUES (?, ?, ?, ?, ?, ?, ?, ?)", _checkpoint_values(row))
        if put.message_keys is None:
            return []
        keys = list(put.message_keys)
        # Every item of the thread in one index range (cheaper than asking for each key),
        # with its mark: only the held-again ones that were marked are unmarked below.
        stored = dict(conn.execute(
            "SELECT item_key, removed_at FROM framework_items WHERE session_id = ?"
            " AND framework = ?", (row.session_id, FRAMEWORK)).fetchall())
        held = stored.keys() & set(keys)
        missing = _missing_positions(keys, held)
        sequences: list[int] = []
        if missing:
            assert put.prepare is not None
            prepared = put.prepare(missing)
            sequences = _write_events(conn, prepared, put)
            conn.executemany(
                "INSERT INTO framework_items(session_id, sequence, framework, item_key)"
                " VALUES (?, ?, ?, ?)",
                [(row.session_id, sequence, FRAMEWORK, keys[position])
                 for position, sequence in zip(missing, sequences, strict=True)])
        _mark(conn, row.session_id, [key for key in held if stored[key] is not None], None)
        _mark(conn, row.session_id, [key for key in put.removed_keys
                                     if key in stored and stored[key] is None], put.now)
        return sequences


def _missing_positions(keys: Sequence[str], held: set[str]) -> list[int]:
    """Positions of the keys not held, each key's first only."""
    seen = set(held)
    missing = []
    for position, key in enumerate(keys):
        if key not in seen:
            seen.add(key)
            missing.append(position)
    return missing


def _write_events(conn: Any, prepared: Sequence[PreparedMessage], put: CheckpointPut,
                  ) -> list[int]:
    outcomes = events.write_messages(conn, prepared, True, context_messages=put.context_messages,
                                     context_chars=put.context_chars)
    return [int(outcome.sequence) for outcome in outcomes if outcome.sequence is not None]


def _mark(conn: Any, session_id: str, keys: list[str], removed_at: str | None) -> None:
    """Mark these items removed at ``removed_at`` (None: held again, unmarked)."""
    if not keys:
        return
    condition = "removed_at IS NOT NULL" if removed_at is None else "removed_at IS NULL"
    for start in range(0, len(keys), 500):
        part = keys[start:start + 500]
        conn.execute(f"UPDATE framework_items SET removed_at = ? WHERE session_id = ?"
                     f" AND framework = ? AND {condition}"
                     f" AND item_key IN ({','.join('?' * len(part))})",
                     [removed_at, session_id, FRAMEWORK, *part])


def put_writes(conn: Any, session_id: str, agent_identity: str, now: str,
               rows: Sequence[WriteRow], replace: bool) -> None:
    """Store a task's pending writes in one transaction: replacing those already stored at
    the same (task, index) when ``replace`` (special writes: errors, interrupts), else
    keeping the first."""
    with transaction(conn):
        ensure_session(conn, session_id, agent_identity, now)
        verb = "INSERT OR REPLACE" if replace else "INSERT OR IGNORE"
        conn.executemany(f"{verb} INTO langgraph_writes({_WRITE_COLUMNS})"
                         " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                         [_write_values(row) for row in rows])


def get_checkpoint(conn: Any, agent_identity: str, session_id: str, checkpoint_ns: str,
                   checkpoint_id: str | None) -> StoredCheckpoint | None:
    """The checkpoint (the thread namespace's latest when ``checkpoint_id`` is None) with
    its pending writes, read in one snapshot."""
    with read_snapshot(conn):
        where = "c.session_id = ? AND c.checkpoint_ns = ?"
        params: list[Any] = [session_id, checkpoint_ns]
        if checkpoint_id is not None:
            where += " AND c.checkpoint_id = ?"
            params.append(checkpoint_id)
        found = conn.execute(
            f"SELECT {_prefixed(_CHECKPOINT_COLUMNS)} FROM langgraph_checkpoints c"
            f" WHERE {where} AND {_IN_NAMESPACE} ORDER BY c.checkpoint_id DESC LIMIT 1",
            [*params, agent_identity]).fetchone()
        if found is None:
            return None
        row = checkpoint_row(found)
        return StoredCheckpoint(row, _writes_of(conn, row))


def list_checkpoints(conn: Any, query: CheckpointQuery) -> list[StoredCheckpoint]:
    """The checkpoints ``query`` names, newest first, each with its pending writes, read
    in one snapshot."""
    wheres = [_IN_NAMESPACE]
    params: list[Any] = [query.agent_identity]
    for column, value in (("session_id", query.session_id),
                          ("checkpoint_ns", query.checkpoint_ns),
                          ("checkpoint_id", query.checkpoint_id)):
        if value is not None:
            wheres.append(f"c.{column} = ?")
            params.append(value)
    if query.before_id is not None:
        wheres.append("c.checkpoint_id < ?")
        params.append(query.before_id)
    sql = (f"SELECT {_prefixed(_CHECKPOINT_COLUMNS)} FROM langgraph_checkpoints c"
           f" WHERE {' AND '.join(wheres)} ORDER BY c.checkpoint_id DESC")
    if query.limit is not None and not query.metadata_filter:
        sql += " LIMIT ?"
        params.append(max(0, query.limit))
    found: list[StoredCheckpoint] = []
    with read_snapshot(conn):
        for values in conn.execute(sql, params):
            row = checkpoint_row(values)
            if not metadata_matches(row.metadata_json, query.metadata_filter):
                continue
            found.append(StoredCheckpoint(row, []))
            if query.limit is not None and len(found) >= query.limit:
                break
        return [StoredCheckpoint(item.row, _writes_of(conn, item.row)) for item in found]


def delete_for_runs(conn: Any, agent_identity: str, run_ids: Sequence[str]) -> int:
    """Delete the namespace's checkpoints made by these runs (their metadata's ``run_id``)
    and their pending writes, in one transaction; how many checkpoints went."""
    if not run_ids:
        return 0
    with transaction(conn):
        doomed = select_in(
            conn, "SELECT c.session_id, c.checkpoint_ns, c.checkpoint_id"
                  " FROM langgraph_checkpoints c WHERE " + _IN_NAMESPACE
                  + " AND json_extract(c.metadata_json, '$.run_id') IN",
            list(run_ids), (agent_identity,))
        _delete_checkpoints(conn, doomed)
        return len(doomed)


def prune(conn: Any, agent_identity: str, session_ids: Sequence[str], keep_latest: bool) -> int:
    """Delete these threads' checkpoints and their writes, all of them or all but each
    checkpoint namespace's latest, in one transaction (the sessions and their events stay);
    how many checkpoints went."""
    if not session_ids:
        return 0
    with transaction(conn):
        doomed = select_in(
            conn, "SELECT c.session_id, c.checkpoint_ns, c.checkpoint_id"
                  " FROM langgraph_checkpoints c WHERE " + _IN_NAMESPACE
                  + (" AND c.checkpoint_id < (SELECT max(l.checkpoint_id)"
                     " FROM langgraph_checkpoints l WHERE l.session_id = c.session_id"
                     " AND l.checkpoint_ns = c.checkpoint_ns)" if keep_latest else "")
                  + " AND c.session_id IN", list(session_ids), (agent_identity,))
        _delete_checkpoints(conn, doomed)
        if not keep_latest:  # writes left under no checkpoint go too
            conn.executemany("DELETE FROM langgraph_writes WHERE session_id = ?",
                             [(sid,) for sid in session_ids if _owned(conn, sid, agent_identity)])
        return len(doomed)


def _owned(conn: Any, session_id: str, agent_identity: str) -> bool:
    return conn.execute("SELECT 1 FROM sessions WHERE session_id = ?"
                        " AND coalesce(agent_identity, '') = ?",
                        (session_id, agent_identity)).fetchone() is not None


def _delete_checkpoints(conn: Any, keys: Sequence[tuple[str, str, str]]) -> None:
    for table in ("langgraph_checkpoints", "langgraph_writes"):
        conn.executemany(f"DELETE FROM {table} WHERE session_id = ? AND checkpoint_ns = ?"
                         " AND checkpoint_id = ?", [tuple(key) for key in keys])


def thread_items(conn: Any, agent_identity: str, session_id: str) -> list[StoredItem]:
    """The thread's LangGraph items with their events, in sequence order (none for another
    namespace's thread)."""
    rows = conn.execute(
        "SELECT f.item_key, f.sequence, f.removed_at, e.payload_json, e.created_at"
        " FROM framework_items f JOIN conversation_events e"
        "  ON e.session_id = f.session_id AND e.sequence = f.sequence"
        " JOIN sessions s ON s.session_id = f.session_id"
        " WHERE f.session_id = ? AND f.framework = ? AND coalesce(s.agent_identity, '') = ?"
        " ORDER BY f.sequence", (session_id, FRAMEWORK, agent_identity)).fetchall()
    return [StoredItem(r[0], int(r[1]), r[2], r[3], r[4]) for r in rows]


def copy_thread(conn: Any, agent_identity: str, source_id: str, target_id: str, now: str,
                items: Sequence[tuple[StoredItem, PreparedMessage]],
                context_messages: int, context_chars: int) -> None:
    """Copy a thread's checkpoints and writes to another thread of the namespace, and the
    messages read from it (``items``, prepared for the target) as the target's events the
    target does not hold yet, in one transaction."""
    with transaction(conn):
        if not _owned(conn, source_id, agent_identity):
            return
        ensure_session(conn, target_id, agent_identity, now)
        conn.execute(f"INSERT OR IGNORE INTO langgraph_checkpoints({_CHECKPOINT_COLUMNS})"
                     f" SELECT ?, {_CHECKPOINT_COLUMNS.split(', ', 1)[1]}"
                     " FROM langgraph_checkpoints WHERE session_id = ?", (target_id, source_id))
        conn.execute(f"INSERT OR IGNORE INTO langgraph_writes({_WRITE_COLUMNS})"
                     f" SELECT ?, {_WRITE_COLUMNS.split(', ', 1)[1]}"
                     " FROM langgraph_writes WHERE session_id = ?", (target_id, source_id))
        held = {key for (key,) in select_in(
            conn, "SELECT item_key FROM framework_items WHERE session_id = ? AND framework = ?"
                  " AND item_key IN", [item.item_key for item, _ in items],
            (target_id, FRAMEWORK))}
        fresh = [(item, prepared) for item, prepared in items if item.item_key not in held]
        if not fresh:
            return
        outcomes = events.write_messages(conn, [prepared for _, prepared in fresh], True,
                                         context_messages=context_messages,
                                         context_chars=context_chars)
        conn.executemany(
            "INSERT INTO framework_items(session_id, sequence, framework, item_key, removed_at)"
            " VALUES (?, ?, ?, ?, ?)",
            [(target_id, outcome.sequence, FRAMEWORK, item.item_key, item.removed_at)
             for (item, _), outcome in zip(fresh, outcomes, strict=True)])


def removed_sequences(conn: Any, session_id: str) -> list[int]:
    """The sequences of the session's events whose framework item was removed (by any
    framework: a LangGraph RemoveMessage, an Agents SDK pop_item)."""
    return [int(row[0]) for row in conn.execute(
        "SELECT sequence FROM framework_items WHERE session_id = ? AND removed_at IS NOT NULL"
        " ORDER BY sequence", (session_id,)).fetchall()]


def _writes_of(conn: Any, row: CheckpointRow) -> list[WriteRow]:
    """A checkpoint's pending writes in LangGraph's order (task path, task id, index)."""
    found = conn.execute(
        f"SELECT {_WRITE_COLUMNS} FROM langgraph_writes WHERE session_id = ?"
        " AND checkpoint_ns = ? AND checkpoint_id = ? ORDER BY task_path, task_id, idx",
        (row.session_id, row.checkpoint_ns, row.checkpoint_id)).fetchall()
    return [write_row(values) for values in found]


def _checkpoint_values(row: CheckpointRow) -> tuple[Any, ...]:
    return (row.session_id, row.checkpoint_ns, row.checkpoint_id, row.parent_checkpoint_id,
            row.checkpoint_type, row.checkpoint, row.metadata_json, row.created_at)


def _write_values(row: WriteRow) -> tuple[Any, ...]:
    return (row.session_id, row.checkpoint_ns, row.checkpoint_id, row.task_id, row.task_path,
            row.idx, row.channel, row.value_type, row.value)


def _prefixed(columns: str) -> str:
    return ", ".join(f"c.{column}" for column in columns.split(", "))


class read_snapshot:  # noqa: N801  (a context manager named as the statement it wraps)
    """Several SELECTs in one read transaction, so they see one snapshot (WAL readers see
    the database as of their transaction's first read)."""

    def __init__(self, conn: Any) -> None:
        self._conn = conn
        self._began = False

    def __enter__(self) -> None:
        if not self._conn.in_transaction:
            self._conn.execute("BEGIN")
            self._began = True

    def __exit__(self, *exc: object) -> None:
        if self._began:
            self._conn.execute("COMMIT")


