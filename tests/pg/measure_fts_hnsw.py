"""Measures, on the LoCoMo dev conversations, how close PostgreSQL's full-text ranking is to
bm25 and how much the namespace vector search's HNSW index misses.

Run: ``.venv/bin/python -m tests.pg.measure_fts_hnsw [--vectors 20000]`` (it starts its
own throwaway PostgreSQL, as the tests do; about a minute on two cores).

1. Full text: the conversations are stored in a SQLite memory and a PostgreSQL one, with
   the engine's chunking and context; each LoCoMo question's terms (as retrieval parses
   them) are ranked by SQLite's FTS5 bm25, by bm25 computed from PostgreSQL's tsvectors
   (:func:`core.storage.pg.fts_compare.bm25_scores`) and by ``ts_rank_cd`` under each
   normalisation flag; overlap@10 and Kendall tau against FTS5's bm25 are printed.
2. Vectors: the conversations' chunks and copies of them with noise (one namespace,
   ``--vectors`` in all) are embedded with the shared model2vec model; each question's
   top 10 by the HNSW leg is compared with the exact top 10 (recall@10) at several
   ``hnsw.ef_search`` values.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from core import indexing
from core.config import EmbeddingConfig, StorageConfig
from core.embeddings.model2vec_backend import load_model2vec
from core.evaluation.locomo import convert_locomo_file
from core.locations import parse_location
from core.retrieval.fts_query import query_terms
from core.storage.messages import PreparedChunk, PreparedMessage
from core.storage.pg import fts_compare, search
from core.storage.pg.backend import PostgresBackend
from core.storage.pg.connection import Conn
from core.storage.sqlite.sqlite_backend import SqliteBackend
from core.storage.vocabulary import Scope
from tests.pg_server import start_server

ROOT = Path(__file__).resolve().parents[2]
LOCOMO = ROOT.parent / "shared" / "data" / "locomo-dev"
MODEL = ROOT.parent / "shared" / "models" / "m2v-minilm-256"
NORMALIZATIONS = (0, 1, 2, 4, 8, 16, 32, 1 | 32, 2 | 32)


def prepared(session_id: str, sequence: int, payload: dict[str, Any]) -> PreparedMessage:
    """A LoCoMo turn as the engine prepares a message (default chunking)."""
    text = indexing.normalize_text(indexing.extract_indexable_text(payload))
    pieces = indexing.chunk_text(text, 640, 96)
    role = str(payload.get("role", "user"))
    return PreparedMessage(
        session_id=session_id, sequence=sequence, payload_json=json.dumps(payload), role=role,
        importance=0.5, chunks=tuple(PreparedChunk(p, indexing.content_hash(p)) for p in pieces),
        chunk_metadata={"role": role}, agent_identity="locomo",
        created_at="2026-01-01T00:00:00.000Z")


async def load(backends: list[Any]) -> list[tuple[str, list[str]]]:
    """Store every conversation in each backend; (session_id, terms) per question."""
    queries: list[tuple[str, list[str]]] = []
    for path in sorted(LOCOMO.glob("*.json")):
        for conversion in convert_locomo_file(path):
            for session_id, messages in conversion.dataset.messages.items():
                batch = [prepared(session_id, m.sequence, m.message) for m in messages]
                for backend in backends:
                    await backend.write_messages(batch, all_or_nothing=True,
                                                 context_messages=2, context_chars=400)
            queries += [(q.session_id, query_terms(q.query)) for q in conversion.dataset.queries]
    return queries


async def full_text(sqlite: SqliteBackend, pg: PostgresBackend,
                    queries: list[tuple[str, list[str]]]) -> None:
    reference: list[dict[str, float]] = []
    for session_id, terms in queries:
        rows = await sqlite.fts_search(Scope(session_id=session_id), terms, 100000)
        reference.append({chunk_id: score for chunk_id, score in rows})

    async def scored(conn: Conn) -> dict[str, list[dict[str, float]]]:
        found: dict[str, list[dict[str, float]]] = {"bm25 from tsvector stats": [],
                                                    "the search leg (bm25 in SQL)": []}
        for session_id, terms in queries:
            found["the search leg (bm25 in SQL)"].append(dict(await search.fts_search(
                conn, Scope(session_id=session_id), terms, 100000)))
            found["bm25 from tsvector stats"].append(
                await fts_compare.bm25_scores(conn, session_id, terms))
            for flag in NORMALIZATIONS:
                found.setdefault(f"ts_rank_cd normalization {flag}", []).append(
                    await fts_compare.ts_rank_cd_scores(conn, session_id, terms, flag))
        return found

    started = time.perf_counter()
    found = await pg._db.read(scored)
    print(f"\nfull text, {len(queries)} LoCoMo questions, against SQLite FTS5 bm25"
          f" ({time.perf_counter() - started:.1f} s):")
    for name, scorings in found.items():
        print("  " + fts_compare.agreement(name, zip(reference, scorings, strict=True)).line())
    stat_bm25 = found["bm25 from tsvector stats"]
    print("against bm25 from PostgreSQL's own tsvector statistics:")
    for name, scorings in found.items():
        if name.startswith("ts_rank_cd"):
            print("  " + fts_compare.agreement(name, zip(stat_bm25, scorings,
                                                          strict=True)).line())


async def vectors(pg: PostgresBackend, queries: list[tuple[str, str]], total: int) -> None:
    embedder = load_model2vec(EmbeddingConfig(model=str(MODEL)))
    pending = await pg.pending_chunks(1_000_000)
    matrix = embedder.embed([row[2] for row in pending])
    await pg.save_vectors([(r[0], r[1], r[4]) for r in pending], matrix, embedder.name)
    rng = np.random.default_rng(7)
    copies = max(0, total - len(pending))
    noisy = matrix[rng.integers(0, len(matrix), copies)] + rng.normal(
        0, 0.04, (copies, matrix.shape[1])).astype(np.float32)
    noisy /= np.linalg.norm(noisy, axis=1, keepdims=True)

    async def fill(conn: Conn) -> None:
        from core.storage.pg.events import vector_text

        async with conn.cursor() as cur:
            for start in range(0, copies, 500):
                session = f"noise-{start // 500}"
                await cur.execute("INSERT INTO sessions(session_id, agent_identity)"
                                  " VALUES (%s, 'locomo')", (session,))
                rows = [(f"noise-{i}", session, f"noise {i}", f"h{i}", 1, 1, "s")
                        for i in range(start, min(copies, start + 500))]
                await cur.executemany(
                    "INSERT INTO chunks(chunk_id, session_id, chunk_text, content_hash,"
                    " sequence_start, sequence_end, scope_token, embedding_status)"
                    " VALUES (%s, %s, %s, %s, %s, %s, %s, 'done')", rows)
                await cur.executemany(
                    "INSERT INTO chunks_vec(chunk_id, session_id, agent_identity,"
                    " embedding_blob, embedding_model) VALUES (%s, %s, 'locomo', %s::vector,"
                    " 'noise')", [(r[0], session, vector_text(noisy[i - start]))
                                  for i, r in enumerate(rows, start)])

    started = time.perf_counter()
    await pg._db.write(fill)
    print(f"\nvectors: {len(pending) + copies} in one namespace, {matrix.shape[1]} dimensions"
          f" (stored with the HNSW index in {time.perf_counter() - started:.1f} s)")
    question_vectors = embedder.embed([q for _, q in queries])
    scope = Scope(namespace="locomo")

    async def exact(conn: Conn) -> list[tuple[set[str], float]]:
        """Per question: the exact top 10 and its 10th distance."""
        tops = []
        for vector in question_vectors:
            cursor = await conn.execute(
                "SELECT chunk_id, embedding_blob <=> %s::vector FROM chunks_vec"
                " WHERE agent_identity = 'locomo'"
                " ORDER BY (embedding_blob <=> %s::vector) + 0, chunk_id LIMIT 10",
                (fts_compare_vector(vector), fts_compare_vector(vector)))
            rows = await cursor.fetchall()
            tops.append(({str(r[0]) for r in rows}, float(rows[-1][1])))
        return tops

    truth = await pg._db.read(exact)
    for ef in (40, 100, 200, 400):
        search.HNSW_EF_SEARCH = ef
        started = time.perf_counter()
        hits = 0
        for vector, expected in zip(question_vectors, truth, strict=True):
            found = await pg.vector_search(scope, vector, 10, embedder.name)
            # A chunk as near as the exact 10th counts: equal distances (the same text in
            # two conversations) may be cut in either order.
            ids, tenth = expected
            hits += sum(1 for c, d in found if c in ids or d <= tenth + 1e-6)
        elapsed = (time.perf_counter() - started) / len(truth) * 1000
        print(f"  ef_search {ef:>4}: recall@10 {hits / (10 * len(truth)):.4f}"
              f"   {elapsed:.1f} ms a query ({len(truth)} queries)")


def fts_compare_vector(vector: np.ndarray) -> str:
    from core.storage.pg.events import vector_text

    return vector_text(vector)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vectors", type=int, default=20000)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="memory-workbench-measure-", dir="/dev/shm"))
    server = start_server(folder)
    try:
        url = server.url(server.create_database())
        pg = await PostgresBackend.open(parse_location(url), StorageConfig())
        await pg.ensure_vector_table(256, "model2vec:m2v-minilm-256")
        sqlite = await asyncio.to_thread(SqliteBackend.open, folder / "memory.db",
                                         StorageConfig())
        started = time.perf_counter()
        queries = await load([sqlite, pg])
        print(f"loaded {len(list(LOCOMO.glob('*.json')))} LoCoMo conversations into both"
              f" ({time.perf_counter() - started:.1f} s)")
        await full_text(sqlite, pg, queries)
        texts = []
        for path in sorted(LOCOMO.glob("*.json")):
            for conversion in convert_locomo_file(path):
                texts += [(q.session_id, q.query) for q in conversion.dataset.queries]
        await vectors(pg, texts, args.vectors)
        await pg.close()
        await sqlite.close()
    finally:
        server.stop()
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
