"""A chunk row as a query reads it: the columns, the dict the legs keep, the reads by id.

Metadata stays JSON and the context keeps its separators until a result needs them
(:func:`chunk_metadata`, :func:`chunk_context`): a query fetches ~100 candidates and shows ten.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from core.storage.sqlite.connection import select_in

# created_at: the time of the chunk's first message, which the date boost reads when the
# message's metadata names no date (core/retrieval/dates.py).
CHUNK_SELECT = ("SELECT fts_rowid, chunk_id, session_id, chunk_text, sequence_start,"
                 " sequence_end, metadata_json, context_text, created_at FROM chunks")


def chunk_row(row: Sequence[Any]) -> dict[str, Any]:
    """A chunk row (``CHUNK_SELECT``'s columns) as the legs keep it."""
    return {"chunk_id": row[1], "session_id": row[2], "text": row[3],
            "sequence_start": row[4], "sequence_end": row[5], "metadata_json": row[6],
            "context_text": row[7], "created_at": row[8]}


def chunks_by_rowid(conn: Any, rowids: Sequence[int]) -> dict[int, dict[str, Any]]:
    """Chunk rows by fts_rowid (what a derived index holds), as :func:`fetch_chunks` reads
    them."""
    return {row[0]: chunk_row(row)
            for row in select_in(conn, CHUNK_SELECT + " WHERE fts_rowid IN", rowids)}


def chunk_ids_of(conn: Any, rowids: Sequence[int],
                 chunks: dict[str, dict[str, Any]] | None = None) -> dict[int, str]:
    """The chunk id of each fts_rowid a derived index named (a row deleted since is left
    out); with ``chunks``, the rows are read whole into it, in the same read."""
    if chunks is None:
        return dict(select_in(conn, "SELECT fts_rowid, chunk_id FROM chunks"
                                    " WHERE fts_rowid IN", rowids))
    found = chunks_by_rowid(conn, rowids)
    chunks.update((chunk["chunk_id"], chunk) for chunk in found.values())
    return {rowid: chunk["chunk_id"] for rowid, chunk in found.items()}


def fetch_chunks(conn: Any, chunk_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Chunk rows by id: text, session, sequence range, metadata, context, time."""
    return {row[1]: chunk_row(row)
            for row in select_in(conn, CHUNK_SELECT + " WHERE chunk_id IN", chunk_ids)}
