"""The tests of tests/test_embed_process.py that read or stage the memory's tables directly (each
vector row against its chunk)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from core import Engine
from core.embeddings.context import embed_with_context
from core.storage.sqlite.connection import open_connection
from tests.conftest import DETERMINISTIC


@pytest.mark.parametrize("batch_size", [7, 1000])
async def test_every_stored_vector_is_its_own_chunks(db_path: Path, batch_size: int) -> None:
    items = []
    for i in range(1, 120):
        text = "a repeated line" if i % 10 == 0 else f"message number {i} about topic {i % 7}"
        items.append(("s", i, {"role": "user", "content": text * (1 + (i % 3) * 60)}))
    items.insert(30, ("s", 3, {"role": "user", "content": "out of order, rejected"}))
    items.insert(50, ("s", 500, {"role": "robot", "content": "invalid, rejected"}))
    async with Engine.open(db_path, config=DETERMINISTIC) as engine:
        result = await engine.store_many(items, batch_size=batch_size)
        assert len(result.rejected) == 2 and result.chunks_deduplicated > 0
        await engine.drain()
        embedder = engine.embedder
        conn = open_connection(db_path, read_only=True, busy_timeout_ms=5000)
        rows = conn.execute(
            "SELECT c.context_text, c.chunk_text, v.embedding_blob FROM chunks c"
            " JOIN chunks_vec v ON v.chunk_id = c.chunk_id").fetchall()
        conn.close()
        assert len(rows) == (await engine.counts())["chunks"]
        stored = np.stack([np.frombuffer(blob, dtype=np.float32) for _, _, blob in rows])
        expected = embed_with_context(embedder, [text for _, text, _ in rows],
                                      [context for context, _, _ in rows])
        np.testing.assert_allclose(stored, expected, rtol=0, atol=1e-6)


async def test_vectors_from_the_helper_land_on_their_own_chunks(db_path: Path) -> None:
    first = [("s", i, {"role": "user", "content": f"warm-up message {i}"}) for i in range(1, 30)]
    second = [("s", i, {"role": "user", "content": f"helper message {i} " * (i % 4 + 1)})
              for i in range(30, 200)]
    second.insert(5, ("s", 31, {"role": "user", "content": "a duplicate sequence, rejected"}))
    async with Engine.open(db_path, config=DETERMINISTIC) as engine:
        await engine.store_many(first, batch_size=10)  # a second batch starts the helper
        helper = engine.bulk.process
        assert helper is not None
        await helper._starting
        assert helper.usable
        calls = {"local": 0}
        real_embed = engine.embedder.embed

        def counting(texts):
            calls["local"] += 1
            return real_embed(texts)

        engine.embedder.embed = counting  # type: ignore[method-assign]
        result = await engine.store_many(second, batch_size=25)
        assert len(result.rejected) == 1
        assert calls["local"] == 0  # every batch went to the helper
        await engine.drain()
        conn = open_connection(db_path, read_only=True, busy_timeout_ms=5000)
        rows = conn.execute(
            "SELECT c.context_text, c.chunk_text, v.embedding_blob FROM chunks c"
            " JOIN chunks_vec v ON v.chunk_id = c.chunk_id").fetchall()
        conn.close()
        stored = np.stack([np.frombuffer(blob, dtype=np.float32) for _, _, blob in rows])
        engine.embedder.embed = real_embed  # type: ignore[method-assign]
        expected = embed_with_context(engine.embedder, [t for _, t, _ in rows],
                                      [c for c, _, _ in rows])
        np.testing.assert_allclose(stored, expected, rtol=0, atol=1e-6)
