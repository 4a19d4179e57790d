"""The namespace full-text leg from the derived index, once it is built.

The index is one of the file's derived indexes (:mod:`core.storage.derived.holder`): built
in the background on a connection of its own (seconds at 1M chunks), and until it is ready
the leg stays on FTS5's SQL path, so no query waits for it. Once ready, every query brings it
up to the file's last commit through the change log (writes of this process and of others
alike), then ranks in memory and reads the chunk ids of the top ``k`` only, all in one read
transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from core.storage.derived.fulltext import FullTextIndex
from core.storage.derived.holder import DerivedIndexes
from core.storage.rows import ChunkRow
from core.storage.sqlite.chunk_rows import chunk_ids_of


class DerivedFullText:
    """The namespace full-text leg answered from ``index``, kept by ``holder``."""

    def __init__(self, holder: DerivedIndexes, index: FullTextIndex) -> None:
        self.holder = holder
        self.index = index

    def rows(self, conn: Any, namespace: str, terms: Sequence[str], k: int,
             context_weight: float, chunks: dict[str, ChunkRow] | None = None,
             ) -> tuple[list[tuple[str, float]], dict[str, Any]] | None:
        """The namespace's top ``k`` (chunk_id, -bm25) and the bm25 parameters they were
        ranked with (:meth:`FullTextIndex.bm25_parameters`), or None when the index cannot
        answer (not built yet, or a word that is no token). With ``chunks``, the rows found
        are read whole into it (by chunk id), in the read that names them."""
        with self.holder.reading(conn, self.index.name) as ready:
            if not ready:
                return None
            top = self.index.search(namespace, terms, k, context_weight, conn)
            if top is None:
                return None
            parameters = self.index.bm25_parameters(terms, context_weight)
            ids = chunk_ids_of(conn, [rowid for rowid, _ in top], chunks)
        return [(ids[rowid], score) for rowid, score in top if rowid in ids], parameters
