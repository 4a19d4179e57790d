"""The Engine's embedding side: http end to end, a failing endpoint, offline fallback, reindex."""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from core import Engine
from core.errors import DimensionMismatch, EmbeddingError, WorkbenchError
from core.storage.vocabulary import Scope
from tests.conftest import rows
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


async def test_http_backend_end_to_end(memory: str, server: EmbeddingServer) -> None:
    path = memory
    async with Engine.open(path, config=http_config(server, dimensions=8)) as engine:
        assert (engine.embedder.name, engine.embedder.dimension) == ("http:test-embed", 8)
        assert not engine.embedding_fell_back and engine.warnings == []
        assert engine.config.embedding.api_key == TEST_KEY  # ${TEST_KEY} read from os.environ
        assert TEST_KEY not in repr(engine.config) and TEST_KEY not in repr(engine.embedder)
        chunks = await store_all(engine)
        assert chunks >= len(MESSAGES)
        await engine.drain(timeout=30)
        status = await engine.embedding_status()
        assert (status.backlog, status.failed, status.embedded) == (0, 0, chunks)
        assert (status.model, status.dimension, status.other_models) == ("http:test-embed", 8, {})
        assert server.requests, "the worker never called the endpoint"
        assert server.auth_headers == {f"Bearer {TEST_KEY}"}
        assert all(r["body"]["model"] == "test-embed" and r["body"]["dimensions"] == 8
                   for r in server.requests)

        results = await engine.hybrid_query(session_id="s", query="dog hiking mountains",
                                            vector_weight=1, fts_weight=0)
        assert results
        assert all(r.vector_rank is not None for r in results)
        assert "dog" in results[0].text.lower()
    assert rows(path, "SELECT count(*) FROM chunks_vec") == [(chunks,)]


async def test_failing_endpoint_keeps_stores_and_hides_the_key(
        memory: str, server: EmbeddingServer, caplog: pytest.LogCaptureFixture,
        recwarn: pytest.WarningsRecorder) -> None:
    caplog.set_level(logging.DEBUG)
    server.fail_after = 1  # the dimension probe succeeds, every later request gets a 500
    path = memory
    config = http_config(server, max_attempts=2)
    raised: list[BaseException] = []
    async with Engine.open(path, config=config) as engine:
        assert not engine.embedding_fell_back and engine.embedder.dimension == 8
        chunks = await store_all(engine)

        # FTS sees the text at once, whatever the embedder is doing.
        fts = await engine.backend.fts_search(Scope(session_id="s"), ["quarterly"], 10)
        texts = await engine.backend.fetch_chunks([chunk_id for chunk_id, _ in fts])
        assert "quarterly" in texts[fts[0][0]]["text"]  # then the replies it is context of

        await engine.drain(timeout=60)
        status = await engine.embedding_status()
        assert (status.failed, status.backlog, status.embedded) == (chunks, 0, 0)
        assert len(server.requests) >= 1 + 2  # the probe, then max_attempts tries

        # The query's own embedding fails too; whatever is raised must not carry the key.
        try:
            await engine.hybrid_query(session_id="s", query="quarterly tax", vector_weight=0)
        except WorkbenchError as exc:
            raised.append(exc)
        try:
            await engine.embed_query("tax")
        except EmbeddingError as exc:
            raised.append(exc)
        assert raised
        worker_error = engine.worker.last_error if engine.worker else None
        texts = [*engine.warnings, str(status.warning), str(worker_error), repr(engine.embedder)]

    errors = [e for (e,) in rows(path, "SELECT embedding_error FROM chunks")]
    assert len(errors) == chunks and all(errors)
    assert all("500" in e for e in errors)
    assert all("***" in e for e in errors)  # the echoed key was redacted, not dropped
    texts += errors
    texts += [record.getMessage() for record in caplog.records]
    texts += [f"{exc!s} {exc!r}" for exc in raised]
    texts += [str(warning.message) for warning in recwarn]
    assert any("500" in record.getMessage() for record in caplog.records
               if record.levelno >= logging.WARNING)
    for text in texts:
        assert TEST_KEY not in text


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
        assert engine.embedding_fell_back is True
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


@pytest.mark.parametrize("explicit", [True, False], ids=["dimensions", "fallback_dimensions"])
async def test_reindex_moves_a_file_to_another_dimension(tmp_path: Path, explicit: bool) -> None:
    path = tmp_path / "dims.db"
    async with Engine.open(path, config=deterministic(32)) as engine:
        chunks = await store_all(engine)
        await store_all(engine, session="t")
        chunks *= 2
        await engine.drain(timeout=30)
        assert (await engine.embedding_status()).embedded == chunks

    # fallback_dimensions only sizes a file that has no vectors yet: the file's 32 wins.
    async with Engine.open(path, config=deterministic(48)) as engine:
        assert engine.embedder.dimension == 32 and engine.vectors_usable

    with pytest.raises(DimensionMismatch) as info:
        await Engine.open(path, config=deterministic(48, explicit=True))
    assert "32" in str(info.value) and "48" in str(info.value)

    cfg48 = deterministic(48, explicit=explicit)

    calls: list[tuple[int, int]] = []
    async with Engine.open(path, config=cfg48, reindex=True) as engine:
        assert engine.embedder.dimension == 48
        total = await engine.reindex(progress=lambda done, all_: calls.append((done, all_)))
        assert total == chunks
        assert calls, "progress was never reported"
        assert calls[-1] == (total, total)
        assert [done for done, _ in calls] == sorted(done for done, _ in calls)
        status = await engine.embedding_status()
        assert (status.dimension, status.backlog, status.embedded) == (48, 0, chunks)

    async with Engine.open(path, config=cfg48) as engine:
        assert engine.vectors_usable and engine.warnings == []
        status = await engine.embedding_status()
        assert (status.dimension, status.backlog, status.failed, status.embedded) == \
            (48, 0, 0, chunks)
        assert status.other_models == {}
        assert status.model == "deterministic-hash-v1-48"
        results = await engine.hybrid_query(session_id="t", query="quarterly tax deadline",
                                            vector_weight=1, fts_weight=0)
        # The message itself, or the reply that carries it as context, comes first.
        assert results and "quarterly" in results[0].text + results[0].context
    assert rows(path, "SELECT DISTINCT embedding_model FROM chunks_vec") == [
        ("deterministic-hash-v1-48",)]
    assert rows(path, "SELECT name FROM sqlite_master WHERE name ="
                      " 'chunks_vec_blocks_by_partition'") == [("chunks_vec_blocks_by_partition",)]


async def test_same_dimension_other_model_turns_the_vector_leg_off(
        memory: str, tiny_model_dir: Path) -> None:
    path = memory
    async with Engine.open(path, config={"embedding": {"model": str(tiny_model_dir)}}) as engine:
        assert (engine.embedder.name, engine.embedder.dimension) == ("model2vec:tiny-m2v", 16)
        first = await store_all(engine)
        await engine.drain(timeout=30)

    async with Engine.open(path, config=deterministic(16)) as engine:
        assert engine.embedder.dimension == 16 and not engine.embedding_fell_back
        assert engine.vectors_usable is False
        assert engine.worker is None
        assert any("workbench reindex" in w and "model2vec:tiny-m2v" in w
                   for w in engine.warnings)
        more = await store_all(engine, session="new")
        await engine.drain(timeout=1)  # no worker runs: returns at once
        status = await engine.embedding_status()
        assert status.backlog == more > 0
        assert status.embedded == first
        assert status.other_models == {"model2vec:tiny-m2v": first}
        assert "workbench reindex" in (status.warning or "")
        results = await engine.hybrid_query(session_id="new", query="quarterly tax filing")
        assert results and "quarterly" in results[0].text
        assert all(r.vector_rank is None and r.fts_rank is not None for r in results)
        assert rows(path, "SELECT count(*) FROM chunks WHERE embedding_status = 'pending'") \
            == [(more,)]

        # What the warning asks for: reindexing in place turns the vector leg back on.
        assert await engine.reindex() == first + more
        assert engine.vectors_usable and engine.warnings == []
        status = await engine.embedding_status()
        assert (status.backlog, status.embedded, status.other_models) == (0, first + more, {})
        assert status.warning is None
        results = await engine.hybrid_query(session_id="new", query="quarterly tax filing",
                                            vector_weight=1, fts_weight=0)
        assert results and results[0].vector_rank is not None


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
