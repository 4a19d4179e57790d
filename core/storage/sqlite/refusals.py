"""How SQLite says a file refused a write, turned into the engine's own errors.

A full disk (SQLITE_FULL, or sqlite-vec's plain SQLITE_ERROR when the file is out of room),
a file that became read-only (SQLITE_READONLY), another process holding the write lock
past the busy timeout (SQLITE_BUSY), text the driver cannot bind (a lone surrogate), and a
writer connection sqlite-vec left unable to commit. :class:`Database`
(:mod:`core.storage.sqlite.connection`) applies these to every read and write.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

from core.errors import MemoryBusy, ReadOnlyDatabase, StorageFull, WorkbenchError

SQLITE_BUSY, SQLITE_READONLY, SQLITE_IOERR, SQLITE_FULL, SQLITE_CANTOPEN = 5, 8, 10, 13, 14


def primary_code(exc: BaseException) -> int | None:
    code = getattr(exc, "sqlite_errorcode", None)
    return code & 0xFF if isinstance(code, int) else None


def busy(path: Path, busy_timeout_ms: int | None) -> MemoryBusy:
    """The refusal of a statement that waited ``busy_timeout_ms`` (None: not known) for
    another process's lock and gave up. The engine's writes take the write lock first
    (BEGIN IMMEDIATE), so the one that gives up has written nothing."""
    waited = None if busy_timeout_ms is None else busy_timeout_ms / 1000
    held = "" if waited is None else f" for {waited:g} s"
    return MemoryBusy(f"{path}: the memory is busy (another process holds the write "
                      f"lock{held}); nothing was written; try again", waited)


def storage_refusal(path: Path, exc: BaseException, *, opening: bool = False,
                    busy_timeout_ms: int | None = None) -> WorkbenchError | None:
    """The engine's own error for a write the file refused (disk full, read-only, the write
    lock held by another process past ``busy_timeout_ms``), or None.

    SQLite rolls the statement's transaction back on SQLITE_FULL, so what the message
    promises (nothing of this write kept) holds: :func:`transaction` never commits a part.
    ``opening``: the refusal came while opening a writer, where a full disk can also show
    as an I/O error creating the ``-shm`` index (and a busy file is the opener's to judge).
    """
    code = primary_code(exc)
    if code == SQLITE_BUSY and not opening:
        return busy(path, busy_timeout_ms)
    if code == 1 and "database or disk is full" in str(exc):
        code = SQLITE_FULL  # sqlite-vec's shadow-table errors quote SQLite's, code lost
    if code == SQLITE_FULL or (opening and code == SQLITE_IOERR and _nearly_full(path)):
        if opening:
            return StorageFull(f"{path}: the disk is full (SQLite: {exc}); it cannot be "
                               "opened for writing. Free some space and try again")
        return StorageFull(
            f"{path}: the disk is full (SQLite: {exc}); this write was rolled back and "
            "nothing of it was kept. Reading still works; free some space and try again")
    if code == SQLITE_READONLY:
        return ReadOnlyDatabase(
            f"{path} refused the write (SQLite: {exc}); nothing was written. The file or "
            "its folder became read-only after it was opened; reopen it to read it read-only")
    return None


_NEARLY_FULL_BYTES = 1 << 20
# More than a vec0 block of the largest vectors (128 x 3,072 floats = 1.5 MiB) needs.
_ROOM_FOR_A_VECTOR_BLOCK = 4 << 20


def vec_write_failed(exc: BaseException) -> bool:
    """A plain SQLITE_ERROR from a write: how sqlite-vec reports a block or shadow-table
    insert that failed, whatever the cause ("Internal sqlite-vec error: …", or only "SQL
    logic error"), so a full disk reaches us without its SQLITE_FULL."""
    return primary_code(exc) == 1


def out_of_room(conn: Any, path: Path) -> bool:
    """Whether the file is near its size limit (``max_page_count``) or its disk is near full:
    then sqlite-vec's "could not insert" was a full disk in disguise."""
    page_size, pages, limit = (conn.execute(f"PRAGMA {name}").fetchone()[0]
                               for name in ("page_size", "page_count", "max_page_count"))
    if (limit - pages) * page_size < _ROOM_FOR_A_VECTOR_BLOCK:
        return True
    free = _free_bytes(path)
    return free is not None and free < _ROOM_FOR_A_VECTOR_BLOCK


def wedged(conn: Any) -> bool:
    """Whether a statement is left in progress on ``conn`` outside any transaction, so that
    no transaction could commit on it again. sqlite-vec 0.1.9 leaves its blob handles open
    when an insert fails (a full disk, say): every later COMMIT on that connection then
    fails with "SQL statements in progress". An empty transaction tells; a deferred one
    takes no lock, so it never waits for another process's writer."""
    if conn.in_transaction:
        return False
    try:
        conn.execute("BEGIN")
        conn.execute("COMMIT")
    except Exception:  # the driver's own error type
        if conn.in_transaction:
            with contextlib.suppress(Exception):
                conn.execute("ROLLBACK")
        return True
    return False


class FullBehindVec(Exception):
    """sqlite-vec's error, carrying the SQLITE_FULL it stands for."""

    sqlite_errorcode = SQLITE_FULL

    def __init__(self, exc: BaseException) -> None:
        super().__init__(f"database or disk is full; sqlite-vec said: {exc}")


def _nearly_full(path: Path) -> bool:
    """Less than 1 MiB left where ``path`` lives (not knowable: False)."""
    free = _free_bytes(path)
    return free is not None and free < _NEARLY_FULL_BYTES


def _free_bytes(path: Path) -> int | None:
    """Bytes free for us on the file system ``path`` lives on; None when not knowable."""
    try:
        stats = os.statvfs(path.parent)
    except (OSError, AttributeError):  # AttributeError: no statvfs on Windows
        return None
    return stats.f_bavail * stats.f_frsize
