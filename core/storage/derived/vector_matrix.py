"""Every namespace's vectors as int8 codes scanned with simsimd, and an exact answer.

A namespace-wide KNN in sqlite-vec reads every vector block of the agent through SQLite's
pages (~55 ms at 100k chunks); the same vectors in memory are one scan at memory bandwidth.
Rows are normalised, so a row's cosine distance to a normalised query is ``1 - dot``.

The scan reads int8 codes (a quarter of the float32 bytes; :mod:`.vector_codes`), whose
score error is bounded per row. The answer is then made exact: the best ``k`` by code are
scored exactly, and so is every row whose bound still reaches the ``k``-th of those; no other
row can enter the top ``k``. The exact rows come from the same memory: the codes plus each
float32's low 24 bits give the float32 back bit for bit, so the whole index stays near the
raw vector bytes. The answer is ordered by float32 distance, then fts_rowid (the chunk's
insertion order), as a float32 brute-force scan orders it.

Memory stays near the raw vector bytes: each namespace's arrays grow by an eighth when full,
a deleted row is replaced by the last one (no holes to compact), a space left half empty is
shrunk, and besides the vectors each row costs its fts_rowid, its scale and bound, its
patches and one slot of a rowid -> (namespace, row) table.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import simsimd

from core.storage.derived import persisted, vector_codes
from core.storage.sqlite.vectors import vectors_of

_MIN_ROWS = 16
_BUILD_BATCH = 4096
_GROWTH = 1.125
_NOT_HELD = -1
# Beyond every float error of the bound (scores are at most 1; float64 sums of 256 terms
# err by ~1e-14), and more than two float32 steps of a distance: a row left out by it has a
# float32 distance strictly above the k-th's, so no tie on fts_rowid can bring it back.
_MARGIN = 1e-6
# A space this small (or at most this many times k) is scored exactly, row by row.
_SMALL = 256
_SMALL_PER_K = 4
# The fewest rows whose scan is split over every core (``all_cores``).
_SPLIT_ROWS = 250_000
# What a row kept whole costs beyond its vector (a dict slot and an array's header).
_WHOLE_OVERHEAD = 200

DERIVED_VECTOR_LEG = "namespace matrix (int8 scan, exact)"
"""What answers a namespace's vector leg once its matrix is built, on either backend."""

_PLANES = (("codes", np.int8, True), ("low16", np.uint16, True), ("low8", np.uint8, True),
           ("scales", np.float32, False), ("residuals", np.float32, False),
           ("patch_dims", np.uint16, "patches"), ("patch_bytes", np.uint8, "patches"),
           ("rowids", np.int64, False))
_SCANNED = ("codes", "scales")  # the planes a query reads whole


class _Space:
    """One namespace's rows: ``codes[:size]`` and what makes them exact, ``rowids`` beside,
    and the float32 rows too irregular for their patches in ``whole`` (by fts_rowid)."""

    codes: np.ndarray
    low16: np.ndarray
    low8: np.ndarray
    scales: np.ndarray
    residuals: np.ndarray
    patch_dims: np.ndarray
    patch_bytes: np.ndarray
    rowids: np.ndarray

    def __init__(self, dimension: int, capacity: int) -> None:
        self.dimension = dimension
        self.size = 0
        self.whole: dict[int, np.ndarray] = {}
        # At least every held row's residual (a row's removal leaves it as it was): the
        # bound that spares ``nearest`` a pass over all residuals on every query.
        self.residual_ceiling = 0.0
        self._allocate(max(_MIN_ROWS, capacity))

    def _allocate(self, capacity: int) -> None:
        for name, dtype, width in _PLANES:
            shape: tuple[int, ...] = (capacity,)
            if width is True:
                shape = (capacity, self.dimension)
            elif width:
                shape = (capacity, vector_codes.patches(self.dimension))
            old = getattr(self, name, None)
            plane = np.empty(shape, dtype=dtype)
            if old is not None:
                plane[:self.size] = old[:self.size]
            setattr(self, name, plane)

    def resize(self, capacity: int) -> None:
        self._allocate(max(_MIN_ROWS, capacity, self.size))

    def put(self, start: int, encoded: vector_codes.Encoded, rowids: np.ndarray) -> None:
        """Write ``encoded`` rows at ``start`` on."""
        end = start + len(rowids)
        for name, _, _ in _PLANES[:-1]:
            getattr(self, name)[start:end] = getattr(encoded, name)
        self.rowids[start:end] = rowids
        if end > start:
            self.residual_ceiling = max(self.residual_ceiling, float(encoded.residuals.max()))
        for row, vector in encoded.whole.items():
            self.whole[int(rowids[row])] = vector

    def move(self, source: int, target: int) -> None:
        for name, _, _ in _PLANES:
            plane = getattr(self, name)
            plane[target] = plane[source]

    def exact(self, rows: np.ndarray) -> np.ndarray:
        """The float32 rows at ``rows``, bit for bit as they were put."""
        vectors = vector_codes.decode(
            self.codes[rows], self.low16[rows], self.low8[rows], self.scales[rows],
            self.patch_dims[rows], self.patch_bytes[rows])
        if self.whole:
            for at, rowid in enumerate(self.rowids[rows].tolist()):
                vector = self.whole.get(rowid)
                if vector is not None:
                    vectors[at] = vector
        return vectors

    @classmethod
    def mapped(cls, dimension: int, planes: dict[str, np.ndarray], ceiling: float,
               whole: dict[int, np.ndarray]) -> _Space:
        """A space over saved planes (copy-on-write maps: a write stays in this process;
        the first row added past them copies the space into memory)."""
        space = cls.__new__(cls)
        space.dimension = dimension
        space.size = len(planes["rowids"])
        space.whole = whole
        space.residual_ceiling = ceiling
        for name, _, _ in _PLANES:
            setattr(space, name, planes[name])
        if space.size == 0:
            space._allocate(_MIN_ROWS)
        return space

    def nbytes(self) -> int:
        return int(sum(getattr(self, name).nbytes for name, _, _ in _PLANES)
                   + len(self.whole) * (4 * self.dimension + _WHOLE_OVERHEAD))


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

    def _append_batch(self, batch: Iterable[tuple[int, str | None, bytes]]) -> None:
        """A page of rows, each rowid new to the index, added per namespace as whole blocks
        (a row at a time cost a third of a build)."""
        dimension = self.dimension
        assert dimension is not None
        by_namespace: dict[str, list[tuple[int, bytes]]] = {}
        for rowid, namespace, blob in batch:
            if len(blob) == 4 * dimension:  # else another model's, before a reindex finished
                by_namespace.setdefault(namespace or "", []).append((rowid, blob))
        for namespace, rows in by_namespace.items():
            rowids = np.fromiter((rowid for rowid, _ in rows), dtype=np.int64, count=len(rows))
            vectors = np.frombuffer(b"".join(blob for _, blob in rows),
                                    dtype=np.float32).reshape(-1, dimension).copy()
            _normalise(vectors)
            space = self._space(namespace, len(rows))
            start, end = space.size, space.size + len(rows)
            if end > len(space.rowids):
                space.resize(max(end, int(space.size * _GROWTH) + 1))
            space.put(start, vector_codes.encode(vectors), rowids)
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
        self._add_rows(vectors_of(conn, inserted, self.dimension))

    def load(self, dimension: int, rows: list[tuple[int, str | None, bytes]]) -> None:
        """Add rows a backend read itself, (fts_rowid, namespace, float32 bytes), each rowid
        new to the index (a build's pages; PostgreSQL's, :mod:`core.storage.pg.derived`)."""
        if self.dimension is None:
            self.dimension = dimension
        self._append_batch(rows)

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
        self._add_rows(rows)

    def _add_rows(self, rows: Iterable[tuple[int, str | None, bytes]]) -> None:
        """Add (or replace) rows, one batch per namespace."""
        fresh = []
        for rowid, namespace, blob in rows:
            if rowid < len(self._where) and self._where[rowid] != _NOT_HELD:
                self._remove(rowid)  # never two rows for one chunk
            fresh.append((rowid, namespace, blob))
        self._append_batch(fresh)

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
        space.whole.pop(rowid, None)
        if row != last:
            moved = int(space.rowids[last])
            space.move(last, row)
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
        vector = _unit(query, space.dimension)
        if vector is None:
            return []
        size = space.size
        if size <= max(_SMALL, _SMALL_PER_K * k):
            chosen = np.arange(size)
            return _ranked(space, chosen, _exact_scores(space, chosen, vector), k)
        codes, scale, reach, missed = vector_codes.quantise_query(vector)
        # s_i (d.c_i): the code's score over the query's scale (a positive constant), in
        # float32 (one rounding, 6e-8 of it, far inside _MARGIN once times the scale).
        approximate = _scan(space.codes[:size], codes, all_cores)
        approximate *= space.scales[:size]
        # The best k by code, scored exactly: their k-th score is a floor under the true k-th.
        cut = np.partition(approximate, size - k)[size - k]
        first = np.flatnonzero(approximate >= cut)
        first_scores = _exact_scores(space, first, vector)
        floor = float(np.partition(first_scores, len(first) - k)[len(first) - k]) - _MARGIN
        # Every row whose bound can reach the floor: first with the space's largest residual,
        # then each row's own.
        spare = missed * (1 + 1e-5) + _MARGIN  # |v| <= 1 + float32 rounding
        least = (floor - spare - reach * space.residual_ceiling) / scale
        reaching = np.flatnonzero(approximate >= _float32_at_most(least))
        upper = approximate[reaching].astype(np.float64) * scale
        upper += space.residuals[reaching] * reach + spare
        reaching = reaching[upper >= floor]
        rest = np.setdiff1d(reaching, first, assume_unique=True)
        # The few left, by their codes against the float query: no error of the query's codes.
        closer = space.codes[rest].astype(np.float64) @ vector.astype(np.float64)
        closer *= space.scales[rest]
        closer += space.residuals[rest] * (1 + 1e-5) + _MARGIN
        rest = rest[closer >= floor]
        chosen = np.concatenate([first, rest])
        scores = np.concatenate([first_scores, _exact_scores(space, rest, vector)])
        return _ranked(space, chosen, scores, k)

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
        vector = _unit(query, self.dimension)
        if vector is None:
            return []
        numbers, rows = codes >> 32, codes & 0xFFFFFFFF
        distances = np.empty(wanted.size, dtype=np.float32)
        for number in np.unique(numbers).tolist():
            inside = numbers == number
            space = self._spaces[self._space_names[number]]
            # As nearest scores its survivors: exact rows, float64 sums, float32 distances.
            scores = _exact_scores(space, rows[inside], vector)
            distances[inside] = np.float32(1) - scores.astype(np.float32)
        order = np.lexsort((wanted, distances))[:k]
        return list(zip(wanted[order].tolist(), distances[order].tolist(), strict=True))

    # -- saving it ---------------------------------------------------------------------------

    def export(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """Everything held, as arrays (each plane of every space end to end) and what
        places them (call it under the index's lock: the arrays are copies)."""
        dimension = self.dimension or 0
        spaces = [self._spaces[name] for name in self._space_names]
        arrays: dict[str, np.ndarray] = {}
        for name, dtype, width in _PLANES:
            parts = [getattr(space, name)[:space.size] for space in spaces]
            shape: tuple[int, ...] = (0,)
            if width is True:
                shape = (0, dimension)
            elif width:
                shape = (0, vector_codes.patches(dimension) if dimension else 0)
            arrays[name] = np.concatenate(parts) if parts else np.empty(shape, dtype=dtype)
        whole = [(rowid, vector) for space in spaces for rowid, vector in space.whole.items()]
        arrays["whole_rowids"] = np.array([rowid for rowid, _ in whole], dtype=np.int64)
        arrays["whole_vectors"] = (np.stack([vector for _, vector in whole]) if whole
                                   else np.empty((0, dimension), dtype=np.float32))
        arrays["where"] = self._where.copy()
        meta = {"dimension": self.dimension, "spaces": list(self._space_names),
                "sizes": [space.size for space in spaces],
                "ceilings": [space.residual_ceiling for space in spaces]}
        return arrays, meta

    def learned(self) -> int:
        """Nothing is learned from queries: it changes with the file alone."""
        return 0

    def restore(self, conn: Any, arrays: dict[str, np.ndarray], meta: dict[str, Any]) -> None:
        """Hold what :meth:`export` gave (its arrays as saved, mapped copy-on-write)."""
        self._spaces, self._space_names, self._space_number = {}, [], {}
        self.dimension = meta["dimension"]
        assert self.dimension is not None
        start = 0
        for number, (name, size, ceiling) in enumerate(
                zip(meta["spaces"], meta["sizes"], meta["ceilings"], strict=True)):
            planes = {plane: arrays[plane][start:start + size] for plane, _, _ in _PLANES}
            for plane in _SCANNED:  # read by every query: faulted in here, not by the first
                persisted.touch(planes[plane])
            self._spaces[name] = _Space.mapped(self.dimension, planes, float(ceiling), {})
            self._space_names.append(name)
            self._space_number[name] = number
            start += size
        self._where = np.array(arrays["where"], dtype=np.int64)
        for rowid, vector in zip(arrays["whole_rowids"].tolist(), arrays["whole_vectors"],
                                 strict=True):
            space = self._spaces[self._space_names[int(self._where[rowid]) >> 32]]
            space.whole[rowid] = np.array(vector)

    def rows(self) -> int:
        """Vectors held, every namespace together."""
        return sum(space.size for space in self._spaces.values())

    def raw_bytes(self) -> int:
        """What the held vectors take as bare float32 rows."""
        return self.rows() * 4 * (self.dimension or 0)

    def memory_bytes(self) -> int:
        """The bytes of every array it holds (matrices with their spare rows, rowids, map)."""
        return sum(space.nbytes() for space in self._spaces.values()) + int(self._where.nbytes)


def _unit(query: np.ndarray, dimension: int) -> np.ndarray | None:
    """``query`` as a float32 vector of length 1; None for a zero one or another size."""
    vector = np.ascontiguousarray(query, dtype=np.float32).reshape(-1)
    norm = float(np.linalg.norm(vector))
    if norm == 0.0 or vector.shape[0] != dimension:
        return None
    return vector / np.float32(norm)


def _scan(codes: np.ndarray, query_codes: np.ndarray, all_cores: bool = False) -> np.ndarray:
    """Each row's code dot the query's code (exact integers, as float32), on one thread
    unless ``all_cores`` and the space is large.

    The scan is memory-bound. Beside the full-text leg on the other core, a second thread
    only contends with it; when the full-text leg ran first from memory, the scan alone
    takes every core (see ``SqliteBackend.namespace_legs``). Below :data:`_SPLIT_ROWS` a
    second thread saves less than waking it costs (at 100k rows on 2 busy cores: p50 1.0 ms
    on one thread, 7.3 on two; at 1M, 18.0 and 23.3).
    """
    threads = (os.cpu_count() or 1) if all_cores and len(codes) >= _SPLIT_ROWS else 1
    # float32 holds such a dot exactly up to 1,040 dimensions (|d.c| <= d * 127**2 < 2**24);
    # past that, one rounding of 6e-8 of it, inside _MARGIN.
    return np.asarray(simsimd.cdist(query_codes[None], codes, metric="dot",
                                    out_dtype="float32", threads=threads)).reshape(-1)


def _float32_at_most(value: float) -> np.float32:
    """The largest float32 not above ``value`` (a comparison with a float32 array rounds the
    bound to float32, which could round it up past a row that reaches it)."""
    rounded = np.float32(value)
    return np.nextafter(rounded, np.float32(-np.inf)) if rounded > value else rounded


def _exact_scores(space: _Space, rows: np.ndarray, query: np.ndarray) -> np.ndarray:
    """The rows' exact dot with ``query``: float32 values, summed in float64 row by row (the
    same sum for a row whichever rows are scored with it)."""
    if len(rows) == 0:
        return np.empty(0, dtype=np.float64)
    scores: np.ndarray = np.einsum("ij,j->i", space.exact(rows).astype(np.float64),
                                   query.astype(np.float64))
    return scores


def _ranked(space: _Space, rows: np.ndarray, scores: np.ndarray,
            k: int) -> list[tuple[int, float]]:
    """The best ``k`` of ``rows`` by float32 distance, then fts_rowid. The score is rounded
    to float32 first, as a float32 scan's is: what is left of the float64 sum's order then
    never decides a tie."""
    distances = np.float32(1) - scores.astype(np.float32)
    rowids = space.rowids[rows]
    order = np.lexsort((rowids, distances))[:k]
    return [(int(rowids[i]), float(distances[i])) for i in order]


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
