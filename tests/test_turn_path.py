"""What an agent's turn does not wait for: the embedding worker gathers a burst of stores
into one batch, a session's summary check waits for its stores to pause, and the write-ahead
log is copied in by the upkeep once writes pause, never by the commit of a turn. A drain
(and ``Summaries.settle``) waits for none of those pauses."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest

from core import Engine, upkeep
from core.embeddings import worker as embed_worker
from core.summary import service as summary_service
from tests.conftest import DETERMINISTIC

DEADLINE_S = 30.0  # how long a poll below waits at most before the test fails


def message(i: int) -> dict[str, Any]:
    """~100 tokens of the deterministic counter: a fact, then filler."""
    return {"role": "user" if i % 2 else "assistant",
            "content": (f"Order {i} ships to Lisbon on May {i}. "
                        + "and so on, as we said before. " * 13)[:396]}


async def until(condition: Any, what: str) -> None:
    """Wait for ``condition()`` to hold, failing after :data:`DEADLINE_S`."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + DEADLINE_S
    while not condition():
        assert loop.time() < deadline, f"not within {DEADLINE_S:g} s: {what}"
        await asyncio.sleep(0.02)


async def test_stores_that_do_not_pause_are_embedded_in_one_batch(
        memory: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(embed_worker, "GATHER_SECONDS", 600.0)
    monkeypatch.setattr(embed_worker, "GATHER_AT_MOST_SECONDS", 600.0)
    async with Engine.open(memory, config=DETERMINISTIC) as engine:
        await engine.drain()
        saves: list[int] = []
        save = engine.backend.save_vectors

        async def counted(rows: Any, matrix: Any, model: str) -> int:
            saves.append(len(rows))
            return await save(rows, matrix, model)

        monkeypatch.setattr(engine.backend, "save_vectors", counted)
        for i in range(1, 6):  # each store wakes the worker; it waits for them to pause
            await engine.store("s", i, message(i))
        await asyncio.sleep(0.2)  # a worker that did not gather would have saved by now
        assert saves == []
        await asyncio.wait_for(engine.drain(), DEADLINE_S)  # a drain does not wait for it
        assert saves == [5]


async def test_a_summary_check_waits_for_the_sessions_stores_to_pause(
        memory: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(summary_service, "QUIET_SECONDS", 600.0)
    monkeypatch.setattr(summary_service, "QUIET_AT_MOST_SECONDS", 600.0)
    config = {**DETERMINISTIC, "consolidation": {"enabled": False},
              "summary": {"token_budget": 1000, "auto": True}}
    async with Engine.open(memory, config=config) as engine:
        for i in range(1, 12):  # crosses the 800-token trigger at message 8
            await engine.store("s", i, message(i))
        await asyncio.sleep(0.2)
        assert (await engine.summary_state("s")).epoch == 0  # still waiting for a pause
        await asyncio.wait_for(engine.drain(), DEADLINE_S)  # settles: no waiting for it
        state = await engine.summary_state("s")
        assert state.epoch >= 1 and state.text


async def test_a_summary_check_still_waiting_runs_at_close(
        memory: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """An agent that stores and exits gets its summary: closing is the pause."""
    monkeypatch.setattr(summary_service, "QUIET_SECONDS", 600.0)
    monkeypatch.setattr(summary_service, "QUIET_AT_MOST_SECONDS", 600.0)
    config = {**DETERMINISTIC, "consolidation": {"enabled": False},
              "summary": {"token_budget": 1000, "auto": True}}
    async with Engine.open(memory, config=config) as engine:
        for i in range(1, 12):
            await engine.store("s", i, message(i))
        assert (await engine.summary_state("s")).epoch == 0
    async with Engine.open(memory, config=config) as engine:
        assert (await engine.summary_state("s")).epoch >= 1


async def test_a_summary_check_runs_once_the_stores_pause(
        memory: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(summary_service, "QUIET_SECONDS", 0.05)
    config = {**DETERMINISTIC, "consolidation": {"enabled": False},
              "summary": {"token_budget": 1000, "auto": True}}
    async with Engine.open(memory, config=config) as engine:
        for i in range(1, 12):
            await engine.store("s", i, message(i))
        epochs: list[int] = []

        async def summarized() -> None:
            while not epochs or epochs[-1] == 0:
                epochs.append((await engine.summary_state("s")).epoch)
                await asyncio.sleep(0.02)

        await asyncio.wait_for(summarized(), DEADLINE_S)  # nothing asked for it but the pause


async def test_the_upkeep_copies_the_log_in_once_writes_pause(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(upkeep, "LOG_QUIET_SECONDS", 0.05)
    path = tmp_path / "memory.db"
    async with Engine.open(path, config=DETERMINISTIC) as engine:
        await engine.store_many([("s", i, message(i)) for i in range(1, 200)])
        await until(lambda: engine.upkeep.log_copies > 0, "the log copied in")
        # Copied: nothing is left in the log that the file does not hold.
        assert await engine.backend.checkpoint_log() == 0


async def test_writes_that_never_pause_still_have_the_log_copied_in(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(upkeep, "LOG_QUIET_SECONDS", 600.0)  # never quiet enough
    monkeypatch.setattr(upkeep, "LOG_BUSY_SECONDS", 0.05)
    async with Engine.open(tmp_path / "memory.db", config=DETERMINISTIC) as engine:
        sequence = 0
        while engine.upkeep.log_copies == 0:
            sequence += 1
            await engine.store("s", sequence, {"role": "user", "content": f"fact {sequence}"})
            assert sequence < 20_000, "the log was never copied in while writes went on"


async def test_the_log_is_copied_in_beside_a_write_that_holds_the_writer(
        tmp_path: Path) -> None:
    started, release = threading.Event(), threading.Event()

    def hold(conn: Any) -> bool:
        started.set()
        return release.wait(DEADLINE_S)

    async with Engine.open(tmp_path / "memory.db", config=DETERMINISTIC) as engine:
        await engine.store_many([("s", i, message(i)) for i in range(1, 50)])
        held = asyncio.ensure_future(engine.backend._db.write(hold))
        assert await asyncio.to_thread(started.wait, DEADLINE_S)
        try:
            assert await engine.backend.checkpoint_log() == 0
            assert not held.done(), "the copy waited for the writer's job"
        finally:
            release.set()
        assert await held
