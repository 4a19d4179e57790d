"""The tests of tests/test_summaries.py that read or stage the memory's tables directly (history
left untouched)."""

from __future__ import annotations

from core import Engine
from tests.conftest import rows
from tests.test_summaries import config, fill


async def test_a_failing_endpoint_leaves_history_untouched_and_records_why(
        memory: str, unused_port: int) -> None:
    http = config(backend="http", base_url=f"http://127.0.0.1:{unused_port}/v1", model="m",
                  timeout_secs=2)
    async with Engine.open(memory, config=http) as engine:
        await fill(engine, "s", 9)
        before = rows(memory, "SELECT sequence, payload_json FROM conversation_events")
        outcome = await engine.summarize("s")
        assert outcome.triggered and not outcome.applied and outcome.error
        assert "127.0.0.1" in outcome.error
        state = await engine.summary_state("s")
        assert (state.text, state.epoch) == ("", 0)
        assert state.last_error == outcome.error
        assert rows(memory, "SELECT sequence, payload_json FROM conversation_events") == before
        restored = await engine.restore("s", 2000)
        assert restored.sequences == list(range(1, 10))
