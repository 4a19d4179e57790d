"""PostgreSQL: the retrieval log and the relevance judgments, as :mod:`core.storage.sqlite.logbook`
keeps them in SQLite. ``log_id`` is an identity, so concurrent writers' entries each get
their own; a judgment is one row per (scope, query, chunk), upserted with ``ON CONFLICT``."""

from __future__ import annotations

from typing import Any

from core.storage.log_rows import LogEntry, LogRow, log_entry
from core.storage.pg.connection import Conn


async def append_logs(conn: Conn, rows: list[LogRow]) -> None:
    """Record queries, in order, in one transaction."""
    async with conn.cursor() as cursor:
        await cursor.executemany(
            "INSERT INTO retrieval_log(created_at, caller, scope_kind, scope_value, query,"
            " params_json, results_json, timings_json) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
            rows)


async def read_log(
    conn: Conn,
    limit: int,
    caller: str | None,
    scope_kind: str | None,
    scope_value: str | None,
    log_id: int | None = None,
) -> list[LogEntry]:
    """Log entries, newest first, optionally by caller, scope or id (a negative ``limit``
    is none, as in SQLite)."""
    clauses: list[str] = []
    params: list[Any] = []
    if log_id is not None:
        clauses.append("log_id = %s")
        params.append(log_id)
    if caller is not None:
        clauses.append("caller = %s")
        params.append(caller)
    if scope_kind is not None:
        clauses.append("scope_kind = %s AND scope_value = %s")
        params += [scope_kind, scope_value]
    where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
    cursor = await conn.execute(
        "SELECT log_id, created_at, caller, scope_kind, scope_value, query, params_json,"
        f" results_json, timings_json FROM retrieval_log {where}"
        " ORDER BY created_at DESC, log_id DESC LIMIT %s", [*params, limit if limit >= 0 else None])
    return [log_entry(row) for row in await cursor.fetchall()]


async def set_judgment(
    conn: Conn, scope_kind: str, scope_value: str, query: str, chunk_id: str, grade: int, now: str
) -> None:
    """Record (or change) how relevant a chunk is to a query in a scope; grade 0 to 3."""
    await conn.execute(
        "INSERT INTO relevance_judgments(scope_kind, scope_value, query, chunk_id, grade,"
        " created_at, updated_at) VALUES (%s, %s, %s, %s, %s, %s, %s)"
        " ON CONFLICT(scope_kind, scope_value, query, chunk_id) DO UPDATE SET"
        " grade = excluded.grade, updated_at = excluded.updated_at",
        (scope_kind, scope_value, query, chunk_id, grade, now, now))


async def read_scope_judgments(
    conn: Conn, scope_kind: str, scope_value: str
) -> dict[str, dict[str, int]]:
    """query -> {chunk_id: grade} for every judged query of one scope, queries in the
    order they were first judged."""
    cursor = await conn.execute(
        "SELECT query, chunk_id, grade FROM relevance_judgments WHERE scope_kind = %s AND"
        " scope_value = %s ORDER BY judgment_id", (scope_kind, scope_value))
    judged: dict[str, dict[str, int]] = {}
    for query, chunk_id, grade in await cursor.fetchall():
        judged.setdefault(query, {})[chunk_id] = grade
    return judged


async def read_judgments(
    conn: Conn, scope_kind: str, scope_value: str, query: str
) -> dict[str, int]:
    """chunk_id -> grade for one query in one scope."""
    cursor = await conn.execute(
        "SELECT chunk_id, grade FROM relevance_judgments WHERE scope_kind = %s AND"
        " scope_value = %s AND query = %s", (scope_kind, scope_value, query))
    return {chunk_id: grade for chunk_id, grade in await cursor.fetchall()}
