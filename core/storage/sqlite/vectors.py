"""SQL for the sqlite-vec index and the embedding backlog.

``chunks_vec`` keeps oxydra's name and columns (``chunk_id``, ``embedding_blob``,
``embedding_model``) as a ``vec0`` virtual table partitioned by ``session_id``, so a
session's KNN costs what the session holds. vec0 fixes the vector size at creation, so the
table is made at open, once the model's dimension is known, and recorded in ``memory_meta``.
vec0 tables take no foreign keys: a trigger on ``chunks`` deletes a chunk's vector with it.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import numpy as np

from core.errors import DimensionMismatch
from core.storage.rows import EmbeddingCounts
from core.storage.sqlite.connection import select_in, sqlite_module, transaction
from core.storage.sqlite.events import insert_vectors
from core.storage.vocabulary import VECTOR_IDENTITY_KEY

log = logging.getLogger(__name__)

# vec0 reserves a block of chunk_size vectors per partition; the default (1024) bloats a file
# with many small sessions (DESIGN.md: 1,000 sessions -> ~1 GB for 10k vectors; 128 -> 130 MB).
VEC_CHUNK_SIZE = 128


# vec0's own tables (sqlite-vec 0.1.x): where each vector sits, and its blocks of vectors.
_BLOCKS_READ_AT_ONCE = 32  # blocks of VEC_CHUNK_SIZE vectors held at once by vectors_of


def vectors_of(conn: Any, rowids: Sequence[int], dimension: int,
               ) -> list[tuple[int, str | None, bytes]]:
    """(fts_rowid, agent_identity, float32 bytes) of the embedded chunks among ``rowids``.

    vec0 answers a lookup by chunk id one row at a time, each from the block of vectors
    holding it: ~35 µs a row, which made an import's index follower spend ~35 s of a core
    at 1M chunks reading back what the import had just written. Here each block is read
    once, from vec0's own tables (``chunks_vec_rowids`` says where each vector sits). That
    layout is sqlite-vec's and may change: the first row is also read through vec0, and
    unless both agree (or when those tables are not there) every row is read through vec0.
    """
    pairs = select_in(conn, "SELECT chunk_id, fts_rowid FROM chunks"
                            " WHERE embedding_status = 'done' AND fts_rowid IN", rowids)
    if not pairs:
        return []
    fts_rowid = dict(pairs)
    try:
        found = _from_blocks(conn, fts_rowid, dimension)
    except sqlite_module().OperationalError as exc:  # no such table or column: another vec0
        log.info("vec0's tables not read directly (%s): its own lookups instead", exc)
        found = None
    if found is None:  # joined from chunks: vec0 looking up a list of its ids is 8x slower
        return select_in(conn, "SELECT c.fts_rowid, v.agent_identity, v.embedding_blob"
                               " FROM chunks c JOIN chunks_vec v ON v.chunk_id = c.chunk_id"
                               " WHERE c.embedding_status = 'done' AND c.fts_rowid IN", rowids)
    return found


def _from_blocks(conn: Any, fts_rowid: dict[str, int], dimension: int,
                 ) -> list[tuple[int, str | None, bytes]] | None:
    """:func:`vectors_of` a block at a time; None when a row is not where it should be, or
    the first differs from what vec0 reads."""
    width = 4 * dimension
    by_block: dict[int, list[tuple[str, int]]] = {}
    for chunk_id, block, offset in select_in(
            conn, "SELECT id, chunk_id, chunk_offset FROM chunks_vec_rowids WHERE id IN",
            list(fts_rowid)):
        by_block.setdefault(block, []).append((chunk_id, offset))
    blocks = sorted(by_block)
    found: list[tuple[int, str | None, bytes]] = []
    for start in range(0, len(blocks), _BLOCKS_READ_AT_ONCE):
        for block, namespace, vectors in select_in(
                conn, "SELECT b.chunk_id, b.partition00, v.vectors FROM chunks_vec_chunks b"
                      " JOIN chunks_vec_vector_chunks00 v ON v.rowid = b.chunk_id"
                      " WHERE b.chunk_id IN", blocks[start:start + _BLOCKS_READ_AT_ONCE]):
            held = memoryview(vectors)
            for chunk_id, offset in by_block[block]:
                if (offset + 1) * width > len(held):
                    return None
                vector = bytes(held[offset * width:(offset + 1) * width])
                if not found and conn.execute(
                        "SELECT agent_identity, embedding_blob FROM chunks_vec"
                        " WHERE chunk_id = ?", (chunk_id,)).fetchone() != (namespace, vector):
                    return None
                found.append((fts_rowid[chunk_id], namespace, vector))
    return found


def get_meta(conn: Any, key: str) -> str | None:
    """A value from memory_meta."""
    row = conn.execute("SELECT value FROM memory_meta WHERE key = ?", (key,)).fetchone()
    return None if row is None else row[0]


def set_meta(conn: Any, key: str, value: str) -> None:
    """Set a value in memory_meta (inside the caller's transaction, if any)."""
    conn.execute(
        "INSERT INTO memory_meta(key, value) VALUES (?, ?)"
        " ON CONFLICT(key) DO UPDATE SET value = excluded.value", (key, value))


def vector_dimension(conn: Any) -> int | None:
    """The dimension the file's vector index was made with (None before the first open)."""
    value = get_meta(conn, "embedding_dimension")
    return None if value is None else int(value)


def _create_vector_table(conn: Any, dimension: int) -> None:
    conn.execute(
        "CREATE VIRTUAL TABLE IF NOT EXISTS chunks_vec USING vec0("
        " chunk_id TEXT PRIMARY KEY,"
        " agent_identity TEXT PARTITION KEY,"
        " session_id TEXT PARTITION KEY,"
        f" embedding_blob FLOAT[{dimension}] distance_metric=cosine,"
        " embedding_model TEXT,"
        f" chunk_size={VEC_CHUNK_SIZE})"
    )
    conn.execute(
        "CREATE TRIGGER IF NOT EXISTS chunks_vec_delete AFTER DELETE ON chunks BEGIN"
        " DELETE FROM chunks_vec WHERE chunk_id = old.chunk_id; END"
    )
    _index_partitions(conn)
    set_meta(conn, "embedding_dimension", str(dimension))


def _index_partitions(conn: Any) -> None:
    """Index vec0's block table by partition, which sqlite-vec 0.1.9 does not do itself.

    vec0 finds a partition's blocks in ``chunks_vec_chunks`` by its partition columns;
    without an index that is a scan of every block of the file. To add a vector it looks up
    the (agent, session) partition's latest block: 0.55 ms a vector at 5,000 sessions,
    0.05 ms with the first index. A session's KNN names the session alone: 0.71 ms at 5,000
    sessions and 11 ms at 10,000 sessions of a million chunks, 0.17 ms at 5,000 with the
    second. The columns are sqlite-vec's own names; if a later version names them
    otherwise, nothing is indexed and only speed suffers.
    """
    columns = {row[1] for row in conn.execute("PRAGMA table_info(chunks_vec_chunks)")}
    if {"partition00", "partition01"} <= columns:
        conn.execute("CREATE INDEX IF NOT EXISTS chunks_vec_blocks_by_partition"
                     " ON chunks_vec_chunks(partition00, partition01)")
        conn.execute("CREATE INDEX IF NOT EXISTS chunks_vec_blocks_by_session"
                     " ON chunks_vec_chunks(partition01)")


def ensure_vector_table(conn: Any, dimension: int, model: str,
                        identity: str | None = None) -> None:
    """Create the vector index for ``dimension``, or refuse a file made for another size.

    The first model recorded is the vectors' model, with its ``identity``
    (:mod:`core.embeddings.identity`); a file recorded before identities were kept gets the
    identity of the first model of its name that opens it."""
    with transaction(conn):
        existing = vector_dimension(conn)
        if existing is not None and existing != dimension:
            stored = get_meta(conn, "embedding_model") or "an unknown model"
            raise DimensionMismatch(
                f"this file holds {existing}-dimension vectors from {stored}, but the "
                f"configured model {model} makes {dimension}-dimension vectors; open it with "
                f"the original model, or run `workbench reindex --model {model}` to move it"
            )
        _create_vector_table(conn, dimension)
        recorded = get_meta(conn, "embedding_model")
        if recorded is None:
            set_meta(conn, "embedding_model", model)
        if identity is not None and recorded in (None, model) and get_meta(
                conn, VECTOR_IDENTITY_KEY) is None:
            set_meta(conn, VECTOR_IDENTITY_KEY, identity)


def reset_vectors(conn: Any, dimension: int, model: str, identity: str | None = None) -> int:
    """Drop every vector, remake the index for ``dimension`` and queue every chunk again."""
    with transaction(conn):
        conn.execute("DROP TRIGGER IF EXISTS chunks_vec_delete")
        conn.execute("DROP TABLE IF EXISTS chunks_vec")
        _create_vector_table(conn, dimension)
        set_meta(conn, "embedding_model", model)
        if identity is None:
            conn.execute("DELETE FROM memory_meta WHERE key = ?", (VECTOR_IDENTITY_KEY,))
        else:
            set_meta(conn, VECTOR_IDENTITY_KEY, identity)
        # Indexes derived from the vectors rebuild, rather than read a change per chunk.
        conn.execute("INSERT INTO chunk_changes(fts_rowid, op) VALUES (NULL, 'reset')")
        cursor = conn.execute(
            "UPDATE chunks SET embedding_status = 'pending', embedding_error = NULL,"
            " embedding_attempts = 0")
        return int(cursor.rowcount)


def pending_chunks(conn: Any, limit: int,
                   after_rowid: int = 0) -> list[tuple[str, str, str, int, str, str]]:
    """Chunks waiting for a vector: (chunk_id, session_id, text, fts_rowid, agent_identity,
    context)."""
    return conn.execute(
        "SELECT c.chunk_id, c.session_id, c.chunk_text, c.fts_rowid,"
        " coalesce(s.agent_identity, ''), c.context_text FROM chunks c"
        " JOIN sessions s ON s.session_id = c.session_id"
        " WHERE c.embedding_status = 'pending' AND c.fts_rowid > ? ORDER BY c.fts_rowid LIMIT ?",
        (after_rowid, limit),
    ).fetchall()


def save_vectors(conn: Any, rows: Sequence[tuple[str, str, str]], vectors: np.ndarray,
                 model: str) -> int:
    """Store vectors for (chunk_id, session_id, agent) rows and mark them done, in one go.

    A chunk deleted while its batch was embedding is skipped, so no vector is orphaned.
    """
    if not rows:
        return 0
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    saved = 0
    with transaction(conn):
        status: dict[str, str] = dict(select_in(
            conn, "SELECT chunk_id, embedding_status FROM chunks WHERE chunk_id IN",
            [row[0] for row in rows]))
        inserts = []
        for index, (chunk_id, session_id, agent) in enumerate(rows):
            if chunk_id not in status:
                continue
            if status[chunk_id] == "done":
                conn.execute("DELETE FROM chunks_vec WHERE chunk_id = ?", (chunk_id,))
            inserts.append((chunk_id, session_id, agent, vectors[index].tobytes()))
        insert_vectors(conn, inserts, model)
        conn.executemany(
            "UPDATE chunks SET embedding_status = 'done', embedding_error = NULL"
            " WHERE chunk_id = ?", [(row[0],) for row in inserts])
        saved = len(inserts)
    return saved


def record_failure(conn: Any, chunk_ids: Sequence[str], error: str, max_attempts: int) -> int:
    """Count a failed attempt on each chunk; a chunk out of attempts becomes 'failed'."""
    with transaction(conn):
        conn.executemany(
            "UPDATE chunks SET embedding_attempts = embedding_attempts + 1,"
            " embedding_error = ?,"
            " embedding_status = CASE WHEN embedding_attempts + 1 >= ? THEN 'failed'"
            "  ELSE 'pending' END"
            " WHERE chunk_id = ?",
            [(error[:1000], max_attempts, chunk_id) for chunk_id in chunk_ids],
        )
        row = conn.execute(
            "SELECT count(*) FROM chunks WHERE embedding_status = 'failed'").fetchone()
        return int(row[0])


def embedding_counts(conn: Any) -> EmbeddingCounts:
    """Backlog, failures, embedded count and vectors per model."""
    by_status = dict(conn.execute(
        "SELECT embedding_status, count(*) FROM chunks GROUP BY embedding_status").fetchall())
    models: dict[str, int] = {}
    if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'chunks_vec'").fetchone():
        models = dict(conn.execute(
            "SELECT embedding_model, count(*) FROM chunks_vec GROUP BY embedding_model"
        ).fetchall())
    return EmbeddingCounts(pending=by_status.get("pending", 0),
                           failed=by_status.get("failed", 0), done=by_status.get("done", 0),
                           models=models)


def pulse(conn: Any) -> tuple[int, int, int]:
    """The connection's data_version, the backlog and the failures, each by an index."""
    version = int(conn.execute("PRAGMA data_version").fetchone()[0])
    backlog = backlog_count(conn)
    failed = int(conn.execute(
        "SELECT count(*) FROM chunks WHERE embedding_status = 'failed'").fetchone()[0])
    return version, backlog, failed


def backlog_count(conn: Any) -> int:
    """Chunks still waiting for a vector."""
    return int(conn.execute(
        "SELECT count(*) FROM chunks WHERE embedding_status = 'pending'").fetchone()[0])
