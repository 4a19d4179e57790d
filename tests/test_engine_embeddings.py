"""The Engine's embedding side: http end to end, a failing endpoint, offline fallback, reindex."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from core import Engine
from tests.embedding_server import EmbeddingServer, isolate_hub_cache, serve

TEST_KEY = "sk-secret-xyz"

MESSAGES = [
    {"role": "user", "content": "my dog loves hiking in the mountains every weekend"},
    {"role": "assistant", "content": "Hiking with a dog in the mountains sounds wonderful."},
    {"role": "user", "content": "remind me about the quarterly tax filing deadline"},
    {"role": "tool", "content": "invoice 1042 was paid by the bank on monday"},
]


async def store_all(engine: Engine, session: str = "s", first: int = 1) -> int:
    """Store MESSAGES in ``session``; the number of chunks they made."""
    chunks = 0
    for offset, message in enumerate(MESSAGES):
        result = await engine.store(session, first + offset, message)
        chunks += result.chunks_inserted
    return chunks


@pytest.fixture(autouse=True)
def isolated_hub_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No test reads or fills a real Hugging Face cache."""
    return isolate_hub_cache(tmp_path, monkeypatch)


# --- a loopback OpenAI-compatible embeddings server ----------------------------------------------


def word_vector(text: str, dim: int) -> list[float]:
    """Signed hashing of lower-cased words: texts sharing words get similar vectors."""
    vector = [0.0] * dim
    for word in re.findall(r"\w+", text.lower()):
        digest = hashlib.sha256(word.encode("utf-8")).digest()
        vector[digest[0] % dim] += 1.0 if digest[1] & 1 else -1.0
    return vector


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[EmbeddingServer]:
    monkeypatch.setenv("TEST_KEY", TEST_KEY)
    # A careless server echoing the caller's key in its 500s: the client must redact it.
    state = EmbeddingServer(word_vector,
                            error_body=f"upstream exploded for key {TEST_KEY}".encode())
    with serve(state, monkeypatch):
        yield state


def http_config(server: EmbeddingServer, **overrides: Any) -> dict[str, Any]:
    embedding = {"backend": "http", "base_url": server.url, "model": "test-embed",
                 "api_key": "${TEST_KEY}", "timeout_secs": 5.0, **overrides}
    return {"embedding": {k: v for k, v in embedding.items() if v is not None}}


# --- http backend ------------------------------------------------------------------------------


async def test_failing_endpoint_hybrid_query_still_finds_text(
        memory: str, server: EmbeddingServer) -> None:
    """With the embeddings endpoint down, the FTS leg alone should still answer."""
    server.fail_after = 1
    async with Engine.open(memory,
                           config=http_config(server, max_attempts=1)) as engine:
        await store_all(engine)
        for weights in ({"vector_weight": 0, "fts_weight": 1}, {}):  # {}: the 0.7/0.3 default
            results = await engine.hybrid_query(session_id="s", query="quarterly tax",
                                                **weights)
            assert results and "quarterly" in results[0].text


# --- offline fallback --------------------------------------------------------------------------


async def test_offline_model_falls_back_to_deterministic(memory: str,
                                                         isolated_hub_cache: Path) -> None:
    config = {"embedding": {"backend": "model2vec", "model": "no-such-org/no-such-model",
                            "allow_download": False}}
    async with Engine.open(memory, config=config) as engine:
        assert engine.model.fell_back is True
        assert len(engine.warnings) == 1
        (warning,) = engine.warnings
        assert "no-such-org/no-such-model" in warning and "deterministic" in warning
        assert "\n" not in warning
        assert engine.embedder.name.startswith("deterministic-hash-v1-")
        chunks = await store_all(engine)
        await engine.drain(timeout=30)
        status = await engine.embedding_status()
        assert (status.backlog, status.embedded, status.fell_back) == (0, chunks, True)
        assert status.warning == warning
        results = await engine.hybrid_query(session_id="s", query="dog hiking mountains")
        assert results and "dog" in results[0].text.lower()
        assert results[0].vector_rank is not None and results[0].fts_rank is not None
    assert not (isolated_hub_cache / "hub" / "models--no-such-org--no-such-model").exists()


# --- reindex -----------------------------------------------------------------------------------


def deterministic(dimensions: int, *, explicit: bool = False) -> dict[str, Any]:
    key = "dimensions" if explicit else "fallback_dimensions"
    return {"embedding": {"backend": "deterministic", key: dimensions}}


async def test_reindex_open_before_reindex_does_not_break_queries(memory: str) -> None:
    path = memory
    async with Engine.open(path, config=deterministic(32)) as engine:
        await store_all(engine)
        await engine.drain(timeout=30)
    async with Engine.open(path, config=deterministic(48, explicit=True),
                           reindex=True) as engine:
        results = await engine.hybrid_query(session_id="s", query="quarterly tax")
        assert results and "quarterly" in results[0].text  # full text answers meanwhile
        assert all(r.vector_rank is None for r in results)


async def test_a_locked_file_pauses_the_worker_and_never_kills_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another process holding the write lock past busy_timeout makes reads and saves fail
    with the driver's own error: the worker says so, retries, and close still works."""
    import sqlite3

    config = {"embedding": {"backend": "deterministic", "fallback_dimensions": 16}}
    async with Engine.open(tmp_path / "m.db", config=config) as engine:
        backend = engine.backend
        real_pending, real_save = backend.pending_chunks, backend.save_vectors
        locked = {"reads": 2, "saves": 2}

        async def pending(*args: Any) -> Any:
            if locked["reads"]:
                locked["reads"] -= 1
                raise sqlite3.OperationalError("database is locked")
            return await real_pending(*args)

        async def save(*args: Any) -> Any:
            if locked["saves"]:
                locked["saves"] -= 1
                raise sqlite3.OperationalError("database is locked")
            return await real_save(*args)

        monkeypatch.setattr(backend, "pending_chunks", pending)
        monkeypatch.setattr(backend, "save_vectors", save)
        await engine.store("s", 1, {"role": "user", "content": "the dog barks at night"})
        await engine.drain(timeout=30)
        assert locked == {"reads": 0, "saves": 0}
        assert (await engine.embedding_status()).backlog == 0
        assert engine.worker is not None and engine.worker.storage_error is None
    # close() went through: the file opens again and holds the vector.
    async with Engine.open(tmp_path / "m.db", config=config) as engine:
        assert (await engine.embedding_status()).embedded == 1
