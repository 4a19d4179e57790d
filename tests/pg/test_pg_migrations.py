"""The PostgreSQL schema: applied in one transaction, recorded, idempotent, safe from two
processes at once, refused when newer than the code, and equivalent to the SQLite one."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from psycopg import AsyncConnection, sql

from core.errors import ExtensionMissing, SchemaTooNew
from core.locations import parse_location
from core.storage.pg import migrations
from core.storage.pg.connection import PgDatabase
from core.storage.rows import Migration, schema_too_new_message
from core.storage.sqlite import migrations as sqlite_migrations
from core.storage.sqlite.connection import open_connection
from tests.pg_server import PgTestServer

REPO = Path(__file__).resolve().parents[2]


async def fetch(db: PgDatabase, query: str, *params: Any) -> list[tuple[Any, ...]]:
    async def run(conn: AsyncConnection[Any]) -> list[tuple[Any, ...]]:
        cursor = await conn.execute(query.encode(), params or None)
        return await cursor.fetchall()
    return await db.read(run)


async def opened(url: str) -> PgDatabase:
    db = PgDatabase(parse_location(url))
    await db.open()
    return db


async def test_migrations_apply_once_and_are_recorded_like_sqlite_ones(pg_url: str) -> None:
    db = await opened(pg_url)
    try:
        assert await db.schema_version() == 0
        assert await db.migrate() == [m.version for m in migrations.available_migrations()]
        ledger = await fetch(db, "SELECT version, name, applied_at FROM memory_migrations")
        assert [(v, n) for v, n, _ in ledger] == [(1, "initial"), (2, "chunk_terms"),
                                                (3, "chunk_changes"), (4, "fixed_search_path"),
                                                (5, "framework_memory")]
        assert ledger[0][2].endswith("+00:00")  # the SQLite runner's isoformat, in UTC
        assert await db.migrate() == []
        assert await db.schema_version() == migrations.latest_version()
        assert len(await fetch(db, "SELECT * FROM memory_migrations")) == 5
    finally:
        await db.close()


async def test_a_failing_migration_leaves_the_database_as_it_was(
        pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    broken = [*migrations.available_migrations(),
              Migration(2, "broken", "CREATE TABLE extra (x INTEGER); SELECT 1 / 0;")]
    monkeypatch.setattr(migrations, "available_migrations", lambda: broken)
    db = await opened(pg_url)
    try:
        with pytest.raises(Exception, match="division by zero"):
            await db.migrate()
        assert await db.schema_version() == 0
        tables = await fetch(db, "SELECT table_name FROM information_schema.tables"
                                 " WHERE table_schema = current_schema()")
        assert tables == []  # the first migration rolled back with the second
    finally:
        await db.close()


async def test_a_schema_newer_than_the_code_is_refused_with_the_sqlite_message(
        pg_url: str) -> None:
    location = parse_location(pg_url + "&password=hunter2")  # trust auth: accepted, unused
    db = PgDatabase(location)
    await db.open()
    try:
        await db.migrate()
        newer = migrations.latest_version() + 1

        async def record_newer(conn: AsyncConnection[Any]) -> None:
            await conn.execute("INSERT INTO memory_migrations VALUES (%s, 'future', 'now')",
                               (newer,))
        await db.write(record_newer)
        with pytest.raises(SchemaTooNew) as refused:
            await db.migrate()
        assert str(refused.value) == schema_too_new_message(
            location, newer, migrations.latest_version())
        assert "hunter2" not in str(refused.value) and "read-only" in str(refused.value)
    finally:
        await db.close()


_RACER = """
import asyncio, sys, time
from pathlib import Path
from core.locations import parse_location
from core.storage.pg.connection import PgDatabase

async def main(url: str, ready: str, go: str) -> None:
    db = PgDatabase(parse_location(url))
    await db.open()
    Path(ready).touch()
    deadline = time.monotonic() + 60  # a test that died before releasing us: give up
    while not Path(go).exists():
        if time.monotonic() > deadline:
            sys.exit("never released")
        await asyncio.sleep(0.002)
    print(await db.migrate())
    await db.close()

asyncio.run(main(*sys.argv[1:4]))
"""


async def test_two_processes_migrating_at_once_apply_each_migration_once(
        pg_url: str, tmp_path: Path) -> None:
    go = tmp_path / "go"
    racers = [subprocess.Popen([sys.executable, "-c", _RACER, pg_url, str(tmp_path / f"r{i}"),
                                str(go)], cwd=REPO, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True) for i in range(2)]
    deadline = time.monotonic() + 30
    while not all((tmp_path / f"r{i}").exists() for i in range(2)):
        assert time.monotonic() < deadline, "the racers never connected"
        assert all(racer.poll() is None for racer in racers), racers[0].communicate()
        time.sleep(0.01)
    go.touch()  # both are connected: release them together
    outcomes = [racer.communicate(timeout=60) for racer in racers]
    assert [racer.returncode for racer in racers] == [0, 0], outcomes
    applied = sorted(out.strip() for out, _ in outcomes)
    assert applied == ["[1, 2, 3, 4, 5]", "[]"]
    db = await opened(pg_url)
    try:
        versions = await fetch(db, "SELECT version FROM memory_migrations")
        assert versions == [(1,), (2,), (3,), (4,), (5,)]
    finally:
        await db.close()


async def test_a_role_that_may_not_install_pgvector_is_told_who_can(
        pg_server: PgTestServer) -> None:
    name = pg_server.create_database(template="template0")  # no vector extension
    role = f"{name}_owner"
    with pg_server.admin() as admin:
        admin.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(role)))
        admin.execute(sql.SQL("ALTER DATABASE {} OWNER TO {}").format(
            sql.Identifier(name), sql.Identifier(role)))
    url = pg_server.url(name).replace("postgres:@", f"{role}:@", 1)
    db = await opened(url)
    try:
        with pytest.raises(ExtensionMissing, match="CREATE EXTENSION vector"):
            await db.migrate()
        assert await db.schema_version() == 0
    finally:
        await db.close()
        pg_server.drop_database(name)
        with pg_server.admin() as admin:
            admin.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))


def sqlite_columns(path: Path) -> dict[str, set[str]]:
    """Every table's columns in a SQLite memory at the latest schema (virtual FTS tables
    and their shadow tables left out: PostgreSQL has a tsvector column instead)."""
    conn = open_connection(path, read_only=False, busy_timeout_ms=5000)
    try:
        sqlite_migrations.migrate(conn, path)
        names = [row[0] for row in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'"
            " AND name NOT LIKE 'sqlite_%' AND name NOT LIKE 'chunks_fts%'")]
        return {name: {row[1] for row in conn.execute(f"PRAGMA table_info({name})")}
                for name in names}
    finally:
        conn.close()


async def test_every_sqlite_table_and_column_has_its_postgres_twin(
        pg_db: PgDatabase, tmp_path: Path) -> None:
    expected = sqlite_columns(tmp_path / "memory.db")
    # sqlite-vec's chunks_vec is made at open; its columns are these
    # (core/storage/sqlite/vectors.py).
    expected["chunks_vec"] = {"chunk_id", "agent_identity", "session_id", "embedding_blob",
                              "embedding_model"}
    found: dict[str, set[str]] = {}
    for table, column in await fetch(pg_db, "SELECT table_name, column_name"
                                            " FROM information_schema.columns"
                                            " WHERE table_schema = current_schema()"):
        found.setdefault(table, set()).add(column)
    missing = {table: columns - found.get(table, set())
               for table, columns in expected.items() if columns - found.get(table, set())}
    assert missing == {}


async def test_columns_keep_sqlite_values_and_order(pg_db: PgDatabase) -> None:
    columns = await fetch(pg_db, "SELECT table_name, column_name, data_type, collation_name"
                                 " FROM information_schema.columns"
                                 " WHERE table_schema = current_schema()")
    # SQLite's REAL is 8 bytes; PostgreSQL's "real" would round every importance.
    assert [c[:2] for c in columns if c[2] == "real"] == []
    # Byte order everywhere, as SQLite's BINARY collation sorts, whatever the locale.
    assert [c[:2] for c in columns if c[2] == "text" and c[3] != "C"] == []
    # Times are text, so a moved memory keeps every created_at as written.
    assert [c[:2] for c in columns if c[2].startswith("timestamp")] == []
