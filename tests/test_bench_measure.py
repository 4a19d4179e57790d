"""What the benchmarks measure with: waiting for a quiet process before a timed block."""

from __future__ import annotations

import threading
import time

from workbench.bench.measure import wait_until_quiet


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
