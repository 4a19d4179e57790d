"""The namespace index's int8 codes: rows read back bit for bit, and ``nearest`` gives the
answer a float32 brute-force scan gives, ties and near-ties included."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from core.storage.derived import vector_codes, vector_matrix
from core.storage.derived.vector_matrix import NamespaceVectors


def normalised(rows: np.ndarray) -> np.ndarray:
    rows = np.array(rows, dtype=np.float32)
    vector_matrix._normalise(rows)
    return rows


def read_back(rows: np.ndarray) -> np.ndarray:
    encoded = vector_codes.encode(rows)
    decoded = vector_codes.decode(encoded.codes, encoded.low16, encoded.low8, encoded.scales,
                                  encoded.patch_dims, encoded.patch_bytes)
    for row, vector in encoded.whole.items():
        decoded[row] = vector
    return decoded


# --- the codes ---------------------------------------------------------------------------------

@pytest.mark.parametrize("dimension", [1, 3, 7, 64, 256, 384])
def test_rows_read_back_bit_for_bit(dimension: int) -> None:
    rng = np.random.default_rng(dimension)
    dense = normalised(rng.standard_normal((300, dimension)))
    sparse = dense.copy()
    sparse[rng.random(sparse.shape) < 0.6] = 0.0  # the deterministic embedder's rows
    tiny = dense.copy()
    tiny[:, ::3] *= np.float32(1e-30)  # components far below the scale, some subnormal
    signed_zero = dense.copy()
    signed_zero[:, -1] = -0.0
    small = dense * np.float32(1e-36)  # a scale whose least values are not normal floats
    for rows in (dense, sparse, tiny, signed_zero, small, np.zeros((3, dimension), np.float32)):
        assert np.array_equal(read_back(rows).view(np.uint32), rows.view(np.uint32))


@settings(max_examples=60, deadline=None)
@given(hnp.arrays(np.float32, st.tuples(st.integers(1, 20), st.integers(1, 40)),
                  elements=st.floats(-1, 1, width=32, allow_subnormal=True)))
def test_any_rows_read_back_bit_for_bit(rows: np.ndarray) -> None:
    assert np.array_equal(read_back(rows).view(np.uint32), rows.view(np.uint32))


def test_the_bound_holds_for_every_row() -> None:
    rng = np.random.default_rng(3)
    rows = normalised(rng.standard_normal((2000, 256)))
    encoded = vector_codes.encode(rows)
    for _ in range(20):
        query = normalised(rng.standard_normal((1, 256)))[0]
        codes, scale, reach, missed = vector_codes.quantise_query(query)
        approximate = (encoded.codes.astype(np.int64) @ codes.astype(np.int64)
                       ) * encoded.scales.astype(np.float64) * scale
        exact = rows.astype(np.float64) @ query.astype(np.float64)
        assert np.all(np.abs(exact - approximate) <= reach * encoded.residuals + missed)


# --- nearest, against the brute force ----------------------------------------------------------

def brute_force(rows: np.ndarray, rowids: list[int], query: np.ndarray,
                k: int) -> list[tuple[int, float]]:
    """Every row scored: float32 distance of the float32 dot, then fts_rowid."""
    unit = query.astype(np.float32) / np.float32(np.linalg.norm(query.astype(np.float32)))
    scores = (rows.astype(np.float64) @ unit.astype(np.float64)).astype(np.float32)
    distances = np.float32(1) - scores
    order = np.lexsort((np.asarray(rowids), distances))[:k]
    return [(rowids[i], float(distances[i])) for i in order]


def index_of(rows: np.ndarray, rowids: list[int], namespace: str = "ann") -> NamespaceVectors:
    index = NamespaceVectors()
    index.load(rows.shape[1], [(rowid, namespace, row.tobytes())
                               for rowid, row in zip(rowids, rows, strict=True)])
    return index


def near_ties(rng: np.random.Generator, count: int, dimension: int) -> np.ndarray:
    """A cluster of rows closer to each other than the codes can tell apart: exact copies,
    and copies a few float32 steps away in some components."""
    base = rng.standard_normal(dimension).astype(np.float32)
    rows = np.repeat(base[None], count, axis=0)
    rows += rng.standard_normal(rows.shape).astype(np.float32) * np.float32(1e-4)
    rows[count // 2:count // 2 + 20] = rows[count // 2]  # exact ties
    steps = rng.integers(0, 4, size=(count // 4, dimension))
    bits = rows[:count // 4].view(np.int32)
    bits += steps.astype(np.int32)  # a few units in the last place
    return rows


@pytest.mark.parametrize("k", [1, 10, 50, 3000])
def test_nearest_is_the_brute_force_answer_with_ties_and_near_ties(k: int) -> None:
    rng = np.random.default_rng(k)
    dimension = 64
    spread = rng.standard_normal((1500, dimension)).astype(np.float32)
    rows = np.concatenate([spread, near_ties(rng, 600, dimension)])
    order = rng.permutation(len(rows))
    rows = rows[order]
    rowids = [int(r) for r in rng.choice(10**6, size=len(rows), replace=False)]
    index = index_of(rows, rowids)
    stored = normalised(rows)
    queries = [rows[order.argmax()] + rng.standard_normal(dimension).astype(np.float32) * 1e-5,
               *rng.standard_normal((8, dimension)).astype(np.float32),
               rows[5].copy()]  # a stored row itself: distance 0 and its exact ties
    scored: list[int] = []
    real_exact = vector_matrix._exact_scores
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(vector_matrix, "_exact_scores", lambda space, chosen, query: (
            scored.append(len(chosen)), real_exact(space, chosen, query))[1])
        for query in queries:
            assert index.nearest("ann", query, k) == brute_force(stored, rowids, query, k)
    if k <= 50:  # the scan ran: only some rows were scored exactly
        assert sum(scored) < len(queries) * len(rows)


def test_small_empty_and_missing_namespaces() -> None:
    rng = np.random.default_rng(5)
    one = rng.standard_normal((1, 16)).astype(np.float32)
    index = index_of(one, [42])
    query = rng.standard_normal(16).astype(np.float32)
    assert index.nearest("ann", query, 10) == brute_force(normalised(one), [42], query, 10)
    assert index.nearest("bob", query, 10) == []
    assert index.nearest("ann", np.zeros(16, np.float32), 10) == []
    index.replace(16, [42], [])
    assert index.rows() == 0 and index.nearest("ann", query, 10) == []


def test_deletes_and_replaced_vectors_then_queries() -> None:
    rng = np.random.default_rng(8)
    rows = rng.standard_normal((2000, 32)).astype(np.float32)
    rows[::50, ::2] = 0.0  # some rows the patches cannot all carry are kept whole
    rowids = list(range(1, 2001))
    index = index_of(rows, rowids)
    deleted = [int(r) for r in rng.choice(rowids, size=900, replace=False)]
    changed = {int(r): rng.standard_normal(32).astype(np.float32)
               for r in rng.choice(rowids, size=100, replace=False)}
    index.replace(32, deleted, [(rowid, "ann", vector.tobytes())
                                for rowid, vector in changed.items()])
    kept = {rowid: rows[rowid - 1] for rowid in rowids if rowid not in deleted}
    kept.update(changed)
    ids = sorted(kept)
    stored = normalised(np.stack([kept[rowid] for rowid in ids]))
    assert index.rows() == len(ids)
    for query in rng.standard_normal((10, 32)).astype(np.float32):
        for k in (1, 10, 50, 5000):
            assert index.nearest("ann", query, k) == brute_force(stored, ids, query, k)
