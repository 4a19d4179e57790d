"""The reader pool of a SQLite memory opens its lanes as reads overlap, never more than
``reader_pool_size``: a command that reads one thing at a time keeps one reader."""

from __future__ import annotations

import asyncio
import logging
import threading
from pathlib import Path
from typing import Any

import pytest

from core.storage.sqlite import connection
from core.storage.sqlite.connection import Database, transaction


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
