"""The tests of tests/test_pipeline.py that read or stage the memory's tables directly (the chunk
and event rows a store writes)."""

from __future__ import annotations

import asyncio
import json

import pytest

from core import Engine
from core.errors import SequenceError
from tests.conftest import DETERMINISTIC, rows


async def test_a_store_writes_session_event_state_and_chunks(memory: str) -> None:
    async with Engine.open(memory, config=DETERMINISTIC) as engine:
        result = await engine.store("s", 7, {"role": "user", "content": "hello   world\n\n\n\nbye"})
        assert (result.sequence, result.chunks_inserted) == (7, 1)
        state = await engine.session_state("s")
        assert state["last_sequence"] == 7
        await engine.drain()
    (chunk_text, start, end, status) = rows(
        memory, "SELECT chunk_text, sequence_start, sequence_end, embedding_status FROM chunks")[0]
    assert chunk_text == "hello world\n\nbye"  # normalised before chunking
    assert (start, end) == (7, 7)
    assert status == "done"
    (role, importance) = rows(memory, "SELECT role, importance FROM conversation_events")[0]
    assert (role, importance) == ("user", 0.5)


async def test_importance_defaults_by_role_and_a_payload_may_set_its_own(memory: str) -> None:
    async with Engine.open(memory, config=DETERMINISTIC) as engine:
        for seq, role in enumerate(["user", "assistant", "tool", "system"], 1):
            await engine.store("s", seq, {"role": role, "content": role})
        await engine.store("s", 5, {"role": "tool", "content": "vital", "importance": 0.95})
    found = rows(memory, "SELECT role, importance FROM conversation_events ORDER BY sequence")
    assert found == [("user", 0.5), ("assistant", 0.5), ("tool", 0.3), ("system", 0.1),
                     ("tool", 0.95)]


@pytest.mark.parametrize("sequence", [3, 2, 1])
async def test_a_non_monotonic_sequence_is_refused_and_writes_nothing(memory: str,
                                                                      sequence: int) -> None:
    async with Engine.open(memory, config=DETERMINISTIC) as engine:
        await engine.store("s", 3, {"role": "user", "content": "three"})
        with pytest.raises(SequenceError, match=f"sequence {sequence} .* last sequence 3"):
            await engine.store("s", sequence, {"role": "user", "content": "late arrival"})
        assert [r.sequence for r in await engine.recall("s")] == [3]
    assert rows(memory, "SELECT count(*) FROM chunks WHERE chunk_text LIKE 'late%'") == [(0,)]


async def test_long_text_is_chunked_640_with_96_overlap(memory: str) -> None:
    text = " ".join(f"word{i:04d}" for i in range(400))  # ~3,600 characters
    async with Engine.open(memory, config=DETERMINISTIC) as engine:
        result = await engine.store("s", 1, {"role": "user", "content": text})
    chunks = [r[0] for r in rows(memory, "SELECT chunk_text FROM chunks ORDER BY fts_rowid")]
    assert result.chunks_inserted == len(chunks) >= 6
    assert all(len(c) <= 640 for c in chunks)
    for left, right in zip(chunks, chunks[1:], strict=False):
        shared = right.split(" ")[0]
        assert shared in left  # neighbours overlap
    assert {w for c in chunks for w in c.split()} == set(text.split())


async def test_identical_content_is_deduplicated_into_the_existing_chunk(memory: str) -> None:
    async with Engine.open(memory, config=DETERMINISTIC) as engine:
        await engine.store("s", 1, {"role": "user", "content": "same words"})
        again = await engine.store("s", 4, {"role": "user", "content": "same words"})
        assert (again.chunks_inserted, again.chunks_deduplicated) == (0, 1)
        await engine.store("other", 1, {"role": "user", "content": "same words"})
    found = rows(memory, "SELECT session_id, sequence_start, sequence_end FROM chunks"
                 " ORDER BY session_id")
    assert found == [("other", 1, 1), ("s", 1, 4)]
    assert rows(memory, "SELECT count(*) FROM conversation_events") == [(3,)]


async def test_tool_call_arguments_are_indexed(memory: str) -> None:
    async with Engine.open(memory, config=DETERMINISTIC) as engine:
        await engine.store("s", 1, {"role": "assistant", "content": "checking", "tool_calls": [
            {"id": "1", "type": "function",
             "function": {"name": "lookup_flight", "arguments": json.dumps({"code": "TP1234"})}}]})
    (text,) = rows(memory, "SELECT chunk_text FROM chunks")[0]
    assert "checking" in text and "TP1234" in text and "lookup_flight" in text


async def test_embedding_failures_are_recorded_per_chunk_and_retried(memory: str) -> None:
    # Three attempts, not the default five: the worker backs off 0.1, 0.2, 0.4, 0.8, 1.6 s
    # after a batch's failures in a row, and the last two were 2.4 s of the test.
    config = {"embedding": {**DETERMINISTIC["embedding"], "max_attempts": 3}}
    async with Engine.open(memory, config=config) as engine:
        real_embed = engine.embedder.embed
        calls = {"n": 0}

        def flaky(texts):
            calls["n"] += 1
            if any("poison" in t for t in texts) or calls["n"] <= 2:
                raise RuntimeError("backend hiccup")
            return real_embed(texts)

        engine.embedder.embed = flaky  # type: ignore[method-assign]
        await engine.store("s", 1, {"role": "user", "content": "fine text"})
        await engine.drain(timeout=30)
        await engine.store("s", 2, {"role": "user", "content": "poison pill"})
        await engine.drain(timeout=30)
        status = await engine.embedding_status()
        assert (status.embedded, status.failed, status.backlog) == (1, 1, 0)
    (error, attempts) = rows(memory, "SELECT embedding_error, embedding_attempts FROM chunks"
                             " WHERE embedding_status = 'failed'")[0]
    assert "backend hiccup" in error and attempts == 3


async def test_drain_waits_for_a_store_that_lands_while_the_worker_reads(memory: str) -> None:
    # The worker's read of the backlog starts before a store commits and comes back empty;
    # the store and a drain() happen while it is in flight. drain() must not return until
    # the stored chunk has its vector: the vectors are counted the moment drain() returns.
    async with Engine.open(memory, config=DETERMINISTIC) as engine:
        await engine.store("s", 1, {"role": "user", "content": "first words"})
        await engine.drain()
        read = engine.backend.pending_chunks
        draining: list[asyncio.Task[None]] = []
        vectors_when_drained: list[int] = []
        drained = asyncio.Event()

        def count_vectors(_: asyncio.Task[None]) -> None:
            vectors_when_drained.append(rows(memory, "SELECT count(*) FROM chunks_vec")[0][0])
            drained.set()

        async def stale_read(limit: int, after_rowid: int = 0):
            if draining and engine.worker._idle.is_set():
                await draining[0]  # hold a worker that called itself idle too soon
            found = await read(limit, after_rowid)
            if not draining and after_rowid == 0:
                await engine.store("s", 2, {"role": "user", "content": "late words"})
                draining.append(asyncio.create_task(engine.drain()))
                draining[0].add_done_callback(count_vectors)
                await asyncio.sleep(0)  # drain() wakes the worker before this read returns
            return found

        engine.backend.pending_chunks = stale_read
        engine.worker.wake()
        async with asyncio.timeout(30):  # a drain() that never returns fails the test here
            await drained.wait()
        assert vectors_when_drained == [2]
        assert await engine.backend.backlog_count() == 0
