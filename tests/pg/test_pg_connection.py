"""PgDatabase: reads in a snapshot, writes committed whole or not at all, conflicts retried,
and every refusal the engine's own error, with no password in it."""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
import traceback
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from psycopg import AsyncConnection, sql
from psycopg import errors as pg_errors

from core.errors import (
    InvalidInput,
    MemoryBusy,
    ReadOnlyDatabase,
    StorageFull,
    StorageUnavailable,
)
from core.locations import parse_location
from core.storage.pg import refusals, vectors
from core.storage.pg.connection import PgDatabase
from tests.pg_server import FOLDER_PREFIX, PgTestServer, start_server

Conn = AsyncConnection[Any]


async def add_session(conn: Conn, session_id: str, agent: str = "agent") -> None:
    await conn.execute("INSERT INTO sessions(session_id, agent_identity) VALUES (%s, %s)",
                       (session_id, agent))


async def session_ids(conn: Conn) -> list[str]:
    cursor = await conn.execute("SELECT session_id FROM sessions ORDER BY session_id")
    return [row[0] for row in await cursor.fetchall()]


async def test_a_write_commits_whole_or_not_at_all(pg_db: PgDatabase) -> None:
    await pg_db.write(add_session, "kept")

    async def half_then_fail(conn: Conn) -> None:
        await add_session(conn, "lost")
        raise RuntimeError("the engine changed its mind")

    with pytest.raises(RuntimeError):
        await pg_db.write(half_then_fail)
    assert await pg_db.read(session_ids) == ["kept"]


async def test_a_read_sees_one_snapshot_and_may_not_write(pg_db: PgDatabase) -> None:
    seen_twice: list[list[str]] = []

    async def read_twice(conn: Conn) -> None:
        seen_twice.append(await session_ids(conn))
        await pg_db.write(add_session, "written-between")  # commits on another connection
        seen_twice.append(await session_ids(conn))

    await pg_db.read(read_twice)
    assert seen_twice == [[], []]
    assert await pg_db.read(session_ids) == ["written-between"]
    with pytest.raises(pg_errors.ReadOnlySqlTransaction):  # a bug, surfaced as one
        await pg_db.read(add_session, "from-a-read")


async def test_a_deadlock_is_retried_until_both_writes_commit(
        pg_db: PgDatabase, pg_server: PgTestServer) -> None:
    for session_id in ("left", "right"):
        await pg_db.write(add_session, session_id)
    both_locked_one = asyncio.Barrier(2)
    attempts: list[str] = []

    async def touch(conn: Conn, first: str, second: str) -> None:
        attempts.append(first)
        # Detected in 50 ms rather than the server's default second.
        await conn.execute("SET LOCAL deadlock_timeout = '50ms'")
        await conn.execute("UPDATE sessions SET updated_at = 'x' WHERE session_id = %s",
                           (first,))
        if len(attempts) <= 2:  # the first round: make sure they cross
            await both_locked_one.wait()
        await conn.execute("UPDATE sessions SET updated_at = 'y' WHERE session_id = %s",
                           (second,))

    await asyncio.gather(pg_db.write(touch, "left", "right"),
                         pg_db.write(touch, "right", "left"))
    assert len(attempts) == 3  # one of the two was chosen as the victim and ran again


async def _close_every_connection(url: str) -> int:
    """What a server restart or failover does to the pool: every other connection to the
    test's database closed by the server; how many were."""
    async with await AsyncConnection.connect(url, autocommit=True) as admin:
        cursor = await admin.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()")
        row = await cursor.fetchone()
    assert row is not None
    return int(row[0])


async def test_connections_the_server_closed_are_replaced_without_a_refusal(
        pg_db: PgDatabase, pg_url: str) -> None:
    async def held(conn: Conn) -> None:  # several at once: the pool grows to its size
        await conn.execute("SELECT pg_sleep(0.2)")

    await asyncio.gather(*(pg_db.read(held) for _ in range(4)))
    assert await _close_every_connection(pg_url) >= 1
    for name in ("after-1", "after-2", "after-3"):
        await pg_db.write(add_session, name)
    assert await pg_db.read(session_ids) == ["after-1", "after-2", "after-3"]
    await _close_every_connection(pg_url)
    assert await pg_db.read(session_ids) == ["after-1", "after-2", "after-3"]


async def test_a_write_that_keeps_losing_its_connection_is_refused_and_keeps_nothing(
        pg_db: PgDatabase) -> None:
    runs = 0

    async def doomed(conn: Conn) -> None:
        nonlocal runs
        runs += 1
        await add_session(conn, f"doomed-{runs}")
        await conn.execute("SELECT pg_terminate_backend(pg_backend_pid())")

    with pytest.raises(StorageUnavailable, match="connection"):
        await pg_db.write(doomed)
    assert runs == pg_db._pool_size + 1  # run again on as many connections as the pool holds
    assert await pg_db.read(session_ids) == []


async def test_a_conflict_that_never_ends_is_a_refusal(pg_url: str) -> None:
    db = PgDatabase(parse_location(pg_url), write_attempts=3)
    await db.open()
    calls = 0

    async def always_conflicting(conn: Conn) -> None:
        nonlocal calls
        calls += 1
        raise pg_errors.SerializationFailure("could not serialize access")

    try:
        with pytest.raises(MemoryBusy, match="the memory is busy .*kept conflicting") as busy:
            await db.write(always_conflicting)
        assert "nothing was written; try again" in str(busy.value)
        assert calls == 3
    finally:
        await db.close()


async def test_a_read_only_server_refuses_writes_as_read_only(
        pg_db: PgDatabase, pg_server: PgTestServer) -> None:
    name = urlsplit(pg_db.location.target).path.lstrip("/")
    with pg_server.admin() as admin:
        admin.execute(sql.SQL("ALTER DATABASE {} SET default_transaction_read_only = on")
                      .format(sql.Identifier(name)))
    db = PgDatabase(pg_db.location)
    await db.open()
    try:
        with pytest.raises(ReadOnlyDatabase, match="nothing was written"):
            await db.write(add_session, "refused")
        assert await db.read(session_ids) == []
    finally:
        await db.close()


async def test_a_role_without_grants_is_refused_by_name_of_what_it_tried(
        pg_db: PgDatabase, pg_server: PgTestServer) -> None:
    role = "reader_without_grants"
    with pg_server.admin() as admin:
        admin.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(role)))
    db = PgDatabase(parse_location(pg_db.location.target.replace("postgres:@", f"{role}:@")))
    await db.open()
    try:
        with pytest.raises(ReadOnlyDatabase, match="This role may not write"):
            await db.write(add_session, "refused")
        with pytest.raises(StorageUnavailable, match="may not read"):
            await db.read(session_ids)
    finally:
        await db.close()
        with pg_server.admin() as admin:
            admin.execute(sql.SQL("DROP OWNED BY {}; DROP ROLE {}").format(
                sql.Identifier(role), sql.Identifier(role)))


async def test_a_database_opened_read_only_writes_nothing(pg_db: PgDatabase) -> None:
    db = PgDatabase(pg_db.location, read_only=True)
    await db.open()
    try:
        with pytest.raises(ReadOnlyDatabase):
            await db.write(add_session, "refused")
        with pytest.raises(ReadOnlyDatabase):
            await db.migrate()
    finally:
        await db.close()


@pytest.mark.parametrize("text", ["nul\x00inside", "lone \ud800 surrogate"])
async def test_text_postgres_cannot_hold_is_invalid_input(pg_db: PgDatabase, text: str) -> None:
    with pytest.raises(InvalidInput, match="nothing was read or written"):
        await pg_db.write(add_session, text)


def shown(exc: BaseException) -> str:
    """Everything a person could see of ``exc``: its message and its whole traceback."""
    return "".join(traceback.format_exception(exc))


@pytest.mark.parametrize("url", [
    # libpq quotes the whole URL when it cannot parse it
    "postgresql://agent:hunter2@[unclosed/memory",
    "postgresql://agent@[unclosed/memory?password=hunter2",
])
async def test_an_unreadable_url_is_refused_without_its_password(url: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        await PgDatabase(parse_location(url)).open()
    assert "hunter2" not in shown(refused.value)
    assert "***" in str(refused.value) or "postgresql://***" in str(refused.value)


async def test_a_refused_connection_is_unavailable_without_its_password(
        pg_server: PgTestServer) -> None:
    # A role named like the password makes the server's own message carry it.
    url = pg_server.url("memory").replace("postgres:@", "hunter2:hunter2@")
    with pytest.raises(StorageUnavailable) as refused:
        await PgDatabase(parse_location(url), connect_timeout_s=5).open()
    assert 'role "***" does not exist' in str(refused.value)
    assert 'role "hunter2"' not in shown(refused.value)  # nor in a chained driver error


def test_server_refusals_become_the_engines_errors_without_the_password() -> None:
    location = parse_location("postgresql://agent:hunter2@db/memory")
    disk_full = pg_errors.DiskFull("could not extend file: No space left (hunter2)")
    refusal = refusals.refusal(location, disk_full, writing=True)
    assert isinstance(refusal, StorageFull)
    assert "hunter2" not in str(refusal) and "SQLSTATE 53100" in str(refusal)
    lost = pg_errors.AdminShutdown("terminating connection due to administrator command")
    assert isinstance(refusals.refusal(location, lost, writing=True), StorageUnavailable)
    assert "may or may not" in str(refusals.refusal(location, lost, writing=True))
    unique = pg_errors.UniqueViolation("duplicate key value")
    assert refusals.refusal(location, unique, writing=True) is None  # the caller's to read


async def test_a_worker_whose_liveness_connection_the_server_closed_takes_its_lock_again(
        pg_url: str) -> None:
    from core import Engine
    from tests.conftest import DETERMINISTIC

    async def claimer_locks() -> int:
        async with await AsyncConnection.connect(pg_url, autocommit=True) as admin:
            cursor = await admin.execute(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted"
                " AND classid = %s::oid AND database = (SELECT oid FROM pg_database"
                " WHERE datname = current_database())", (vectors.CLAIMER_LOCK,))
            row = await cursor.fetchone()
        assert row is not None
        return int(row[0])

    # No embedding worker: its poll (every 2 s) would take the lock again on its own, at
    # any moment between the connections' closing and the count that says they are gone.
    async with Engine.open(pg_url, config=DETERMINISTIC, start_worker=False) as engine:
        backend: Any = engine.backend
        assert await claimer_locks() == 1
        await _close_every_connection(pg_url)
        assert await claimer_locks() == 0  # its leases look abandoned to other workers
        await backend.pending_chunks(10)
        assert await claimer_locks() == 1


async def test_a_lock_held_past_lock_timeout_is_a_busy_refusal(pg_db: PgDatabase,
                                                               pg_url: str) -> None:
    await pg_db.write(add_session, "held")

    async def touch(conn: Conn) -> None:
        await conn.execute("SET LOCAL lock_timeout = '100ms'")
        await conn.execute("UPDATE sessions SET updated_at = 'x' WHERE session_id = 'held'")
        await add_session(conn, "after")

    async with await AsyncConnection.connect(pg_url) as other:
        await other.execute("SELECT 1 FROM sessions WHERE session_id = 'held' FOR UPDATE")
        with pytest.raises(MemoryBusy, match="the memory is busy .*lock_timeout") as busy:
            await pg_db.write(touch)
        assert "nothing was written; try again" in str(busy.value)
        await other.rollback()
    assert await pg_db.read(session_ids) == ["held"]
    await pg_db.write(touch)
    assert await pg_db.read(session_ids) == ["after", "held"]


async def test_a_server_that_stopped_is_said_to_be_unreachable_not_saturated() -> None:
    parent = Path("/dev/shm") if Path("/dev/shm").is_dir() else Path(tempfile.gettempdir())
    folder = Path(tempfile.mkdtemp(prefix=f"{FOLDER_PREFIX}{os.getpid()}-",
                                   dir=parent))
    try:
        server = start_server(folder)
        try:
            db = PgDatabase(parse_location(server.url()), pool_size=2, connect_timeout_s=1)
            await db.open()
            await db.read(select_one)
        finally:
            server.stop()
        try:
            for attempt in (db.read(select_one), db.write(select_one)):
                with pytest.raises(StorageUnavailable) as refused:
                    await attempt
                text = str(refused.value)
                assert text.startswith("cannot reach the PostgreSQL server"), text
                assert str(folder) in text  # the socket it looked for
                assert "saturated" not in text and "\n" not in text
        finally:
            await db.close()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


async def select_one(conn: Conn) -> None:
    await conn.execute("SELECT 1")


async def test_a_bound_role_whose_config_names_another_agent_is_told_the_cause(
        pg_url: str) -> None:
    from core import Engine
    from core.errors import OutOfNamespace
    from tests.conftest import DETERMINISTIC
    from tests.pg.test_pg_roles import alpha_bound

    async with alpha_bound(pg_url, DETERMINISTIC) as url:
        # The config's agent is "default"; the role is bound to "alpha".
        async with Engine.open(url, config=DETERMINISTIC, start_worker=False) as engine:
            with pytest.raises(OutOfNamespace) as refused:
                await engine.append("mine", {"role": "user", "content": "hello"})
            text = str(refused.value)
            assert "Role 'agent_alpha' is bound to one namespace, 'alpha'" in text, text
            assert "set agent = 'alpha'" in text and "nothing was written" in text
            assert "'beta'" not in text and "\n" not in text
        async with Engine.open(url, config={**DETERMINISTIC, "agent": "alpha"},
                               start_worker=False) as engine:
            await engine.append("mine", {"role": "user", "content": "hello"})
