"""Versioned migrations of a PostgreSQL memory: ordered, applied together, recorded.

The migrations are the ``NNNN_name.sql`` files beside this module. Unlike the SQLite runner
(:mod:`core.storage.sqlite.migrations`, one transaction a migration, because SQLite's writer lock
already serialises two openers), every pending migration is applied in ONE transaction that
first takes a transaction-scoped advisory lock: PostgreSQL's DDL is transactional, so a
crash or an error leaves the database at the version it had, and two processes opening a
new database at once queue on the lock instead of both creating the same tables. The one
that waits then sees the other's rows in ``memory_migrations`` (READ COMMITTED reads what
committed before each statement) and applies nothing.

``memory_migrations`` has the SQLite table's columns, and a database newer than this code
raises :class:`~core.errors.SchemaTooNew` with the SQLite side's message, so the caller can
open it read-only the same way.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from psycopg import AsyncConnection, IsolationLevel
from psycopg import errors as pg_errors

from core.errors import ExtensionMissing, SchemaTooNew
from core.storage.rows import Migration, migrations_in, schema_too_new_message

# The advisory lock every migrating process takes: "memwb-m" in ASCII, an arbitrary
# constant that no other application on a shared server is likely to use.
MIGRATION_LOCK = int.from_bytes(b"memwb-m", "big")

# The SQLite runner's ledger, its text in byte order as the schema's is (0001_initial.sql).
_CREATE_LEDGER = ("CREATE TABLE memory_migrations (version INTEGER PRIMARY KEY,"
                  ' name TEXT COLLATE "C" NOT NULL, applied_at TEXT COLLATE "C" NOT NULL)')


def available_migrations() -> list[Migration]:
    """Every PostgreSQL migration shipped with this code, in version order."""
    return migrations_in("core.storage.pg")


def latest_version() -> int:
    """The schema version this code writes."""
    return available_migrations()[-1].version


async def current_version(conn: AsyncConnection[Any]) -> int:
    """The schema version recorded in the database (0 for a new one)."""
    cursor = await conn.execute("SELECT to_regclass('memory_migrations') IS NOT NULL")
    exists = await cursor.fetchone()
    if not exists or not exists[0]:
        return 0
    cursor = await conn.execute("SELECT max(version) FROM memory_migrations")
    row = await cursor.fetchone()
    return int(row[0] or 0) if row else 0


async def migrate(conn: AsyncConnection[Any], location: object = "database") -> list[int]:
    """Apply pending migrations on ``conn`` (idle, not autocommit) and return the versions
    applied. Raises ``SchemaTooNew`` for a database newer than this code, and
    ``ExtensionMissing`` when pgvector is not installed and cannot be."""
    assert not conn.autocommit, "migrations need one transaction: give a non-autocommit conn"
    # The re-read after the lock must see what another process committed while we waited.
    await conn.set_isolation_level(IsolationLevel.READ_COMMITTED)
    await conn.set_read_only(None)
    known = available_migrations()
    latest = known[-1].version
    async with conn.transaction():
        version = await current_version(conn)
        _refuse_newer(location, version, latest)
        if version == latest:
            return []  # the usual open: no lock taken, nothing written
        await conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
        version = await current_version(conn)
        _refuse_newer(location, version, latest)
        pending = [m for m in known if m.version > version]
        if pending:
            await _install_pgvector(conn, location)
        if version == 0 and pending:
            await conn.execute(_CREATE_LEDGER)
        for migration in pending:
            await conn.execute(migration.sql.encode("utf-8"))
            await conn.execute(
                "INSERT INTO memory_migrations(version, name, applied_at) VALUES (%s, %s, %s)",
                (migration.version, migration.name, datetime.now(UTC).isoformat()))
        return [m.version for m in pending]


def _refuse_newer(location: object, found: int, known: int) -> None:
    if found > known:
        raise SchemaTooNew(schema_too_new_message(location, found, known))


async def _install_pgvector(conn: AsyncConnection[Any], location: object) -> None:
    """Make sure pgvector is installed in the database, or say who can install it.

    The first migration creates the extension too (so the script stands alone); doing it
    here first, in a savepoint, turns the server's refusal into a message that says what to
    do, rather than a privilege error in the middle of a schema script.
    """
    cursor = await conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'")
    if await cursor.fetchone():
        return
    try:
        async with conn.transaction():
            await conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    except pg_errors.InsufficientPrivilege:
        raise ExtensionMissing(
            f"{location}: pgvector is not installed in this database and this role may not "
            "install it; ask an administrator to run CREATE EXTENSION vector in it") from None
    except (pg_errors.UndefinedFile, pg_errors.FeatureNotSupported):
        raise ExtensionMissing(
            f"{location}: the server has no pgvector extension; install pgvector "
            "(https://github.com/pgvector/pgvector) on the server, then open it again"
        ) from None
