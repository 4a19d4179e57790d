"""WorkbenchSession on PostgreSQL: parity with the SDK's SQLiteSession on generated
operations (byte-identical JSON), and concurrent writers of one session taking turns."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from agents.memory import SQLiteSession

from core import Engine
from core.integrations.openai_agents import WorkbenchSession
from tests.agents_support import ENGINE_CONFIG, dumped, run_parity


async def test_parity_with_the_sdks_sqlite_session_on_postgresql(pg_url: str) -> None:
    async with Engine.open(pg_url, config=ENGINE_CONFIG) as engine:
        reference = {sid: SQLiteSession(sid) for sid in ("chat-a", "b")}
        ours = {sid: WorkbenchSession(sid, engine) for sid in reference}
        counts = await run_parity(reference, ours, 5, 600)
        print(counts)
        assert min(counts.values()) > 0


async def test_concurrent_adds_and_pops_of_one_session_take_turns(pg_url: str) -> None:
    async with Engine.open(pg_url, config=ENGINE_CONFIG) as engine:
        session = WorkbenchSession("busy", engine)

        async def writer(n: int) -> None:
            for i in range(15):
                await session.add_items([{"role": "user", "content": f"w{n}-{i}-{k}"}
                                         for k in range(2)])

        await asyncio.gather(*(writer(n) for n in range(4)))
        items: list[Any] = await session.get_items()
        assert sorted(item["content"] for item in items) == sorted(
            f"w{n}-{i}-{k}" for n in range(4) for i in range(15) for k in range(2))
        for n in range(4):  # each writer's items in its own order
            own = [item["content"] for item in items if item["content"].startswith(f"w{n}-")]
            assert own == [f"w{n}-{i}-{k}" for i in range(15) for k in range(2)]
        popped = await asyncio.gather(*(session.pop_item() for _ in range(30)))
        assert len({json.dumps(item) for item in popped}) == 30
        assert dumped(sorted(popped, key=json.dumps)) == dumped(
            sorted(items[-30:], key=json.dumps))
        assert dumped(await session.get_items()) == dumped(items[:-30])
