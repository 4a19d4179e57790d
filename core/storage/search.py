"""SQL for the full-text leg: FTS5 bm25 inside a session's scope, and hydrating chunk rows."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from core.storage.events import scope_token_for


def fts_search(conn: Any, session_id: str, match: str, k: int) -> list[tuple[str, float]]:
    """Top ``k`` chunks of a session for an FTS5 expression: (chunk_id, bm25 score, higher=better).

    ``match`` must already be a safe FTS5 expression over ``chunk_text``; the session's scope
    token is ANDed in here so FTS5 only scores what the session holds.
    """
    scoped = f'({match}) AND scope_token : "{scope_token_for(session_id)}"'
    return conn.execute(
        "SELECT c.chunk_id, -bm25(chunks_fts) AS score FROM chunks_fts"
        " JOIN chunks c ON c.fts_rowid = chunks_fts.rowid"
        " WHERE chunks_fts MATCH ? ORDER BY score DESC LIMIT ?",
        (scoped, k),
    ).fetchall()


def fetch_chunks(conn: Any, chunk_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Chunk rows by id: text, session, sequence range, metadata."""
    found: dict[str, dict[str, Any]] = {}
    ids = list(chunk_ids)
    for start in range(0, len(ids), 500):
        part = ids[start:start + 500]
        rows = conn.execute(
            "SELECT chunk_id, session_id, chunk_text, sequence_start, sequence_end, metadata_json"
            f" FROM chunks WHERE chunk_id IN ({','.join('?' * len(part))})", part).fetchall()
        for row in rows:
            found[row[0]] = {"chunk_id": row[0], "session_id": row[1], "text": row[2],
                             "sequence_start": row[3], "sequence_end": row[4],
                             "metadata": json.loads(row[5] or "{}")}
    return found
