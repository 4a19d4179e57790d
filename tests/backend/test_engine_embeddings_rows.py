"""The tests of tests/test_engine_embeddings.py that read or stage the memory's tables directly
(vector rows and the recorded model)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from core import Engine
from core.errors import DimensionMismatch, EmbeddingError, WorkbenchError
from core.storage.sqlite.search import Scope
from tests.conftest import rows
from tests.embedding_server import EmbeddingServer, serve
from tests.test_engine_embeddings import (
    MESSAGES,
    TEST_KEY,
    deterministic,
    http_config,
    isolated_hub_cache,  # noqa: F401  (autouse: no test here reads a real Hugging Face cache)
    store_all,
    word_vector,
)


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[EmbeddingServer]:
    monkeypatch.setenv("TEST_KEY", TEST_KEY)
    # A careless server echoing the caller's key in its 500s: the client must redact it.
    state = EmbeddingServer(word_vector,
                            error_body=f"upstream exploded for key {TEST_KEY}".encode())
    with serve(state, monkeypatch):
        yield state


async def test_http_backend_end_to_end(memory: str, server: EmbeddingServer) -> None:
    path = memory
    async with Engine.open(path, config=http_config(server, dimensions=8)) as engine:
        assert (engine.embedder.name, engine.embedder.dimension) == ("http:test-embed", 8)
        assert not engine.model.fell_back and engine.warnings == []
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
        assert not engine.model.fell_back and engine.embedder.dimension == 8
        chunks = await store_all(engine)

        # FTS sees the text at once, whatever the embedder is doing.
        fts = await engine.backend.fts_search(Scope(session_id="s"), ["quarterly"], 10)
        texts = await engine.backend.fetch_chunks([chunk_id for chunk_id, _ in fts])
        assert "quarterly" in texts[fts[0][0]].text  # then the replies it is context of

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
        assert engine.embedder.dimension == 32 and engine.model.vectors_usable

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
        assert engine.model.vectors_usable and engine.warnings == []
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
        assert engine.embedder.dimension == 16 and not engine.model.fell_back
        assert engine.model.vectors_usable is False
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
        assert engine.model.vectors_usable and engine.warnings == []
        status = await engine.embedding_status()
        assert (status.backlog, status.embedded, status.other_models) == (0, first + more, {})
        assert status.warning is None
        results = await engine.hybrid_query(session_id="new", query="quarterly tax filing",
                                            vector_weight=1, fts_weight=0)
        assert results and results[0].vector_rank is not None
