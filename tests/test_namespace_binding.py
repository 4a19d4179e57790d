"""Namespace-bound engine calls (what the MCP server uses) and oxydra's note tools."""

from __future__ import annotations

import pytest

from core import Engine
from core.errors import InvalidInput, OutOfNamespace
from tests.conftest import DETERMINISTIC


async def test_the_bound_write_checks_the_owner_inside_its_transaction(
        memory: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Even when a pre-check would pass (bob makes the session in between), the write
    transaction itself refuses: nothing of alice's lands in bob's session."""
    async with Engine.open(memory, config=DETERMINISTIC) as engine:
        await engine.append("race", {"role": "user", "content": "bob first"}, namespace="bob")

        async def no_session(session_id: str) -> None:
            return None

        monkeypatch.setattr(engine.backend, "session_agent", no_session)
        with pytest.raises(OutOfNamespace):
            await engine.append("race", {"role": "user", "content": "alice"},
                                namespace="alice")
        with pytest.raises(OutOfNamespace):
            await engine.write_scratchpad("race", ["alice"], namespace="alice")
        # clear_scratchpad is bound in its UPDATE: nothing of bob's is cleared.
        await engine.write_scratchpad("race", ["bob's"], namespace="bob")
        assert await engine.clear_scratchpad("race", namespace="alice") is False
        assert (await engine.read_scratchpad("race")).items == ["bob's"]
        assert [r.payload["content"] for r in await engine.recall("race")] == ["bob first"]


async def test_memory_save_names_what_has_no_words(memory: str) -> None:
    async with Engine.open(memory, config=DETERMINISTIC) as engine:
        with pytest.raises(InvalidInput):
            await engine.notes.memory_save("   ", namespace="alice")
        note = await engine.notes.memory_save("x" * 300, namespace="alice")
        assert note.name == f"{'x' * 48} ({note.note_id[5:13]})"
