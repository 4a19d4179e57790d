"""LanceDB's side of ``bench peers``: its table built from what the engine stored, streamed.

The rows go from the SQLite file to LanceDB a batch at a time (a cursor over the chunks and
their vectors, each batch made into Arrow arrays and handed on), so building LanceDB beside
a memory of a million chunks holds one batch in Python, not every text and vector twice.
The file is read on a read-only connection of its own, so a ``--reuse``d file is never
written by this side.
"""

from __future__ import annotations

import random
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

INSTALL_HINT = ("bench peers needs LanceDB, an optional extra: "
                "pip install -e '.[peers]' (lancedb 0.40)")
# Rows per batch streamed from the file into LanceDB (about 1 MiB of vectors at 256 dims).
STREAM_ROWS = 4096
_WORD = re.compile(r"\w+", re.UNICODE)


class PeersUnavailable(RuntimeError):
    """LanceDB is not installed (the ``peers`` extra)."""


def import_lancedb() -> Any:
    """The ``lancedb`` module, or :class:`PeersUnavailable` saying how to install it."""
    try:
        import lancedb
    except ImportError as error:
        raise PeersUnavailable(INSTALL_HINT) from error
    return lancedb


@dataclass
class LanceBuild:
    """LanceDB's table and what building it cost: the model encoding the chunk texts (as
    LanceDB's own ingest would), writing the table, and its two indexes."""

    table: Any
    rows: int
    encode_seconds: float
    write_seconds: float
    index_seconds: float
    # The same texts through ``also`` (our own embedding path), when one was given.
    also_seconds: float | None = None


def build_lancedb(lancedb: Any, folder: Path, path: Path, embed: Callable[[list[str]], Any],
                  also: Callable[[list[str]], Any] | None = None) -> LanceBuild:
    """LanceDB's table of every embedded chunk of the file at ``path``, with the engine's
    own vectors; ``embed`` is timed on the chunk texts as LanceDB's ingest cost, and
    ``also`` on the same texts, apart, for comparison."""
    import pyarrow as pa
    from lancedb.index import FTS, Bitmap

    spent = {"read": 0.0, "encode": 0.0, "also": 0.0}
    rows = 0

    def batches(schema: Any) -> Iterator[Any]:
        nonlocal rows
        for chunk_ids, session_ids, texts, contexts, matrix in _stored_batches(path, spent):
            began = time.perf_counter()
            embed(texts)
            spent["encode"] += time.perf_counter() - began
            began = time.perf_counter()
            if also is not None:
                also(texts)
            spent["also"] += time.perf_counter() - began
            began = time.perf_counter()
            flat = pa.array(matrix.reshape(-1), type=pa.float32())
            yield pa.RecordBatch.from_arrays([
                pa.array(chunk_ids, type=pa.string()),
                pa.array(session_ids, type=pa.string()),
                pa.array([text if not context else f"{text}\n{context}"
                          for text, context in zip(texts, contexts, strict=True)],
                         type=pa.string()),
                pa.FixedSizeListArray.from_arrays(flat, matrix.shape[1]),
            ], schema=schema)
            spent["read"] += time.perf_counter() - began
            rows += len(chunk_ids)

    started = time.perf_counter()
    schema = pa.schema([("chunk_id", pa.string()), ("session_id", pa.string()),
                        ("text", pa.string()),
                        ("vector", pa.list_(pa.float32(), _dimension(path)))])
    table = lancedb.connect(str(folder)).create_table("chunks", batches(schema), schema=schema)
    written = time.perf_counter()
    table.create_index("text", config=FTS())  # defaults: English stemming, as FTS5's porter
    table.create_index("session_id", config=Bitmap())
    indexed = time.perf_counter()
    # Reading the file and encoding ran inside the write: only LanceDB's own part counts.
    write_seconds = written - started - spent["read"] - spent["encode"] - spent["also"]
    return LanceBuild(table, rows, spent["encode"], max(write_seconds, 0.0), indexed - written,
                      spent["also"] if also is not None else None)


def _dimension(path: Path) -> int:
    from core.storage import open_connection

    conn = open_connection(path, read_only=True, busy_timeout_ms=5000)
    try:
        row = conn.execute("SELECT length(embedding_blob) FROM chunks_vec LIMIT 1").fetchone()
    finally:
        conn.close()
    if row is None:
        raise ValueError(f"{path} holds no embedded chunks to give LanceDB")
    return int(row[0]) // 4


def _stored_batches(path: Path, spent: dict[str, float],
                    ) -> Iterator[tuple[list[str], list[str], list[str], list[str], Any]]:
    """Every embedded chunk as the engine stored it, :data:`STREAM_ROWS` at a time:
    (chunk ids, session ids, texts, contexts, unit vectors); reading time into ``spent``."""
    import numpy as np

    from core.storage import open_connection

    conn = open_connection(path, read_only=True, busy_timeout_ms=5000)
    try:
        cursor = conn.execute(
            "SELECT v.chunk_id, v.session_id, c.chunk_text, c.context_text, v.embedding_blob"
            " FROM chunks_vec v JOIN chunks c ON c.chunk_id = v.chunk_id")
        while True:
            began = time.perf_counter()
            found = cursor.fetchmany(STREAM_ROWS)
            if not found:
                break
            matrix = np.frombuffer(b"".join(row[4] for row in found), dtype=np.float32)
            matrix = matrix.reshape(len(found), -1)
            norms = np.linalg.norm(matrix, axis=1, keepdims=True)
            norms[norms == 0] = 1.0
            batch = ([row[0] for row in found], [row[1] for row in found],
                     [row[2] for row in found], [row[3] for row in found], matrix / norms)
            spent["read"] += time.perf_counter() - began
            yield batch
    finally:
        conn.close()


def lancedb_searches(table: Any, top_k: int) -> dict[str, Callable[[str, str, Any], Any]]:
    """Each path's LanceDB query, given (session_id, text, query vector)."""
    from lancedb.rerankers import RRFReranker

    reranker = RRFReranker()

    def hybrid(text: str, vector: Any) -> Any:
        return (table.search(query_type="hybrid").vector(vector).text(text)
                .distance_type("cosine"))

    return {
        "session hybrid": lambda sid, text, vector: hybrid(text, vector)
        .where(f"session_id = '{sid}'", prefilter=True).rerank(reranker).limit(top_k)
        .to_arrow(),
        "namespace hybrid": lambda sid, text, vector: hybrid(text, vector)
        .rerank(reranker).limit(top_k).to_arrow(),
        "vector only": lambda sid, text, vector: table.search(vector)
        .distance_type("cosine").limit(top_k).to_arrow(),
        "full text only": lambda sid, text, vector: table.search(text, query_type="fts")
        .limit(top_k).to_arrow(),
    }


def stored_query_texts(path: Path, count: int, rng: random.Random) -> list[tuple[str, str]]:
    """``count`` (session_id, query text) pairs, 3-6 word spans of messages the file holds,
    picked by random rowid (a reused file was written before this run: there are no
    generated messages to pick from, and reading every message would cost memory)."""
    import json

    from core.indexing import extract_indexable_text, normalize_text
    from core.storage import open_connection

    conn = open_connection(path, read_only=True, busy_timeout_ms=5000)
    try:
        (top,) = conn.execute("SELECT coalesce(max(rowid), 0) FROM conversation_events"
                              ).fetchone()
        picked: list[tuple[str, str]] = []
        for _ in range(count * 50):
            if len(picked) >= count or not top:
                break
            row = conn.execute("SELECT session_id, payload_json FROM conversation_events"
                               " WHERE rowid = ?", (rng.randint(1, top),)).fetchone()
            if row is None:
                continue
            words = _WORD.findall(normalize_text(extract_indexable_text(json.loads(row[1]))))
            if len(words) < 3:
                continue
            length = rng.randint(3, min(6, len(words)))
            start = rng.randrange(len(words) - length + 1)
            picked.append((row[0], " ".join(words[start:start + length])))
    finally:
        conn.close()
    if len(picked) < count:
        raise ValueError(f"{path} holds too few messages to make {count} query texts from")
    return picked
