"""PostgreSQL: the pgvector column and the embedding backlog (:mod:`core.storage.sqlite.vectors`'s
operations on an async connection).

Several processes may each run an embedding worker on one memory, so the backlog is
claimed: :func:`claim_pending_chunks` leases what it returns to its claimer for
``CLAIM_SECONDS`` (``FOR UPDATE SKIP LOCKED``, so two claimers at once take disjoint rows
without waiting for each other), and no other claimer is handed those chunks until the
vectors are saved, a failure is recorded, or the lease runs out. A claimer is handed its
own claimed chunks again: a worker whose save was refused reads the same batch back.

A killed worker's chunks are taken over at once: while its process lives, a claimer holds
a session-level advisory lock keyed on its name (:func:`hold_claimer_lock`, on a
connection of its own that dies with the process), and a claim whose claimer holds no such
lock is free. The lease stays for a claimer whose connection the server has not yet seen
die.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from core.storage.pg import vector_index
from core.storage.pg.connection import Conn
from core.storage.pg.events import vector_text
from core.storage.rows import EmbeddingCounts
from core.storage.vocabulary import VECTOR_IDENTITY_KEY

# Long enough for any batch to be embedded and saved (seconds on CPU, minutes on a slow
# endpoint with retries), short enough that a killed worker's chunks do not wait long.
CLAIM_SECONDS = 300

PendingRow = tuple[str, str, str, int, str, str]

# The advisory lock class of a claimer's liveness lock, ``pg_advisory_lock(CLAIMER_LOCK,
# hashtext(claimer))``: "mwbc" in ASCII, positive as an int4, so pg_locks.classid shows it
# as is.
CLAIMER_LOCK = int.from_bytes(b"mwbc", "big")


async def hold_claimer_lock(conn: Conn, claimer: str) -> bool:
    """Take ``claimer``'s liveness lock on ``conn`` (autocommit), held until it closes;
    False, without waiting, when another live claimer's name hashes to the same lock."""
    cursor = await conn.execute("SELECT pg_try_advisory_lock(%s, hashtext(%s))",
                                (CLAIMER_LOCK, claimer))
    row = await cursor.fetchone()
    return bool(row and row[0])


async def release_claimer_lock(conn: Conn, claimer: str) -> None:
    """Give up ``claimer``'s liveness lock now. Closing the connection frees it too, but only
    once the server's backend process has exited, a moment after the client has gone: until
    then another process would still take this claimer's leases for a live one's."""
    await conn.execute("SELECT pg_advisory_unlock(%s, hashtext(%s))", (CLAIMER_LOCK, claimer))


async def get_meta(conn: Conn, key: str) -> str | None:
    """A value from memory_meta."""
    return await vector_index.get_meta(conn, key)


async def vector_dimension(conn: Conn) -> int | None:
    """The dimension the vector column was fixed to (None before the first open)."""
    return await vector_index.vector_dimension(conn)


async def ensure_vector_table(conn: Conn, dimension: int, model: str) -> None:
    """Fix the vector column to ``dimension``, or refuse a database made for another size."""
    await vector_index.ensure_vector_dimension(conn, dimension, model)


async def reset_vectors(conn: Conn, dimension: int, model: str,
                        identity: str | None = None) -> int:
    """Drop every vector, fix the column to ``dimension`` (its HNSW index rebuilt empty)
    and queue every chunk again; how many chunks were queued."""
    await conn.execute(f"DROP INDEX IF EXISTS {vector_index.HNSW_INDEX}")
    await conn.execute("DELETE FROM chunks_vec")
    await conn.execute("DELETE FROM memory_meta WHERE key IN"
                       " ('embedding_dimension', 'embedding_model', %s)",
                       (VECTOR_IDENTITY_KEY,))
    # The column is empty now: its type can change to any dimension.
    await conn.execute("ALTER TABLE chunks_vec ALTER COLUMN embedding_blob TYPE vector")
    await vector_index.ensure_vector_dimension(conn, dimension, model, identity)
    cursor = await conn.execute(
        "UPDATE chunks SET embedding_status = 'pending', embedding_error = NULL,"
        " embedding_attempts = 0, embedding_claimed_by = NULL,"
        " embedding_claim_expires = NULL")
    return cursor.rowcount


_PENDING_COLUMNS = ("c.chunk_id, c.session_id, c.chunk_text, c.fts_rowid,"
                    " coalesce(s.agent_identity, ''), c.context_text")


def _pending(rows: Sequence[Sequence[Any]]) -> list[PendingRow]:
    return sorted(((str(r[0]), str(r[1]), str(r[2]), int(r[3]), str(r[4]), str(r[5]))
                   for r in rows), key=lambda row: row[3])


async def pending_chunks(conn: Conn, limit: int, after_rowid: int = 0) -> list[PendingRow]:
    """Chunks waiting for a vector, claimed or not: (chunk_id, session_id, text, fts_rowid,
    agent_identity, context). What a read-only memory's backlog shows."""
    cursor = await conn.execute(
        f"SELECT {_PENDING_COLUMNS} FROM chunks c"
        " JOIN sessions s ON s.session_id = c.session_id"
        " WHERE c.embedding_status = 'pending' AND c.fts_rowid > %s"
        " ORDER BY c.fts_rowid LIMIT %s", (after_rowid, limit))
    return _pending(await cursor.fetchall())


async def claim_pending_chunks(conn: Conn, claimer: str, limit: int,
                               after_rowid: int = 0) -> list[PendingRow]:
    """:func:`pending_chunks` that no other claimer holds, leased to ``claimer`` (see the
    module's docstring), in insertion order."""
    cursor = await conn.execute(
        "WITH picked AS ("
        "  SELECT fts_rowid FROM chunks"
        "  WHERE embedding_status = 'pending' AND fts_rowid > %(after)s"
        "   AND (embedding_claimed_by IS NULL OR embedding_claimed_by = %(claimer)s"
        "        OR embedding_claim_expires < memory_now()"
        # The claimer's process is gone: it holds no liveness lock (objid is the hash read
        # as an unsigned oid).
        "        OR NOT EXISTS (SELECT 1 FROM pg_locks l WHERE l.locktype = 'advisory'"
        "          AND l.granted AND l.objsubid = 2 AND l.classid = %(lock)s::bigint::oid"
        "          AND l.objid = ((hashtext(embedding_claimed_by)::bigint + 4294967296)"
        "                         %% 4294967296)::oid))"
        "  ORDER BY fts_rowid LIMIT %(limit)s FOR UPDATE SKIP LOCKED)"
        " UPDATE chunks c SET embedding_claimed_by = %(claimer)s,"
        "  embedding_claim_expires = to_char((now() + make_interval(secs => %(lease)s))"
        "   AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"
        " FROM picked, sessions s"
        " WHERE c.fts_rowid = picked.fts_rowid AND s.session_id = c.session_id"
        f" RETURNING {_PENDING_COLUMNS}",
        {"after": after_rowid, "claimer": claimer, "limit": limit, "lease": CLAIM_SECONDS,
         "lock": CLAIMER_LOCK})
    return _pending(await cursor.fetchall())


async def save_vectors(
    conn: Conn, rows: Sequence[tuple[str, str, str]], vectors: np.ndarray, model: str
) -> int:
    """Store vectors for (chunk_id, session_id, agent) rows and mark them done, in one go.

    A chunk deleted while its batch was embedding is skipped, so no vector is orphaned: the
    chunks still there are locked against deletion until this commits.
    """
    if not rows:
        return 0
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    cursor = await conn.execute(
        "SELECT chunk_id FROM chunks WHERE chunk_id = ANY(%s) FOR KEY SHARE",
        ([row[0] for row in rows],))
    alive = {str(row[0]) for row in await cursor.fetchall()}
    inserts = [(chunk_id, session_id, agent, vector_text(vectors[index]), model)
               for index, (chunk_id, session_id, agent) in enumerate(rows)
               if chunk_id in alive]
    if not inserts:
        return 0
    async with conn.cursor() as cur:
        await cur.executemany(
            "INSERT INTO chunks_vec(chunk_id, session_id, agent_identity, embedding_blob,"
            " embedding_model) VALUES (%s, %s, %s, %s::vector, %s)"
            " ON CONFLICT (chunk_id) DO UPDATE SET session_id = excluded.session_id,"
            "  agent_identity = excluded.agent_identity,"
            "  embedding_blob = excluded.embedding_blob,"
            "  embedding_model = excluded.embedding_model", inserts)
    await conn.execute(
        "UPDATE chunks SET embedding_status = 'done', embedding_error = NULL,"
        " embedding_claimed_by = NULL, embedding_claim_expires = NULL"
        " WHERE chunk_id = ANY(%s)", ([row[0] for row in inserts],))
    return len(inserts)


async def record_failure(
    conn: Conn, chunk_ids: Sequence[str], error: str, max_attempts: int
) -> int:
    """Count a failed attempt on each chunk; a chunk out of attempts becomes 'failed'. The
    claim is let go, so any worker may try the chunk again."""
    await conn.execute(
        "UPDATE chunks SET embedding_attempts = embedding_attempts + 1,"
        " embedding_error = %s,"
        " embedding_status = CASE WHEN embedding_attempts + 1 >= %s THEN 'failed'"
        "  ELSE 'pending' END,"
        " embedding_claimed_by = NULL, embedding_claim_expires = NULL"
        " WHERE chunk_id = ANY(%s)", (error[:1000], max_attempts, list(chunk_ids)))
    return await _failed_count(conn)


async def _failed_count(conn: Conn) -> int:
    cursor = await conn.execute("SELECT count(*) FROM chunks WHERE embedding_status = 'failed'")
    row = await cursor.fetchone()
    return 0 if row is None else int(row[0])


async def embedding_counts(conn: Conn) -> EmbeddingCounts:
    """Backlog, failures, embedded count and vectors per model."""
    cursor = await conn.execute(
        "SELECT embedding_status, count(*) FROM chunks GROUP BY embedding_status")
    by_status = {str(r[0]): int(r[1]) for r in await cursor.fetchall()}
    cursor = await conn.execute(
        "SELECT embedding_model, count(*) FROM chunks_vec GROUP BY embedding_model")
    models = {r[0]: int(r[1]) for r in await cursor.fetchall()}
    return EmbeddingCounts(pending=by_status.get("pending", 0),
                           failed=by_status.get("failed", 0), done=by_status.get("done", 0),
                           models=models)


async def backlog_and_failures(conn: Conn) -> tuple[int, int]:
    """(chunks waiting for a vector, chunks that gave up), each counted by its partial
    index, in one statement."""
    cursor = await conn.execute(
        "SELECT (SELECT count(*) FROM chunks WHERE embedding_status = 'pending'),"
        " (SELECT count(*) FROM chunks WHERE embedding_status = 'failed')")
    row = await cursor.fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


async def backlog_count(conn: Conn) -> int:
    """Chunks still waiting for a vector."""
    return (await backlog_and_failures(conn))[0]
