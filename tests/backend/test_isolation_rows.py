"""The tests of tests/test_isolation.py that read or stage the memory's tables directly (the agent
a session row records)."""

from __future__ import annotations

from pathlib import Path

import pytest

from core import Engine
from core.errors import InvalidInput
from tests.conftest import DETERMINISTIC, rows


async def test_an_empty_namespace_never_writes_as_the_configured_agent(db_path: Path) -> None:
    """Regression: ``write_scratchpad(..., namespace="")`` bound the write to the configured
    agent (an empty namespace read as "none given") and overwrote that agent's scratchpad."""
    config = {**DETERMINISTIC, "agent": "victim"}
    async with Engine.open(db_path, config=config) as engine:
        await engine.write_scratchpad("chat", ["victim's plan"], namespace="victim")
        for session in ("chat", "new-session"):
            with pytest.raises(InvalidInput, match="namespace must not be empty"):
                await engine.write_scratchpad(session, ["mallory"], namespace="")
        assert (await engine.read_scratchpad("chat")).items == ["victim's plan"]
    assert rows(db_path, "SELECT session_id, agent_identity FROM sessions") == [
        ("chat", "victim")]
