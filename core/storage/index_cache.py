"""The local folder where PostgreSQL databases' namespace indexes are saved, and the hint
that lets a new process start checking its copies before it has connected; and the same
early start for a SQLite file's copies, whose folder its path names.

A database's copies live in ``pg-index/SYSTEM-DATOID-READER/`` (see
:func:`core.storage.pg.derived_saved.pg_saving`): which folder is known only once the
server answered. An open first imports the driver and connects (~65 ms), then starts the
loads; the first query waited for the rest of the load (checksums ~20 ms at 100k chunks).
So each open leaves a hint, ``pg-index/hints/HASH`` (the hash of the location as shown,
without its password) naming its folder, and the next open of the same location starts
checking the newest copies there at once (:func:`core.storage.derived.persisted.check_ahead`).
A wrong or stale hint costs a check nobody uses: what is loaded is always the folder the
server's identity names, and a copy's checked arrays are used only for the manifest that
was checked.

Nothing here imports the driver.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from pathlib import Path

import platformdirs

from core.storage.derived import persisted

CACHE_ENV = "WORKBENCH_INDEX_CACHE"
LOADED_AT_OPEN = 4
"""The saved namespaces an open starts loading (the most recently saved first)."""


def cache_root() -> Path:
    """The folder under which PostgreSQL databases' indexes are saved."""
    chosen = os.environ.get(CACHE_ENV)
    return Path(chosen) if chosen else Path(platformdirs.user_cache_dir("workbench"))


def _hint(shown: str) -> Path:
    return cache_root() / "pg-index" / "hints" / hashlib.sha256(shown.encode()).hexdigest()[:32]


def remember_folder(shown: str, folder: Path) -> None:
    """Note that the location shown as ``shown`` saves its indexes in ``folder``."""
    hint = _hint(shown)
    with contextlib.suppress(OSError):
        if hint.exists() and hint.read_text() == folder.name:
            return
        hint.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        staged = hint.with_suffix(f".{os.getpid()}")
        staged.write_text(folder.name)
        os.replace(staged, hint)


def newest_saved(folder: Path) -> list[str]:
    """The names of the indexes saved in ``folder``, the most recently saved first, as many
    as an open loads."""
    try:
        manifests = sorted(folder.glob("ns-*.json"), key=lambda p: p.stat().st_mtime,
                           reverse=True)
    except OSError:
        return []
    return [manifest.stem for manifest in manifests[:LOADED_AT_OPEN]]


SQLITE_INDEXES = ("namespace-vectors", "full-text")
"""The indexes a SQLite file saves (``NamespaceVectors.name``, ``FullTextIndex.name``)."""


def check_ahead_file(path: Path) -> None:
    """Start checking the copies saved beside the SQLite file ``path`` (nothing when none
    are): its open reads the file, its schema and its meta first (~40 ms at 100k chunks,
    imports included), and the first query waited for the checks after that."""
    folder = persisted.sqlite_folder(path)
    if folder.is_dir():
        persisted.check_ahead(folder, SQLITE_INDEXES, "c")


def check_ahead(shown: str) -> None:
    """Start checking the copies the hint for ``shown`` points at (nothing without one)."""
    try:
        name = _hint(shown).read_text().strip()
    except OSError:
        return
    if not name or "/" in name or name.startswith("."):
        return
    folder = cache_root() / "pg-index" / name
    persisted.check_ahead(folder, newest_saved(folder), "c")
