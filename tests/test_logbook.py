"""The retrieval log, replay, relevance judgments and aidaemon's tri-hybrid get_context."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from core import Engine
from core.errors import InvalidInput, NotFound
from core.retrieval import log_writer
from core.storage.log_rows import LogRow
from tests.conftest import DETERMINISTIC


async def test_every_query_is_logged_and_replays_exactly(memory: str) -> None:
    async with Engine.open(memory, config=DETERMINISTIC) as engine:
        for seq, text in enumerate(["the red kite", "a blue whale", "red shoes on sale"], 1):
            await engine.store("s", seq, {"role": "user", "content": text})
        await engine.drain()
        asked = await engine.hybrid_query(session_id="s", query="red things", top_k=2,
                                          vector_weight=0.2, fts_weight=0.8, fusion="rrf",
                                          caller="agent")
        await engine.hybrid_query(session_id="s", query="whale", caller="app")
        log = await engine.retrieval_log()
        assert [entry["caller"] for entry in log] == ["app", "agent"]
        agent_entry = (await engine.retrieval_log(caller="agent"))[0]
        assert agent_entry["params"]["fusion"] == "rrf" and agent_entry["params"]["top_k"] == 2
        assert [r["chunk_id"] for r in agent_entry["results"]] == [r.chunk_id for r in asked]
        assert "fts" in agent_entry["timings_ms"]
        replayed = await engine.replay(agent_entry["log_id"])
        assert [r.chunk_id for r in replayed.results] == [r.chunk_id for r in asked]
        assert [r.score for r in replayed.results] == [r.score for r in asked]
        changed = await engine.replay(agent_entry["log_id"], top_k=1)
        assert len(changed.results) == 1
        with pytest.raises(NotFound):
            await engine.replay(99999)


async def test_queries_waiting_for_the_log_are_written_at_close(memory: str) -> None:
    async with Engine.open(memory, config=DETERMINISTIC) as engine:
        await engine.store("s", 1, {"role": "user", "content": "a kite"})
        for n in range(5):
            await engine.hybrid_query(session_id="s", query=f"kite {n}")
    # Closed at once, before the batching delay ran out: nothing is lost.
    async with Engine.open(memory, config=DETERMINISTIC) as engine:
        assert [e["query"] for e in await engine.retrieval_log()] == [
            f"kite {n}" for n in reversed(range(5))]


async def test_the_log_write_encodes_nothing(memory: str,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    # Entries are encoded as each query is logged: the write that carries a batch to the
    # database, on the writer thread beside the next queries, runs no JSON encoder.
    async with Engine.open(memory, config=DETERMINISTIC) as engine:
        await engine.store("s", 1, {"role": "user", "content": "a kite"})
        for n in range(3):
            await engine.hybrid_query(session_id="s", query=f"kite {n}")

        def refuse(*args: object, **kwargs: object) -> str:
            raise AssertionError("JSON encoded when the log was written")

        monkeypatch.setattr(json, "dumps", refuse)
        await engine.retrieval.flush_logs()
        monkeypatch.undo()
        assert [e["query"] for e in await engine.retrieval_log()] == [
            f"kite {n}" for n in reversed(range(3))]


async def test_an_entry_the_database_cannot_store_loses_only_itself(memory: str) -> None:
    # PostgreSQL text cannot hold NUL: a query with one is answered, and its log entry alone
    # is dropped, not the burst of entries written in the same transaction.
    async with Engine.open(memory, config=DETERMINISTIC) as engine:
        await engine.store("s", 1, {"role": "user", "content": "a kite"})
        for query in ("kite one", "kite\x00two", "kite three"):
            await engine.hybrid_query(session_id="s", query=query)
        logged = {entry["query"] for entry in await engine.retrieval_log()}
    assert {"kite one", "kite three"} <= logged


async def test_the_log_can_be_switched_off(memory: str) -> None:
    config = {**DETERMINISTIC, "retrieval": {"log_enabled": False}}
    async with Engine.open(memory, config=config) as engine:
        await engine.store("s", 1, {"role": "user", "content": "quiet"})
        await engine.hybrid_query(session_id="s", query="quiet")
        assert await engine.retrieval_log() == []


async def test_judgments_are_stored_and_changed(memory: str) -> None:
    async with Engine.open(memory, config=DETERMINISTIC) as engine:
        await engine.store("s", 1, {"role": "user", "content": "find me"})
        (hit,) = await engine.hybrid_query(session_id="s", query="find")
        await engine.judge("find", hit.chunk_id, 3, session_id="s")
        await engine.judge("find", "chk-other", 0, session_id="s")
        await engine.judge("find", hit.chunk_id, 2, session_id="s")
        assert await engine.judgments("find", session_id="s") == {hit.chunk_id: 2,
                                                                  "chk-other": 0}
        assert await engine.judgments("find", namespace="default") == {}
        with pytest.raises(InvalidInput, match="grade"):
            await engine.judge("find", hit.chunk_id, 7, session_id="s")


async def test_get_context_combines_recency_salience_and_relevance(memory: str) -> None:
    config = {**DETERMINISTIC, "retrieval": {"recency_limit": 3, "relevance_limit": 2,
                                             "relevance_threshold": 0.3}}
    async with Engine.open(memory, config=config) as engine:
        await engine.store("s", 1, {"role": "user", "content": "my passport number is X123",
                                    "importance": 0.9})
        await engine.store("s", 2, {"role": "user", "content": "the violin recital is friday"})
        for seq in range(3, 20):
            await engine.store("s", seq, {"role": "user", "content": f"small talk {seq}"})
        await engine.drain()
        context = await engine.get_context("s", "when is the violin recital?")
        by_sequence = {item.record.sequence: item for item in context.items}
        assert by_sequence[1].reasons == ["salience"]
        assert "relevance" in by_sequence[2].reasons and by_sequence[2].similarity > 0.3
        assert [s for s, i in by_sequence.items() if "recency" in i.reasons] == [17, 18, 19]
        assert [item.record.sequence for item in context.items] == sorted(by_sequence)
        assert context.counts["recency"] == 3 and context.counts["salience"] == 1


class _RecordingBackend:
    """Only what the log writer calls: every batch it was handed."""

    def __init__(self) -> None:
        self.batches: list[list[LogRow]] = []

    async def append_logs(self, rows: list[LogRow]) -> None:
        self.batches.append(list(rows))


def _row(n: int) -> LogRow:
    return LogRow("2026-01-01T00:00:00Z", "api", "session", "s", f"query {n}", "{}", "[]", "{}")


class _Waits:
    """``asyncio`` as :mod:`core.retrieval.log_writer` sees it, each ``sleep`` the flusher
    waits recorded; ``enough`` is set once ``count`` have been."""

    def __init__(self, count: int) -> None:
        self.delays: list[float] = []
        self.enough = asyncio.Event()
        self._count = count

    def __getattr__(self, name: str) -> Any:
        return getattr(asyncio, name)

    async def sleep(self, delay: float) -> None:
        self.delays.append(delay)
        if len(self.delays) >= self._count:
            self.enough.set()
        await asyncio.sleep(delay)


def _writer(monkeypatch: pytest.MonkeyPatch, **constants: float,
            ) -> tuple[_RecordingBackend, log_writer.LogWriter]:
    """A log writer over a recording backend, its timing constants set to ``constants``."""
    for name, value in {"FLUSH_DELAY": 0.01, **constants}.items():
        monkeypatch.setattr(log_writer, name, value)
    backend = _RecordingBackend()
    return backend, log_writer.LogWriter(backend)  # type: ignore[arg-type]


async def test_the_log_waits_for_a_moment_with_no_query_in_flight(
        monkeypatch: pytest.MonkeyPatch) -> None:
    backend, writer = _writer(monkeypatch, QUIET=0.01, FLUSH_LATEST=60.0)
    waits = _Waits(4)
    monkeypatch.setattr(log_writer, "asyncio", waits)
    with writer.query():
        writer.add(_row(1))
        async with asyncio.timeout(10):
            await waits.enough.wait()
        # Past its delay, the flusher came back three times, found the query still in
        # flight and waited for quiet again each time, writing nothing.
        assert waits.delays[:4] == [0.01, 0.01, 0.01, 0.01]
        assert backend.batches == []
        writer.add(_row(2))
    assert writer._flusher is not None
    await asyncio.wait_for(writer._flusher, 10)
    assert backend.batches == [[_row(1), _row(2)]]


async def test_a_burst_that_never_pauses_is_logged_all_the_same(
        monkeypatch: pytest.MonkeyPatch) -> None:
    backend, writer = _writer(monkeypatch, FLUSH_LATEST=0.05, FLUSH_MOST=3)
    with writer.query():  # never leaves: the latest moment writes it
        writer.add(_row(1))
        assert writer._flusher is not None
        await asyncio.wait_for(writer._flusher, 10)
        assert backend.batches == [[_row(1)]]
        for n in range(2, 5):  # three waiting: written without waiting for the latest moment
            writer.add(_row(n))
        monkeypatch.setattr(log_writer, "FLUSH_LATEST", 60.0)
        await asyncio.wait_for(writer._flusher, 10)
    assert backend.batches == [[_row(1)], [_row(2), _row(3), _row(4)]]
