"""What a watching front end relies on: a model loaded after open, the pulse, the clock."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest

from core import Engine, clock
from core.errors import DimensionMismatch
from core.summary.summarizers import Turn
from tests.conftest import DETERMINISTIC


async def test_a_deferred_model_lets_reads_run_first_and_writes_wait_for_it(
        new_memory: Callable[[str], str], tiny_model_dir: Path) -> None:
    async with Engine.open(new_memory("memory"), config=DETERMINISTIC) as engine:
        await engine.append("s1", {"role": "user", "content": "the dog went hiking"})
    config = {"embedding": {"backend": "model2vec", "model": str(tiny_model_dir)}}
    db2 = new_memory("other")
    async with Engine.open(db2, config=config, defer_model=True) as engine:
        assert not engine.model_loaded
        assert engine.embedder.name.endswith("(loading)")
        assert await engine.list_sessions() == []          # reads need no model
        result = await engine.append("s1", {"role": "user", "content": "a bird by the lake"})
        assert result.sequence == 1                          # the write waited for the model
        assert engine.model_loaded and engine.embedder.dimension > 0
        await engine.drain()
        pulse = await engine.pulse()
        assert (pulse.backlog, pulse.failed, pulse.model_loaded) == (0, 0, True)
        hits = await engine.hybrid_query(session_id="s1", query="bird lake")
        assert hits and hits[0].vector_score > 0


async def test_the_services_count_with_the_model_a_deferred_load_brings(
        memory: str, tiny_model_dir: Path) -> None:
    """The services are built before a deferred model loads: none may keep the placeholder's
    estimate (four characters a token) once the model's tokenizer is there."""
    config = {"embedding": {"backend": "model2vec", "model": str(tiny_model_dir)},
              "consolidation": {"enabled": False}}
    async with Engine.open(memory, config=config, defer_model=True) as engine:
        assert not engine.tokens.exact
        await engine.append("s1", {"role": "user", "content": "a bird by the lake"})
        assert engine.tokens.exact
        restored = await engine.restore("s1", 1000)
        assert restored.token_counting == engine.tokens.description
        # One-letter words: the estimate counts half a token each, the tokenizer one.
        turns = [Turn(n, "user", " ".join("abcdefghij")) for n in range(1, 7)]
        block = engine.summaries.summarizer.summarize(turns, 12)
        assert 0 < engine.tokens.count(block) <= 12


async def test_a_deferred_model_the_file_refuses_raises_from_the_calls_that_need_it(
        memory: str, tiny_model_dir: Path) -> None:
    async with Engine.open(memory, config=DETERMINISTIC) as engine:   # 64 dimensions
        await engine.append("s1", {"role": "user", "content": "kept"})
        await engine.drain()
    config = {"embedding": {"backend": "model2vec", "model": str(tiny_model_dir)}}
    async with Engine.open(memory, config=config, defer_model=True) as engine:
        assert [s.session_id for s in await engine.list_sessions()] == ["s1"]
        with pytest.raises(DimensionMismatch):
            await engine.model_ready()
        with pytest.raises(DimensionMismatch):
            await engine.append("s1", {"role": "user", "content": "refused"})
        assert not engine.model_loaded
        assert len(await engine.recall("s1")) == 1


async def test_pulse_moves_when_another_process_commits(memory: str) -> None:
    # No embedding worker here: its commits would move the counter too.
    async with Engine.open(memory, config=DETERMINISTIC, start_worker=False) as engine:
        await engine.append("s1", {"role": "user", "content": "first"})
        before = await engine.pulse()
        assert before.data_version == (await engine.pulse()).data_version  # no commit, no move
        script = ("import asyncio, sys\nfrom core import Engine\n"
                  "async def main():\n"
                  f"    async with Engine.open(sys.argv[1], config={DETERMINISTIC!r}) as e:\n"
                  "        await e.append('s2', {'role': 'user', 'content': 'from the agent'})\n"
                  "asyncio.run(main())\n")
        subprocess.run([sys.executable, "-c", script, str(memory)], check=True, timeout=60)
        after = await engine.pulse()
        assert after.data_version != before.data_version
        assert {s.session_id for s in await engine.list_sessions()} == {"s1", "s2"}


async def test_pulse_counts_the_backlog_without_the_worker(memory: str) -> None:
    async with Engine.open(memory, config=DETERMINISTIC, start_worker=False) as engine:
        await engine.append("s1", {"role": "user", "content": "one chunk waits"})
        pulse = await engine.pulse()
        assert pulse.backlog == 1 and pulse.failed == 0


async def test_a_frozen_clock_stamps_what_the_engine_writes(memory: str) -> None:
    moment = datetime(2026, 3, 14, 9, 26, 53, 589000, tzinfo=UTC)
    with clock.frozen(moment):
        async with Engine.open(memory, config=DETERMINISTIC) as engine:
            await engine.append("s1", {"role": "user", "content": "pi day"})
            (record,) = await engine.recall("s1")
    assert record.created_at == "2026-03-14T09:26:53.589Z"
    assert clock.now() != moment
