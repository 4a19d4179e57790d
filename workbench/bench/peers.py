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

Bulk ingest is chunks per second: ours ``store_many`` and ``drain`` (chunking, contexts,
embedding, SQL, FTS5, vectors) of bench query's messages, handed over session by session as
an importer does; LanceDB's the model encoding the same chunk texts plus
writing the table and building its two indexes. End to end is ours from nothing to
searchable: that, and until a namespace query's two legs both answer from the derived
indexes (the vector matrix and the derived full text, as ``explain`` names them), which is
when a namespace query is as fast as it gets.
"""

from __future__ import annotations

import asyncio
import functools
import gc
import math
import random
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench.bench.derived_index import build_derived_full_text, merged_full_text
from workbench.bench.measure import (
    freeze_the_heap,
    peak_rss_mb,
    percentile,
    wait_until_quiet,
    warm_file_cache,
)
from workbench.bench.peers_lancedb import (
    INSTALL_HINT,
    PeersUnavailable,
    build_lancedb,
    import_lancedb,
    lancedb_searches,
    stored_query_texts,
)
from workbench.bench.query import AGENT, TOP_K, query_texts, round_robin, time_each

if TYPE_CHECKING:
    from core.engine import Engine

# The goals, at p95: ours at least this many times faster than LanceDB's.
NAMESPACE_GOAL_SPEEDUP = 5.0
SESSION_GOAL_SPEEDUP = 3.0
END_TO_END_GOAL = 2.0  # ours from nothing to searchable: at most this many times LanceDB's
PATHS = ("session hybrid", "namespace hybrid", "vector only", "full text only")
# How long to wait for the derived indexes to answer after an import (a deadline, not a
# measure: the build is timed whatever it takes below it).
SEARCHABLE_DEADLINE_S = 3600.0


class NothingToMeasure(ValueError):
    """``--reuse`` named a memory that holds no chunks."""


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
    # Ours: the chunks this run built and how long that took (0 and None for a file built
    # before, --reuse); LanceDB's: its build from every chunk of the file.
    ours_built_chunks: int
    ours_ingest_seconds: float | None
    # Ours from nothing to searchable, in parts (store_many, drain, derived indexes, and of
    # those the matrix's and the full text's own build); empty on --reuse.
    ours_parts: dict[str, float]
    theirs_rows: int
    theirs_encode_seconds: float
    theirs_write_seconds: float
    theirs_index_seconds: float
    # LanceDB's encode as its users run the model (model2vec's own ``encode``), and here the
    # same texts through our embedding path (its word cache), when the model has one.
    theirs_encode_ours_seconds: float | None = None
    # Mean share of the same chunk ids in both systems' top 10, per single-leg path: the
    # vector leg ranks the same vectors exactly on both sides, so it should be near 1.
    overlap: dict[str, float] = field(default_factory=dict)
    ours_ms: dict[str, list[float]] = field(default_factory=dict)
    theirs_ms: dict[str, list[float]] = field(default_factory=dict)
    peak_rss_mb: float = 0.0
    # Our file read once into the OS cache before timing: (bytes, seconds); None: not read
    # (larger than half the memory available).
    warmed: tuple[int, float] | None = None

    def p(self, side: dict[str, list[float]], path: str, fraction: float) -> float:
        """A path's percentile on one side."""
        return percentile(side[path], fraction)

    def ratio(self, path: str, fraction: float) -> float:
        """Ours over LanceDB's at that percentile: below 1, ours answers faster."""
        return self.p(self.ours_ms, path, fraction) / self.p(self.theirs_ms, path, fraction)

    @property
    def ours_ingest_per_s(self) -> float | None:
        """Chunks per second this run ingested; None when it built none (--reuse)."""
        if not self.ours_built_chunks or not self.ours_ingest_seconds:
            return None
        return self.ours_built_chunks / self.ours_ingest_seconds

    @property
    def ours_end_to_end_per_s(self) -> float | None:
        """Chunks per second from nothing to searchable; None when this run built none."""
        total = sum(self.ours_parts.get(part, 0.0) for part in END_TO_END_PARTS)
        if not self.ours_built_chunks or not total:
            return None
        return self.ours_built_chunks / total

    @property
    def theirs_ingest_per_s(self) -> float:
        return self.theirs_rows / (self.theirs_encode_seconds + self.theirs_write_seconds
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
            "file cache            " + (
                f"our file read once before timing ({self.warmed[0] / 2**30:,.1f} GiB in "
                f"{self.warmed[1]:.1f} s), as LanceDB's, just written, are cached"
                if self.warmed else "our file not read before timing (larger than half "
                "the memory available)"),
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
            "throughput" if ours_rate is not None else
            f"bulk ingest           ours not measured (the file was built before: --reuse), "
            f"LanceDB {theirs_rate:,.0f} chunks/s",
            *self._end_to_end_lines(),
            f"  LanceDB's share     encode {self.theirs_encode_seconds:,.2f} s (model alone"
            + (", model2vec's own encode, as LanceDB's users run it; "
               f"{self.theirs_encode_ours_seconds:,.2f} s through our word cache"
               if self.theirs_encode_ours_seconds is not None else "")
            + f"), write {self.theirs_write_seconds:,.2f} s, indexes "
            f"{self.theirs_index_seconds:,.2f} s",
            f"peak RSS              {self.peak_rss_mb:,.0f} MiB this process (both systems)",
        ]
        return out

    def _end_to_end_lines(self) -> list[str]:
        ours, theirs = self.ours_end_to_end_per_s, self.theirs_ingest_per_s
        if ours is None:
            return ["end to end            ours not measured (--reuse)"]
        parts = self.ours_parts
        met = theirs / ours <= END_TO_END_GOAL
        return [
            f"end to end            ours {ours:,.0f} chunks/s from nothing to searchable, "
            f"LanceDB {theirs:,.0f} chunks/s; LanceDB/ours {theirs / ours:.2f}x time "
            f"(goal: within {END_TO_END_GOAL:g}x: {'goal met' if met else 'goal missed'})",
            *self._given_our_encode_lines(ours),
            f"  ours' share         store_many {parts['store_many']:,.2f} s (embedding in "
            f"a helper process beside the writes), drain {parts['drain']:,.2f} s, derived "
            f"indexes {parts['derived indexes']:,.2f} s (matrix "
            f"{parts['matrix']:,.2f} s, full text {parts['full text']:,.2f} s, side by side)",
        ]


    def _given_our_encode_lines(self, ours: float) -> list[str]:
        """LanceDB's end to end had it embedded through our word cache as well."""
        if self.theirs_encode_ours_seconds is None:
            return []
        theirs = self.theirs_rows / (self.theirs_encode_ours_seconds + self.theirs_write_seconds
                                     + self.theirs_index_seconds)
        return [f"  LanceDB given our word cache: {theirs:,.0f} chunks/s; LanceDB/ours "
                f"{theirs / ours:.2f}x time"]


END_TO_END_PARTS = ("store_many", "drain", "derived indexes")


async def run_peers_bench(config: Any, chunks: int, sessions: int, *, queries: int = 200,
                          db: str | Path | None = None, reuse: bool = False, seed: int = 11,
                          say: Callable[[str], None] = print) -> PeersFigures:
    """Build about ``chunks`` chunks over ``sessions`` sessions into this engine and into
    LanceDB, and time the same queries on both.

    The memory is a temporary file, or ``db``, which must hold no chunks unless ``reuse``:
    then the file (one ``bench query`` or ``bench peers`` built: its namespace is theirs)
    is measured as it holds (``chunks`` and ``sessions`` unused), and LanceDB is built from
    it; copy a file you want to keep first, since queries write its retrieval log.
    """
    lancedb = import_lancedb()  # before any work: without it there is nothing to compare
    if chunks < 1 or sessions < 1 or queries < 1:
        raise ValueError("chunks, sessions and queries must be positive")
    with tempfile.TemporaryDirectory(prefix="workbench-bench-peers-") as folder:
        path = Path(db) if db is not None else Path(folder) / "store.db"
        return await _run(lancedb, config, path, Path(folder), chunks, sessions, queries,
                          reuse, random.Random(seed), say)


async def _run(lancedb: Any, config: Any, path: Path, folder: Path, chunks: int,
               sessions: int, queries: int, reuse: bool, rng: random.Random,
               say: Callable[[str], None]) -> PeersFigures:
    from core import Engine
    from core.config import load_config

    cfg = load_config(config)
    async with Engine.open(path, config=cfg) as engine:
        if engine.model.warning:
            say(f"warning: {engine.model.warning}")
        embedder = engine.embedder
        counts = await engine.counts()
        if counts["chunks"] and not reuse:
            raise FileExistsError(f"{path} already holds {counts['chunks']:,} chunks; bench "
                                  "peers fills an empty memory (--reuse measures it as it is)")
        if reuse and not counts["chunks"]:
            raise NothingToMeasure(f"{path} holds no chunks to measure (--reuse)")
        built, ingest_seconds = 0, None
        parts: dict[str, float] = {}
        if reuse:
            say(f"reusing {counts['chunks']:,} chunks from {counts['conversation_events']:,} "
                f"messages in {counts['sessions']:,} sessions …")
            asked = stored_query_texts(path, queries, rng)
        else:
            asked, parts = await _fill(engine, chunks, sessions, queries, rng, say)
            ingest_seconds = parts["store_many"] + parts["drain"]
            counts = await engine.counts()
            built = counts["chunks"]

        say("giving LanceDB the same chunks and vectors, streamed from the file …")
        batch = cfg.embedding.batch_size

        # LanceDB's ingest pays for the model as its users run it: model2vec's own encode,
        # without our word cache (timed beside it on the same texts, for comparison).
        as_shipped = getattr(embedder, "embed_as_shipped", None)

        def batched(embed: Callable[[list[str]], Any]) -> Callable[[list[str]], None]:
            def encode(texts: list[str]) -> None:
                for start in range(0, len(texts), batch):
                    embed(texts[start:start + batch])
            return encode

        lance = build_lancedb(lancedb, folder / "lancedb", path,
                              batched(as_shipped or embedder.embed),
                              batched(embedder.embed) if as_shipped is not None else None)
        gc.collect()
        await _derived_ready(engine, say)
        warmed = warm_file_cache(path)

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
        theirs = lancedb_searches(lance.table, TOP_K)

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
        freeze_the_heap()  # else a full collection lands in some query's timing (either's)
        ours_ms: dict[str, list[float]] = {}
        theirs_ms: dict[str, list[float]] = {}
        # Each system timed in a block of its own: LanceDB's worker threads stay busy for a
        # while after its queries, and this engine writes its retrieval log in the first
        # quiet moment; interleaved by path, either landed in the other's timings.
        # Each block also starts only once the process is quiet: at 1M, LanceDB's threads
        # were still busy from building and warming when our first block began.
        for name in PATHS:
            waited = await wait_until_quiet()
            say(f"timing {name}: ours (after {waited:.1f} s waiting for a quiet process) …")
            ours_ms[name] = await time_each(asked, ours[name])
        await engine.retrieval.flush_logs()
        for name in PATHS:
            waited = await wait_until_quiet()
            say(f"timing {name}: LanceDB (after {waited:.1f} s waiting for a quiet process) …")
            theirs_ms[name] = await time_each(asked, functools.partial(lancedb_call, name))

    return PeersFigures(
        model=embedder.name, dimension=embedder.dimension, chunks=counts["chunks"],
        sessions=counts["sessions"], messages=counts["conversation_events"],
        queries=len(asked), lancedb_version=lancedb.__version__, ours_built_chunks=built,
        ours_ingest_seconds=ingest_seconds, ours_parts=parts, theirs_rows=lance.rows,
        theirs_encode_seconds=lance.encode_seconds, theirs_write_seconds=lance.write_seconds,
        theirs_encode_ours_seconds=lance.also_seconds,
        theirs_index_seconds=lance.index_seconds,
        overlap={name: sum(shares) / len(shares) for name, shares in overlap.items()},
        ours_ms=ours_ms, theirs_ms=theirs_ms, peak_rss_mb=peak_rss_mb(), warmed=warmed)


async def _derived_ready(engine: Engine, say: Callable[[str], None]) -> None:
    """Build this engine's derived namespace indexes before any timing, as ``bench query``
    does: otherwise they build in the background while the first paths are timed."""
    from core.storage import SqliteBackend

    await merged_full_text(engine, say)
    backend = engine.backend
    if not isinstance(backend, SqliteBackend):
        return
    say("building our derived namespace indexes (matrix, full text) …")
    await asyncio.to_thread(backend.derived.build_now, backend.namespace_vectors.name)
    await build_derived_full_text(engine, AGENT)


async def _fill(engine: Engine, chunks: int, sessions: int, queries: int, rng: random.Random,
                say: Callable[[str], None]) -> tuple[list[tuple[str, str]], dict[str, float]]:
    """Fill an empty memory as ``bench query`` does, until searchable; its query texts and
    the seconds spent, by part (see :attr:`PeersFigures.ours_parts`)."""
    from core.bulk import IMPORT_BATCH
    from workbench.bench import synthetic

    say(f"generating messages for about {chunks:,} chunks over {sessions:,} sessions …")
    per_session = math.ceil((chunks * 1.1 + 10) / sessions)  # as bench query generates them
    data = round_robin(synthetic.messages(per_session * sessions, sessions))
    have = stored = 0
    ingest_seconds = 0.0
    per_message = 1.08
    # As an import runs: one store_many call for (about) all of it, one pipeline from the
    # first batch to the last; then small calls top it up to ``chunks``. The messages are
    # bench query's, handed over session by session, as every importer reads its source
    # (``ORDER BY session_id``): interleaved across sessions as live traffic arrives, each
    # transaction holds every session's words and FTS5's session columns cost more (50k
    # chunks: the writes' CPU 8.5 s interleaved, 5.1 s session by session).
    while have < chunks and stored < len(data):
        wanted = max(1, int((chunks - have) / per_message + 0.5))
        piece = sorted(data[stored:stored + wanted], key=lambda item: item[0])  # stable
        began = time.perf_counter()
        result = await engine.store_many(
            piece, agent=AGENT, batch_size=IMPORT_BATCH,
            progress=_stored_so_far(say, stored, len(piece), began - ingest_seconds))
        ingest_seconds += time.perf_counter() - began
        if result.rejected:
            raise RuntimeError(f"bench messages were refused: {result.rejected[:3]}")
        stored += len(piece)
        have = (await engine.counts())["chunks"]
        per_message = have / stored
    say(f"  ours: {have:,} chunks from {stored:,} messages ({ingest_seconds:,.1f} s)")
    began = time.perf_counter()
    await engine.drain()
    drained = time.perf_counter()
    asked = query_texts(data[:stored], queries, rng)
    parts = {"store_many": ingest_seconds, "drain": drained - began,
             **await _searchable(engine, asked[0][1])}
    say(f"  ours: searchable from the derived indexes after {parts['derived indexes']:,.1f} s")
    return asked, parts


def _stored_so_far(say: Callable[[str], None], before: int, size: int,
                   since: float) -> Callable[[int], None]:
    """A store_many progress that says, every tenth of ``size`` or so, how many messages
    are stored and the seconds since ``since``."""
    shown = 0

    def said(settled: int) -> None:
        nonlocal shown
        if settled - shown >= max(1000, size // 10) or settled == size:
            shown = settled
            say(f"  ours: {before + settled:,} messages stored "
                f"({time.perf_counter() - since:,.1f} s)")
    return said


async def _searchable(engine: Engine, text: str) -> dict[str, float]:
    """Seconds until a namespace query's two legs both answer from the derived indexes,
    and each index's own build time: the first query starts both builds (side by side, on
    threads of their own), and the time runs until a query after them is answered so."""
    from core.storage.derived.vector_matrix import DERIVED_VECTOR_LEG

    backend: Any = engine.backend  # the SQLite backend's own derived indexes
    names = (backend.namespace_vectors.name, backend.full_text_index.name)
    began = time.perf_counter()
    deadline = began + SEARCHABLE_DEADLINE_S
    waited = False
    while True:
        legs = (await engine.search(namespace=AGENT, query=text, top_k=TOP_K)).legs
        if legs.fts_derived and legs.vector_path == DERIVED_VECTOR_LEG:
            break
        states = [backend.derived.state(name) for name in names]
        problems = [f"{name}: {state.problem}" for name, state in zip(names, states,
                                                                      strict=True)
                    if state.problem]
        if waited and all(state.ready for state in states):
            problems.append(f"both built, yet {text!r} was answered by "
                            f"{legs.vector_path} and {'derived' if legs.fts_derived else 'SQL'}")
        if problems or time.perf_counter() > deadline:
            raise RuntimeError("our derived indexes did not answer: "
                               + ("; ".join(problems) or "deadline passed"))
        # Waits for the builds the query started (or builds one it did not start).
        await asyncio.gather(*(asyncio.to_thread(backend.derived.build_now, name)
                               for name in names))
        waited = True
    return {"derived indexes": time.perf_counter() - began,
            "matrix": backend.derived.state(names[0]).build_seconds or 0.0,
            "full text": backend.derived.state(names[1]).build_seconds or 0.0}


__all__ = ["INSTALL_HINT", "NothingToMeasure", "PeersFigures", "PeersUnavailable",
           "import_lancedb", "run_peers_bench"]
