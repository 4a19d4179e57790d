"""SQL for the retrieval log and the relevance judgments (migration 0002)."""

from __future__ import annotations

from typing import Any

from core.storage.log_rows import LogEntry, LogRow, log_entry
from core.storage.sqlite.connection import transaction


def append_logs(conn: Any, rows: list[LogRow]) -> None:
    """Record queries, in order, in one transaction."""
    with transaction(conn):
        conn.executemany(
            "INSERT INTO retrieval_log(created_at, caller, scope_kind, scope_value, query,"
            " params_json, results_json, timings_json) VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)


def read_log(conn: Any, limit: int, caller: str | None, scope_kind: str | None,
             scope_value: str | None, log_id: int | None = None) -> list[LogEntry]:
    """Log entries, newest first, optionally by caller, scope or id."""
    clauses: list[str] = []
    params: list[Any] = []
    if log_id is not None:
        clauses.append("log_id = ?")
        params.append(log_id)
    if caller is not None:
        clauses.append("caller = ?")
        params.append(caller)
    if scope_kind is not None:
        clauses.append("scope_kind = ? AND scope_value = ?")
        params += [scope_kind, scope_value]
    where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
    rows = conn.execute(
        "SELECT log_id, created_at, caller, scope_kind, scope_value, query, params_json,"
        f" results_json, timings_json FROM retrieval_log {where}"
        " ORDER BY created_at DESC, log_id DESC LIMIT ?", [*params, limit]).fetchall()
    return [log_entry(row) for row in rows]


def set_judgment(conn: Any, scope_kind: str, scope_value: str, query: str, chunk_id: str,
                 grade: int, now: str) -> None:
    """Record (or change) how relevant a chunk is to a query in a scope; grade 0 to 3."""
    with transaction(conn):
        conn.execute(
            "INSERT INTO relevance_judgments(scope_kind, scope_value, query, chunk_id, grade,"
            " created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)"
            " ON CONFLICT(scope_kind, scope_value, query, chunk_id) DO UPDATE SET"
            " grade = excluded.grade, updated_at = excluded.updated_at",
            (scope_kind, scope_value, query, chunk_id, grade, now, now))


def read_scope_judgments(conn: Any, scope_kind: str, scope_value: str,
                         ) -> dict[str, dict[str, int]]:
    """query -> {chunk_id: grade} for every judged query of one scope, queries in the
    order they were first judged."""
    judged: dict[str, dict[str, int]] = {}
    for query, chunk_id, grade in conn.execute(
            "SELECT query, chunk_id, grade FROM relevance_judgments WHERE scope_kind = ? AND"
            " scope_value = ? ORDER BY judgment_id", (scope_kind, scope_value)).fetchall():
        judged.setdefault(query, {})[chunk_id] = grade
    return judged


def read_judgments(conn: Any, scope_kind: str, scope_value: str, query: str) -> dict[str, int]:
    """chunk_id -> grade for one query in one scope."""
    return dict(conn.execute(
        "SELECT chunk_id, grade FROM relevance_judgments WHERE scope_kind = ? AND"
        " scope_value = ? AND query = ?", (scope_kind, scope_value, query)).fetchall())
