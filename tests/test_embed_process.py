"""The bulk path's helper process, and that every stored vector belongs to its own chunk."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from core import Engine
from core.config import EmbeddingConfig
from core.embeddings import load_embedder
from core.embeddings import process as embed_process
from core.embeddings.process import EmbeddingProcess
from tests.conftest import DETERMINISTIC


async def test_the_helper_embeds_exactly_as_this_process_does() -> None:
    config = EmbeddingConfig(backend="deterministic", fallback_dimensions=64)
    local = load_embedder(config).embedder
    helper = EmbeddingProcess(config, local.name, local.dimension)
    helper.start()
    await helper._starting  # the first call after start-up, not a timing guess
    texts = ["a dog in the park", "tax return deadline", "", "émoji 🎉 text"]
    try:
        remote = await helper.embed(texts)
    finally:
        await helper.close()
    assert remote is not None
    np.testing.assert_allclose(remote, local.embed(texts), rtol=0, atol=1e-6)


async def test_a_helper_with_another_model_is_never_used() -> None:
    config = EmbeddingConfig(backend="deterministic", fallback_dimensions=64)
    helper = EmbeddingProcess(config, "some-other-model", 64)
    helper.start()
    await helper._starting
    try:
        assert await helper.embed(["text"]) is None
        assert helper.usable is False
    finally:
        await helper.close()


async def test_batches_after_the_first_wait_for_a_starting_helper(db_path: Path) -> None:
    items = [("s", i, {"role": "user", "content": f"import message {i} " * (i % 3 + 1)})
             for i in range(1, 61)]
    async with Engine.open(db_path, config=DETERMINISTIC) as engine:
        local_batches = []
        real_embed = engine.embedder.embed

        def counting(texts):
            local_batches.append(len(texts))
            return real_embed(texts)

        engine.embedder.embed = counting  # type: ignore[method-assign]
        result = await engine.store_many(items, batch_size=10)
        engine.embedder.embed = real_embed  # type: ignore[method-assign]
        assert result.stored == 60
        assert engine.bulk.process is not None and engine.bulk.process.usable
        # Only the first batch is embedded here, while the helper starts; the other five
        # wait for it rather than taking this process's core from the writes.
        assert local_batches == [10]
        assert (await engine.counts())["chunks_vec"] == (await engine.counts())["chunks"]


async def test_a_helper_slow_to_start_is_waited_for_no_longer_than_its_limit(
        db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    released = asyncio.Event()

    async def stuck_start(self: EmbeddingProcess) -> Any:
        await released.wait()
        raise RuntimeError("the helper never said hello")

    monkeypatch.setattr(EmbeddingProcess, "_start", stuck_start)
    monkeypatch.setattr(embed_process, "STARTUP_WAIT", 0.05)
    items = [("s", i, {"role": "user", "content": f"message {i}"}) for i in range(1, 41)]
    async with Engine.open(db_path, config=DETERMINISTIC) as engine:
        result = await engine.store_many(items, batch_size=10)
        helper = engine.bulk.process
        assert helper is not None and helper._starting is not None
        # Every batch was stored, embedded here, while the helper was still starting.
        assert result.stored == 40 and not helper._starting.done()
        assert (await engine.counts())["chunks_vec"] == 40
        released.set()
