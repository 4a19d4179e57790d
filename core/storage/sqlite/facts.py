"""SQL for facts (aidaemon): a value per (category, key), in a namespace.

One row per fact; ``UNIQUE (namespace, category, key)`` makes the upsert a single
``INSERT … ON CONFLICT`` and every read an index lookup. Every statement names the
namespace, so a category and key from another namespace find nothing.
"""

from __future__ import annotations

from typing import Any

from core.storage.sqlite.connection import transaction

_COLUMNS = ("id", "category", "key", "value", "source", "created_at", "updated_at", "namespace")
_SELECT = f"SELECT {', '.join(_COLUMNS)} FROM facts"


def _fact(row: Any) -> dict[str, Any]:
    return dict(zip(_COLUMNS, row, strict=True))


def read_fact(conn: Any, namespace: str, category: str, key: str) -> dict[str, Any] | None:
    """The fact stored under (category, key)."""
    row = conn.execute(f"{_SELECT} WHERE namespace = ? AND category = ? AND key = ?",
                       (namespace, category, key)).fetchone()
    return None if row is None else _fact(row)


def upsert_fact(conn: Any, namespace: str, category: str, key: str, value: str, source: str,
                now: str) -> dict[str, Any]:
    """Insert the fact or replace its value and source; created_at is kept on a replace."""
    with transaction(conn):
        conn.execute(
            "INSERT INTO facts(category, key, value, source, created_at, updated_at, namespace)"
            " VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT(namespace, category, key) DO UPDATE SET"
            " value = excluded.value, source = excluded.source, updated_at = excluded.updated_at",
            (category, key, value, source, now, now, namespace))
        fact = read_fact(conn, namespace, category, key)
        assert fact is not None
        return fact


def list_facts(conn: Any, namespace: str, category: str | None = None) -> list[dict[str, Any]]:
    """The namespace's facts (of one category, when given) by category, then key."""
    if category is None:
        rows = conn.execute(f"{_SELECT} WHERE namespace = ? ORDER BY category, key",
                            (namespace,)).fetchall()
    else:
        rows = conn.execute(f"{_SELECT} WHERE namespace = ? AND category = ? ORDER BY key",
                            (namespace, category)).fetchall()
    return [_fact(row) for row in rows]


def delete_fact(conn: Any, namespace: str, category: str, key: str) -> bool:
    """Delete a fact; False when there was none."""
    with transaction(conn):
        cursor = conn.execute("DELETE FROM facts WHERE namespace = ? AND category = ? AND key = ?",
                              (namespace, category, key))
        return bool(cursor.rowcount > 0)
