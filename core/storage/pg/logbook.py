"""PostgreSQL: TO BE WRITTEN — core/storage/logbook.py's operations on an async connection."""

from __future__ import annotations

from typing import Any

from core.storage.pg.connection import Conn


async def append_logs(conn: Conn, entries: list[dict[str, Any]]) -> None:
    """Record queries, in order, in one transaction."""
    raise NotImplementedError("PostgreSQL: append_logs")


async def read_log(
    conn: Conn,
    limit: int,
    caller: str | None,
    scope_kind: str | None,
    scope_value: str | None,
    log_id: int | None = None,
) -> list[dict[str, Any]]:
    """Log entries, newest first, optionally by caller, scope or id."""
    raise NotImplementedError("PostgreSQL: read_log")


async def set_judgment(
    conn: Conn, scope_kind: str, scope_value: str, query: str, chunk_id: str, grade: int, now: str
) -> None:
    """Record (or change) how relevant a chunk is to a query in a scope; grade 0 to 3."""
    raise NotImplementedError("PostgreSQL: set_judgment")


async def read_judgments(
    conn: Conn, scope_kind: str, scope_value: str, query: str
) -> dict[str, int]:
    """chunk_id -> grade for one query in one scope."""
    raise NotImplementedError("PostgreSQL: read_judgments")
