"""``workbench bench query``: how fast hybrid queries answer over a large file.

It fills a file with synthetic agent messages (about ``chunks`` chunks over ``sessions``
sessions, every session under one agent identity, so a namespace query covers the whole
file) through the bulk path, then times queries one at a time through the public async API:

- a session-scoped ``hybrid_query`` (FTS5 + vec0 KNN inside one session's partition);
- a namespace-wide ``hybrid_query`` (the same over every session of the agent);
- re-fusing a query's kept legs under other weights (``SearchResult.rerank``, no I/O);
- the physical-limit reference (:mod:`workbench.bench.brute_force`): numpy brute-force
  cosine top-k over every stored vector held in RAM as one float32 matrix, for the same
  query vectors, timed on its own (the goal's reference) and again right after each
  namespace ``hybrid_query``;
- the query-embedding step alone, so the reader sees what part of a query is the model;
- where the vector search is approximate (PostgreSQL's HNSW), the namespace vector leg's
  recall@10 against the exact top 10 that the numpy scan finds.

The memory is a temporary SQLite file, or the one ``db`` names (a path or a
``postgresql://`` URL), which must hold no chunks unless ``reuse`` is given: then it is
topped up to ``chunks`` with the same generated messages and measured as it is.

Query texts are 3–6 word spans of stored messages (seeded), each asked in its own session.
"""

from __future__ import annotations

import asyncio
import gc
import math
import random
import re
import tempfile
import time
from collections.abc import Awaitable, Callable
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workbench.bench import brute_force
from workbench.bench.derived import DerivedFigures, measure_derived
from workbench.bench.derived_index import (
    FullTextFigures,
    PgDerivedFigures,
    build_derived_full_text,
    merged_full_text,
)
from workbench.bench.measure import (
    freeze_the_heap,
    peak_rss_mb,
    percentile,
    resident_file_mb,
    warm_file_cache,
)

AGENT = "bench-agent"
TOP_K = 10
WEIGHTS = (0.0, 0.25, 0.5, 0.75, 1.0)
SESSION_GOAL_MS = 5.0
NAMESPACE_GOAL_RATIO = 3.0
# Issue 17's goals for a PostgreSQL memory of 100k chunks in 1,000 sessions.
PG_SESSION_GOAL_MS = 10.0
PG_NAMESPACE_GOAL_MS = 30.0
RECALL_GOAL = 0.95
REFUSION_GOAL_MS = 1.0
_WORD = re.compile(r"\w+", re.UNICODE)


def _goal(met: bool) -> str:
    return "goal met" if met else "goal missed"


@dataclass
class QueryFigures:
    """What one ``bench query`` run measured (times in milliseconds)."""

    model: str
    dimension: int
    chunks: int
    sessions: int
    messages: int
    queries: int
    build_seconds: float
    embed_p50_ms: float
    session_p50_ms: float
    session_p95_ms: float
    namespace_p50_ms: float
    namespace_p95_ms: float
    refusion_p50_ms: float
    refusion_p95_ms: float
    numpy_p50_ms: float
    numpy_p95_ms: float
    # Where a query's time goes, p50 of the legs' own timings (SearchResult.legs.timings_ms):
    # "vector" includes embedding the query, "fetch" reads the chunk rows the legs named (0
    # where each leg reads its own, as SQLite's namespace legs do); the rest of a query is
    # fusion and thread hops.
    session_fts_p50_ms: float
    session_vector_p50_ms: float
    session_fetch_p50_ms: float
    namespace_fts_p50_ms: float
    namespace_vector_p50_ms: float
    namespace_fetch_p50_ms: float
    matrix_mb: float
    rss_before_matrix_mb: float
    file_rss_mb: float  # of the resident memory before the matrix, mapped file pages
    peak_rss_mb: float
    file_mb: float
    backend: str = "sqlite"
    # Namespace vector leg against the exact top 10, mean over the queries; None where the
    # vector search is exact by construction (sqlite-vec).
    recall_at_10: float | None = None
    reused: int = 0  # chunks the memory already held (--reuse)
    derived: DerivedFigures | None = None  # SQLite's namespace matrix (None: PostgreSQL)
    # the namespace full-text leg's index (PostgreSQL: with its matrix)
    derived_full_text: FullTextFigures | PgDerivedFigures | None = None
    # numpy's scan timed on its own, before the queries (the goal's reference)
    numpy_alone_p50_ms: float | None = None
    numpy_alone_p95_ms: float | None = None
    # The file read once into the OS cache before timing (bytes, seconds); None: not read.
    warmed: tuple[int, float] | None = None

    @property
    def _session_goal(self) -> float:
        return PG_SESSION_GOAL_MS if self.backend == "postgresql" else SESSION_GOAL_MS

    @property
    def namespace_ratio(self) -> float:
        """Namespace hybrid p95 over numpy brute-force p95 (the scan timed on its own)."""
        return self.namespace_p95_ms / (self.numpy_alone_p95_ms or self.numpy_p95_ms)

    @property
    def interleaved_ratio(self) -> float:
        """Namespace hybrid p95 over the p95 of the scans timed beside each query."""
        return self.namespace_p95_ms / self.numpy_p95_ms

    def lines(self) -> list[str]:
        """The figures as the lines the command prints."""
        ratio = self.namespace_ratio
        return [
            f"backend               {self.backend}",
            f"model                 {self.model} ({self.dimension} dims)",
            f"database              {self.chunks:,} chunks from {self.messages:,} messages in "
            f"{self.sessions:,} sessions, one agent; {self.file_mb:,.0f} MiB on disk; "
            + (f"{self.reused:,} of them there before (--reuse), the rest " if self.reused
               else "") + f"built in {self.build_seconds:,.1f} s",
            f"queries               {self.queries:,} one at a time, top_k {TOP_K}, "
            f"3-6 word spans of stored messages",
            *([f"file cache            the file read once before timing "
               f"({self.warmed[0] / 2**30:,.1f} GiB in {self.warmed[1]:.1f} s), as one just "
               "built is cached"] if self.warmed else []),
            f"query embedding       p50 {self.embed_p50_ms:.3f} ms (engine.embed_query)",
            f"session hybrid        p50 {self.session_p50_ms:.3f} ms, "
            f"p95 {self.session_p95_ms:.3f} ms  (goal p95 <= {self._session_goal:g} ms: "
            f"{_goal(self.session_p95_ms <= self._session_goal)})",
            f"  legs p50            fts {self.session_fts_p50_ms:.3f} ms, vector "
            f"{self.session_vector_p50_ms:.3f} ms (incl. embedding), fetch of the chunks "
            f"{self.session_fetch_p50_ms:.3f} ms",
            f"namespace hybrid      p50 {self.namespace_p50_ms:.3f} ms, "
            f"p95 {self.namespace_p95_ms:.3f} ms" + (
                f"  (goal p95 <= {PG_NAMESPACE_GOAL_MS:g} ms: "
                f"{_goal(self.namespace_p95_ms <= PG_NAMESPACE_GOAL_MS)})"
                if self.backend == "postgresql" else ""),
            f"  legs p50            fts {self.namespace_fts_p50_ms:.3f} ms, vector "
            f"{self.namespace_vector_p50_ms:.3f} ms (incl. embedding), " + (
                f"fetch of the chunks {self.namespace_fetch_p50_ms:.3f} ms"
                if self.namespace_fetch_p50_ms else "each reading the chunks it found"),
            *([f"numpy brute force     p50 {self.numpy_alone_p50_ms:.3f} ms, p95 "
               f"{self.numpy_alone_p95_ms:.3f} ms  (cosine top-{TOP_K} over all "
               f"{self.chunks:,} vectors in RAM, timed on its own)"]
              if self.numpy_alone_p95_ms is not None else []),
            f"numpy beside queries  p50 {self.numpy_p50_ms:.3f} ms, p95 {self.numpy_p95_ms:.3f} ms"
            f"  (the same scan timed right after each namespace query)",
            f"namespace / numpy     {ratio:.2f}x at p95 against the scan on its own (goal <= "
            f"{NAMESPACE_GOAL_RATIO:g}x: {_goal(ratio <= NAMESPACE_GOAL_RATIO)}); "
            f"{self.interleaved_ratio:.2f}x against the scan beside the queries",
            *(self.derived.lines(TOP_K) if self.derived is not None else []),
            *([f"vector recall@{TOP_K}      {self.recall_at_10:.3f} namespace leg against "
               f"the exact top {TOP_K} (goal >= {RECALL_GOAL:g}: "
               f"{_goal(self.recall_at_10 >= RECALL_GOAL)})"]
              if self.recall_at_10 is not None else []),
            *([self.derived_full_text.line()] if self.derived_full_text is not None else []),
            f"re-fusion (rerank)    p50 {self.refusion_p50_ms:.3f} ms, "
            f"p95 {self.refusion_p95_ms:.3f} ms  (goal p95 <= {REFUSION_GOAL_MS:g} ms: "
            f"{_goal(self.refusion_p95_ms <= REFUSION_GOAL_MS)})",
            f"peak RSS              {self.peak_rss_mb:,.0f} MiB this process "
            f"({self.rss_before_matrix_mb:,.0f} MiB before the {self.matrix_mb:,.0f} MiB "
            f"numpy matrix was loaded; {self.file_rss_mb:,.0f} MiB of it mapped file pages, "
            f"shared file cache rather than private memory)",
        ]


def query_texts(data: list[tuple[str, int, dict[str, Any]]], count: int,
                 rng: random.Random) -> list[tuple[str, str]]:
    """``count`` (session_id, query text) pairs: 3-6 word spans of random stored messages."""
    from core.indexing import extract_indexable_text, normalize_text

    picked: list[tuple[str, str]] = []
    for _ in range(count * 50):
        if len(picked) >= count:
            break
        session_id, _, payload = rng.choice(data)
        words = _WORD.findall(normalize_text(extract_indexable_text(payload)))
        if len(words) < 3:
            continue
        length = rng.randint(3, min(6, len(words)))
        start = rng.randrange(len(words) - length + 1)
        picked.append((session_id, " ".join(words[start:start + length])))
    if len(picked) < count:
        raise ValueError("the stored messages are too short to make query texts from")
    return picked


def round_robin(data: list[tuple[str, int, dict[str, Any]]],
                 ) -> list[tuple[str, int, dict[str, Any]]]:
    """The messages interleaved across sessions, so every prefix spans every session.

    Each session's own messages stay in order, so sequences still rise within a session.
    """
    by_session: dict[str, list[tuple[str, int, dict[str, Any]]]] = {}
    for item in data:
        by_session.setdefault(item[0], []).append(item)
    queues = list(by_session.values())
    out: list[tuple[str, int, dict[str, Any]]] = []
    depth = max((len(q) for q in queues), default=0)
    for index in range(depth):
        out.extend(q[index] for q in queues if index < len(q))
    return out


def _file_mb(path: Path) -> float:
    total = 0
    for suffix in ("", "-wal", "-shm"):
        candidate = Path(str(path) + suffix)
        if candidate.exists():
            total += candidate.stat().st_size
    return total / (1024 * 1024)


def _pg_database_mb(url: str) -> float:
    import psycopg

    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT pg_database_size(current_database())").fetchone()
    return 0.0 if row is None else int(row[0]) / (1024 * 1024)


async def time_each(asked: list[tuple[str, str]],
                     call: Callable[[str, str], Awaitable[Any]]) -> list[float]:
    """Milliseconds each (session, text) query took, one at a time."""
    timings = []
    for session_id, text in asked:
        began = time.perf_counter()
        await call(session_id, text)
        timings.append((time.perf_counter() - began) * 1000)
    return timings


async def run_query_bench(config: Any, chunks: int, sessions: int, *, queries: int = 300,
                          keep: Path | None = None, db: str | Path | None = None,
                          reuse: bool = False, seed: int = 11,
                          say: Callable[[str], None] = print) -> QueryFigures:
    """Build a memory of about ``chunks`` chunks over ``sessions`` sessions and time queries.

    The memory is a file in a temporary directory, or at ``keep`` (which must not exist
    yet) to be kept for a closer look afterwards, or the memory ``db`` names (a path or a
    ``postgresql://`` URL). ``db`` must hold no chunks unless ``reuse``: then it is topped
    up to ``chunks`` with the same generated messages (the same ``chunks`` and
    ``sessions`` give the same messages, so a memory an earlier run built is measured
    again) and never emptied.
    """
    from core import Engine
    from core.config import load_config
    from core.embeddings import embed_checked
    from workbench.bench import synthetic

    if chunks < 1 or sessions < 1 or queries < 1:
        raise ValueError("chunks, sessions and queries must be positive")
    if keep is not None and Path(keep).exists():
        raise FileExistsError(f"{keep} exists; bench query builds a new file")
    if keep is not None and db is not None:
        raise ValueError("give keep or db, not both")
    from core.locations import parse_location

    location = parse_location(str(db)) if db is not None else None
    url = location.target if location is not None and location.is_postgres else None
    cfg = load_config(config)
    rng = random.Random(seed)

    # Most messages are one chunk; a few long ones are several. Generate a margin over
    # ``chunks`` messages and stop storing once the file holds enough chunks.
    say(f"generating messages for about {chunks:,} chunks over {sessions:,} sessions …")
    per_session = math.ceil((chunks * 1.1 + 10) / sessions)  # whole sessions: no stragglers
    data = round_robin(synthetic.messages(per_session * sessions, sessions))

    holder = (tempfile.TemporaryDirectory(prefix="workbench-bench-query-")
              if keep is None and db is None else nullcontext(None))
    with holder as folder:
        target: str | Path = (Path(folder) / "store.db" if folder is not None
                              else Path(keep) if keep is not None else str(db))
        path = Path(target) if url is None else None
        async with Engine.open(target, config=cfg) as engine:
            if engine.model.warning:
                say(f"warning: {engine.model.warning}")
            model, dimension = engine.embedder.name, engine.embedder.dimension
            exact_vectors = engine.backend.features.exact_vector_search
            counts = await engine.counts()
            have, stored = counts["chunks"], min(counts["conversation_events"], len(data))
            reused = have
            if have and not reuse:
                raise FileExistsError(
                    f"{location.display if location is not None else target} already holds "
                    f"{have:,} chunks; bench query fills an empty memory (--reuse measures "
                    "it as it is, topped up to --chunks)")

            # -- build -----------------------------------------------------------------
            started = time.perf_counter()
            per_message = 1.08  # chunks per message, refined as the file fills
            step = max(1000, min(10_000, chunks // 10))
            while have < chunks and stored < len(data):
                wanted = max(1, int((chunks - have) / per_message + 0.5))
                piece = data[stored:stored + min(step, wanted)]
                result = await engine.store_many(piece, agent=AGENT)
                if result.rejected:
                    raise RuntimeError(f"bench messages were refused: {result.rejected[:3]}")
                stored += len(piece)
                have = (await engine.counts())["chunks"]
                per_message = have / stored
                say(f"  {have:,} chunks from {stored:,} messages "
                    f"({time.perf_counter() - started:,.1f} s)")
            await engine.drain()
            build_seconds = time.perf_counter() - started
            stored_data = data[:stored]
            session_count = len({sid for sid, _, _ in stored_data})
            say(f"built {have:,} chunks in {session_count:,} sessions in "
                f"{build_seconds:,.1f} s")

            # -- queries ---------------------------------------------------------------
            asked = query_texts(stored_data, queries, rng)
            del data, stored_data  # the harness's, not the engine's
            freeze_the_heap()
            await merged_full_text(engine, say)
            say("building the derived full-text index …")
            derived_full_text = await build_derived_full_text(engine, AGENT)
            warm = asked[:min(20, len(asked))]
            say(f"embedding {len(asked):,} query texts …")
            vectors = embed_checked(engine.embedder, [text for _, text in asked])  # unit rows
            # The namespace queries below are answered from the matrix it builds.
            derived = await measure_derived(engine, vectors, AGENT, max(50, TOP_K * 5), TOP_K,
                                            say)

            for session_id, text in warm:
                await engine.embed_query(text)
                await engine.hybrid_query(session_id=session_id, query=text, top_k=TOP_K)
                await engine.hybrid_query(namespace=AGENT, query=text, top_k=TOP_K)

            warmed = warm_file_cache(path) if path is not None else None
            say("timing the query embedding alone …")
            embed_ms = await time_each(asked, lambda sid, text: engine.embed_query(text))
            say("timing session-scoped hybrid queries …")
            session_ms = await time_each(asked, lambda sid, text: engine.hybrid_query(
                session_id=sid, query=text, top_k=TOP_K))

            say("timing re-fusion of kept legs, and each leg's share …")
            refusion_ms: list[float] = []
            vector_found: list[list[str]] = []  # the namespace vector leg's top ids
            legs: dict[str, list[float]] = {f"{scope} {leg}": []
                                            for scope in ("session", "namespace")
                                            for leg in ("fts", "vector", "fetch")}
            for session_id, text in asked:
                for scope, session, namespace in (("session", session_id, None),
                                                  ("namespace", None, AGENT)):
                    found = await engine.search(query=text, top_k=TOP_K, session_id=session,
                                                namespace=namespace)
                    for leg in ("fts", "vector", "fetch"):
                        legs[f"{scope} {leg}"].append(found.legs.timings_ms.get(leg, 0.0))
                    if scope == "namespace":
                        hits = sorted(found.legs.vector, key=lambda hit: hit.rank)
                        vector_found.append([hit.chunk_id for hit in hits[:TOP_K]])
                found.rerank(vector_weight=0.5, fts_weight=0.5)  # warm this result's path
                for weight in WEIGHTS:
                    began = time.perf_counter()
                    found.rerank(vector_weight=weight, fts_weight=1.0 - weight)
                    refusion_ms.append((time.perf_counter() - began) * 1000)

            # -- the physical limit ----------------------------------------------------
            say("loading every vector into RAM for the numpy reference …")
            rss_before_matrix, file_rss = peak_rss_mb(), resident_file_mb()
            if url is not None:
                chunk_ids, matrix = await asyncio.to_thread(
                    brute_force.load_pg_matrix, url, dimension)
            else:
                assert path is not None
                chunk_ids, matrix = [], await asyncio.to_thread(
                    brute_force.load_matrix, path, dimension)
            for vector in vectors[:len(warm)]:
                brute_force.top_k(matrix, vector, TOP_K)
            # Each namespace query is timed beside the scan of the same query's vector, one
            # after the other: on a shared machine the load drifts within seconds, and the
            # ratio of two passes a minute apart measured the drift more than either.
            # The scan alone too: beside the queries its p95 is about twice this one (the
            # engine's scans switch the process's BLAS pool to one thread and back), so
            # the interleaved figure flatters the ratio; the goal is judged on this one.
            numpy_alone_ms = []
            for vector in vectors:
                began = time.perf_counter()
                brute_force.top_k(matrix, vector, TOP_K)
                numpy_alone_ms.append((time.perf_counter() - began) * 1000)
            say("timing namespace-wide hybrid queries, each beside numpy's scan …")
            namespace_ms, numpy_ms = [], []
            for (_, text), vector in zip(asked, vectors, strict=True):
                began = time.perf_counter()
                await engine.hybrid_query(namespace=AGENT, query=text, top_k=TOP_K)
                namespace_ms.append((time.perf_counter() - began) * 1000)
                began = time.perf_counter()
                brute_force.top_k(matrix, vector, TOP_K)
                numpy_ms.append((time.perf_counter() - began) * 1000)
            recall = None
            if not exact_vectors:
                recall = brute_force.recall_at_k(vector_found, matrix, chunk_ids, vectors, TOP_K)
            matrix_mb = matrix.nbytes / (1024 * 1024)
            del matrix
            gc.unfreeze()

        file_mb = (_file_mb(path) if path is not None
                   else await asyncio.to_thread(_pg_database_mb, url or ""))

    return QueryFigures(
        model=model, dimension=dimension, chunks=have, sessions=session_count,
        messages=stored, queries=len(asked), build_seconds=build_seconds,
        embed_p50_ms=percentile(embed_ms, 0.5),
        session_p50_ms=percentile(session_ms, 0.5),
        session_p95_ms=percentile(session_ms, 0.95),
        namespace_p50_ms=percentile(namespace_ms, 0.5),
        namespace_p95_ms=percentile(namespace_ms, 0.95),
        refusion_p50_ms=percentile(refusion_ms, 0.5),
        refusion_p95_ms=percentile(refusion_ms, 0.95),
        numpy_p50_ms=percentile(numpy_ms, 0.5),
        numpy_p95_ms=percentile(numpy_ms, 0.95),
        numpy_alone_p50_ms=percentile(numpy_alone_ms, 0.5),
        numpy_alone_p95_ms=percentile(numpy_alone_ms, 0.95),
        session_fts_p50_ms=percentile(legs["session fts"], 0.5),
        session_vector_p50_ms=percentile(legs["session vector"], 0.5),
        session_fetch_p50_ms=percentile(legs["session fetch"], 0.5),
        namespace_fts_p50_ms=percentile(legs["namespace fts"], 0.5),
        namespace_vector_p50_ms=percentile(legs["namespace vector"], 0.5),
        namespace_fetch_p50_ms=percentile(legs["namespace fetch"], 0.5),
        matrix_mb=matrix_mb, rss_before_matrix_mb=rss_before_matrix, file_rss_mb=file_rss,
        peak_rss_mb=peak_rss_mb(), file_mb=file_mb,
        backend="postgresql" if url is not None else "sqlite", recall_at_10=recall,
        reused=reused, derived=derived, derived_full_text=derived_full_text, warmed=warmed)


__all__ = ["QueryFigures", "run_query_bench"]
