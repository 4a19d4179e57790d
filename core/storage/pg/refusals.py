"""How PostgreSQL (and psycopg) refuse a request, turned into the engine's own errors.

The same refusals the SQLite side makes (:mod:`core.storage.sqlite.refusals`): a full disk is
``StorageFull``, a server that may not be written (a replica, a read-only role) is
``ReadOnlyDatabase``, text the driver cannot send is ``InvalidInput``, a lock held past the
server's ``lock_timeout`` or a conflict that outlasted every attempt is ``MemoryBusy``; what
only a server has (unreachable, authentication, a dropped connection) is
``StorageUnavailable``.

Every message names the location by its redacted URL, and the driver's own words are
scrubbed of the password first: libpq quotes the whole URL when it cannot parse it. The
engine's error is raised ``from None`` by the callers, so no traceback carries the
driver's original message either.
"""

from __future__ import annotations

import psycopg
import psycopg_pool
from psycopg import errors as pg_errors

from core.errors import (
    InvalidInput,
    MemoryBusy,
    OutOfNamespace,
    ReadOnlyDatabase,
    StorageFull,
    StorageUnavailable,
    WorkbenchError,
)
from core.locations import Location, scrub
from core.storage.rows import not_text

# Errors after which the same transaction, run again from the start, may well succeed.
RETRYABLE = (pg_errors.SerializationFailure, pg_errors.DeadlockDetected)


def connection_lost(exc: BaseException) -> bool:
    """Whether ``exc`` says the connection itself failed (closed by the server, a restart,
    a network cut), rather than a statement on it."""
    if not isinstance(exc, psycopg.OperationalError) or isinstance(
            exc, psycopg_pool.PoolTimeout):
        return False
    sqlstate = exc.sqlstate or ""
    return not sqlstate or sqlstate.startswith(("08", "57P"))


def driver_words(location: Location, exc: BaseException) -> str:
    """The driver's message for ``exc``, on one line, without the location's password."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    sqlstate = getattr(exc, "sqlstate", None)
    if sqlstate:
        text = f"{text} [SQLSTATE {sqlstate}]"
    return scrub(text, location.secrets)


def connect_refusal(location: Location, exc: BaseException) -> WorkbenchError:
    """The engine's error for a connection that could not be made (always one)."""
    words = driver_words(location, exc)
    if isinstance(exc, psycopg.ProgrammingError):
        return InvalidInput(f"{location} is not a PostgreSQL URL libpq can read ({words})")
    return StorageUnavailable(
        f"cannot connect to the memory at {location}: {words}. Check the host, port, "
        "database name, role and password (the password is never shown)")


def unreachable(location: Location, exc: BaseException, *, writing: bool) -> WorkbenchError:
    """The refusal of a request that found no connection because the server cannot be
    reached (stopped, restarting, the network cut): ``exc`` is what a direct connection
    said, which names the host or socket it tried."""
    outcome = "nothing of it was kept" if writing else "nothing was read"
    return StorageUnavailable(
        f"cannot reach the PostgreSQL server of {location}: {driver_words(location, exc)}; "
        f"{outcome}. Start the server (or check the host and network) and try again")


def outside_binding(exc: BaseException) -> bool:
    """Whether ``exc`` is a row-level security policy refusing a write: a role `workbench pg
    grant` bound to one namespace wrote a row of another."""
    return isinstance(exc, pg_errors.InsufficientPrivilege) and "row-level security" in str(exc)


def refusal(location: Location, exc: BaseException, *, writing: bool,
            binding: tuple[str, str] | None = None) -> WorkbenchError | None:
    """The engine's error for ``exc`` raised by a read or a write, or None when it is not a
    refusal (a constraint the caller interprets, or a bug, which must surface as one).
    ``binding``: (role, namespace) the connection's role is bound to, when known, for a
    write the policies refused: the usual cause is a config whose agent names another."""
    if isinstance(exc, UnicodeEncodeError):
        return not_text()
    if isinstance(exc, psycopg.DataError) and exc.sqlstate is None and "NUL" in str(exc):
        return InvalidInput("a value given holds a NUL character (U+0000), which PostgreSQL "
                            "text cannot store; nothing was read or written")
    words = driver_words(location, exc)
    if isinstance(exc, pg_errors.DiskFull):
        return StorageFull(
            f"{location}: the server's disk is full ({words}); this write was rolled back "
            "and nothing of it was kept. Reading still works; free some space and try again")
    if isinstance(exc, pg_errors.ReadOnlySqlTransaction) and writing:
        # (In a read it is a write where none belongs: a bug, left to surface as one.)
        return ReadOnlyDatabase(
            f"{location} refused the write ({words}); nothing was written. The server only "
            "reads (a replica, or default_transaction_read_only); write to the primary")
    if isinstance(exc, pg_errors.InsufficientPrivilege):
        if writing and outside_binding(exc):
            # The refusal our own namespace checks make, from the database this time.
            if binding is not None:
                role, namespace = (name[:100] for name in binding)
                return OutOfNamespace(
                    f"{location} refused the write ({words}); nothing was written. Role "
                    f"{role!r} is bound to one namespace, {namespace!r}, and this write is "
                    f"to another: if the config's agent is not {namespace!r}, set agent = "
                    f"{namespace!r} (or run as a role bound to the namespace you meant)")
            return OutOfNamespace(
                f"{location} refused the write ({words}); nothing was written. This role "
                "is bound to one namespace, and the row belongs to another")
        if writing:
            return ReadOnlyDatabase(
                f"{location} refused the write ({words}); nothing was written. This role "
                "may not write there; ask the database owner for the grant")
        return StorageUnavailable(f"{location} refused the read ({words}): this role may "
                                  "not read there; ask the database owner for the grant")
    if isinstance(exc, RETRYABLE):
        return MemoryBusy(
            f"{location}: the memory is busy (other writers kept conflicting with this "
            f"write: {words}); nothing was written; try again")
    if isinstance(exc, pg_errors.LockNotAvailable):
        return MemoryBusy(
            f"{location}: the memory is busy (another process holds a lock this request "
            f"needs, past the server's lock_timeout: {words}); nothing was written; try again")
    if isinstance(exc, psycopg_pool.PoolTimeout):  # before OperationalError, its base
        # (PgDatabase first asks the server directly: one it cannot reach says so instead.)
        return StorageUnavailable(
            f"{location}: no database connection came free in time ({words}); the server "
            "or the pool is saturated")
    if isinstance(exc, psycopg.OperationalError):
        if connection_lost(exc):
            # A connection lost at COMMIT leaves the write's outcome unknown to us.
            outcome = "it may or may not have been kept" if writing else "nothing was changed"
            return StorageUnavailable(
                f"the connection to {location} failed during this request ({words}); "
                f"{outcome}")
        # Out of resources, cancelled by a timeout, a lock not available: the transaction
        # was rolled back.
        return StorageUnavailable(
            f"{location} could not serve this request ({words}); nothing of it was kept")
    return None
