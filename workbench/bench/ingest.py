"""``workbench bench ingest``: how fast the engine ingests, next to the model alone.

``workbench bench ingest`` encodes the messages' texts with the model alone (the ceiling
ingest can approach), then ingests the same messages end to end into a fresh file (store
and drain: validation, chunking, SQL, FTS, embedding, vectors), through the public async
API, both one message per ``store`` and through the bulk path importers use (which embeds
in a helper process; its peak memory is reported beside this process's).
"""

from __future__ import annotations

import asyncio
import gc
import resource
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workbench.bench.measure import freeze_the_heap, peak_rss_mb, percentile


@dataclass
class IngestFigures:
    """What one ``bench ingest`` run measured."""

    messages: int
    sessions: int
    chunks: int
    mean_chars: float
    model: str
    dimension: int
    encode_per_s: float
    store_per_s: float
    store_p50_ms: float
    store_p95_ms: float
    bulk_per_s: float
    peak_rss_mb: float
    helper_rss_mb: float

    def lines(self) -> list[str]:
        """The figures as the lines the command prints."""
        ratio_store = self.store_per_s / self.encode_per_s
        ratio_bulk = self.bulk_per_s / self.encode_per_s
        return [
            f"model                 {self.model} ({self.dimension} dims)",
            f"messages              {self.messages:,} in {self.sessions:,} sessions, "
            f"mean {self.mean_chars:.0f} chars; {self.chunks:,} chunks",
            f"encode only           {self.encode_per_s:,.0f} texts/s (model alone, same texts)",
            f"ingest, store()       {self.store_per_s:,.0f} msgs/s end to end (store + drain); "
            f"store p50 {self.store_p50_ms:.3f} ms, p95 {self.store_p95_ms:.3f} ms",
            f"ingest, store_many()  {self.bulk_per_s:,.0f} msgs/s end to end (bulk + drain)",
            f"ratio to encode       store() {ratio_store:.2f}x, store_many() {ratio_bulk:.2f}x"
            f"  (goal >= 0.50x)",
            f"peak RSS              {self.peak_rss_mb:,.0f} MiB this process, "
            f"{self.helper_rss_mb:,.0f} MiB the embedding helper process",
        ]


async def run_ingest(config: Any, messages: int, sessions: int,
                     say: Callable[[str], None] = print) -> IngestFigures:
    """Measure encode-only and end-to-end ingest throughput over the same messages."""
    from core.config import load_config
    from core.embeddings import load_embedder
    from core.indexing import extract_indexable_text, normalize_text
    from workbench.bench import synthetic

    say(f"generating {messages:,} messages over {sessions:,} sessions …")
    data = synthetic.messages(messages, sessions)
    texts = [normalize_text(extract_indexable_text(payload)) for _, _, payload in data]
    cfg = load_config(config)
    loaded = await asyncio.to_thread(load_embedder, cfg.embedding)
    if loaded.warning:
        say(f"warning: {loaded.warning}")
    embedder = loaded.embedder

    # A full collection walking the generated messages landed in the ingest timings (about
    # 0.3 s of a 20,000-message store_many).
    freeze_the_heap()
    try:
        return await _measure(cfg, data, texts, embedder, say)
    finally:
        gc.unfreeze()


async def _measure(cfg: Any, data: list[Any], texts: list[str], embedder: Any,
                   say: Callable[[str], None]) -> IngestFigures:
    """Encode-only, then store() and store_many() into fresh files, over the same messages."""
    from core import Engine

    batch = cfg.embedding.batch_size
    say("encoding with the model alone …")
    embedder.embed(texts[:batch])  # warm-up: first-call allocations are not throughput
    started = time.perf_counter()
    for start in range(0, len(texts), batch):
        embedder.embed(texts[start:start + batch])
    encode_seconds = time.perf_counter() - started
    embedder.close()
    gc.collect()

    with tempfile.TemporaryDirectory(prefix="workbench-bench-") as folder:
        say("ingesting one store() per message …")
        latencies: list[float] = []
        async with Engine.open(Path(folder) / "store.db", config=cfg) as engine:
            started = time.perf_counter()
            for session_id, sequence, payload in data:
                began = time.perf_counter()
                await engine.store(session_id, sequence, payload)
                latencies.append(time.perf_counter() - began)
            await engine.drain()
            store_seconds = time.perf_counter() - started
            chunks = (await engine.counts())["chunks"]

        say("ingesting through store_many() …")
        async with Engine.open(Path(folder) / "bulk.db", config=cfg) as engine:
            started = time.perf_counter()
            result = await engine.store_many(data)
            await engine.drain()
            bulk_seconds = time.perf_counter() - started
            assert result.stored == len(data) and not result.rejected

    return IngestFigures(
        messages=len(data), sessions=len({sid for sid, _, _ in data}), chunks=chunks,
        mean_chars=statistics.fmean(len(t) for t in texts), model=embedder.name,
        dimension=embedder.dimension, encode_per_s=len(texts) / encode_seconds,
        store_per_s=len(data) / store_seconds,
        store_p50_ms=percentile(latencies, 0.50) * 1000,
        store_p95_ms=percentile(latencies, 0.95) * 1000,
        bulk_per_s=len(data) / bulk_seconds, peak_rss_mb=peak_rss_mb(),
        helper_rss_mb=peak_rss_mb(resource.RUSAGE_CHILDREN))
