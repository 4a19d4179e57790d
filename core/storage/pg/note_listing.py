"""PostgreSQL: TO BE WRITTEN — core/storage/note_listing.py's operations on an async connection."""

from __future__ import annotations

from typing import Any

from core.storage.note_listing import NoteQuery
from core.storage.pg.connection import Conn


async def list_notes(
    conn: Conn,
    query: NoteQuery,
) -> tuple[list[dict[str, Any]], int, bool, str | None]:
    """One page of the namespace's notes matching every filter, the total (and whether it is"""
    raise NotImplementedError("PostgreSQL: list_notes")
