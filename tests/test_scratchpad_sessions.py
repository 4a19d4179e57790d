"""The sessions that have a scratchpad, for a picker: newest write first, cleared ones gone."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from core import Engine, clock
from core.errors import InvalidInput
from tests.conftest import DETERMINISTIC


async def test_sessions_with_a_scratchpad_newest_first(memory: str) -> None:
    async with Engine.open(memory, config=DETERMINISTIC) as engine:
        assert await engine.scratchpad_sessions() == []
        await engine.append("no-pad", {"role": "user", "content": "hello"})
        for day, session in ((1, "a"), (3, "b"), (2, "c")):
            with clock.frozen(datetime(2026, 1, day, tzinfo=UTC)):
                await engine.write_scratchpad(session, [f"item of {session}"])
        found = await engine.scratchpad_sessions()
        assert [state.session_id for state in found] == ["b", "c", "a"]
        assert found[0] == await engine.read_scratchpad("b")
        assert [s.session_id for s in await engine.scratchpad_sessions(limit=1)] == ["b"]
        await engine.clear_scratchpad("b")
        await engine.write_scratchpad("c", [])
        assert [s.session_id for s in await engine.scratchpad_sessions()] == ["c", "a"]
        with pytest.raises(InvalidInput, match="limit"):
            await engine.scratchpad_sessions(limit=0)
