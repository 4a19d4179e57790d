"""What an agent gives or gets through MCP is bounded: content over the configured limit is a
one-line tool error, and ``list_memories`` answers a page, with the total and where the next
page starts."""

from __future__ import annotations

from pathlib import Path

from core import Engine
from tests.conftest import DETERMINISTIC
from workbench.mcp.server import call
from workbench.mcp.tools import MemoryTools

CONFIG = {**DETERMINISTIC, "consolidation": {"enabled": False}, "storage": {"max_content_kb": 4}}


async def test_content_over_the_limit_is_a_one_line_tool_error(tmp_path: Path) -> None:
    async with Engine.open(tmp_path / "m.db", config=CONFIG) as engine:
        tools = MemoryTools(engine, "alice")
        result, error = await call(tools, "save_memory", {"key": "k", "content": "x" * 10_000})
        assert result is None and error is not None and "\n" not in error
        assert error.startswith("save_memory: note content is 10,000 bytes, over the limit "
                                "of 4 KB")
        assert await engine.notes.list_memories(namespace="alice") == []


async def test_list_memories_answers_a_page(tmp_path: Path) -> None:
    async with Engine.open(tmp_path / "m.db", config=CONFIG) as engine:
        for i in range(5):
            await engine.notes.save_memory(f"k{i}", "v", namespace="alice")
        tools = MemoryTools(engine, "alice")
        first, _ = await call(tools, "list_memories", {"limit": 2})
        assert first == {"keys": ["k0", "k1"], "total": 5, "next_offset": 2}
        last, _ = await call(tools, "list_memories", {"limit": 2, "offset": 4})
        assert last == {"keys": ["k4"], "total": 5, "next_offset": None}
        whole, _ = await call(tools, "list_memories", {})
        assert whole == {"keys": [f"k{i}" for i in range(5)], "total": 5, "next_offset": None}
        _, error = await call(tools, "list_memories", {"limit": 100_000})
        assert error is not None and error.startswith("list_memories: 'limit'")
