"""PostgreSQL: TO BE WRITTEN — core/storage/facts.py's operations on an async connection."""

from __future__ import annotations

from typing import Any

from core.storage.pg.connection import Conn


async def read_fact(conn: Conn, namespace: str, category: str, key: str) -> dict[str, Any] | None:
    """The fact stored under (category, key)."""
    raise NotImplementedError("PostgreSQL: read_fact")


async def upsert_fact(
    conn: Conn, namespace: str, category: str, key: str, value: str, source: str, now: str
) -> dict[str, Any]:
    """Insert the fact or replace its value and source; created_at is kept on a replace."""
    raise NotImplementedError("PostgreSQL: upsert_fact")


async def list_facts(
    conn: Conn, namespace: str, category: str | None = None
) -> list[dict[str, Any]]:
    """The namespace's facts (of one category, when given) by category, then key."""
    raise NotImplementedError("PostgreSQL: list_facts")


async def delete_fact(conn: Conn, namespace: str, category: str, key: str) -> bool:
    """Delete a fact; False when there was none."""
    raise NotImplementedError("PostgreSQL: delete_fact")
