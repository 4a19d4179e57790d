"""PostgreSQL: sessions, conversation events and their chunks (:mod:`core.storage.sqlite.events`'s
operations on an async connection, with the same semantics, shapes and refusals).

What SQLite's single writer gave for free is a lock here. A write locks the rows of the
sessions it touches (``SELECT … FOR UPDATE``, in session order so two batches cannot
deadlock) before it reads their last sequence, so of two writers racing on one session the
second waits, then sees the first's events and refuses a sequence not above them with the
same ``SequenceError``. The content-hash dedup and the context of the next chunks read the
session's rows under that same lock. A chunk's ``fts_rowid`` is an identity column and its
tsvector a generated one: the database fills both.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np

from core.storage import messages as writing
from core.storage.messages import PreparedMessage, WriteOutcome
from core.storage.pg.connection import Conn
from core.storage.rows import memory_record
from core.storage.vocabulary import chunk_scope_token
from core.types import MemoryRecord

# The tables a memory's rows live in, as table_counts reports them (chunks_fts and
# chunks_vec are added: the one is a column of chunks here, the other a plain table).
_COUNTED = ("sessions", "conversation_events", "session_state", "files", "chunks",
            "schedules", "schedule_runs")
_SESSION_TABLES = ("sessions", "conversation_events", "session_state", "files", "chunks")


def vector_text(vector: np.ndarray) -> str:
    """A float32 vector in pgvector's text form (each float32 printed so it reads back
    exactly)."""
    return "[" + ",".join(repr(float(x)) for x in np.asarray(vector, dtype=np.float32)) + "]"


async def session_agents(conn: Conn, session_ids: Sequence[str]) -> dict[str, str]:
    """The agent identity ('' when none) each of these sessions was created under."""
    if not session_ids:
        return {}
    cursor = await conn.execute(
        "SELECT session_id, coalesce(agent_identity, '') FROM sessions"
        " WHERE session_id = ANY(%s)", (list(session_ids),))
    return {str(row[0]): str(row[1]) for row in await cursor.fetchall()}


async def last_sequence(conn: Conn, session_id: str) -> int | None:
    """The highest stored sequence of a session (None when it has no events)."""
    cursor = await conn.execute(
        "SELECT max(sequence) FROM conversation_events WHERE session_id = %s", (session_id,))
    row = await cursor.fetchone()
    return None if row is None or row[0] is None else int(row[0])


async def _last_sequences(conn: Conn, session_ids: list[str]) -> dict[str, int | None]:
    cursor = await conn.execute(
        "SELECT session_id, max(sequence) FROM conversation_events"
        " WHERE session_id = ANY(%s) GROUP BY session_id", (session_ids,))
    found = {str(row[0]): int(row[1]) for row in await cursor.fetchall()}
    return {sid: found.get(sid) for sid in session_ids}


async def previous_texts(conn: Conn, session_id: str, count: int) -> list[str]:
    """The first chunk's text of each of the session's last ``count`` messages, oldest
    first (see :func:`core.storage.sqlite.events.previous_texts`)."""
    if count <= 0:
        return []
    cursor = await conn.execute(
        "SELECT (SELECT chunk_text FROM chunks f WHERE f.session_id = %(sid)s"
        "        AND f.sequence_start = s.sequence_start ORDER BY f.fts_rowid LIMIT 1)"
        " FROM (SELECT DISTINCT sequence_start FROM chunks WHERE session_id = %(sid)s"
        "       ORDER BY sequence_start DESC LIMIT %(count)s) s"
        " ORDER BY s.sequence_start",
        {"sid": session_id, "count": count})
    return [str(row[0]) for row in await cursor.fetchall()]


async def _lock_sessions(conn: Conn, messages: Sequence[PreparedMessage]) -> set[str]:
    """Create the sessions these messages name that do not exist yet, then lock every one
    of them until the transaction ends; the ids this call created."""
    first: dict[str, PreparedMessage] = {}
    for message in messages:
        first.setdefault(message.session_id, message)
    ordered = sorted(first)
    async with conn.cursor() as cursor:
        # Inserted in id order, as they are locked: two batches wait for each other's new
        # sessions in one order, never in a cycle.
        created: set[str] = set()
        for sid in ordered:
            m = first[sid]
            await cursor.execute(
                "INSERT INTO sessions(session_id, agent_identity, created_at, updated_at)"
                " VALUES (%s, %s, %s, %s) ON CONFLICT (session_id) DO NOTHING"
                " RETURNING session_id", (sid, m.agent_identity, m.created_at, m.created_at))
            if await cursor.fetchone() is not None:
                created.add(sid)
        await cursor.execute(
            "SELECT session_id FROM sessions WHERE session_id = ANY(%s)"
            " ORDER BY session_id FOR UPDATE", (ordered,))
        await cursor.fetchall()
    return created


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
    """Store messages in one transaction (oxydra steps 1-4, 8, 9; the tsvector is the
    database's). Same contract as :func:`core.storage.sqlite.events.write_messages`."""
    if not messages:
        return []
    created = await _lock_sessions(conn, messages)
    last_by_session = await _last_sequences(conn, sorted({m.session_id for m in messages}))
    outcomes, accepted = writing.allocate_sequences(messages, last_by_session, all_or_nothing)
    if not accepted:
        return outcomes

    # Step 1, the session rows: made at their earliest accepted message and stamped with
    # the latest.
    touched, spans = writing.session_spans(accepted)
    async with conn.cursor() as cursor:
        await cursor.executemany(
            "UPDATE sessions SET"
            " agent_identity = CASE WHEN %(new)s THEN %(agent)s ELSE agent_identity END,"
            " created_at = CASE WHEN %(new)s THEN %(first)s ELSE created_at END,"
            " updated_at = CASE WHEN %(new)s THEN %(last)s"
            "  ELSE greatest(%(last)s, coalesce(updated_at, '')) END"
            " WHERE session_id = %(sid)s",
            [{"sid": sid, "new": sid in created, "agent": m.agent_identity,
              "first": spans[sid][0], "last": spans[sid][1]} for sid, m in touched.items()])
        # Step 3, the events.
        await cursor.executemany(
            "INSERT INTO conversation_events(session_id, sequence, payload_json, created_at,"
            " role, importance) VALUES (%s, %s, %s, %s, %s, %s)",
            [(m.session_id, seq, m.payload_json, m.created_at, m.role, m.importance)
             for m, seq in accepted])
        # Step 4, last_sequence in session_state (the rest of state_json is kept).
        await cursor.executemany(
            "INSERT INTO session_state(session_id, state_json, updated_at)"
            " VALUES (%(sid)s, json_build_object('last_sequence', %(seq)s::bigint)::text,"
            " %(at)s) ON CONFLICT (session_id) DO UPDATE SET"
            "  state_json = jsonb_set(coalesce(nullif(session_state.state_json, ''), '{}')"
            "::jsonb, '{last_sequence}', to_jsonb(%(seq)s::bigint))::text,"
            "  updated_at = %(at)s",
            [{"sid": sid, "seq": last_by_session[sid], "at": m.created_at}
             for sid, m in touched.items()])

    agents = await session_agents(conn, list(touched))
    writing.check_owners(touched, agents)
    plan = await _write_chunks(conn, messages, accepted, agents, vectors, vector_model,
                               context_messages, context_chars)
    return writing.with_counts(messages, outcomes, plan.counts)


async def _write_chunks(conn: Conn, messages: Sequence[PreparedMessage],
                        accepted: list[tuple[PreparedMessage, int]], agents: dict[str, str],
                        vectors: np.ndarray | None, vector_model: str | None,
                        context_messages: int, context_chars: int) -> writing.ChunkPlan:
    """Steps 8-9: new chunks inserted (with their vectors when given), a content hash
    already stored in the session extending that chunk's sequence_end instead (dedup)."""
    planned = writing.planned_chunks(messages, accepted)
    if not planned:
        return writing.plan_chunks(planned, {})
    cursor = await conn.execute(
        "SELECT chunk_id, sequence_end FROM chunks WHERE chunk_id = ANY(%s)",
        ([p.chunk_id for p in planned],))
    plan = writing.plan_chunks(planned, {str(r[0]): int(r[1]) for r in await cursor.fetchall()})
    tails = await session_tails(conn, writing.sessions_wanting_context(accepted, context_messages),
                                context_messages)
    context_of = writing.contexts(accepted, tails, context_messages, context_chars)
    scope_tokens = {sid: chunk_scope_token(sid, agent) for sid, agent in agents.items()}
    status = "done" if vectors is not None and vector_model is not None else "pending"
    async with conn.cursor() as cur:
        if plan.new:
            # One row at a time in list order: the identity gives fts_rowid in that order.
            await cur.executemany(
                "INSERT INTO chunks(chunk_id, session_id, chunk_text, content_hash,"
                " sequence_start, sequence_end, metadata_json, scope_token, created_at,"
                " embedding_status, context_text)"
                " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                [(new.chunk_id, new.message.session_id, new.chunk.text,
                  new.chunk.content_hash, new.sequence, new.sequence, new.metadata_json,
                  scope_tokens[new.message.session_id], new.message.created_at, status,
                  context_of[id(new.message)]) for new in plan.new])
        if status == "done" and plan.new:
            assert vectors is not None
            await cur.executemany(
                "INSERT INTO chunks_vec(chunk_id, session_id, agent_identity, embedding_blob,"
                " embedding_model) VALUES (%s, %s, %s, %s::vector, %s)",
                [(new.chunk_id, new.message.session_id, agents[new.message.session_id],
                  vector_text(vectors[new.vector_row]), vector_model or "")
                 for new in plan.new])
        if plan.extended:
            await cur.executemany(
                "UPDATE chunks SET sequence_end = greatest(sequence_end, %s)"
                " WHERE chunk_id = %s",
                [(end, chunk_id) for chunk_id, end in plan.extended.items()])
    return plan


async def session_tails(conn: Conn, session_ids: Sequence[str], count: int) -> dict[str, list[str]]:
    """:func:`previous_texts` for several sessions in one hop (the bulk path's contexts)."""
    return {sid: await previous_texts(conn, sid, count) for sid in session_ids}


_EVENT_COLUMNS = "session_id, sequence, payload_json, created_at, importance"


async def read_events(
    conn: Conn, session_id: str, limit: int | None = None, after_sequence: int | None = None
) -> list[MemoryRecord]:
    """A session's events oldest first; with ``limit``, the most recent ``limit`` of them."""
    floor = after_sequence if after_sequence is not None else -(2**62)
    if limit is None:
        cursor = await conn.execute(
            f"SELECT {_EVENT_COLUMNS} FROM conversation_events"
            " WHERE session_id = %s AND sequence > %s ORDER BY sequence", (session_id, floor))
        return [memory_record(row) for row in await cursor.fetchall()]
    cursor = await conn.execute(
        f"SELECT {_EVENT_COLUMNS} FROM conversation_events"
        " WHERE session_id = %s AND sequence > %s ORDER BY sequence DESC LIMIT %s",
        (session_id, floor, max(0, limit)))
    rows = await cursor.fetchall()
    rows.reverse()
    return [memory_record(row) for row in rows]


async def list_sessions(
    conn: Conn, agent_identity: str | None = None, limit: int | None = None, offset: int = 0
) -> list[dict[str, Any]]:
    """Sessions by most recent activity, with event and chunk counts."""
    where = ""
    params: list[Any] = []
    if agent_identity is not None:
        where, params = "WHERE s.agent_identity = %s", [agent_identity]
    params += [limit, offset]
    cursor = await conn.execute(
        "SELECT s.session_id, s.agent_identity, s.created_at, s.updated_at,"
        " (SELECT count(*) FROM conversation_events e WHERE e.session_id = s.session_id),"
        " (SELECT count(*) FROM chunks c WHERE c.session_id = s.session_id),"
        " (SELECT max(sequence) FROM conversation_events e WHERE e.session_id = s.session_id)"
        f" FROM sessions s {where} ORDER BY s.updated_at DESC, s.session_id"
        " LIMIT %s OFFSET %s", params)
    return [
        {"session_id": r[0], "agent_identity": r[1], "created_at": str(r[2]),
         "updated_at": str(r[3]), "event_count": int(r[4]), "chunk_count": int(r[5]),
         "last_sequence": None if r[6] is None else int(r[6])}
        for r in await cursor.fetchall()
    ]


async def delete_session(conn: Conn, session_id: str) -> bool:
    """Delete a session; foreign keys remove every dependent row (vectors with their
    chunks)."""
    cursor = await conn.execute("DELETE FROM sessions WHERE session_id = %s", (session_id,))
    return cursor.rowcount > 0


async def read_session_state(conn: Conn, session_id: str) -> dict[str, Any] | None:
    """The session's ``state_json`` as a dict (None when the session has no state row)."""
    cursor = await conn.execute(
        "SELECT state_json FROM session_state WHERE session_id = %s", (session_id,))
    row = await cursor.fetchone()
    return None if row is None else dict(json.loads(row[0]))


async def _count(conn: Conn, sql: str, params: Sequence[Any] = ()) -> int:
    cursor = await conn.execute(sql, params)
    row = await cursor.fetchone()
    return 0 if row is None else int(row[0])


async def table_counts(conn: Conn) -> dict[str, int]:
    """Row counts of the main tables, for doctor and for tests that check cascades."""
    counts = {t: await _count(conn, f"SELECT count(*) FROM {t}") for t in _COUNTED}
    # A chunk's full-text row is its generated tsvector column.
    counts["chunks_fts"] = await _count(conn, "SELECT count(*) FROM chunks WHERE fts IS NOT NULL")
    counts["chunks_vec"] = await _count(conn, "SELECT count(*) FROM chunks_vec")
    return counts


async def session_row_counts(conn: Conn, session_id: str) -> dict[str, int]:
    """Rows one session owns in every table, for verifying that forget removed them all."""
    counts = {table: await _count(conn, f"SELECT count(*) FROM {table} WHERE session_id = %s",
                                  (session_id,))
              for table in _SESSION_TABLES}
    counts["chunks_fts"] = await _count(
        conn, "SELECT count(*) FROM chunks WHERE session_id = %s AND fts IS NOT NULL",
        (session_id,))
    counts["chunks_vec"] = await _count(
        conn, "SELECT count(*) FROM chunks_vec WHERE session_id = %s", (session_id,))
    return counts


async def salient_events(conn: Conn, session_id: str, threshold: float) -> list[MemoryRecord]:
    """Events of a session with importance at or above ``threshold`` (aidaemon salience)."""
    cursor = await conn.execute(
        f"SELECT {_EVENT_COLUMNS} FROM conversation_events"
        " WHERE session_id = %s AND importance >= %s ORDER BY sequence",
        (session_id, threshold))
    return [memory_record(row) for row in await cursor.fetchall()]


# The invariants foreign keys and constraints do not hold by themselves, each a query that
# counts the rows breaking it, and what a broken one means.
_INVARIANTS = (
    ("SELECT count(*) FROM chunks_vec v JOIN chunks c ON c.chunk_id = v.chunk_id"
     " WHERE v.session_id <> c.session_id",
     "vectors filed under another session than their chunk's"),
    ("SELECT count(*) FROM chunks_vec v JOIN chunks c ON c.chunk_id = v.chunk_id"
     " JOIN sessions s ON s.session_id = c.session_id"
     " WHERE v.agent_identity <> coalesce(s.agent_identity, '')",
     "vectors filed under another agent than their session's"),
    ("SELECT count(*) FROM chunks c WHERE c.embedding_status = 'done'"
     " AND NOT EXISTS (SELECT 1 FROM chunks_vec v WHERE v.chunk_id = c.chunk_id)",
     "chunks marked embedded without a vector"),
    ("SELECT count(*) FROM chunks c WHERE c.sequence_end < c.sequence_start",
     "chunks whose sequence range is reversed"),
    ("SELECT count(*) FROM session_state t WHERE (SELECT max(sequence)"
     " FROM conversation_events e WHERE e.session_id = t.session_id)"
     " > coalesce((t.state_json::jsonb ->> 'last_sequence')::bigint, -1)",
     "sessions whose last_sequence is behind their events"),
)


async def integrity_problems(conn: Conn) -> list[str]:
    """The invariants the schema does not enforce by itself, each broken one described;
    ``["ok"]`` when every one holds (what SQLite's integrity check returns when sound)."""
    problems = []
    for sql, meaning in _INVARIANTS:
        broken = await _count(conn, sql)
        if broken:
            problems.append(f"{broken} {meaning}")
    return problems or ["ok"]
