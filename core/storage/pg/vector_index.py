"""The dimension of a PostgreSQL memory's vectors, fixed at the first open that knows it.

The migrations create ``chunks_vec.embedding_blob`` as ``vector`` without a dimension,
because they run before the embedding model is known. The first open with a model fixes
the column to ``vector(N)`` and builds the namespace search's HNSW index, which needs a
fixed dimension; from then on the database itself refuses a vector of another size, as
sqlite-vec's ``FLOAT[N]`` column does. The dimension and the model are recorded in
``memory_meta`` under the SQLite side's keys, and a model of another size is refused at
open (nexo-rs) with ``DimensionMismatch``, as the SQLite backend does.

Altering the column while it is empty costs nothing; it is only ever done empty (a
``reindex`` to another size drops every vector first).
"""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg import AsyncConnection

from core.errors import DimensionMismatch
from core.storage.pg.migrations import MIGRATION_LOCK
from core.storage.vocabulary import VECTOR_IDENTITY_KEY

# pgvector 0.6 indexes vectors of up to 2,000 dimensions with HNSW; above that the
# namespace search stays exact (a scan of the agent's vectors).
HNSW_MAX_DIMENSION = 2000

HNSW_INDEX = "chunks_vec_hnsw"


async def get_meta(conn: AsyncConnection[Any], key: str) -> str | None:
    """A value from memory_meta."""
    cursor = await conn.execute("SELECT value FROM memory_meta WHERE key = %s", (key,))
    row = await cursor.fetchone()
    return None if row is None else str(row[0])


async def set_meta(conn: AsyncConnection[Any], key: str, value: str) -> None:
    """Set a value in memory_meta, inside the caller's transaction."""
    await conn.execute(
        "INSERT INTO memory_meta(key, value) VALUES (%s, %s)"
        " ON CONFLICT (key) DO UPDATE SET value = excluded.value", (key, value))


async def vector_dimension(conn: AsyncConnection[Any]) -> int | None:
    """The dimension the database's vectors were fixed to (None before the first open)."""
    value = await get_meta(conn, "embedding_dimension")
    return None if value is None else int(value)


async def ensure_vector_dimension(conn: AsyncConnection[Any], dimension: int,
                                  model: str, identity: str | None = None) -> bool:
    """Fix the vector column to ``dimension`` and index it, or refuse a database made for
    another size; record the model's ``identity`` as the SQLite side does. Runs in the
    caller's write transaction; True when it fixed the column."""
    # Two processes opening a new database at once: the second waits here, then finds the
    # dimension the first recorded.
    await conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
    existing = await vector_dimension(conn)
    if existing is not None:
        if existing != dimension:
            stored = await get_meta(conn, "embedding_model") or "an unknown model"
            raise DimensionMismatch(
                f"this database holds {existing}-dimension vectors from {stored}, but the "
                f"configured model {model} makes {dimension}-dimension vectors; open it with "
                f"the original model, or run `workbench reindex --model {model}` to move it")
        await _record_identity(conn, model, identity)
        return False
    await conn.execute(
        f"ALTER TABLE chunks_vec ALTER COLUMN embedding_blob TYPE vector({int(dimension)})")
    if dimension <= HNSW_MAX_DIMENSION:
        await conn.execute(f"CREATE INDEX IF NOT EXISTS {HNSW_INDEX} ON chunks_vec"
                           " USING hnsw (embedding_blob vector_cosine_ops)")
    await set_meta(conn, "embedding_dimension", str(dimension))
    if await get_meta(conn, "embedding_model") is None:
        await set_meta(conn, "embedding_model", model)
    await _record_identity(conn, model, identity)
    return True


async def _record_identity(conn: AsyncConnection[Any], model: str,
                           identity: str | None) -> None:
    """Record ``identity`` when the vectors' model is ``model`` and none is recorded yet.

    The shared keys are the owner's to write (migration 0004): a role bound to a namespace
    is refused by row security, and then records nothing, inside a savepoint so the
    caller's transaction goes on."""
    if identity is None or await get_meta(conn, "embedding_model") != model:
        return
    if await get_meta(conn, VECTOR_IDENTITY_KEY) is not None:
        return
    try:
        async with conn.transaction():
            await set_meta(conn, VECTOR_IDENTITY_KEY, identity)
    except psycopg.errors.InsufficientPrivilege:
        pass  # not this role's to record; the owner's next open does
