"""Every namespace's vectors as one contiguous float32 matrix, scanned with numpy.

A namespace-wide KNN in sqlite-vec reads every vector block of the agent through SQLite's
pages (~55 ms at 100k chunks); the same vectors in a matrix in memory are one matrix-vector
product at memory bandwidth (~5 ms). Rows are stored normalised, so a row's cosine
distance to a normalised query is ``1 - dot``; the answer is exact, ordered by distance
then by fts_rowid (the chunk's insertion order).

Memory stays near the raw vector bytes: each namespace's matrix grows by an eighth when
full, a deleted row is replaced by the last one (no holes to compact), a matrix left half
empty is shrunk, and besides the vectors each row costs its fts_rowid and one slot of a
rowid -> (namespace, row) table (8 bytes each).
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
from threadpoolctl import ThreadpoolController

from core.storage.connection import select_in

_MIN_ROWS = 16
_BUILD_BATCH = 4096
_GROWTH = 1.125
_NOT_HELD = -1


@functools.cache
def _blas() -> ThreadpoolController:
    """The process's BLAS thread pools (found once: the search costs milliseconds)."""
    return ThreadpoolController()


_single_blas_lock = threading.Lock()
_single_blas_users = 0
_single_blas_limit: Any = None


@contextlib.contextmanager
def _single_blas_thread() -> Iterator[None]:
    """BLAS on one thread per call while any scan runs. The limit is process-wide, so it
    is counted: two scans that overlap restore the original only when both are done (one
    that restored on its own would leave the other on BLAS's threads, or the process on
    one thread for good)."""
    global _single_blas_users, _single_blas_limit
    with _single_blas_lock:
        if _single_blas_users == 0:
            _single_blas_limit = _blas().limit(limits=1, user_api="blas")
        _single_blas_users += 1
    try:
        yield
    finally:
        with _single_blas_lock:
            _single_blas_users -= 1
            if _single_blas_users == 0:
                _single_blas_limit.restore_original_limits()
                _single_blas_limit = None


class _Space:
    """One namespace's rows: ``vectors[:size]`` normalised, ``rowids[:size]`` beside them."""

    def __init__(self, dimension: int, capacity: int) -> None:
        capacity = max(_MIN_ROWS, capacity)
        self.vectors = np.empty((capacity, dimension), dtype=np.float32)
        self.rowids = np.empty(capacity, dtype=np.int64)
        self.size = 0

    def resize(self, capacity: int) -> None:
        capacity = max(_MIN_ROWS, capacity, self.size)
        vectors = np.empty((capacity, self.vectors.shape[1]), dtype=np.float32)
        vectors[:self.size] = self.vectors[:self.size]
        rowids = np.empty(capacity, dtype=np.int64)
        rowids[:self.size] = self.rowids[:self.size]
        self.vectors, self.rowids = vectors, rowids

    def nbytes(self) -> int:
        return int(self.vectors.nbytes + self.rowids.nbytes)


class NamespaceVectors:
    """The derived vector index: per namespace (``chunks_vec.agent_identity``) a matrix."""

    name = "namespace-vectors"
    follows = frozenset({"insert", "delete", "vector"})

    def __init__(self) -> None:
        self._spaces: dict[str, _Space] = {}
        self._space_names: list[str] = []
        self._space_number: dict[str, int] = {}
        # fts_rowid -> space number << 32 | row, _NOT_HELD for a rowid with no vector here.
        self._where = np.full(0, _NOT_HELD, dtype=np.int64)
        self.dimension: int | None = None

    # -- keeping it -------------------------------------------------------------------------

    def build(self, conn: Any) -> None:
        """Every vector of the file, read once; matrices sized from per-namespace counts."""
        self._spaces, self._space_names, self._space_number = {}, [], {}
        self._where = np.full(0, _NOT_HELD, dtype=np.int64)
        self.dimension = _dimension(conn)
        if self.dimension is None:
            return
        counts = conn.execute(
            "SELECT coalesce(s.agent_identity, ''), count(*) FROM chunks c"
            " JOIN sessions s ON s.session_id = c.session_id"
            " WHERE c.embedding_status = 'done' GROUP BY 1").fetchall()
        top = conn.execute("SELECT coalesce(max(fts_rowid), 0) FROM chunks").fetchone()[0]
        self._reserve_rowids(int(top))
        for namespace, count in counts:
            self._space(namespace, int(count))
        cursor = conn.execute(
            "SELECT c.fts_rowid, v.agent_identity, v.embedding_blob FROM chunks_vec v"
            " JOIN chunks c ON c.chunk_id = v.chunk_id")
        while batch := cursor.fetchmany(_BUILD_BATCH):
            self._append_batch(batch)
        for space in self._spaces.values():
            _normalise(space.vectors[:space.size])

    def _append_batch(self, batch: list[tuple[int, str | None, bytes]]) -> None:
        """A page of rows read at build, copied in per namespace as whole blocks (a row at a
        time cost a third of a build). Each rowid is new: the index started empty."""
        dimension = self.dimension
        assert dimension is not None
        by_namespace: dict[str, list[tuple[int, bytes]]] = {}
        for rowid, namespace, blob in batch:
            if len(blob) == 4 * dimension:  # else another model's, before a reindex finished
                by_namespace.setdefault(namespace or "", []).append((rowid, blob))
        for namespace, rows in by_namespace.items():
            space = self._space(namespace, len(rows))
            start, end = space.size, space.size + len(rows)
            if end > len(space.rowids):
                space.resize(max(end, int(space.size * _GROWTH) + 1))
            rowids = np.fromiter((rowid for rowid, _ in rows), dtype=np.int64, count=len(rows))
            space.vectors[start:end] = np.frombuffer(
                b"".join(blob for _, blob in rows), dtype=np.float32).reshape(-1, dimension)
            space.rowids[start:end] = rowids
            space.size = end
            self._reserve_rowids(int(rowids.max()))
            self._where[rowids] = (self._space_number[namespace] << 32) + np.arange(
                start, end, dtype=np.int64)

    def apply(self, conn: Any, inserted: Sequence[int], deleted: Sequence[int]) -> None:
        """Drop the deleted rowids' rows, then add the inserted ones that have a vector."""
        for rowid in deleted:
            self._remove(rowid)
        if not inserted:
            return
        if self.dimension is None:
            self.dimension = _dimension(conn)
            if self.dimension is None:
                return
        self._add_rows(select_in(
            conn, "SELECT c.fts_rowid, v.agent_identity, v.embedding_blob FROM chunks c"
                  " JOIN chunks_vec v ON v.chunk_id = c.chunk_id"
                  " WHERE c.embedding_status = 'done' AND c.fts_rowid IN", inserted),
            normalise=True)

    def load(self, dimension: int, rows: list[tuple[int, str | None, bytes]]) -> None:
        """Add rows a backend read itself, (fts_rowid, namespace, float32 bytes), each rowid
        new to the index (a build's pages; PostgreSQL's, :mod:`core.storage.pg.derived`)."""
        if self.dimension is None:
            self.dimension = dimension
        before = {name: space.size for name, space in self._spaces.items()}
        self._append_batch(rows)
        for name, space in self._spaces.items():
            _normalise(space.vectors[before.get(name, 0):space.size])

    def replace(self, dimension: int, deleted: Sequence[int],
                rows: Sequence[tuple[int, str | None, bytes]]) -> None:
        """Drop the ``deleted`` rowids' rows, then add (or replace) ``rows`` that a backend
        read itself: its catch-up, applied as :meth:`apply` applies the file's."""
        for rowid in deleted:
            self._remove(rowid)
        if not rows:
            return
        if self.dimension is None:
            self.dimension = dimension
        self._add_rows(rows, normalise=True)

    def _add_rows(self, rows: Any, *, normalise: bool) -> None:
        dimension = self.dimension
        assert dimension is not None
        for rowid, namespace, blob in rows:
            if rowid < len(self._where) and self._where[rowid] != _NOT_HELD:
                self._remove(rowid)  # never two rows for one chunk
            vector = np.frombuffer(blob, dtype=np.float32)
            if vector.shape[0] != dimension:
                continue  # another model's vector, written before a reindex finished
            space = self._space(namespace or "", 1)
            if space.size == len(space.rowids):
                space.resize(int(space.size * _GROWTH) + 1)
            row = space.size
            space.vectors[row] = vector
            if normalise:
                _normalise(space.vectors[row:row + 1])
            space.rowids[row] = rowid
            space.size += 1
            self._reserve_rowids(rowid)
            self._where[rowid] = self._space_number[namespace or ""] << 32 | row

    def _space(self, namespace: str, rows: int) -> _Space:
        space = self._spaces.get(namespace)
        if space is None:
            assert self.dimension is not None
            space = self._spaces[namespace] = _Space(self.dimension, rows)
            self._space_number[namespace] = len(self._space_names)
            self._space_names.append(namespace)
        return space

    def _reserve_rowids(self, rowid: int) -> None:
        if rowid < len(self._where):
            return
        grown = np.full(max(int((rowid + 1) * _GROWTH), 1024), _NOT_HELD, dtype=np.int64)
        grown[:len(self._where)] = self._where
        self._where = grown

    def _remove(self, rowid: int) -> None:
        """Drop ``rowid``'s row: the space's last row takes its place."""
        if rowid >= len(self._where) or self._where[rowid] == _NOT_HELD:
            return
        code = int(self._where[rowid])
        space = self._spaces[self._space_names[code >> 32]]
        row, last = code & 0xFFFFFFFF, space.size - 1
        if row != last:
            moved = int(space.rowids[last])
            space.vectors[row] = space.vectors[last]
            space.rowids[row] = moved
            self._where[moved] = (code >> 32) << 32 | row
        space.size -= 1
        self._where[rowid] = _NOT_HELD
        if len(space.rowids) > _MIN_ROWS and space.size < len(space.rowids) // 2:
            space.resize(int(space.size * _GROWTH) + 1)

    # -- reading it -------------------------------------------------------------------------

    def nearest(self, namespace: str, query: np.ndarray, k: int, *,
                all_cores: bool = False) -> list[tuple[int, float]]:
        """The namespace's ``k`` nearest rows as (fts_rowid, cosine distance), nearest
        first, ties by fts_rowid; ``all_cores`` when nothing of this query runs beside it."""
        space = self._spaces.get(namespace)
        if space is None or space.size == 0 or k <= 0:
            return []
        vector = np.ascontiguousarray(query, dtype=np.float32).reshape(-1)
        norm = float(np.linalg.norm(vector))
        if norm == 0.0 or vector.shape[0] != space.vectors.shape[1]:
            return []
        distances = _distances(space.vectors[:space.size], vector / norm, all_cores)
        rowids = space.rowids[:space.size]
        if space.size > k:
            cut = np.partition(distances, k - 1)[k - 1]
            candidates = np.flatnonzero(distances <= cut)  # every row tied at the cut
        else:
            candidates = np.arange(space.size)
        order = np.lexsort((rowids[candidates], distances[candidates]))[:k]
        chosen = candidates[order]
        return [(int(rowids[i]), float(distances[i])) for i in chosen]

    def nearest_of(self, rowids: Sequence[int], query: np.ndarray,
                   k: int) -> list[tuple[int, float]]:
        """The ``k`` of ``rowids`` nearest ``query``, as :meth:`nearest` ranks a namespace
        (a rowid with no vector here is left out): one session's rows, gathered from the
        matrix of the namespace each belongs to."""
        wanted = np.asarray(rowids, dtype=np.int64)
        wanted = wanted[(wanted >= 0) & (wanted < len(self._where))]
        codes = self._where[wanted]
        held = codes != _NOT_HELD
        wanted, codes = wanted[held], codes[held]
        if k <= 0 or wanted.size == 0 or self.dimension is None:
            return []
        vector = np.ascontiguousarray(query, dtype=np.float32).reshape(-1)
        norm = float(np.linalg.norm(vector))
        if norm == 0.0 or vector.shape[0] != self.dimension:
            return []
        vector = vector / norm
        numbers, rows = codes >> 32, codes & 0xFFFFFFFF
        distances = np.empty(wanted.size, dtype=np.float32)
        for number in np.unique(numbers).tolist():
            inside = numbers == number
            space = self._spaces[self._space_names[number]]
            distances[inside] = 1.0 - space.vectors[rows[inside]] @ vector
        order = np.lexsort((wanted, distances))[:k]
        return list(zip(wanted[order].tolist(), distances[order].tolist(), strict=True))

    def rows(self) -> int:
        """Vectors held, every namespace together."""
        return sum(space.size for space in self._spaces.values())

    def raw_bytes(self) -> int:
        """What the held vectors take as bare float32 rows."""
        return self.rows() * 4 * (self.dimension or 0)

    def memory_bytes(self) -> int:
        """The bytes of every array it holds (matrices with their spare rows, rowids, map)."""
        return sum(space.nbytes() for space in self._spaces.values()) + int(self._where.nbytes)


def _distances(matrix: np.ndarray, query: np.ndarray, all_cores: bool = False) -> np.ndarray:
    """``1 - matrix @ query``, BLAS on one thread unless ``all_cores``.

    The scan is memory-bound. Beside the full-text leg on the other core, a second BLAS
    thread only contended with it (measured at 100k, namespace hybrid p95 15.1 ms with
    BLAS's two threads, 10.5 with one). When the full-text leg ran first from memory, the
    scan alone takes BLAS's every thread (see ``SqliteBackend.namespace_legs``).
    """
    if all_cores:
        return 1.0 - matrix @ query
    with _single_blas_thread():
        return 1.0 - matrix @ query


def _dimension(conn: Any) -> int | None:
    if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'chunks_vec'").fetchone() is None:
        return None
    row = conn.execute("SELECT value FROM memory_meta WHERE key = 'embedding_dimension'"
                       ).fetchone()
    return None if row is None else int(row[0])


def _normalise(rows: np.ndarray) -> None:
    """Scale each row to length 1 in place (a zero row stays zero)."""
    norms = np.sqrt(np.einsum("ij,ij->i", rows, rows))  # no temporary the matrix's size
    norms[norms == 0] = 1.0
    rows /= norms[:, None]
