"""``workbench bench peers``: this engine beside LanceDB, on the same data, in one run.

The memory is built as ``bench query`` builds it (the same synthetic messages through
``store_many``, so the same chunks, contexts and vectors). LanceDB is then given exactly what
the engine stored: every chunk's text with its conversational context, its session, and its
vector read back from the file. It gets its native full-text index over that text, a
BITMAP index on the session, and cosine distance; its vector search is a flat scan, exact
as ours is. The same query texts (``bench query``'s) are then asked of both, one at a time,
each timing including embedding the query with the same model:

- session-filtered hybrid (ours: both legs fused; LanceDB: a session prefilter and its RRF
  reranker over its vector and full-text results);
- namespace-wide hybrid (every session of the agent; LanceDB: no filter);
- vector only and full text only, namespace-wide.

Bulk ingest is chunks per second: ours end to end (``store_many`` and ``drain``: chunking,
contexts, embedding, SQL, FTS5, vectors); LanceDB's the model encoding the same chunk texts
plus writing the table and building its two indexes.
"""

from __future__ import annotations

import gc
import math
import random
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbench.bench.measure import peak_rss_mb, percentile
from workbench.bench.query import AGENT, TOP_K, _query_texts, _round_robin, _time_each

INSTALL_HINT = ("bench peers needs LanceDB, an optional extra: "
                "pip install -e '.[peers]' (lancedb 0.40)")
# The goals, at p95: ours at least this many times faster than LanceDB's.
NAMESPACE_GOAL_SPEEDUP = 5.0
SESSION_GOAL_SPEEDUP = 3.0
PATHS = ("session hybrid", "namespace hybrid", "vector only", "full text only")


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
class PeersFigures:
    """What one ``bench peers`` run measured; times in milliseconds, per query path."""

    model: str
    dimension: int
    chunks: int
    sessions: int
    messages: int
    queries: int
    lancedb_version: str
    ours_ingest_seconds: float
    theirs_encode_seconds: float
    theirs_write_seconds: float
    theirs_index_seconds: float
    # Mean share of the same chunk ids in both systems' top 10, per single-leg path: the
    # vector leg ranks the same vectors exactly on both sides, so it should be near 1.
    overlap: dict[str, float] = field(default_factory=dict)
    ours_ms: dict[str, list[float]] = field(default_factory=dict)
    theirs_ms: dict[str, list[float]] = field(default_factory=dict)
    peak_rss_mb: float = 0.0

    def p(self, side: dict[str, list[float]], path: str, fraction: float) -> float:
        """A path's percentile on one side."""
        return percentile(side[path], fraction)

    def ratio(self, path: str, fraction: float) -> float:
        """Ours over LanceDB's at that percentile: below 1, ours answers faster."""
        return self.p(self.ours_ms, path, fraction) / self.p(self.theirs_ms, path, fraction)

    @property
    def ours_ingest_per_s(self) -> float:
        return self.chunks / self.ours_ingest_seconds

    @property
    def theirs_ingest_per_s(self) -> float:
        return self.chunks / (self.theirs_encode_seconds + self.theirs_write_seconds
                              + self.theirs_index_seconds)

    def lines(self) -> list[str]:
        """The figures as the lines the command prints."""
        goals = {"session hybrid": SESSION_GOAL_SPEEDUP,
                 "namespace hybrid": NAMESPACE_GOAL_SPEEDUP}
        out = [
            f"model                 {self.model} ({self.dimension} dims), the same vectors "
            "on both sides",
            f"database              {self.chunks:,} chunks from {self.messages:,} messages in "
            f"{self.sessions:,} sessions, one agent",
            f"LanceDB               {self.lancedb_version}: native full-text index over chunk "
            "text + context, BITMAP index on session_id, flat cosine vector search, RRF",
            f"queries               {self.queries:,} one at a time, top_k {TOP_K}, each "
            "timing includes embedding the query",
            f"{'':22}{'ours p50 / p95 ms':>22}{'LanceDB p50 / p95 ms':>24}"
            f"{'ours/LanceDB p50 / p95':>26}",
        ]
        for path in PATHS:
            ours = f"{self.p(self.ours_ms, path, .5):.3f} / {self.p(self.ours_ms, path, .95):.3f}"
            theirs = (f"{self.p(self.theirs_ms, path, .5):.3f} / "
                      f"{self.p(self.theirs_ms, path, .95):.3f}")
            ratios = f"{self.ratio(path, .5):.2f}x / {self.ratio(path, .95):.2f}x"
            line = f"{path:<22}{ours:>22}{theirs:>24}{ratios:>26}"
            if path in goals:
                wanted = goals[path]
                met = self.ratio(path, .95) * wanted <= 1.0
                line += (f"  (goal: {wanted:g}x faster at p95: "
                         f"{'goal met' if met else 'goal missed'})")
            out.append(line)
        out.append("top-10 overlap        " + ", ".join(
            f"{path} {share:.2f}" for path, share in self.overlap.items())
            + " (the same chunk ids in both systems' answers)")
        ours_rate, theirs_rate = self.ours_ingest_per_s, self.theirs_ingest_per_s
        out += [
            f"bulk ingest           ours {ours_rate:,.0f} chunks/s (store_many + drain), "
            f"LanceDB {theirs_rate:,.0f} chunks/s; ours/LanceDB {ours_rate / theirs_rate:.2f}x "
            "throughput",
            f"  LanceDB's share     encode {self.theirs_encode_seconds:,.2f} s (model alone), "
            f"write {self.theirs_write_seconds:,.2f} s, indexes "
            f"{self.theirs_index_seconds:,.2f} s",
            f"peak RSS              {self.peak_rss_mb:,.0f} MiB this process (both systems)",
        ]
        return out


def _stored_rows(path: Path) -> tuple[list[dict[str, Any]], Any]:
    """Every embedded chunk as the engine stored it, and its unit vector, in one order."""
    import numpy as np

    from core.storage.connection import open_connection

    conn = open_connection(path, read_only=True, busy_timeout_ms=5000)
    try:
        found = conn.execute(
            "SELECT v.chunk_id, v.session_id, c.chunk_text, c.context_text, v.embedding_blob"
            " FROM chunks_vec v JOIN chunks c ON c.chunk_id = v.chunk_id").fetchall()
    finally:
        conn.close()
    rows = [{"chunk_id": chunk_id, "session_id": session_id, "chunk_text": text,
             "text": text if not context else f"{text}\n{context}"}
            for chunk_id, session_id, text, context, _ in found]
    matrix = np.array([np.frombuffer(blob, dtype=np.float32) for *_, blob in found],
                      dtype=np.float32).reshape(len(found), -1)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return rows, matrix / norms


def _build_lancedb(lancedb: Any, folder: Path, rows: list[dict[str, Any]], matrix: Any,
                   ) -> tuple[Any, float, float]:
    """LanceDB's table of the same chunks and vectors; (table, write s, index s)."""
    import pyarrow as pa
    from lancedb.index import FTS, Bitmap

    started = time.perf_counter()
    flat = pa.array(matrix.reshape(-1), type=pa.float32())
    data = pa.table({
        "chunk_id": [row["chunk_id"] for row in rows],
        "session_id": [row["session_id"] for row in rows],
        "text": [row["text"] for row in rows],
        "vector": pa.FixedSizeListArray.from_arrays(flat, matrix.shape[1]),
    })
    table = lancedb.connect(str(folder)).create_table("chunks", data)
    written = time.perf_counter()
    table.create_index("text", config=FTS())  # defaults: English stemming, as FTS5's porter
    table.create_index("session_id", config=Bitmap())
    return table, written - started, time.perf_counter() - written


def _lancedb_searches(table: Any) -> dict[str, Callable[[str, str, Any], Any]]:
    """Each path's LanceDB query, given (session_id, text, query vector)."""
    from lancedb.rerankers import RRFReranker

    reranker = RRFReranker()

    def hybrid(text: str, vector: Any) -> Any:
        return (table.search(query_type="hybrid").vector(vector).text(text)
                .distance_type("cosine"))

    return {
        "session hybrid": lambda sid, text, vector: hybrid(text, vector)
        .where(f"session_id = '{sid}'", prefilter=True).rerank(reranker).limit(TOP_K)
        .to_arrow(),
        "namespace hybrid": lambda sid, text, vector: hybrid(text, vector)
        .rerank(reranker).limit(TOP_K).to_arrow(),
        "vector only": lambda sid, text, vector: table.search(vector)
        .distance_type("cosine").limit(TOP_K).to_arrow(),
        "full text only": lambda sid, text, vector: table.search(text, query_type="fts")
        .limit(TOP_K).to_arrow(),
    }


async def run_peers_bench(config: Any, chunks: int, sessions: int, *, queries: int = 200,
                          seed: int = 11, say: Callable[[str], None] = print) -> PeersFigures:
    """Build about ``chunks`` chunks over ``sessions`` sessions into this engine and into
    LanceDB, and time the same queries on both."""
    lancedb = import_lancedb()  # before any work: without it there is nothing to compare
    from core import Engine
    from core.config import load_config
    from workbench.bench import synthetic

    if chunks < 1 or sessions < 1 or queries < 1:
        raise ValueError("chunks, sessions and queries must be positive")
    cfg = load_config(config)
    rng = random.Random(seed)
    say(f"generating messages for about {chunks:,} chunks over {sessions:,} sessions …")
    per_session = math.ceil((chunks * 1.1 + 10) / sessions)  # as bench query generates them
    data = _round_robin(synthetic.messages(per_session * sessions, sessions))

    with tempfile.TemporaryDirectory(prefix="workbench-bench-peers-") as folder:
        path = Path(folder) / "store.db"
        async with Engine.open(path, config=cfg) as engine:
            if engine.embedding_warning:
                say(f"warning: {engine.embedding_warning}")
            embedder = engine.embedder
            have = stored = 0
            ingest_seconds = 0.0
            per_message, step = 1.08, max(1000, min(10_000, chunks // 10))
            while have < chunks and stored < len(data):
                wanted = max(1, int((chunks - have) / per_message + 0.5))
                piece = data[stored:stored + min(step, wanted)]
                began = time.perf_counter()
                result = await engine.store_many(piece, agent=AGENT)
                ingest_seconds += time.perf_counter() - began
                if result.rejected:
                    raise RuntimeError(f"bench messages were refused: {result.rejected[:3]}")
                stored += len(piece)
                have = (await engine.counts())["chunks"]
                per_message = have / stored
                say(f"  ours: {have:,} chunks from {stored:,} messages ({ingest_seconds:,.1f} s)")
            began = time.perf_counter()
            await engine.drain()
            ingest_seconds += time.perf_counter() - began
            stored_data = data[:stored]
            session_count = len({sid for sid, _, _ in stored_data})
            asked = _query_texts(stored_data, queries, rng)
            del data, stored_data

            say("giving LanceDB the same chunks and vectors …")
            rows, matrix = _stored_rows(path)
            batch = cfg.embedding.batch_size
            texts = [row["chunk_text"] for row in rows]
            began = time.perf_counter()  # LanceDB's ingest pays for the model as ours does
            for start in range(0, len(texts), batch):
                embedder.embed(texts[start:start + batch])
            encode_seconds = time.perf_counter() - began
            table, write_seconds, index_seconds = _build_lancedb(
                lancedb, Path(folder) / "lancedb", rows, matrix)
            del rows, matrix, texts
            gc.collect()

            ours: dict[str, Callable[[str, str], Any]] = {
                "session hybrid": lambda sid, text: engine.hybrid_query(
                    session_id=sid, query=text, top_k=TOP_K),
                "namespace hybrid": lambda sid, text: engine.hybrid_query(
                    namespace=AGENT, query=text, top_k=TOP_K),
                "vector only": lambda sid, text: engine.hybrid_query(
                    namespace=AGENT, query=text, top_k=TOP_K, mode="vector"),
                "full text only": lambda sid, text: engine.hybrid_query(
                    namespace=AGENT, query=text, top_k=TOP_K, mode="keyword"),
            }
            theirs = _lancedb_searches(table)

            async def lancedb_call(path_name: str, sid: str, text: str) -> Any:
                vector = await engine.embed_query(text)
                return theirs[path_name](sid, text, vector)

            warm = asked[:min(20, len(asked))]
            overlap: dict[str, list[float]] = {"vector only": [], "full text only": []}
            for name in PATHS:
                for sid, text in warm:
                    mine = {hit.chunk_id for hit in await ours[name](sid, text)}
                    found = await lancedb_call(name, sid, text)
                    if name == "namespace hybrid" and found.num_rows == 0:
                        raise RuntimeError(f"LanceDB found nothing for {text!r}")
                    if name in overlap:
                        shared = mine & set(found.column("chunk_id").to_pylist())
                        overlap[name].append(len(shared) / max(1, len(mine)))
            gc.collect()
            ours_ms: dict[str, list[float]] = {}
            theirs_ms: dict[str, list[float]] = {}
            for name in PATHS:
                say(f"timing {name}: ours, then LanceDB …")
                ours_ms[name] = await _time_each(asked, ours[name])
                theirs_ms[name] = await _time_each(
                    asked, lambda sid, text, name=name: lancedb_call(name, sid, text))
            model, dimension = embedder.name, embedder.dimension

    return PeersFigures(
        model=model, dimension=dimension, chunks=have, sessions=session_count,
        messages=stored, queries=len(asked), lancedb_version=lancedb.__version__,
        ours_ingest_seconds=ingest_seconds, theirs_encode_seconds=encode_seconds,
        theirs_write_seconds=write_seconds, theirs_index_seconds=index_seconds,
        overlap={name: sum(shares) / len(shares) for name, shares in overlap.items()},
        ours_ms=ours_ms, theirs_ms=theirs_ms, peak_rss_mb=peak_rss_mb())


__all__ = ["INSTALL_HINT", "PeersFigures", "PeersUnavailable", "import_lancedb",
           "run_peers_bench"]
