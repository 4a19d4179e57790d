"""``workbench bench coldstart``: how fast a fresh process answers namespace queries.

A memory of N chunks is built (the generator ``bench query`` uses) and warmed once, so its
derived indexes are built and saved; then a fresh Python process opens it and times: the
open, the first namespace query, the first 100 (p50/p95), and the same queries again once
everything is warm. Bytes on disk compare the saved indexes with the raw float32 vectors
plus the in-memory full-text index.
"""

from __future__ import annotations

import asyncio
import json
import math
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from core.engine import Engine

AGENT = "bench-agent"
FIRST = 100
TOP_K = 10


@dataclass
class ColdstartFigures:
    """What the fresh process measured."""

    chunks: int
    backend: str
    open_s: float
    first_query_ms: float
    first_p50_ms: float
    first_p95_ms: float
    warm_p50_ms: float
    warm_p95_ms: float
    origins: dict[str, str]
    saved_bytes: int
    raw_vector_bytes: int
    full_text_bytes: int

    def lines(self) -> list[str]:
        """The figures, one per line."""
        base = self.raw_vector_bytes + self.full_text_bytes
        ratio = f" ({self.saved_bytes / base:.2f}x)" if base and self.saved_bytes else ""
        return [
            f"coldstart {self.backend}, {self.chunks:,} chunks (a fresh process)",
            f"open                  {self.open_s * 1000:,.0f} ms",
            f"first query           {self.first_query_ms:,.1f} ms "
            f"(open + first answer {self.open_s * 1000 + self.first_query_ms:,.0f} ms)",
            f"first {FIRST} queries     p50 {self.first_p50_ms:,.1f} ms, "
            f"p95 {self.first_p95_ms:,.1f} ms",
            f"warm, same queries    p50 {self.warm_p50_ms:,.1f} ms, "
            f"p95 {self.warm_p95_ms:,.1f} ms",
            "indexes               " + (", ".join(f"{k}: {v}" for k, v in self.origins.items())
                                        or "none held"),
            f"bytes on disk         saved indexes {self.saved_bytes:,}{ratio}; raw float32 "
            f"vectors {self.raw_vector_bytes:,} + in-memory full text {self.full_text_bytes:,}",
        ]


async def _fill(engine: Engine, chunks: int, sessions: int, say: Callable[[str], None]) -> int:
    """Store generated messages until the memory holds ``chunks`` chunks."""
    from workbench.bench import synthetic
    from workbench.bench.query import round_robin

    have = (await engine.counts())["chunks"]
    if have >= chunks:
        return int(have)
    per_session = math.ceil((chunks * 1.1 + 10) / sessions)
    data = round_robin(synthetic.messages(per_session * sessions, sessions))
    stored = (await engine.counts())["conversation_events"]
    started = time.perf_counter()
    per_message = 1.08
    step = max(1000, min(10_000, chunks // 10))
    while have < chunks and stored < len(data):
        wanted = max(1, int((chunks - have) / per_message + 0.5))
        piece = data[stored:stored + min(step, wanted)]
        await engine.store_many(piece, agent=AGENT)
        stored += len(piece)
        have = (await engine.counts())["chunks"]
        per_message = have / stored
        say(f"  {have:,} chunks ({time.perf_counter() - started:,.1f} s)")
    await engine.drain()
    return int(have)


def _queries(count: int) -> list[str]:
    """``count`` query texts: 3-6 word spans of generated messages (as ``bench query``)."""
    import random

    from workbench.bench import synthetic
    from workbench.bench.query import query_texts

    data = synthetic.messages(max(count * 4, 400), 20)
    return [text for _, text in query_texts(data, count, random.Random(5))]


async def _warm(target: str, config: Any, queries: list[str]) -> None:
    """Open, build every derived index, ask, close: the indexes are saved."""
    from core import Engine

    async with Engine.open(target, config=config) as engine:
        await _wait_ready(engine)
        for text in queries[:5]:
            await engine.search(namespace=AGENT, query=text, top_k=TOP_K)


async def _wait_ready(engine: Engine) -> None:
    backend: Any = engine.backend  # each backend's own derived indexes
    derived: Any = getattr(backend, "derived", None)
    if hasattr(derived, "build_now"):
        for name in (backend.namespace_vectors.name, backend.full_text_index.name):
            await asyncio.to_thread(derived.build_now, name)
    elif derived is not None:  # PostgreSQL: one index per namespace
        await derived.indexes.build_now(AGENT)


async def measure(target: str, config: Any, queries: list[str]) -> dict[str, Any]:
    """In this (fresh) process: open, the first queries, then the same ones warm."""
    from core import Engine
    from core.storage.derived import persisted

    started = time.perf_counter()
    async with Engine.open(target, config=config) as engine:
        opened = time.perf_counter()
        first: list[float] = []
        for text in queries:
            began = time.perf_counter()
            await engine.search(namespace=AGENT, query=text, top_k=TOP_K)
            first.append((time.perf_counter() - began) * 1000)
        origins = engine.backend.derived_origins(AGENT)
        await _wait_ready(engine)
        warm: list[float] = []
        for text in queries:
            began = time.perf_counter()
            await engine.search(namespace=AGENT, query=text, top_k=TOP_K)
            warm.append((time.perf_counter() - began) * 1000)
        backend: Any = engine.backend  # each backend's own derived indexes, by name
        saved = raw = text_bytes = 0
        if hasattr(backend, "namespace_vectors"):
            raw = backend.namespace_vectors.raw_bytes()
            text_bytes = backend.full_text_index.memory_bytes()
            saving = backend.derived.saving
            if saving is not None:
                for name in (backend.namespace_vectors.name, backend.full_text_index.name):
                    described = persisted.describe(saving.folder, name)
                    saved += described.bytes if described is not None else 0
        else:
            from core.storage.pg.derived_saved import index_name

            indexes = backend.derived.indexes
            held = indexes.index(AGENT)
            if held is not None:
                raw = held.vectors.raw_bytes()
                text_bytes = held.postings.memory_bytes()
            if indexes.saving is not None:
                described = persisted.describe(indexes.saving.folder, index_name(AGENT))
                saved = described.bytes if described is not None else 0
        chunks = (await engine.counts())["chunks"]
    return {"chunks": chunks, "backend": type(backend).__name__, "open_s": opened - started,
            "first_query_ms": first[0], "first_p50_ms": float(np.percentile(first, 50)),
            "first_p95_ms": float(np.percentile(first, 95)),
            "warm_p50_ms": float(np.percentile(warm, 50)),
            "warm_p95_ms": float(np.percentile(warm, 95)), "origins": origins,
            "saved_bytes": saved, "raw_vector_bytes": raw, "full_text_bytes": text_bytes}


async def run_coldstart(config: Any, chunks: int, sessions: int, *, db: str | None = None,
                        say: Callable[[str], None] = print) -> ColdstartFigures:
    """Build (or top up) the memory ``db`` (default: a temporary file), warm it, and
    measure a fresh process on it."""
    from core import Engine
    from core.config import load_config

    cfg = load_config(config)
    holder = (tempfile.TemporaryDirectory(prefix="workbench-bench-coldstart-")
              if db is None else nullcontext(None))
    with holder as folder:
        target = str(Path(folder) / "store.db") if folder is not None else str(db)
        say(f"filling the memory to {chunks:,} chunks …")
        async with Engine.open(target, config=cfg) as engine:
            await _fill(engine, chunks, sessions, say)
        queries = _queries(FIRST)
        say("warming it once (its derived indexes built and saved) …")
        await _warm(target, cfg, queries)
        say("a fresh process opens it …")
        payload = json.dumps({"target": target, "config": cfg.model_dump(mode="json"),
                              "queries": queries})
        done = await asyncio.to_thread(
            subprocess.run, [sys.executable, "-m", "workbench.bench.coldstart"],
            input=payload, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"the fresh process failed: {done.stderr.strip()[-400:]}")
        figures = json.loads(done.stdout.strip().splitlines()[-1])
    return ColdstartFigures(**figures)


def _child() -> None:
    """The fresh process: read what to measure on stdin, print the figures as JSON."""
    from core.config import load_config

    asked = json.loads(sys.stdin.read())
    figures = asyncio.run(measure(asked["target"], load_config(asked["config"]),
                                  asked["queries"]))
    print(json.dumps(figures))


if __name__ == "__main__":
    _child()
