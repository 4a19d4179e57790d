"""Four processes adding items to one Agents SDK session at once (a SQLite file, a
PostgreSQL database): every item is stored once, none is lost, and each writer's items keep
their order, in get_items and in the session's events alike."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from core import Engine
from core.integrations.openai_agents import WorkbenchSession
from tests.agents_support import ENGINE_CONFIG
from tests.writers_race import run_together

WRITERS = 4
STEPS = 20

WRITER = """
import asyncio, sys, time
from pathlib import Path
from core import Engine
from core.integrations.openai_agents import WorkbenchSession
from tests.agents_support import ENGINE_CONFIG

path, writer, steps, go = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4])

async def main():
    async with Engine.open(path, config=ENGINE_CONFIG) as engine:
        session = WorkbenchSession("shared", engine)
        deadline = time.monotonic() + 60
        while not go.exists():  # start together
            assert time.monotonic() < deadline, "no go signal"
            await asyncio.sleep(0.01)
        for step in range(steps):
            await session.add_items([
                {"role": "user", "content": f"w{writer}-{step}"},
                {"type": "function_call", "call_id": f"c{writer}-{step}", "name": "f",
                 "arguments": "{}"}])

asyncio.run(main())
"""


async def test_four_processes_adding_to_one_session_lose_and_duplicate_nothing(
        tmp_path: Path) -> None:
    await race(str(tmp_path / "memory.db"), tmp_path)


async def test_the_same_on_postgresql(tmp_path: Path, pg_url: str) -> None:
    await race(pg_url, tmp_path)


async def race(path: str, tmp_path: Path) -> None:
    """Four writer processes on ``path`` started together; then check what they stored."""
    await run_together(path, tmp_path, WRITER, WRITERS, STEPS, ENGINE_CONFIG)

    async with Engine.open(path, config=ENGINE_CONFIG) as engine:
        items: list[Any] = await WorkbenchSession("shared", engine).get_items()
        assert len(items) == WRITERS * STEPS * 2
        keys = [item.get("content") or item.get("call_id") for item in items]
        assert len(set(keys)) == len(keys)
        for n in range(WRITERS):
            own = [item for item in items if str(item.get("content") or item["call_id"])[1:]
                   .startswith(f"{n}-")]
            assert own == [part for step in range(STEPS) for part in (
                {"role": "user", "content": f"w{n}-{step}"},
                {"type": "function_call", "call_id": f"c{n}-{step}", "name": "f",
                 "arguments": "{}"})]
        for first, second in zip(items[::2], items[1::2], strict=True):  # one add, together
            assert second["call_id"] == "c" + first["content"][1:]
        records = await engine.recall("shared")
        assert [r.payload.get("content") for r in records[::2]] == [
            item["content"] for item in items[::2]]
