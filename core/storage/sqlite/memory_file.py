"""What a path holds before the engine opens it: a memory, nothing yet, or something else.

SQLite opens nearly anything and changes what it opens: a read-only connection to a WAL
file leaves a ``-wal`` and ``-shm`` beside it, a writable one turns a 0-byte file (or
another application's database) into a memory by running the migrations, and a text file,
a truncated copy, ``/dev/null`` or a symlink loop each fail deep inside the driver. So a
file is looked at first, in a way that writes nothing beside it, and anything that is not
a memory (or empty, or missing) is refused with one line naming it and what is wrong.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import Any, Literal

from core.errors import InvalidInput
from core.storage.sqlite import refusals
from core.storage.sqlite.connection import peek_connection, sqlite_module
from core.storage.sqlite.open_files import open_in_this_process

State = Literal["missing", "empty", "memory"]
"""``missing``: nothing at the path (a dangling symlink included: SQLite creates its target);
``empty``: a 0-byte file, or a SQLite database with no schema at all, that a command adding
to memory may make a memory; ``memory``: a SQLite file holding ``memory_migrations``."""

_HEADER = b"SQLite format 3\x00"
_HEADER_SIZE = 100
_SQLITE_CORRUPT, _SQLITE_NOTADB = 11, 26
_SHOWN = 100

_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a named pipe"),
          (stat.S_ISSOCK, "a socket"))


def examine(path: Path) -> State:
    """What ``path`` holds; ``InvalidInput`` (one line, nothing changed) for anything that is
    neither a memory nor missing nor empty: a symlink loop, a device or pipe, a file that
    cannot be read, one that is not a SQLite database, a truncated or damaged one, and
    another application's database."""
    shown = _shown(path)
    try:
        found = os.stat(path)
    except FileNotFoundError:
        return "missing"
    except OSError as exc:
        raise _unreachable(shown, exc) from None
    if open_in_this_process(path):
        # A memory this process already has open was examined when it was first opened;
        # reading it again here could drop the locks its connections hold (open_files).
        return "memory"
    if not stat.S_ISREG(found.st_mode):
        kind = next((name for test, name in _KINDS if test(found.st_mode)),
                    "something other than a file")
        raise InvalidInput(f"{shown} is {kind}, not a memory file; name a SQLite file the "
                           "workbench made, or a new path to create one")
    wal = _wal_size(path)
    if found.st_size == 0 and not wal:
        return "empty"
    if not wal:
        _check_header(path, shown, found.st_size)
    return _check_schema(path, shown)


def refuse_empty(path: Path) -> InvalidInput:
    """The refusal to read an empty file as a memory (it has nothing to read)."""
    return InvalidInput(f"{_shown(path)} is empty, not a memory yet; opening it for writing "
                        "(a command that adds to memory) makes it one")


def damage(path: Path) -> str | None:
    """What SQLite's ``quick_check`` finds wrong in the memory at ``path`` (one line), or
    None when it finds nothing. It reads every page, so it is for a diagnosis
    (``workbench doctor``), not for every open."""
    sqlite = sqlite_module()
    try:
        conn = peek_connection(path)
        try:
            problems = [row[0] for row in conn.execute("PRAGMA quick_check(3)")]
        finally:
            conn.close()
    except sqlite.Error as exc:
        return str(_unreadable_database(_shown(path), exc))
    if problems == ["ok"]:
        return None
    found = _clip("; ".join(problems).replace("\n", " "))
    return f"{_shown(path)} is damaged (SQLite quick_check: {found}); restore it from a copy"


def _unreachable(shown: str, exc: OSError) -> InvalidInput:
    if exc.errno == errno.ELOOP:
        return InvalidInput(f"{shown} cannot be opened: its symbolic links loop back on "
                            "themselves; name the memory file itself")
    if exc.errno in (errno.EACCES, errno.EPERM):
        return InvalidInput(f"{shown} cannot be read (permission denied); give this user read "
                            "access to it and its folders, or open a copy")
    return InvalidInput(f"{shown} cannot be read ({exc.strerror or exc}); nothing was changed")


def _wal_size(path: Path) -> int | None:
    """The size of the write-ahead log beside ``path`` (None when there is none)."""
    try:
        return os.stat(path.with_name(path.name + "-wal")).st_size
    except OSError:
        return None


def _check_header(path: Path, shown: str, size: int) -> None:
    """Refuse a file that is not a SQLite database, or is shorter than its header says.

    Only with no write-ahead log beside it: a log holds pages the file does not have yet.
    """
    try:
        with open(path, "rb") as file:
            header = file.read(_HEADER_SIZE)
    except OSError as exc:
        raise _unreachable(shown, exc) from None
    if not header.startswith(_HEADER):
        if _HEADER.startswith(header):
            raise _truncated(shown, size, None)
        raise InvalidInput(f"{shown} is not a memory file: it is not a SQLite database "
                           "(its first bytes are not SQLite's header); nothing was changed")
    if len(header) < _HEADER_SIZE:
        raise _truncated(shown, size, None)
    page_size = int.from_bytes(header[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    pages = int.from_bytes(header[28:32], "big")
    # The header's page count is valid when its change counter matches the one beside it.
    if pages and header[24:28] == header[92:96] and size < pages * page_size:
        raise _truncated(shown, size, pages * page_size)


def _truncated(shown: str, size: int, expected: int | None) -> InvalidInput:
    of = f" of the {expected:,} its header says" if expected else ""
    return InvalidInput(f"{shown} is truncated: it holds {size:,} bytes{of}; restore it from "
                        "a copy (nothing was changed)")


def _check_schema(path: Path, shown: str) -> State:
    """``memory`` for a file holding ``memory_migrations``, ``empty`` for a database with no
    schema and no application's mark; refuse a damaged file and another application's."""
    sqlite = sqlite_module()
    try:
        conn = peek_connection(path)
        try:
            names = [row[0] for row in conn.execute(
                "SELECT name FROM sqlite_schema WHERE name NOT LIKE 'sqlite_%' ORDER BY name")]
            marks = [conn.execute(f"PRAGMA {mark}").fetchone()[0]
                     for mark in ("user_version", "application_id")]
        finally:
            conn.close()
    except sqlite.Error as exc:
        raise _unreadable_database(shown, exc) from None
    if "memory_migrations" in names:
        return "memory"
    if not names and not any(marks):
        return "empty"
    listed = ", ".join(names[:5]) + (", …" if len(names) > 5 else "")
    what = f"tables: {listed}" if names else f"user_version {marks[0]}, application_id {marks[1]}"
    raise InvalidInput(f"{shown} is another application's SQLite database ({_clip(what)}), not "
                       "a memory; nothing was changed. Name a memory file, or a new path")


def _unreadable_database(shown: str, exc: Any) -> InvalidInput:
    code = refusals.primary_code(exc)
    if code in (_SQLITE_CORRUPT, _SQLITE_NOTADB):
        return InvalidInput(f"{shown} is damaged (SQLite: {exc}); restore it from a copy "
                            "(nothing was changed)")
    return InvalidInput(f"{shown} cannot be read as a database (SQLite: {exc}); nothing was "
                        "changed")


def _shown(path: Path) -> str:
    """The path as a message quotes it: at most ~100 characters, its end kept."""
    return _clip(str(path))


def _clip(text: str) -> str:
    if len(text) <= _SHOWN:
        return text
    return f"{text[:30]}…{text[-(_SHOWN - 31):]}"
