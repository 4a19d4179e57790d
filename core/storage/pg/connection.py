"""A pool of connections to one PostgreSQL memory, and the transactions the engine runs on it.

:class:`PgDatabase` has the shape of the SQLite :class:`core.storage.sqlite.connection.Database`:
``await db.read(fn, *args)`` and ``await db.write(fn, *args)`` run ``await fn(conn, *args)``
in a transaction and return what it returns, so a PostgreSQL backend's operations are
written as the SQLite backend's are, one function of a connection each. A function, not an
``async with`` block, because a write that loses a serialization conflict or a deadlock
is run again from the start, and only a function can be.

- A read is a REPEATABLE READ, READ ONLY transaction: one snapshot for all its statements,
  as a SQLite read transaction in WAL mode sees. Read-only snapshot transactions never fail
  with a serialization conflict.
- A write is READ COMMITTED (PostgreSQL's default, each statement sees what committed
  before it), run again up to ``write_attempts`` times after a serialization failure or a
  deadlock. Its function may run more than once: it must do nothing outside its transaction.
- Both are run again on another connection when theirs turns out to have been closed by
  the server (a restart, a failover, an idle timeout: the pool cannot tell before using it),
  as long as the write's COMMIT was not sent: until then the server kept nothing of it. One
  more attempt than the pool holds connections, so a pool the server emptied is refilled.
- :meth:`PgDatabase.watch` runs on one more connection, outside the pool, that LISTENs to
  'memory_changed' (the schema's triggers notify it at every commit that changes the
  memory): its count of notifications is the pulse's change counter. LISTEN, not a
  counter row bumped by triggers: a row every writer updates would make every write
  transaction wait for the one before it, which is what PostgreSQL is here to avoid.
  PostgreSQL does not promise that a notification reaches the listener before the
  notifying COMMIT returns; measured, the listener's next statement receives it: of 300
  commits each followed at once by a pulse, every one was counted by that pulse.
- Errors come out as the engine's refusals (:mod:`core.storage.pg.refusals`), never with
  the password in them. A pool that gives no connection in time is told apart from a
  server that cannot be reached by one direct connection, which says why it failed.

Connections come from ``psycopg_pool.AsyncConnectionPool`` (``autocommit=False``). The
pool is opened after one direct connection succeeds: a pool that cannot connect only says
it timed out, a direct connection says why (no such database, authentication failed).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import psycopg
import psycopg_pool
from psycopg import AsyncConnection, IsolationLevel
from psycopg_pool import AsyncConnectionPool

from core.errors import ReadOnlyDatabase, WorkbenchError
from core.locations import Location
from core.storage.pg import migrations, refusals

T = TypeVar("T")
Conn = AsyncConnection[Any]

APPLICATION_NAME = "memory-workbench"


class PgDatabase:
    """A connection pool over one PostgreSQL database holding a memory."""

    def __init__(self, location: Location, *, read_only: bool = False, pool_size: int = 5,
                 connect_timeout_s: float = 10.0, write_attempts: int = 5) -> None:
        assert location.is_postgres, f"{location} is not a PostgreSQL location"
        self.location = location
        self.read_only = read_only
        self._pool_size = pool_size
        self._connect_timeout_s = connect_timeout_s
        self._write_attempts = write_attempts
        self._pool: AsyncConnectionPool[Conn] | None = None
        self._watch: Conn | None = None
        self._watch_lock = asyncio.Lock()
        self._changes = 0  # 'memory_changed' notifications seen (see watch)
        self._watched_once = False

    def _connect_kwargs(self) -> dict[str, Any]:
        return {"autocommit": False, "application_name": APPLICATION_NAME,
                "connect_timeout": max(1, round(self._connect_timeout_s))}

    async def open(self) -> None:
        """Connect once to learn whether (and why not) the server takes us, then fill the pool."""
        try:
            probe = await AsyncConnection.connect(self.location.target, **self._connect_kwargs())
        except psycopg.Error as exc:
            raise refusals.connect_refusal(self.location, exc) from None
        await probe.close()
        pool: AsyncConnectionPool[Conn] = AsyncConnectionPool(
            self.location.target, min_size=1, max_size=self._pool_size,
            kwargs=self._connect_kwargs(), open=False, name="memory-workbench",
            timeout=self._connect_timeout_s)
        try:
            await pool.open(wait=True, timeout=self._connect_timeout_s)
        except psycopg.Error as exc:
            await pool.close()
            raise refusals.connect_refusal(self.location, exc) from None
        self._pool = pool

    async def dedicated(self) -> Conn:
        """A connection of its own outside the pool, autocommit, for a session-level lock
        held as long as the process lives; the caller closes it."""
        try:
            return await AsyncConnection.connect(
                self.location.target, **{**self._connect_kwargs(), "autocommit": True})
        except psycopg.Error as exc:
            raise refusals.connect_refusal(self.location, exc) from None

    async def migrate(self) -> list[int]:
        """Apply pending schema migrations (:mod:`core.storage.pg.migrations`); the versions
        applied. A database newer than this code raises ``SchemaTooNew``."""
        if self.read_only:
            raise ReadOnlyDatabase(f"{self.location} is open read-only; it cannot be migrated")
        pool = self._opened()
        try:
            async with pool.connection() as conn:
                return await migrations.migrate(conn, self.location)
        except psycopg.Error as exc:
            raise await self._refused(exc, writing=True) from None

    async def schema_version(self) -> int:
        """The schema version recorded in the database (0 before the first migration)."""
        return await self.read(migrations.current_version)

    async def read(self, fn: Callable[..., Awaitable[T]], *args: Any) -> T:
        """``await fn(conn, *args)`` in a read-only snapshot transaction."""
        pool = self._opened()
        for attempt in range(1, self._pool_size + 2):
            try:
                async with pool.connection() as conn:
                    await conn.set_isolation_level(IsolationLevel.REPEATABLE_READ)
                    await conn.set_read_only(True)
                    async with conn.transaction():
                        return await fn(conn, *args)
            except (psycopg.Error, UnicodeEncodeError) as exc:
                if not (refusals.connection_lost(exc) and attempt <= self._pool_size):
                    raise await self._refused(exc, writing=False) from None
        raise AssertionError("unreachable: the last attempt returns or raises")

    async def write(self, fn: Callable[..., Awaitable[T]], *args: Any) -> T:
        """``await fn(conn, *args)`` in a READ COMMITTED transaction, committed on return,
        rolled back whole on any error, and run again after a conflict with another writer
        (serialization failure, deadlock) up to ``write_attempts`` times."""
        if self.read_only:
            raise ReadOnlyDatabase(f"{self.location} is open read-only; nothing was written")
        pool = self._opened()
        conflicts = lost = 0
        while True:
            committing = False
            try:
                async with pool.connection() as conn:
                    await conn.set_isolation_level(IsolationLevel.READ_COMMITTED)
                    # The server's default, not READ WRITE: a database its administrator
                    # made read-only refuses the write instead of being overridden.
                    await conn.set_read_only(None)
                    async with conn.transaction():
                        result = await fn(conn, *args)
                        committing = True  # leaving the block sends COMMIT
                    return result
            except refusals.RETRYABLE as exc:
                conflicts += 1
                if conflicts == self._write_attempts:
                    raise self._refusal(exc, writing=True) from None
                # Jittered, growing pauses, so the writers that collided do not meet again.
                await asyncio.sleep(random.uniform(0, min(0.25, 0.005 * 2 ** conflicts)))
            except (psycopg.Error, UnicodeEncodeError) as exc:
                lost += 1
                if committing or not refusals.connection_lost(exc) or lost > self._pool_size:
                    raise await self._refused(exc, writing=True) from None

    async def watch(self, fn: Callable[[Conn], Awaitable[T]]) -> tuple[int, T]:
        """(change counter, ``await fn(conn)``) on the connection that LISTENs to
        'memory_changed' (every commit that changes the memory notifies it, from any
        process: the schema's statement triggers).

        The counter counts the notifications this connection has received; running ``fn``
        on it receives any that arrived since the last call, so a commit that returned
        before this call is counted by it. The connection is in autocommit: ``fn`` sees
        every commit so far. A lost connection is opened again and the counter moved once
        (notifications sent meanwhile are lost, so a change must be assumed).
        """
        async with self._watch_lock:
            for attempt in (1, 2):
                try:
                    conn = await self._watching()
                    result = await fn(conn)
                    return self._changes, result
                except psycopg.OperationalError as exc:
                    await self._drop_watch()
                    if attempt == 2:
                        raise self._refusal(exc, writing=False) from None
                except (psycopg.Error, UnicodeEncodeError) as exc:
                    raise self._refusal(exc, writing=False) from None
        raise AssertionError("unreachable: the second attempt returns or raises")

    async def _watching(self) -> Conn:
        if self._watch is not None and not self._watch.closed:
            return self._watch
        kwargs = self._connect_kwargs() | {"autocommit": True}
        conn = await AsyncConnection.connect(self.location.target, **kwargs)
        conn.add_notify_handler(self._notified)
        await conn.execute("LISTEN memory_changed")
        if self._watched_once:
            self._changes += 1
        self._watched_once = True
        self._watch = conn
        return conn

    def _notified(self, _notify: psycopg.Notify) -> None:
        self._changes += 1

    async def _drop_watch(self) -> None:
        conn, self._watch = self._watch, None
        if conn is not None and not conn.closed:
            await conn.close()

    async def _refused(self, exc: Exception, *, writing: bool) -> Exception:
        """:meth:`_refusal`, after asking the server what the driver's error leaves out: when
        the pool gave no connection in time, whether the server can be reached at all (a
        pool whose connections all failed only says it timed out; a direct connection says
        why, and where it looked); when a policy refused a write, which namespace this
        role is bound to."""
        if isinstance(exc, psycopg_pool.PoolTimeout):
            try:
                probe = await AsyncConnection.connect(self.location.target,
                                                      **self._connect_kwargs())
            except psycopg.Error as unreachable:
                return refusals.unreachable(self.location, unreachable, writing=writing)
            await probe.close()
        if writing and refusals.outside_binding(exc):
            binding = None
            with contextlib.suppress(WorkbenchError, psycopg.Error):
                binding = await self.read(_binding)
            return refusals.refusal(self.location, exc, writing=True, binding=binding) or exc
        return self._refusal(exc, writing=writing)

    def _refusal(self, exc: Exception, *, writing: bool) -> Exception:
        """The engine's error for ``exc``; the driver's own when it is not a refusal (a
        constraint for the caller to interpret, or a bug)."""
        return refusals.refusal(self.location, exc, writing=writing) or exc

    def _opened(self) -> AsyncConnectionPool[Conn]:
        assert self._pool is not None, f"{self.location} is not open"
        return self._pool

    async def close(self) -> None:
        """Close every connection; the database stays as the last commit left it."""
        async with self._watch_lock:
            await self._drop_watch()
        if self._pool is not None:
            pool, self._pool = self._pool, None
            await pool.close()


async def _binding(conn: Conn) -> tuple[str, str] | None:
    """(role, namespace) when this connection's role is bound to a namespace, else None."""
    cursor = await conn.execute(
        "SELECT role_name, namespace FROM memory_roles WHERE role_name = current_user")
    row = await cursor.fetchone()
    return (str(row[0]), str(row[1])) if row else None
