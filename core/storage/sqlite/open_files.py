"""The files this process holds SQLite connections to, so that nothing here peeks at them.

POSIX locks belong to a process, not to a descriptor: closing *any* descriptor of a file
drops every lock the process holds on it. SQLite guards its own connections against that,
but a plain ``open()``/``close()`` of the file, or an ``immutable=1`` connection (which takes
no locks and closes its descriptor at once), would silently release the SHARED lock another
connection here holds, and a writer closing elsewhere could then checkpoint and delete the
``-wal`` under it. Connections count themselves here by (device, inode), and a file already
open is never examined again (:func:`core.storage.sqlite.memory_file.examine`).
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from types import ModuleType
from typing import Any

_OPEN: dict[tuple[int, int], int] = {}
_LOCK = threading.Lock()
_CLASSES: dict[str, type] = {}


def open_in_this_process(path: Path) -> bool:
    """Whether this process holds a SQLite connection to the file at ``path``."""
    try:
        found = os.stat(path)
    except OSError:
        return False
    with _LOCK:
        return (found.st_dev, found.st_ino) in _OPEN


def tracked_class(sqlite: ModuleType) -> type | None:
    """A connection class of ``sqlite``'s that stops counting itself when closed (None for a
    driver without a ``Connection`` class to extend)."""
    cached = _CLASSES.get(sqlite.__name__)
    if cached is not None:
        return cached
    if not isinstance(getattr(sqlite, "Connection", None), type):
        return None

    class TrackedConnection(sqlite.Connection):  # type: ignore[name-defined,misc]
        file_key: tuple[int, int] | None = None

        def close(self) -> None:
            key, self.file_key = self.file_key, None
            try:
                super().close()
            finally:
                if key is not None:
                    _forget(key)

    _CLASSES[sqlite.__name__] = TrackedConnection
    return TrackedConnection


def track(conn: Any, target: Path) -> None:
    """Count ``conn`` among this process's connections to ``target`` (once; a file SQLite
    has not created yet is counted by the caller after its first read)."""
    if not hasattr(conn, "file_key") or conn.file_key is not None:
        return
    try:
        found = os.stat(target)
    except OSError:
        return
    key = (found.st_dev, found.st_ino)
    with _LOCK:
        _OPEN[key] = _OPEN.get(key, 0) + 1
    conn.file_key = key


def _forget(key: tuple[int, int]) -> None:
    with _LOCK:
        left = _OPEN.get(key, 1) - 1
        if left > 0:
            _OPEN[key] = left
        else:
            _OPEN.pop(key, None)
