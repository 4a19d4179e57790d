"""A session's vector leg and fetch from the namespace matrix, once a namespace query built it.

sqlite-vec answers a session's KNN by reading the vec0 partition of that session through
SQLite's pages, then the query reads the session's chunk rows from the index that clusters
them (migration ``0009``); for a session little larger than what its legs want, that read
takes the whole session. The whole session's rows name every fts_rowid of the session, and
the matrix holds their vectors normalised in memory, so the same read answers the vector
leg: one product of ~100 rows instead of a second SQL statement over vec0 (at 100k chunks,
per-phase timers: vector leg plus fetch p50 0.57 ms by SQL, 0.42 ms this way).

The ranking is the one :meth:`NamespaceVectors.nearest` gives a namespace: exact cosine
distance, ties by fts_rowid. A longer session (read row by row), and every query before the
matrix is built, takes the SQL path: a session query never starts the matrix's build.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from core.storage.chunk_rows import chunk_row
from core.storage.derived.holder import DerivedIndexes
from core.storage.derived.vector_matrix import NamespaceVectors
from core.storage.search import READ_WHOLE_RATIO, LegRequest, SessionAnswer, whole_session

SESSION_VECTOR_LEG = "session rows of the namespace matrix (numpy, exact)"
"""What answers a session's vector leg from the derived matrix."""


class SessionMatrix:
    """A session's vector leg and rows from ``vectors``, kept by ``holder``."""

    def __init__(self, holder: DerivedIndexes, vectors: NamespaceVectors) -> None:
        self.holder = holder
        self.vectors = vectors

    def ready(self) -> bool:
        """Whether the matrix is built (a session query never starts its build)."""
        return self.holder.state(self.vectors.name).ready

    def answer(self, conn: Any, request: LegRequest, fts_rowids: Sequence[int],
               timings: dict[str, float]) -> SessionAnswer | None:
        """:func:`session_answer` in one snapshot with the matrix, brought up to the file's
        last commit (the full-text leg ran before, outside the matrix's lock); None when
        the SQL path must answer."""
        with self.holder.reading(conn, self.vectors.name) as ready:
            if not ready:
                return None
            return session_answer(self.vectors, conn, request, fts_rowids, timings)


def session_answer(vectors: NamespaceVectors, conn: Any, request: LegRequest,
                   fts_rowids: Sequence[int], timings: dict[str, float],
                   ) -> SessionAnswer | None:
    """The session's nearest chunks and every candidate's row, from one read of the whole
    session; None for a session too long to read whole (or no query vector).

    Call it while the matrix is locked and up to date (``DerivedIndexes.reading``), so the
    rows and the matrix are one snapshot.
    """
    if request.query_vector is None:
        return None
    session_id = request.scope.session_id or ""
    began = time.perf_counter()
    # The vector leg returns at most ``depth`` rows: the SQL path reads a session whole
    # when it holds at most this many (session_chunks).
    read_whole = READ_WHOLE_RATIO * (len(fts_rowids) + request.depth)
    whole = whole_session(conn, session_id, read_whole)
    if whole is None:
        return None
    rows = {row[0]: row for row in whole}
    fetched = time.perf_counter()
    nearest = vectors.nearest_of(list(rows), request.query_vector, request.depth)
    timings["vector"] = (time.perf_counter() - fetched) * 1000
    timings["fetch"] = (fetched - began) * 1000
    by_rowid = {rowid: rows[rowid] for rowid in fts_rowids if rowid in rows}
    chunks = {row[1]: chunk_row(row) for row in by_rowid.values()}
    vector_rows = []
    for rowid, distance in nearest:
        row = rows[rowid]
        vector_rows.append((row[1], distance))
        if row[1] not in chunks:
            chunks[row[1]] = chunk_row(row)
    return SessionAnswer(vector_rows, by_rowid, chunks, SESSION_VECTOR_LEG)
