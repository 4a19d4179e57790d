"""The physical-limit reference of ``workbench bench query``: every stored vector in RAM as
one normalised float32 matrix, scanned by numpy (cosine brute force), and a search's recall
against that exact answer."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def load_matrix(path: Path, dimension: int) -> Any:
    """Every stored vector as one L2-normalised float32 matrix, read once from the file.

    Rows are copied into a preallocated matrix as they are read, so loading costs the
    matrix's own size in memory and no more.
    """
    import numpy as np

    from core.storage import open_connection

    conn = open_connection(path, read_only=True, busy_timeout_ms=5000)
    try:
        count = conn.execute("SELECT count(*) FROM chunks_vec").fetchone()[0]
        matrix = np.empty((count, dimension), dtype=np.float32)
        rows = 0
        for (blob,) in conn.execute("SELECT embedding_blob FROM chunks_vec"):
            if rows == count:
                break
            matrix[rows] = np.frombuffer(blob, dtype=np.float32)
            rows += 1
    finally:
        conn.close()
    return _normalised(matrix[:rows])


def _normalised(matrix: Any) -> Any:
    import numpy as np

    norms = np.sqrt(np.einsum("ij,ij->i", matrix, matrix))[:, None]  # no matrix-sized temporary
    norms[norms == 0] = 1.0
    matrix /= norms
    return matrix


def load_pg_matrix(url: str, dimension: int) -> tuple[list[str], Any]:
    """A PostgreSQL memory's vectors with their chunk ids, as :func:`load_matrix` does.

    pgvector's text form (``[0.1,0.2,…]``) is parsed here, so no pgvector adapter is needed.
    """
    import numpy as np
    import psycopg

    ids: list[str] = []
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT count(*) FROM chunks_vec").fetchone()
        count = 0 if row is None else int(row[0])
        matrix = np.empty((count, dimension), dtype=np.float32)
        with conn.cursor(name="bench_vectors") as cursor:  # server-side: streamed
            cursor.execute("SELECT chunk_id, embedding_blob::text FROM chunks_vec")
            for chunk_id, text in cursor:
                if len(ids) == count:
                    break
                matrix[len(ids)] = np.array(text[1:-1].split(","), dtype=np.float32)
                ids.append(str(chunk_id))
    return ids, _normalised(matrix[:len(ids)])


def top_k(matrix: Any, query: Any, k: int) -> Any:
    """Cosine brute force: the k best rows, best first (query already normalised)."""
    import numpy as np

    scores = matrix @ query
    k = min(k, len(scores))
    top = np.argpartition(-scores, k - 1)[:k]
    return top[np.argsort(-scores[top])]


def recall_at_k(found: list[list[str]], matrix: Any, chunk_ids: list[str], vectors: Any,
                k: int) -> float:
    """Mean share of the exact top ``k`` that the search found, per query.

    A found chunk counts when it is as near as the exact ``k``-th: many stored texts
    repeat (the same words in several sessions make the same vector), and which of several
    equally near chunks an exact ranking lists is arbitrary.
    """
    row_of = {chunk_id: index for index, chunk_id in enumerate(chunk_ids)}
    shares = []
    for got, vector in zip(found, vectors, strict=True):
        scores = matrix @ vector
        best = min(k, len(scores))
        if best == 0:
            continue
        kth = float(scores[top_k(matrix, vector, best)[-1]])
        hits = sum(1 for chunk_id in got[:best]
                   if chunk_id in row_of and scores[row_of[chunk_id]] >= kth - 1e-6)
        shares.append(hits / best)
    return sum(shares) / len(shares) if shares else 1.0
