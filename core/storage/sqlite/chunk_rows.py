"""A chunk row as a query reads it: the columns, the :class:`~core.storage.rows.ChunkRow`
the legs keep, the reads by id."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from core.storage.rows import ChunkRow
from core.storage.sqlite.connection import select_in

# fts_rowid, then ChunkRow's fields in order.
CHUNK_SELECT = ("SELECT fts_rowid, chunk_id, session_id, chunk_text, sequence_start,"
                 " sequence_end, metadata_json, context_text, created_at FROM chunks")


def chunk_row(row: Sequence[Any]) -> ChunkRow:
    """A chunk row (``CHUNK_SELECT``'s columns) as the legs keep it."""
    return ChunkRow(*row[1:])


def chunks_by_rowid(conn: Any, rowids: Sequence[int]) -> dict[int, ChunkRow]:
    """Chunk rows by fts_rowid (what a derived index holds), as :func:`fetch_chunks` reads
    them."""
    return {row[0]: chunk_row(row)
            for row in select_in(conn, CHUNK_SELECT + " WHERE fts_rowid IN", rowids)}


def chunk_ids_of(conn: Any, rowids: Sequence[int],
                 chunks: dict[str, ChunkRow] | None = None) -> dict[int, str]:
    """The chunk id of each fts_rowid a derived index named (a row deleted since is left
    out); with ``chunks``, the rows are read whole into it, in the same read."""
    if chunks is None:
        return dict(select_in(conn, "SELECT fts_rowid, chunk_id FROM chunks"
                                    " WHERE fts_rowid IN", rowids))
    found = chunks_by_rowid(conn, rowids)
    chunks.update((chunk.chunk_id, chunk) for chunk in found.values())
    return {rowid: chunk.chunk_id for rowid, chunk in found.items()}


def fetch_chunks(conn: Any, chunk_ids: Sequence[str]) -> dict[str, ChunkRow]:
    """Chunk rows by id: text, session, sequence range, metadata, context, time."""
    return {row[1]: chunk_row(row)
            for row in select_in(conn, CHUNK_SELECT + " WHERE chunk_id IN", chunk_ids)}
