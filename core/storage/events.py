"""SQL for sessions, conversation events and their chunks (oxydra storage pipeline).

Functions here take a connection and run on its lane's thread. The write path turns
already-validated, already-chunked messages into rows in one transaction: session upsert,
monotonic check, event, ``last_sequence``, chunks with content-hash dedup and their FTS
rows. Vectors come later, from the embedding worker, unless the bulk
path brought them along.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from core.errors import OutOfNamespace, SequenceError
from core.inputs import shown
from core.storage.connection import select_in, transaction
from core.storage.fts_rows import FTS_COLUMNS, context_text, fts_rows


@dataclass(frozen=True)
class PreparedChunk:
    """One chunk of a message, hashed and ready to insert."""

    text: str
    content_hash: str


@dataclass(frozen=True)
class PreparedMessage:
    """A validated message with everything the write transaction needs, computed off-lock."""

    session_id: str
    sequence: int | None  # None: allocate the next sequence inside the transaction
    payload_json: str
    role: str
    importance: float
    chunks: tuple[PreparedChunk, ...]
    chunk_metadata: dict[str, Any]
    agent_identity: str | None
    created_at: str
    # The conversational context its chunks are indexed with, when the caller worked it out
    # already (the bulk path, which embeds before writing); None: the write path reads it.
    context: str | None = None
    # True: the session must belong to ``agent_identity`` (a namespace-bound caller); a
    # session another agent created is refused inside the write transaction.
    bound: bool = False

    def with_context(self, context: str) -> PreparedMessage:
        """This message with its chunks' context worked out.

        ``dataclasses.replace`` would run every field through the frozen ``__setattr__``
        again; the bulk path calls this once per message on the event loop's thread.
        """
        copy = object.__new__(PreparedMessage)
        copy.__dict__.update(self.__dict__, context=context)
        return copy


@dataclass(frozen=True)
class WriteOutcome:
    """Per message: its sequence and how many chunks were new or deduplicated."""

    sequence: int | None
    inserted: int
    deduplicated: int
    error: str | None = None


def chunk_id_for(session_id: str, content_hash: str) -> str:
    """A chunk's id: stable for a session and content, so dedup is a primary-key upsert."""
    digest = hashlib.sha256(f"{session_id}\x00{content_hash}".encode()).hexdigest()
    return f"chk-{digest[:32]}"


def scope_token_for(session_id: str) -> str:
    """The token indexed with a session's chunks in chunks_fts and ANDed into its queries."""
    return "s" + hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()[:24]


def agent_token_for(agent_identity: str | None) -> str:
    """The token indexed with every chunk of an agent's sessions (its namespace)."""
    return "a" + hashlib.sha256((agent_identity or "").encode("utf-8", "surrogatepass")
                                ).hexdigest()[:24]


def chunk_scope_token(session_id: str, agent_identity: str | None) -> str:
    """What a chunk's ``scope_token`` column holds: its session's token and its agent's."""
    return f"{scope_token_for(session_id)} {agent_token_for(agent_identity)}"


def out_of_namespace(session_id: str, namespace: str) -> str:
    """The refusal of a namespace-bound call on another namespace's session (whose owner it
    does not name)."""
    return (f"session {shown(session_id)} belongs to another namespace, not to {namespace!r}; "
            "nothing was read or written (use a session id of your own)")


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


def allocate_sequences(messages: Sequence[PreparedMessage],
                       last_by_session: dict[str, int | None], all_or_nothing: bool,
                       ) -> tuple[list[WriteOutcome], list[tuple[PreparedMessage, int]]]:
    """Each message's sequence (the next one when it has none) checked against its
    session's last, which ``last_by_session`` holds and is moved on as messages are taken;
    the outcomes in order and the accepted messages. A sequence not above the last is a
    ``SequenceError`` with ``all_or_nothing``, else that message's outcome says why."""
    outcomes: list[WriteOutcome] = []
    accepted: list[tuple[PreparedMessage, int]] = []
    for message in messages:
        sid = message.session_id
        last = last_by_session[sid]
        sequence = message.sequence
        if sequence is None:
            sequence = 1 if last is None else last + 1
        elif last is not None and sequence <= last:
            error = (f"sequence {sequence} for session {shown(sid)} is not greater than "
                     f"its last sequence {last}")
            if all_or_nothing:
                raise SequenceError(error)
            outcomes.append(WriteOutcome(message.sequence, 0, 0, error))
            continue
        last_by_session[sid] = sequence
        accepted.append((message, sequence))
        outcomes.append(WriteOutcome(sequence, 0, 0))
    return outcomes, accepted


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
        # with its latest. Messages can carry their original (older) times, so updated_at
        # never moves back.
        touched: dict[str, PreparedMessage] = {}
        spans: dict[str, list[str]] = {}  # per session: [earliest, latest]
        for message, _ in accepted:
            touched[message.session_id] = message
            at = message.created_at
            span = spans.get(message.session_id)
            if span is None:
                spans[message.session_id] = [at, at]
            elif at < span[0]:
                span[0] = at
            elif at > span[1]:
                span[1] = at
        conn.executemany(
            "INSERT INTO sessions(session_id, agent_identity, created_at, updated_at)"
            " VALUES (?, ?, ?, ?)"
            " ON CONFLICT(session_id) DO UPDATE SET"
            "  updated_at = max(excluded.updated_at, ifnull(sessions.updated_at, ''))",
            [(m.session_id, m.agent_identity, *spans[m.session_id])
             for m in touched.values()])
        # Step 3, events.
        insert_rows(conn, "conversation_events",
                    ["session_id", "sequence", "payload_json", "created_at", "role", "importance"],
                    [(m.session_id, seq, m.payload_json, m.created_at, m.role, m.importance)
                     for m, seq in accepted])
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
        for message in touched.values():
            if message.bound and agents[message.session_id] != (message.agent_identity or ""):
                raise OutOfNamespace(out_of_namespace(message.session_id,
                                                      message.agent_identity or ""))
        scope_tokens = {sid: chunk_scope_token(sid, agent) for sid, agent in agents.items()}
        # Each chunk's row in ``vectors``: chunks are numbered across all messages given.
        first_row: dict[int, int] = {}
        row = 0
        for message in messages:
            first_row[id(message)] = row
            row += len(message.chunks)
        planned = [(m, seq, chunk_id_for(m.session_id, c.content_hash), c,
                    first_row[id(m)] + position)
                   for m, seq in accepted for position, c in enumerate(m.chunks)]
        existing = _existing_chunks(conn, [p[2] for p in planned]) if planned else {}
        fts_rowid = next_fts_rowid(conn) if planned else 0
        contexts = _contexts(conn, accepted, context_messages, context_chars)
        inserts: list[tuple[Any, ...]] = []
        vector_rows: list[tuple[str, str, str, bytes]] = []
        embedded = vectors is not None and vector_model is not None
        extended: dict[str, int] = {}
        # Per message (each has one sequence): [chunks inserted, chunks deduplicated].
        counts_by_message: dict[int, list[int]] = {}
        metadata_by_message: dict[int, str] = {}
        for message, sequence, chunk_id, chunk, vector_row in planned:
            counts = counts_by_message.setdefault(id(message), [0, 0])
            if chunk_id in existing:
                existing[chunk_id] = max(existing[chunk_id], sequence)
                extended[chunk_id] = existing[chunk_id]
                counts[1] += 1
                continue
            if id(message) not in metadata_by_message:
                metadata = dict(message.chunk_metadata)
                metadata["sequence"] = sequence
                metadata_by_message[id(message)] = json.dumps(metadata, ensure_ascii=False)
            inserts.append((chunk_id, message.session_id, chunk.text, chunk.content_hash,
                            sequence, sequence, metadata_by_message[id(message)], fts_rowid,
                            scope_tokens[message.session_id], message.created_at,
                            "done" if embedded else "pending", contexts[id(message)]))
            if embedded:
                assert vectors is not None
                vector_rows.append((chunk_id, message.session_id, agents[message.session_id],
                                    vectors[vector_row].tobytes()))
            existing[chunk_id] = sequence
            fts_rowid += 1
            counts[0] += 1
        insert_rows(conn, "chunks", CHUNK_COLUMNS, inserts)
        insert_rows(conn, "chunks_fts", FTS_COLUMNS,
                    fts_rows((row[7], row[1], row[2], row[8], row[11]) for row in inserts))
        if vector_rows:
            insert_vectors(conn, vector_rows, vector_model or "")
        conn.executemany(
            "UPDATE chunks SET sequence_end = max(sequence_end, ?) WHERE chunk_id = ?",
            [(end, chunk_id) for chunk_id, end in extended.items()])
    return [
        outcome if outcome.error is not None else WriteOutcome(
            outcome.sequence, *counts_by_message.get(id(message), (0, 0)))
        for message, outcome in zip(messages, outcomes, strict=True)
    ]


def _contexts(conn: Any, accepted: Sequence[tuple[PreparedMessage, int]], count: int,
              max_chars: int) -> dict[int, str]:
    """Each accepted message's context (keyed by ``id``), in session order."""
    contexts: dict[int, str] = {}
    tails: dict[str, list[str]] = {}
    for message, _ in accepted:
        if message.context is not None or count <= 0:
            contexts[id(message)] = message.context or ""
            continue
        tail = tails.get(message.session_id)
        if tail is None:
            tail = tails[message.session_id] = previous_texts(conn, message.session_id, count)
        contexts[id(message)] = context_text(tail[-count:], max_chars)
        if message.chunks:
            tail.append(message.chunks[0].text)
    return contexts


def session_tails(conn: Any, session_ids: Sequence[str], count: int) -> dict[str, list[str]]:
    """:func:`previous_texts` for several sessions in one hop (the bulk path's contexts)."""
    return {sid: previous_texts(conn, sid, count) for sid in session_ids}


def _record(row: Any) -> dict[str, Any]:
    return {
        "session_id": row[0],
        "sequence": int(row[1]),
        "payload": json.loads(row[2]),
        "created_at": row[3],
        "importance": float(row[4]),
    }


def read_events(conn: Any, session_id: str, limit: int | None = None,
                after_sequence: int | None = None) -> list[dict[str, Any]]:
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
    return [_record(row) for row in rows]


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
        return cursor.rowcount > 0


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


def salient_events(conn: Any, session_id: str, threshold: float) -> list[dict[str, Any]]:
    """Events of a session with importance at or above ``threshold`` (aidaemon salience)."""
    rows = conn.execute(
        "SELECT session_id, sequence, payload_json, created_at, importance FROM"
        " conversation_events WHERE session_id = ? AND importance >= ? ORDER BY sequence",
        (session_id, threshold)).fetchall()
    return [{"session_id": r[0], "sequence": int(r[1]), "payload": json.loads(r[2]),
             "created_at": r[3], "importance": float(r[4])} for r in rows]
