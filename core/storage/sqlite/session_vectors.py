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

Once the derived full-text index is built too, the same read of the session's rows ranks
its full-text leg (:mod:`core.storage.derived.session_text`, bm25 equal to FTS5's, and
quicker), and both indexes are brought up to the same commit, in one snapshot with the rows;
where that index cannot rank a session's rows, FTS5 ranks them in the same snapshot.
"""

from __future__ import annotations

import time
from typing import Any

from core.storage.derived import session_text
from core.storage.derived.fulltext import FullTextIndex
from core.storage.derived.holder import DerivedIndexes
from core.storage.derived.vector_matrix import NamespaceVectors
from core.storage.executed import DERIVED, Executed
from core.storage.sqlite.chunk_rows import chunk_row
from core.storage.sqlite.search import (
    READ_WHOLE_RATIO,
    SessionAnswer,
    session_bm25,
    session_match,
    whole_session,
)
from core.storage.vocabulary import SESSION_VECTOR_LEG, LegRequest


class SessionMatrix:
    """A session's vector leg and rows from ``vectors`` (and its full-text leg from
    ``full_text`` when that is built), kept by ``holder``."""

    def __init__(self, holder: DerivedIndexes, vectors: NamespaceVectors,
                 full_text: FullTextIndex | None = None) -> None:
        self.holder = holder
        self.vectors = vectors
        self.full_text = full_text

    def ready(self) -> bool:
        """Whether the matrix is built (a session query never starts its build)."""
        return self.holder.state(self.vectors.name).ready

    def answer(self, conn: Any, request: LegRequest, top: list[tuple[int, float]] | None,
               timings: dict[str, float]) -> SessionAnswer | None:
        """:func:`session_answer` in one snapshot with the matrix, brought up to the file's
        last commit; ``top`` is the full-text leg FTS5 ranked before, outside the matrix's
        lock, or None to rank it from the full-text index (None back when that is not built,
        or cannot rank these words). None when the SQL path must answer."""
        full_text = self.full_text
        if top is None and (full_text is None or not request.terms
                            or not self.holder.state(full_text.name).ready):
            return None
        with self.holder.reading(conn, self.vectors.name) as ready:
            if not ready:
                return None
            if top is not None:
                return session_answer(self.vectors, conn, request, top, timings)
            assert full_text is not None
            with self.holder.reading(conn, full_text.name) as text_ready:
                ranks = text_ready and session_text.ranks_session_words(full_text, request.terms)
                if not ranks:
                    return None
                return session_answer(self.vectors, conn, request, None, timings, full_text)


def session_answer(vectors: NamespaceVectors, conn: Any, request: LegRequest,
                   top: list[tuple[int, float]] | None, timings: dict[str, float],
                   full_text: FullTextIndex | None = None) -> SessionAnswer | None:
    """The session's nearest chunks and every candidate's row, from one read of the whole
    session; None for a session too long to read whole (or no query vector). With ``top``
    None, ``full_text`` ranks the full-text leg over the same rows, or FTS5 does where it
    cannot (a row whose words the prefix splits otherwise), without reading them again.

    Call it while the indexes are locked and up to date (``DerivedIndexes.reading``), so
    the rows and the indexes are one snapshot.
    """
    if request.query_vector is None:
        return None
    session_id = request.scope.session_id or ""
    began = time.perf_counter()
    # The vector leg returns at most ``depth`` rows, and so does the full-text leg: the SQL
    # path reads a session whole when it holds at most this many (session_chunks).
    read_whole = READ_WHOLE_RATIO * (request.depth if top is None else len(top)
                                     + request.depth)
    whole = whole_session(conn, session_id, read_whole)
    if whole is None:
        return None
    rows = {row[0]: row for row in whole}
    fetched = time.perf_counter()
    timings["fetch"] = (fetched - began) * 1000
    fts_derived = top is None
    ran: list[Executed] = []
    if top is None:
        assert full_text is not None
        # A word of several tokens is a phrase, counted in the rows' text and context.
        texts = ({rowid: (row[3], row[7]) for rowid, row in rows.items()}
                 if not all(term.isalnum() for term in request.terms) else None)
        top = session_text.session_search(full_text, list(rows), request.terms,
                                          request.depth, request.context_weight, texts)
        match = session_match(request)
        if top is not None and match is not None:
            ran.append(Executed(DERIVED, match[0], f"bm25(chunks_fts, {match[1]})",
                                rows=len(top), parameters=full_text.bm25_parameters(
                                    request.terms, request.context_weight,
                                    ("session_text", "session_context"))))
        if top is None:
            fts_derived = False
            top = session_bm25(conn, request, ran)
        ranked = time.perf_counter()
        timings["fts"] = (ranked - fetched) * 1000
        fetched = ranked
    nearest = vectors.nearest_of(list(rows), request.query_vector, request.depth)
    timings["vector"] = (time.perf_counter() - fetched) * 1000
    by_rowid = {rowid: rows[rowid] for rowid, _ in top if rowid in rows}
    chunks = {row[1]: chunk_row(row) for row in by_rowid.values()}
    vector_rows = []
    for rowid, distance in nearest:
        row = rows[rowid]
        vector_rows.append((row[1], distance))
        if row[1] not in chunks:
            chunks[row[1]] = chunk_row(row)
    return SessionAnswer(vector_rows, by_rowid, chunks, SESSION_VECTOR_LEG, top, fts_derived,
                         tuple(ran))
