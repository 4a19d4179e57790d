"""Four processes putting checkpoints of one thread into one memory at once (a SQLite file,
a PostgreSQL database): every message is stored once, none is lost, and each writer's
messages keep their order."""

from __future__ import annotations

from pathlib import Path

from core import Engine
from tests.langgraph_support import ENGINE_CONFIG
from tests.writers_race import run_together

WRITERS = 4
STEPS = 20

WRITER = """
import asyncio, sys, time
from pathlib import Path
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.base.id import uuid6
from core import Engine
from core.integrations.langgraph import WorkbenchSaver
from tests.langgraph_support import ENGINE_CONFIG

path, writer, steps, go = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4])

async def main():
    async with Engine.open(path, config=ENGINE_CONFIG) as engine:
        saver = WorkbenchSaver(engine)
        deadline = time.monotonic() + 60
        while not go.exists():  # start together
            assert time.monotonic() < deadline, "no go signal"
            await asyncio.sleep(0.01)
        config = {"configurable": {"thread_id": "shared", "checkpoint_ns": ""}}
        messages = [HumanMessage("the shared opening", id="opening")]
        for step in range(steps):
            cls = HumanMessage if step % 2 == 0 else AIMessage
            messages.append(cls(f"writer {writer} step {step}", id=f"w{writer}-{step}"))
            checkpoint = empty_checkpoint()
            checkpoint["id"] = str(uuid6(clock_seq=writer * 1000 + step))
            checkpoint["channel_values"] = {"messages": list(messages)}
            config = await saver.aput(config, checkpoint, {"source": "loop", "step": step,
                                                           "writer": writer}, {})
            await saver.aput_writes(config, [("messages", f"w{writer}-{step}")],
                                    f"task-{writer}-{step}")

asyncio.run(main())
"""


async def test_four_processes_writing_one_thread_lose_and_duplicate_nothing(
        tmp_path: Path) -> None:
    await race(str(tmp_path / "memory.db"), tmp_path)


async def test_the_same_on_postgresql(tmp_path: Path, pg_url: str) -> None:
    await race(pg_url, tmp_path)


async def race(path: str, tmp_path: Path) -> None:
    """Four writer processes on ``path`` started together; then check what they stored."""
    await run_together(path, tmp_path, WRITER, WRITERS, STEPS, ENGINE_CONFIG)

    async with Engine.open(path, config=ENGINE_CONFIG) as engine:
        records = await engine.recall("shared")
        ids = [r.payload["metadata"]["langgraph_id"] for r in records]
        expected = {"opening"} | {f"w{n}-{s}" for n in range(WRITERS) for s in range(STEPS)}
        assert len(ids) == len(set(ids)) == len(expected)
        assert set(ids) == expected
        for n in range(WRITERS):
            own = [i for i in ids if i.startswith(f"w{n}-")]
            assert own == [f"w{n}-{s}" for s in range(STEPS)]
        assert await engine.backend.removed_sequences("shared") == []
        counts = {table: rows for table, rows in [
            (t, await engine.backend.count_rows(t))
            for t in ("langgraph_checkpoints", "langgraph_writes", "framework_items")]}
        assert counts == {"langgraph_checkpoints": WRITERS * STEPS,
                          "langgraph_writes": WRITERS * STEPS,
                          "framework_items": len(expected)}
        assert records[0].payload["content"] == "the shared opening"
