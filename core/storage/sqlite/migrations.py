"""Versioned SQL migrations: named, ordered, transactional, recorded in ``memory_migrations``.

Migrations are the ``NNNN_name.sql`` files beside this module. Each is applied in its own
transaction together with its ``memory_migrations`` row, so a crash leaves the file at the
previous version, never between two.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from core.errors import SchemaTooNew
from core.storage import fts_rows
from core.storage.rows import Migration, migrations_in, schema_too_new_message


def available_migrations() -> list[Migration]:
    """Every SQLite migration shipped with this code (the files beside this module), in
    version order."""
    return migrations_in("core.storage.sqlite")


def latest_version() -> int:
    """The schema version this code writes."""
    return available_migrations()[-1].version


def current_version(conn: Any) -> int:
    """The schema version recorded in the file (0 for a new file)."""
    exists = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'memory_migrations'"
    ).fetchone()
    if not exists:
        return 0
    row = conn.execute("SELECT max(version) FROM memory_migrations").fetchone()
    return int(row[0] or 0)


def migrate(conn: Any, path: object = "database") -> list[int]:
    """Apply pending migrations; return the versions applied. Refuses a newer file."""
    known = available_migrations()
    applied: list[int] = []
    if current_version(conn) == known[-1].version:
        # Up to date, as nearly every open finds it: no write lock taken, so opening a file
        # another process is writing waits for nothing.
        return applied
    # Functions the migration scripts call to build full-text rows the way the write path does.
    conn.create_function("memory_session_prefix", 1, fts_rows.session_prefix, deterministic=True)
    conn.create_function("memory_prefixed", 2, fts_rows.prefixed, deterministic=True)
    conn.execute(
        "CREATE TABLE IF NOT EXISTS memory_migrations ("
        " version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
    )
    for migration in known:
        # BEGIN IMMEDIATE takes the write lock first, so two processes opening a new file
        # at once apply each migration exactly once: the second sees the first's row.
        conn.execute("BEGIN IMMEDIATE")
        try:
            version = current_version(conn)
            if version > known[-1].version:
                raise SchemaTooNew(schema_too_new_message(path, version, known[-1].version))
            if migration.version <= version:
                conn.execute("ROLLBACK")
                continue
            for statement in split_statements(migration.sql):
                conn.execute(statement)
            conn.execute(
                "INSERT INTO memory_migrations(version, name, applied_at) VALUES (?, ?, ?)",
                (migration.version, migration.name, datetime.now(UTC).isoformat()),
            )
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:  # SQLITE_FULL may have rolled it back already
                conn.execute("ROLLBACK")
            raise
        applied.append(migration.version)
    return applied


def split_statements(script: str) -> list[str]:
    """Split a SQL script into complete statements (triggers keep their inner semicolons)."""
    from core.storage.sqlite.connection import sqlite_module

    complete = sqlite_module().complete_statement
    statements: list[str] = []
    pending = ""
    for line in script.splitlines(keepends=True):
        if not pending and line.strip().startswith("--"):
            continue
        pending += line
        if complete(pending):
            if pending.strip():
                statements.append(pending.strip())
            pending = ""
    if pending.strip():
        statements.append(pending.strip())
    return statements
