"""The storage layer: the only code in the project that speaks SQL.

Read it as four parts: the contract (:mod:`core.storage.backend`, with the values it speaks in,
:mod:`core.storage.vocabulary`, and the row shapes both backends share,
:mod:`core.storage.rows`); one folder per backend (``sqlite/``, ``pg/``), each importing only
the contract and the shared modules; and ``derived/``, the in-memory indexes both backends
build. A backend is opened through :func:`core.storage.opening.open_backend`.

Code above storage names no backend's module. The few SQLite tools the command line and the
bench need on a file itself (a raw connection, the file checks) are named here and loaded
on first use (PEP 562), so ``import core.storage`` stays light.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from core.storage.sqlite.connection import capabilities, open_connection, sqlite_module
    from core.storage.sqlite.invariants import check_file
    from core.storage.sqlite.memory_file import damage, examine
    from core.storage.sqlite.refusals import primary_code
    from core.storage.sqlite.sqlite_backend import SqliteBackend

__all__ = ["SqliteBackend", "capabilities", "check_file", "damage", "examine",
           "open_connection", "primary_code", "sqlite_module"]

_SQLITE_TOOLS = {
    "SqliteBackend": "sqlite_backend",    # the bench drives one directly
    "capabilities": "connection",         # what this machine's SQLite offers (doctor)
    "check_file": "invariants",           # a file's invariants (the crash bench)
    "damage": "memory_file",              # quick_check in one line (doctor)
    "examine": "memory_file",             # what a path holds (a memory, empty, missing)
    "open_connection": "connection",      # one configured connection to a file
    "primary_code": "refusals",           # the SQLite error code of an exception
    "sqlite_module": "connection",        # the DB-API module (sqlean, else sqlite3)
}


def __getattr__(name: str) -> Any:
    module = _SQLITE_TOOLS.get(name)
    if module is None:
        raise AttributeError(f"module 'core.storage' has no attribute {name!r}")
    return getattr(importlib.import_module(f"core.storage.sqlite.{module}"), name)
