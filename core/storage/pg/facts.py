"""PostgreSQL: facts (aidaemon), a value per (category, key) in a namespace, as
:mod:`core.storage.sqlite.facts` keeps them in SQLite.

``UNIQUE (namespace, category, key)`` makes the upsert one ``INSERT … ON CONFLICT``, which
PostgreSQL resolves atomically between concurrent writers of the same key: the last one
wins, and none fails. Every statement names the namespace.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from core.storage.pg.connection import Conn

_COLUMNS = ("id", "category", "key", "value", "source", "created_at", "updated_at", "namespace")
_SELECT = f"SELECT {', '.join(_COLUMNS)} FROM facts"


def _fact(row: Sequence[Any]) -> dict[str, Any]:
    return dict(zip(_COLUMNS, row, strict=True))


async def read_fact(conn: Conn, namespace: str, category: str, key: str) -> dict[str, Any] | None:
    """The fact stored under (category, key)."""
    cursor = await conn.execute(f"{_SELECT} WHERE namespace = %s AND category = %s AND key = %s",
                                (namespace, category, key))
    row = await cursor.fetchone()
    return None if row is None else _fact(row)


async def upsert_fact(
    conn: Conn, namespace: str, category: str, key: str, value: str, source: str, now: str
) -> dict[str, Any]:
    """Insert the fact or replace its value and source; created_at is kept on a replace."""
    cursor = await conn.execute(
        "INSERT INTO facts(category, key, value, source, created_at, updated_at, namespace)"
        " VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT(namespace, category, key) DO UPDATE"
        " SET value = excluded.value, source = excluded.source,"
        f" updated_at = excluded.updated_at RETURNING {', '.join(_COLUMNS)}",
        (category, key, value, source, now, now, namespace))
    row = await cursor.fetchone()
    assert row is not None
    return _fact(row)


async def list_facts(
    conn: Conn, namespace: str, category: str | None = None
) -> list[dict[str, Any]]:
    """The namespace's facts (of one category, when given) by category, then key."""
    if category is None:
        cursor = await conn.execute(f"{_SELECT} WHERE namespace = %s ORDER BY category, key",
                                    (namespace,))
    else:
        cursor = await conn.execute(f"{_SELECT} WHERE namespace = %s AND category = %s"
                                    " ORDER BY key", (namespace, category))
    return [_fact(row) for row in await cursor.fetchall()]


async def delete_fact(conn: Conn, namespace: str, category: str, key: str) -> bool:
    """Delete a fact; False when there was none."""
    cursor = await conn.execute(
        "DELETE FROM facts WHERE namespace = %s AND category = %s AND key = %s",
        (namespace, category, key))
    return cursor.rowcount > 0
