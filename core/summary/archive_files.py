"""Compaction archives as markdown files (pynchy's "Conversation Archives").

Each archive goes to ``<root>/<session>/<archive name>.md``, where ``root`` is
``summary.archive_dir`` or ``conversations/`` beside the memory file (:func:`archive_root`).
Names are made safe
for any file system (anything but letters, digits, ``.``, ``_`` and ``-`` becomes ``_``,
with a short hash of the original when that changed it, so two names never share a file).
A file is written to a temporary name in the same folder, flushed to disk, then renamed over
the final name: a reader sees the old file or the new one, never half of one.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from core.locations import Location

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_MAX_STEM = 96


def safe_name(text: str) -> str:
    """``text`` as a file or folder name that is valid everywhere and unique to ``text``."""
    cleaned = _UNSAFE.sub("_", text).strip("._") or "_"
    if cleaned == text and len(cleaned) <= _MAX_STEM:
        return cleaned
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:10]
    return f"{cleaned[:_MAX_STEM]}-{digest}"


def archive_root(archive_dir: str, location: Location) -> Path:
    """Where archives go: the configured folder, else ``conversations/`` beside the file; a
    server's memory has no folder beside it, so its archives go to this machine's data
    folder (``$XDG_DATA_HOME/memory-workbench/conversations/<server and database>``)."""
    if archive_dir:
        return Path(archive_dir).expanduser()
    if not location.is_postgres:
        return location.path.expanduser().resolve().parent / "conversations"
    data_home = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    return data_home / "memory-workbench" / "conversations" / safe_name(location.display)


def archive_path(root: Path, session_id: str, archive_name: str) -> Path:
    """The markdown file of one archive."""
    return root / safe_name(session_id) / f"{safe_name(archive_name)}.md"


def render(archive_name: str, content: str) -> str:
    """The markdown of an archive: its name as the title, then the archive note's content."""
    return f"# {archive_name}\n\n{content.rstrip()}\n"


def write_atomically(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` so that a crash leaves the old file or the new, whole."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.",
                                         suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(text)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise
    with contextlib.suppress(OSError):  # the rename itself, on file systems that allow it
        directory = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)
