"""Where an export goes when no path is given: ``exports/`` beside the memory file.

Not the current folder, which is wherever a command happened to run (and which nobody sees
from the app): an export lands beside the memory it came from, as compaction archives do
(``conversations/``). A server's memory has no folder beside it, so its exports go to this
machine's data folder (``$XDG_DATA_HOME/memory-workbench/exports/<server and database>``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from core.summary.archive_files import safe_name

if TYPE_CHECKING:
    from core.locations import Location


def export_root(location: Location) -> Path:
    """The folder exports of the memory at ``location`` go to, as an absolute path."""
    if not location.is_postgres:
        return location.path.expanduser().resolve().parent / "exports"
    data_home = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    return (data_home / "memory-workbench" / "exports" / safe_name(location.display)).resolve()


def default_export_path(location: Location, stem: str, suffix: str = "") -> Path:
    """``<export root>/<stem><suffix>``, ``stem`` made safe as a file name; the export root
    is made when missing, as the export is about to be written there."""
    root = export_root(location)
    root.mkdir(parents=True, exist_ok=True)
    return root / f"{safe_name(stem)}{suffix}"


def in_export_root(location: Location, typed: str) -> Path:
    """A path typed in the app as an absolute one: ``~`` expanded, a relative path inside
    the export root (the app has no current folder a person can see). The export root is
    made when the path names a file in it, as the export is about to be written there."""
    path = Path(typed).expanduser()
    root = export_root(location)
    target = path if path.is_absolute() else (root / path).resolve()
    if target.parent == root:
        root.mkdir(parents=True, exist_ok=True)
    return target
