"""What the benchmarks measure with: waiting for a quiet process before a timed block, and
the file read into the OS cache before it."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from workbench.bench.measure import wait_until_quiet, warm_file_cache


def _spin(stop: threading.Event, seconds: float) -> None:
    ends = time.monotonic() + seconds
    while not stop.is_set() and time.monotonic() < ends:
        pass


async def test_a_block_waits_for_a_busy_thread_to_finish() -> None:
    stop = threading.Event()
    busy = threading.Thread(target=_spin, args=(stop, 0.4))
    busy.start()
    try:
        await wait_until_quiet(window=0.05)
        assert not busy.is_alive()
    finally:
        stop.set()
        busy.join()


async def test_a_thread_that_never_rests_is_waited_for_only_so_long() -> None:
    stop = threading.Event()
    busy = threading.Thread(target=_spin, args=(stop, 60.0))
    busy.start()
    try:
        waited = await wait_until_quiet(window=0.05, longest=0.3)
        assert busy.is_alive() and waited >= 0.3
    finally:
        stop.set()
        busy.join()


def test_warm_file_cache_reads_the_file_and_its_wal_whole(tmp_path: Path) -> None:
    store = tmp_path / "store.db"
    store.write_bytes(b"x" * 5_000_000)
    Path(f"{store}-wal").write_bytes(b"y" * 12_345)
    warmed = warm_file_cache(store)
    assert warmed is not None
    assert warmed[0] == 5_012_345 and warmed[1] >= 0


def test_warm_file_cache_reads_nothing_that_is_not_a_file(tmp_path: Path) -> None:
    assert warm_file_cache(tmp_path / "missing.db") is None
    assert warm_file_cache(tmp_path) is None
