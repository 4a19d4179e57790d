"""A write lock another process holds past ``busy_timeout_ms`` is a clear refusal: the
engine, a notes write, an MCP tool call and a CLI command each say the memory is busy and
write nothing, then succeed once the lock is let go; compaction under other writers tries
again by itself.

The other process is a raw connection holding ``BEGIN IMMEDIATE``, opened by the same SQLite
library the engine uses: to it, another connection of this process is as foreign as one of
another process. (A second SQLite library in the process would not see the engine's locks:
POSIX locks belong to the process, and each library keeps its own table of them.)
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from core import Engine
from core.errors import MemoryBusy
from core.storage.sqlite.connection import sqlite_module
from tests.test_summaries import config as summary_config
from tests.test_summaries import fill, message

BUSY_MS = 150
BUSY = f"the memory is busy (another process holds the write lock for {BUSY_MS / 1000:g} s)"
CONFIG: dict[str, Any] = {"embedding": {"backend": "deterministic", "fallback_dimensions": 64},
                          "storage": {"busy_timeout_ms": BUSY_MS},
                          "consolidation": {"enabled": False}}
ROOT = Path(__file__).resolve().parents[1]


class WriteLock:
    """Another writer's lock on a memory file: taken at once, held until released."""

    def __init__(self, path: Path) -> None:
        self._conn: Any = sqlite_module().connect(str(path), isolation_level=None, timeout=10)
        self._conn.execute("BEGIN IMMEDIATE")

    def release(self) -> None:
        """Let go (again: a no-op)."""
        if self._conn is not None:
            self._conn.execute("ROLLBACK")
            self._conn.close()
            self._conn = None


@contextlib.contextmanager
def write_lock(path: Path) -> Iterator[WriteLock]:
    lock = WriteLock(path)
    try:
        yield lock
    finally:
        lock.release()


async def test_opening_a_file_while_another_process_writes_it_is_a_busy_refusal(
        db_path: Path) -> None:
    async with Engine.open(db_path, config=CONFIG, start_worker=False) as engine:
        await engine.store("s", 1, {"role": "user", "content": "first"})
    # The schema version is read without the lock; the vector index's check writes.
    with write_lock(db_path), pytest.raises(MemoryBusy, match="holds the write lock"):
        async with Engine.open(db_path, config=CONFIG, start_worker=False):
            pass


@asynccontextmanager
async def mcp_session(db: Path, tmp_path: Path) -> AsyncIterator[Any]:
    pytest.importorskip("mcp")
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    settings = tmp_path / "mcp.toml"
    settings.write_text('[embedding]\nbackend = "deterministic"\nfallback_dimensions = 64\n'
                        f'[storage]\nbusy_timeout_ms = {BUSY_MS}\n'
                        '[consolidation]\nenabled = false\n')
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "workbench.cli", "mcp", "--db", str(db), "--namespace", "agent"],
        env={"WORKBENCH_CONFIG": str(settings), "PYTHONPATH": str(ROOT)}, cwd=tmp_path)
    with (tmp_path / "server-stderr.txt").open("w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), \
                ClientSession(read, write) as session:
            await session.initialize()
            yield session


async def test_compaction_tries_again_when_a_message_arrives_meanwhile(memory: str) -> None:
    async with Engine.open(memory, config=summary_config()) as engine:
        await fill(engine, "s", 4)
        summarize = engine.summaries.summarizer.summarize
        calls = 0

        async def store_fifth() -> None:
            await engine.store("s", 5, message(5))

        loop = asyncio.get_running_loop()

        def interrupted_once(turns: Any, max_tokens: int) -> str:
            nonlocal calls
            calls += 1
            if calls == 1:  # another writer appends between the read and the commit
                asyncio.run_coroutine_threadsafe(store_fifth(), loop).result()
            return summarize(turns, max_tokens)

        engine.summaries.summarizer.summarize = interrupted_once  # type: ignore[method-assign]
        result = await engine.compact("s")
        assert calls == 2
        assert (result.first_sequence, result.last_sequence, result.compacted) == (1, 5, 5)
        assert len(await engine.list_archives()) == 1


async def test_compaction_tries_again_when_the_file_was_busy(db_path: Path) -> None:
    async with Engine.open(db_path, config={**summary_config(), "storage": {
            "busy_timeout_ms": BUSY_MS}}, start_worker=False) as engine:
        await fill(engine, "s", 4)
        backend: Any = engine.backend
        commit = backend.commit_compaction
        lock = WriteLock(db_path)
        attempts: list[str] = []

        async def commit_then_release(*args: Any) -> Any:
            try:
                return await commit(*args)
            except MemoryBusy:
                attempts.append("busy")
                lock.release()  # the other writer lets go after the first attempt
                raise

        backend.commit_compaction = commit_then_release
        try:
            result = await engine.compact("s")
        finally:
            lock.release()
        assert attempts == ["busy"]
        assert result.compacted == 4 and len(await engine.list_archives()) == 1
