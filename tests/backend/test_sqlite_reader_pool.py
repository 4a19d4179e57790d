"""The reader pool of a SQLite memory opens its lanes as reads overlap, never more than
``reader_pool_size``: a command that reads one thing at a time keeps one reader."""

from __future__ import annotations

import asyncio
import logging
import threading
from pathlib import Path
from typing import Any

import pytest

from core import Engine
from core.storage.sqlite import connection
from core.storage.sqlite.connection import Database, transaction
from core.tasks import in_upkeep, mark_as_upkeep
from tests.conftest import DETERMINISTIC


async def _opened(tmp_path: Path, size: int) -> Database:
    db = Database(tmp_path / "r.db", read_only=False, reader_pool_size=size,
                  busy_timeout_ms=1000)
    db.open_writer()

    def setup(conn: Any) -> None:
        with transaction(conn):
            conn.execute("CREATE TABLE t(x)")
            conn.execute("INSERT INTO t VALUES (1)")

    await db.write(setup)
    db.open_readers()
    return db


def _count(conn: Any) -> int:
    return int(conn.execute("SELECT count(*) FROM t").fetchone()[0])


async def test_reads_one_at_a_time_keep_one_reader(tmp_path: Path) -> None:
    db = await _opened(tmp_path, 4)
    try:
        for _ in range(10):
            assert await db.read(_count) == 1
        assert len(db._readers) == 1
    finally:
        db.close()


async def test_overlapping_reads_open_readers_up_to_the_pool_size(tmp_path: Path) -> None:
    db = await _opened(tmp_path, 3)
    release = threading.Event()
    inside: list[str] = []
    lock = threading.Lock()

    def held(conn: Any) -> int:
        with lock:
            inside.append(threading.current_thread().name)
        assert release.wait(10)
        return _count(conn)

    try:
        reads = [asyncio.ensure_future(db.read(held)) for _ in range(7)]
        for _ in range(500):  # until the pool is full: three reads in, four waiting
            await asyncio.sleep(0.01)
            if len(inside) == 3:
                break
        assert len(inside) == 3 and len(set(inside)) == 3
        assert not any(read.done() for read in reads)
        release.set()
        assert await asyncio.gather(*reads) == [1] * 7
        assert len(db._readers) == 3
        assert len(set(inside)) == 3  # the four that waited ran on the same three lanes
        lanes = list(db._readers)
    finally:
        release.set()
        db.close()
    assert not any(lane._thread.is_alive() for lane in lanes)


async def test_a_reader_that_does_not_open_leaves_the_reads_to_the_open_ones(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    db = await _opened(tmp_path, 3)
    release = threading.Event()

    def held(conn: Any) -> int:
        assert release.wait(10)
        return _count(conn)

    def refused(*args: Any, **kwargs: Any) -> Any:
        raise OSError("too many open files")

    monkeypatch.setattr(connection, "open_connection", refused)
    try:
        with caplog.at_level(logging.WARNING, logger=connection.__name__):
            first = asyncio.ensure_future(db.read(held))
            await asyncio.sleep(0.05)
            second = asyncio.ensure_future(db.read(_count))
            await asyncio.sleep(0.05)
            assert not second.done()  # it waits for the open reader, not failing
            release.set()
            assert await asyncio.gather(first, second) == [1, 1]
        assert len(db._readers) == 1
        assert "another reader connection did not open (too many open files)" in caplog.text
    finally:
        release.set()
        db.close()


async def test_an_upkeep_read_waits_for_an_idle_reader_and_opens_none(
        tmp_path: Path) -> None:
    db = await _opened(tmp_path, 3)
    release = threading.Event()
    started = threading.Event()

    def held(conn: Any) -> int:
        started.set()
        assert release.wait(10)
        return _count(conn)

    async def upkeep_read() -> int:
        mark_as_upkeep()
        return await db.read(_count)

    try:
        first = asyncio.ensure_future(db.read(held))
        assert await asyncio.to_thread(started.wait, 10)
        upkeep = asyncio.ensure_future(upkeep_read())
        for _ in range(20):
            await asyncio.sleep(0)
        assert not upkeep.done()  # it waits for the one reader, and opens none:
        assert db._opening == 0 and len(db._readers) == 1
        # A read that is not upkeep's still opens a reader beside the held one.
        assert await db.read(_count) == 1
        assert len(db._readers) == 2
        release.set()
        assert await asyncio.gather(first, upkeep) == [1, 1]
        assert len(db._readers) == 2
    finally:
        release.set()
        db.close()


async def test_the_embedding_worker_and_consolidation_read_as_upkeep(
        db_path: Path) -> None:
    """Their reads right after an open do not open readers beside the first query."""
    async with Engine.open(db_path, config=DETERMINISTIC) as engine:
        backend: Any = engine.backend
        seen: dict[str, list[bool]] = {"pending_chunks": [], "read_meta": []}

        def marking(read: Any, calls: list[bool]) -> Any:
            def marked(*args: Any) -> Any:
                calls.append(in_upkeep())
                return read(*args)
            return marked

        for name, calls in seen.items():
            setattr(backend, name, marking(getattr(backend, name), calls))
        await engine.worker.stop()  # started again, reading through the wrapped methods
        engine.worker.start()
        await engine.store("s", 0, {"role": "user", "content": "a note to embed"})
        await engine.drain(10)
        await engine.compactor.stop()
        engine.compactor.start()
        for _ in range(200):
            if seen["read_meta"]:
                break
            await asyncio.sleep(0.01)
        assert seen["pending_chunks"] and all(seen["pending_chunks"])
        assert seen["read_meta"] and all(seen["read_meta"])
        assert not in_upkeep()  # the caller's own task is not marked
