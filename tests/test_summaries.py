"""Rolling summaries through the engine: trigger, condense, compare-and-swap, restore."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from core import Engine
from core.errors import InvalidInput, NotFound, ReadOnlyDatabase
from core.summary.plan import SUMMARY_PREFIX
from tests.conftest import DETERMINISTIC

ROOT = Path(__file__).resolve().parents[1]


def config(**summary: Any) -> dict[str, Any]:
    """The deterministic engine (token counts by estimate: ceil(chars / 4) + 4) with a small
    summary budget; no background consolidation."""
    return {**DETERMINISTIC, "summary": {"token_budget": 1000, "auto": False, **summary},
            "consolidation": {"enabled": False}}


def message(i: int, role: str = "user") -> dict[str, Any]:
    """~100 tokens (396 characters + 4 overhead): a fact worth keeping, then filler."""
    fact = f"Order {i} ships to Lisbon on May {i}."
    return {"role": role, "content": (fact + " " + "and so on, as we said before. " * 13)[:396]}


async def fill(engine: Engine, session: str, count: int, start: int = 1) -> None:
    for i in range(start, start + count):
        await engine.store(session, i, message(i, "user" if i % 2 else "assistant"))


async def test_under_the_trigger_nothing_is_written(memory: str) -> None:
    async with Engine.open(memory, config=config()) as engine:
        await fill(engine, "s", 7)  # 7 × 103 = 721 tokens: not above 800
        outcome = await engine.summarize("s")
        assert (outcome.triggered, outcome.applied, outcome.tokens_before) == (False, False, 721)
        assert "not above the trigger 800" in outcome.reason
        state = await engine.summary_state("s")
        assert (state.text, state.upper_sequence, state.epoch) == ("", 0, 0)


async def test_a_summary_condenses_the_oldest_and_restore_injects_it(memory: str) -> None:
    async with Engine.open(memory, config=config()) as engine:
        await fill(engine, "s", 9)  # 927 tokens > 800
        outcome = await engine.summarize("s")
        assert outcome.triggered and outcome.applied, outcome.reason
        assert outcome.tokens_after <= 500 and outcome.epoch == 1
        state = await engine.summary_state("s")
        assert state.upper_sequence == outcome.upper_sequence == outcome.condensed
        assert state.text.startswith("Recent condensed turns:\n- user #1: Order 1 ships")
        assert state.summarizer == "extractive"
        # The history itself is untouched; restore replays summary + what came after it.
        assert [r.sequence for r in await engine.recall("s")] == list(range(1, 10))
        restored = await engine.restore("s", 1000)
        assert restored.messages[0] == {"role": "system", "content": SUMMARY_PREFIX + state.text}
        assert restored.sequences == [None, *range(state.upper_sequence + 1, 10)]
        assert restored.summarized_through == state.upper_sequence
        assert restored.tokens_used == outcome.tokens_after and restored.dropped == 0


async def test_summaries_append_and_the_next_one_starts_after_the_last(memory: str) -> None:
    async with Engine.open(memory, config=config()) as engine:
        await fill(engine, "s", 9)
        first = await engine.summarize("s")
        await fill(engine, "s", 6, start=10)
        second = await engine.summarize("s")
        assert second.applied and second.epoch == 2, second.reason
        state = await engine.summary_state("s")
        assert state.text.count("Recent condensed turns:") == 2
        assert f"#{first.upper_sequence + 1}:" in state.text.split("\n\n")[1]
        assert (await engine.restore("s", 1000)).tokens_used <= 500


async def test_write_summary_state_is_compare_and_swap(memory: str) -> None:
    async with Engine.open(memory, config=config()) as engine:
        await fill(engine, "s", 3)
        assert await engine.write_summary_state("s", "one", 2, expected_epoch=0)
        assert not await engine.write_summary_state("s", "stale", 3, expected_epoch=0)
        state = await engine.summary_state("s")
        assert (state.text, state.upper_sequence, state.epoch) == ("one", 2, 1)
        # Two writers holding the same epoch on one engine: exactly one wins.
        results = await asyncio.gather(*(engine.write_summary_state("s", f"w{i}", 3, 1)
                                         for i in range(8)))
        assert sorted(results) == [False] * 7 + [True]
        assert (await engine.summary_state("s")).epoch == 2
        with pytest.raises(InvalidInput, match="outside the session's history"):
            await engine.write_summary_state("s", "x", 4, expected_epoch=2)
        with pytest.raises(InvalidInput, match="expected_epoch"):
            await engine.write_summary_state("s", "x", 1, expected_epoch=-1)
        with pytest.raises(NotFound):
            await engine.write_summary_state("nobody", "x", 0, expected_epoch=0)


RACER = textwrap.dedent("""
    import asyncio, json, sys
    from core import Engine

    async def main(path, name, config):
        async with Engine.open(path, config=config) as engine:
            epoch = (await engine.summary_state("s")).epoch
            print("read", epoch, flush=True)
            sys.stdin.readline()  # both have read the same epoch: go
            won = await engine.write_summary_state("s", "written by " + name, 2, epoch)
            print("won" if won else "lost", flush=True)

    asyncio.run(main(sys.argv[1], sys.argv[2], json.loads(sys.argv[3])))
""")


async def test_two_processes_race_one_epoch_and_exactly_one_wins(memory: str) -> None:
    async with Engine.open(memory, config=config()) as engine:
        await fill(engine, "s", 3)
    for _ in range(3):  # several rounds: each starts from the epoch the last one left
        racers = [await asyncio.create_subprocess_exec(
            sys.executable, "-c", RACER, str(memory), name, json.dumps(config()),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            cwd=str(ROOT)) for name in ("a", "b")]
        epochs = {(await racer.stdout.readline()).split()[1] for racer in racers}
        assert len(epochs) == 1
        for racer in racers:
            racer.stdin.write(b"go\n")
            await racer.stdin.drain()
        answers = []
        for racer in racers:
            out, err = await racer.communicate()
            assert racer.returncode == 0, err.decode()
            answers.append(out.decode().strip())
        assert sorted(answers) == ["lost", "won"]
        winner = "ab"[answers.index("won")]
        async with Engine.open(memory, config=config()) as engine:
            state = await engine.summary_state("s")
            assert state.text == f"written by {winner}"
            assert state.epoch == int(epochs.pop()) + 1


async def test_a_slow_summary_loses_to_a_newer_one_and_is_discarded(memory: str) -> None:
    async with Engine.open(memory, config=config()) as engine:
        await fill(engine, "s", 9)
        summarize = engine.summaries.summarizer.summarize

        def slow(turns, max_tokens):  # another writer lands while this one condenses
            asyncio.run_coroutine_threadsafe(
                engine.write_summary_state("s", "newer", 1, 0), loop).result()
            return summarize(turns, max_tokens)

        loop = asyncio.get_running_loop()
        engine.summaries.summarizer.summarize = slow
        outcome = await engine.summarize("s")
        assert outcome.triggered and not outcome.applied
        assert "stale" in outcome.reason
        state = await engine.summary_state("s")
        assert (state.text, state.epoch) == ("newer", 1)


async def test_stores_trigger_a_background_check(memory: str) -> None:
    async with Engine.open(memory, config=config(auto=True)) as engine:
        await fill(engine, "s", 7)
        await engine.drain()
        assert (await engine.summary_state("s")).epoch == 0
        await fill(engine, "s", 5, start=8)  # crosses 800 at message 8
        await engine.drain()
        state = await engine.summary_state("s")
        assert state.epoch >= 1 and state.text
        assert (await engine.restore("s", 1000)).tokens_used <= 800


async def test_restore_keeps_marker_and_summary_first_and_fits_the_budget(memory: str) -> None:
    async with Engine.open(memory, config=config()) as engine:
        await fill(engine, "s", 9)
        await engine.summarize("s")
        state = await engine.summary_state("s")
        summary_cost = engine.tokens.count_message(
            {"role": "system", "content": SUMMARY_PREFIX + state.text})
        restored = await engine.restore("s", summary_cost + 103)  # the summary + one message
        assert restored.sequences == [None, 9]
        assert restored.tokens_used == summary_cost + 103
        assert restored.dropped == 9 - 1 - state.upper_sequence
        # A budget the summary does not fit in gets the newest messages that do.
        small = await engine.restore("s", summary_cost - 1)
        assert None not in small.sequences and small.sequences[-1] == 9
        empty = await engine.restore("s", 0)
        assert (empty.messages, empty.tokens_used) == ([], 0)
        assert (await engine.restore("unknown", 100)).messages == []


async def test_bad_budgets_and_read_only_files_are_refused(memory: str) -> None:
    async with Engine.open(memory, config=config()) as engine:
        await fill(engine, "s", 2)
        for budget in (0, -5, True, 2.5):
            with pytest.raises(InvalidInput):
                await engine.summarize("s", budget)
        with pytest.raises(NotFound):
            await engine.summarize("nobody")
    async with Engine.open(memory, config=config(), read_only=True) as engine:
        with pytest.raises(ReadOnlyDatabase):
            await engine.summarize("s")


async def test_a_real_tokenizer_counts_and_the_summary_still_lands_under_target(
        memory: str, tiny_model_dir: Path) -> None:
    model = {"embedding": {"backend": "model2vec", "model": str(tiny_model_dir)},
             "summary": {"token_budget": 600, "auto": False},
             "consolidation": {"enabled": False}}
    async with Engine.open(memory, config=model) as engine:
        assert engine.tokens.exact
        await fill(engine, "s", 12)
        outcome = await engine.summarize("s")
        assert outcome.applied, outcome.reason
        restored = await engine.restore("s", 600)
        assert restored.tokens_used == outcome.tokens_after <= 300
        assert restored.sequences[0] is None


def test_a_summary_reads_back_as_the_turns_it_stands_for() -> None:
    from core.summary.service import summary_turns

    text = ("Recent condensed turns:\n- user #3: Lisbon on May 3.\n- assistant #4: ok\n\n"
            "Recent condensed turns:\n- tool #9: {\"a\": 1}\nfree text from a model")
    assert [(t.sequence, t.role, t.text) for t in summary_turns(text, 9)] == [
        (3, "user", "Lisbon on May 3."), (4, "assistant", "ok"), (9, "tool", '{"a": 1}'),
        (9, "summary", "free text from a model")]
