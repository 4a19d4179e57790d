"""SQL for sessions, conversation events and their chunks (oxydra storage pipeline).

Functions here take a connection and run on its lane's thread. The write path turns
already-validated, already-chunked messages into rows in one transaction: session upsert,
monotonic check, event, ``last_sequence``, chunks with content-hash dedup and their FTS
rows, as :mod:`core.storage.messages` decides them (for PostgreSQL too). Vectors come later,
from the embedding worker, unless the bulk path brought them along.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np

from core.storage.fts_rows import FTS_COLUMNS, fts_rows
from core.storage.messages import (
    PreparedMessage,
    WriteOutcome,
    allocate_sequences,
    check_owners,
    contexts,
    plan_chunks,
    planned_chunks,
    session_spans,
    sessions_wanting_context,
    with_counts,
)
from core.storage.rows import memory_record
from core.storage.sqlite.connection import select_in, transaction
from core.storage.vocabulary import chunk_scope_token, scope_token_for
from core.types import MemoryRecord


def session_agents(conn: Any, session_ids: Sequence[str]) -> dict[str, str]:
    """The agent identity ('' when none) each of these sessions was created under."""
    return dict(select_in(conn, "SELECT session_id, coalesce(agent_identity, '') FROM sessions"
                                " WHERE session_id IN", session_ids))


def last_sequence(conn: Any, session_id: str) -> int | None:
    """The highest stored sequence of a session (None when it has no events)."""
    row = conn.execute(
        "SELECT max(sequence) FROM conversation_events WHERE session_id = ?", (session_id,)
    ).fetchone()
    return None if row[0] is None else int(row[0])


def previous_texts(conn: Any, session_id: str, count: int) -> list[str]:
    """The first chunk's text of each of the session's last ``count`` messages, oldest first.

    These are what :func:`core.storage.fts_rows.context_text` joins into the context of the
    next message's chunks. A message whose chunks were all deduplicated has none of its own
    and is passed over.
    """
    if count <= 0:
        return []
    rows = conn.execute(
        "SELECT (SELECT chunk_text FROM chunks f WHERE f.session_id = ?1"
        "        AND f.sequence_start = s.sequence_start ORDER BY f.fts_rowid LIMIT 1)"
        " FROM (SELECT DISTINCT sequence_start FROM chunks WHERE session_id = ?1"
        "       ORDER BY sequence_start DESC LIMIT ?2) s",
        (session_id, count)).fetchall()
    return [row[0] for row in reversed(rows)]


def next_fts_rowid(conn: Any) -> int:
    """The rowid a new chunk's FTS row takes (one above every chunk's)."""
    row = conn.execute("SELECT coalesce(max(fts_rowid), 0) FROM chunks").fetchone()
    return int(row[0]) + 1


CHUNK_COLUMNS = ["chunk_id", "session_id", "chunk_text", "content_hash", "sequence_start",
                 "sequence_end", "metadata_json", "fts_rowid", "scope_token", "created_at",
                 "embedding_status", "context_text"]


def insert_rows(conn: Any, table: str, columns: Sequence[str],
                rows: Sequence[Sequence[Any]]) -> None:
    """Insert many rows into ``table`` with one prepared statement."""
    if rows:
        marks = ", ".join("?" * len(columns))
        conn.executemany(f"INSERT INTO {table}({', '.join(columns)}) VALUES ({marks})", rows)


def insert_json_rows(conn: Any, table: str, columns: Sequence[str],
                     rows: Sequence[Sequence[Any]]) -> None:
    """:func:`insert_rows` for many rows of text and numbers (no blobs): one statement reads
    them from one JSON array, in order.

    executemany binds each row's values in Python and takes the GIL back after each row's
    step, so an import's writes crawl while its event loop works; here SQLite reads the
    whole batch in one call without the GIL, and cheaper too (a 100k import's chunk rows:
    2.3 s of CPU against 3.4). Not for chunks_fts: picking six long columns out of each row's
    JSON cost FTS5's inserts more than binding did.
    """
    if rows:
        picks = ", ".join(f"value->>{index}" for index in range(len(columns)))
        conn.execute(f"INSERT INTO {table}({', '.join(columns)}) SELECT {picks}"
                     " FROM json_each(?)",
                     (json.dumps(rows, ensure_ascii=False, allow_nan=False),))


def insert_vectors(conn: Any, rows: Sequence[tuple[str, str, str, bytes]], model: str) -> None:
    """Insert (chunk_id, session_id, agent_identity, float32 blob) vectors under ``model``."""
    insert_rows(conn, "chunks_vec",
                ["chunk_id", "session_id", "agent_identity", "embedding_blob", "embedding_model"],
                [(chunk_id, session_id, agent, blob, model)
                 for chunk_id, session_id, agent, blob in rows])


def _existing_chunks(conn: Any, chunk_ids: list[str]) -> dict[str, int]:
    """sequence_end of the chunks among ``chunk_ids`` that are already stored."""
    return dict(select_in(conn, "SELECT chunk_id, sequence_end FROM chunks WHERE chunk_id IN",
                          chunk_ids))


def write_messages(conn: Any, messages: Sequence[PreparedMessage], all_or_nothing: bool,
                   vectors: np.ndarray | None = None,
                   vector_model: str | None = None, *, context_messages: int = 0,
                   context_chars: int = 400) -> list[WriteOutcome]:
    """Store messages in one transaction (oxydra steps 1-4, 8, 9, FTS rows included).

    With ``all_or_nothing`` any refusal raises and nothing is written (the single-message
    path); otherwise a refused message is reported in its outcome and the rest are stored.
    The work is set-based, one statement per kind of row, so a batch of a thousand messages
    costs little more per message than SQLite's own inserts. When ``vectors`` is given
    (the bulk path embeds before writing) it holds one float32 row per chunk, in message
    and chunk order, and new chunks are stored embedded under ``vector_model``; otherwise
    they wait in the backlog for the embedding worker.

    Each new chunk is indexed with its context: the first ``context_chars`` characters of
    each of the ``context_messages`` messages before it in its session (a message's own
    ``context`` when the caller computed it, as the bulk path does).
    """
    with transaction(conn):
        last_by_session = {sid: last_sequence(conn, sid)
                           for sid in dict.fromkeys(m.session_id for m in messages)}
        outcomes, accepted = allocate_sequences(messages, last_by_session, all_or_nothing)
        if not accepted:
            return outcomes

        # Step 1, session upsert: once per session, made at its earliest message and stamped
        # with its latest.
        touched, spans = session_spans(accepted)
        conn.executemany(
            "INSERT INTO sessions(session_id, agent_identity, created_at, updated_at)"
            " VALUES (?, ?, ?, ?)"
            " ON CONFLICT(session_id) DO UPDATE SET"
            "  updated_at = max(excluded.updated_at, ifnull(sessions.updated_at, ''))",
            [(m.session_id, m.agent_identity, *spans[m.session_id])
             for m in touched.values()])
        # Step 3, events.
        insert_json_rows(conn, "conversation_events",
                         ["session_id", "sequence", "payload_json", "created_at", "role",
                          "importance"],
                         [(m.session_id, seq, m.payload_json, m.created_at, m.role,
                           m.importance) for m, seq in accepted])
        # Step 4, last_sequence in session_state.
        conn.executemany(
            "INSERT INTO session_state(session_id, state_json, updated_at)"
            " VALUES (?1, json_object('last_sequence', ?2), ?3)"
            " ON CONFLICT(session_id) DO UPDATE SET"
            "  state_json = json_set(state_json, '$.last_sequence', ?2), updated_at = ?3",
            [(sid, last_by_session[sid], m.created_at) for sid, m in touched.items()])
        # Steps 8-9, chunks: a content hash already stored in the session extends that
        # chunk's sequence_end instead of inserting (dedup). New chunks get their FTS rows here too.
        agents = session_agents(conn, list(touched))
        check_owners(touched, agents)
        planned = planned_chunks(messages, accepted)
        plan = plan_chunks(planned, _existing_chunks(conn, [p.chunk_id for p in planned])
                           if planned else {})
        fts_rowid = next_fts_rowid(conn) if plan.new else 0
        tails = session_tails(conn, sessions_wanting_context(accepted, context_messages),
                              context_messages)
        context_of = contexts(accepted, tails, context_messages, context_chars)
        scope_tokens = {sid: chunk_scope_token(sid, agent) for sid, agent in agents.items()}
        status = "done" if vectors is not None and vector_model is not None else "pending"
        inserts = [(new.chunk_id, new.message.session_id, new.chunk.text,
                    new.chunk.content_hash, new.sequence, new.sequence, new.metadata_json,
                    fts_rowid + i, scope_tokens[new.message.session_id],
                    new.message.created_at, status, context_of[id(new.message)])
                   for i, new in enumerate(plan.new)]
        insert_json_rows(conn, "chunks", CHUNK_COLUMNS, inserts)
        insert_rows(conn, "chunks_fts", FTS_COLUMNS, fts_rows(
            ((row[7], row[1], row[2], row[8], row[11]) for row in inserts),
            ((new.chunk.session_words, new.message.context_words) for new in plan.new)))
        if status == "done" and plan.new:
            assert vectors is not None
            insert_vectors(conn, [(new.chunk_id, new.message.session_id,
                                   agents[new.message.session_id],
                                   vectors[new.vector_row].tobytes()) for new in plan.new],
                           vector_model or "")
        conn.executemany(
            "UPDATE chunks SET sequence_end = max(sequence_end, ?) WHERE chunk_id = ?",
            [(end, chunk_id) for chunk_id, end in plan.extended.items()])
    return with_counts(messages, outcomes, plan.counts)


def session_tails(conn: Any, session_ids: Sequence[str], count: int) -> dict[str, list[str]]:
    """:func:`previous_texts` for several sessions in one hop (the bulk path's contexts)."""
    return {sid: previous_texts(conn, sid, count) for sid in session_ids}


def read_events(conn: Any, session_id: str, limit: int | None = None,
                after_sequence: int | None = None) -> list[MemoryRecord]:
    """A session's events oldest first; with ``limit``, the most recent ``limit`` of them."""
    columns = "session_id, sequence, payload_json, created_at, importance"
    floor = after_sequence if after_sequence is not None else -(2**62)
    if limit is None:
        rows = conn.execute(
            f"SELECT {columns} FROM conversation_events WHERE session_id = ? AND sequence > ?"
            " ORDER BY sequence", (session_id, floor)).fetchall()
    else:
        rows = conn.execute(
            f"SELECT {columns} FROM conversation_events WHERE session_id = ? AND sequence > ?"
            " ORDER BY sequence DESC LIMIT ?", (session_id, floor, max(0, limit))).fetchall()
        rows.reverse()
    return [memory_record(row) for row in rows]


def list_sessions(conn: Any, agent_identity: str | None = None, limit: int | None = None,
                  offset: int = 0) -> list[dict[str, Any]]:
    """Sessions by most recent activity, with event and chunk counts."""
    where = ""
    params: list[Any] = []
    if agent_identity is not None:
        where, params = "WHERE s.agent_identity = ?", [agent_identity]
    params += [-1 if limit is None else limit, offset]
    rows = conn.execute(
        "SELECT s.session_id, s.agent_identity, s.created_at, s.updated_at,"
        " (SELECT count(*) FROM conversation_events e WHERE e.session_id = s.session_id),"
        " (SELECT count(*) FROM chunks c WHERE c.session_id = s.session_id),"
        " (SELECT max(sequence) FROM conversation_events e WHERE e.session_id = s.session_id)"
        f" FROM sessions s {where} ORDER BY s.updated_at DESC, s.session_id LIMIT ? OFFSET ?",
        params,
    ).fetchall()
    return [
        {"session_id": r[0], "agent_identity": r[1], "created_at": str(r[2]),
         "updated_at": str(r[3]), "event_count": r[4], "chunk_count": r[5],
         "last_sequence": r[6]}
        for r in rows
    ]


def delete_session(conn: Any, session_id: str) -> bool:
    """Delete a session; foreign keys and triggers remove every dependent row."""
    with transaction(conn):
        cursor = conn.execute("DELETE FROM sessions WHERE session_id = ?", (session_id,))
        return bool(cursor.rowcount > 0)


def read_session_state(conn: Any, session_id: str) -> dict[str, Any] | None:
    """The session's ``state_json`` as a dict (None when the session has no state row)."""
    row = conn.execute(
        "SELECT state_json FROM session_state WHERE session_id = ?", (session_id,)
    ).fetchone()
    return None if row is None else json.loads(row[0])


def table_counts(conn: Any) -> dict[str, int]:
    """Row counts of the main tables, for doctor and for tests that check cascades."""
    tables = ["sessions", "conversation_events", "session_state", "files", "chunks",
              "schedules", "schedule_runs"]
    counts = {t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in tables}
    counts["chunks_fts"] = conn.execute(
        "SELECT count(*) FROM chunks_fts_docsize").fetchone()[0]
    has_vec = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE name = 'chunks_vec'").fetchone()
    counts["chunks_vec"] = (
        conn.execute("SELECT count(*) FROM chunks_vec").fetchone()[0] if has_vec else 0)
    return counts


def session_row_counts(conn: Any, session_id: str) -> dict[str, int]:
    """Rows one session owns in every table, for verifying that forget removed them all."""
    scope = scope_token_for(session_id)
    counts = {
        table: conn.execute(f"SELECT count(*) FROM {table} WHERE session_id = ?",
                            (session_id,)).fetchone()[0]
        for table in ("sessions", "conversation_events", "session_state", "files", "chunks")
    }
    counts["chunks_fts"] = conn.execute(
        "SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH ?",
        (f'scope_token : "{scope}"',)).fetchone()[0]
    has_vec = conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'chunks_vec'").fetchone()
    counts["chunks_vec"] = conn.execute(
        "SELECT count(*) FROM chunks_vec WHERE session_id = ?", (session_id,)
    ).fetchone()[0] if has_vec else 0
    return counts


def salient_events(conn: Any, session_id: str, threshold: float) -> list[MemoryRecord]:
    """Events of a session with importance at or above ``threshold`` (aidaemon salience)."""
    rows = conn.execute(
        "SELECT session_id, sequence, payload_json, created_at, importance FROM"
        " conversation_events WHERE session_id = ? AND importance >= ? ORDER BY sequence",
        (session_id, threshold)).fetchall()
    return [memory_record(row) for row in rows]
