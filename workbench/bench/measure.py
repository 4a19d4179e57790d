"""What several benchmarks measure the same way: percentiles and peak memory."""

from __future__ import annotations

import asyncio
import gc
import resource
import time
from pathlib import Path


def percentile(values: list[float], fraction: float) -> float:
    """The value at ``fraction`` (0.5: the median) of ``values``, nearest rank."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


def peak_rss_mb(who: int = resource.RUSAGE_SELF) -> float:
    """Peak resident set size in MiB (Linux reports KiB): this process, or with
    ``RUSAGE_CHILDREN`` the largest finished child (the bulk path's embedding helper)."""
    return resource.getrusage(who).ru_maxrss / 1024


def resident_mb() -> float:
    """MiB of this process's resident memory now (Linux ``VmRSS``); 0 where the kernel does
    not say."""
    return _status_mb("VmRSS:")


def resident_file_mb() -> float:
    """MiB of this process's resident memory that are mapped files (Linux ``RssFile``): with
    ``storage.mmap_mb`` mostly the database's pages, the operating system's file cache shared
    by every connection, not private memory. 0 where the kernel does not say."""
    return _status_mb("RssFile:")


def _status_mb(field: str) -> float:
    return _proc_kib("/proc/self/status", field) / 1024


def _proc_kib(path: str, field: str) -> int:
    """A ``field:`` line's KiB in a Linux /proc file; 0 where there is none."""
    try:
        with open(path, encoding="ascii") as lines:
            for line in lines:
                if line.startswith(field):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def resident_anon_mb() -> float:
    """MiB of this process's private resident memory now (Linux ``RssAnon``); 0 where the
    kernel does not say. Before and after a build, what the built structure holds."""
    return _status_mb("RssAnon:")


def freeze_the_heap() -> None:
    """Keep what exists now out of the collector's full passes (``gc.freeze``; undone by
    ``gc.unfreeze``). A bench's generated data is the harness's, not the engine's: hundreds
    of thousands of dicts that a full collection would walk inside some timed query or write."""
    gc.collect()
    gc.freeze()


def warm_file_cache(path: Path) -> tuple[int, float] | None:
    """Read a SQLite file (and its WAL) once, start to end, so its pages sit in the
    operating system's file cache as a file just written does: (bytes read, seconds), or
    None when they would take more than half the memory available, or the file is none.

    A file built by an earlier run (``--reuse``) is cached only where something read it
    since, and at 1M chunks nothing else reads the index that clusters a session's rows:
    a session query's first reads then wait for the disk (p95 3.1 ms against 1.8 ms warm,
    same 200 sessions), while LanceDB's files, written minutes before, are all cached.
    """
    files = [found for found in (path, Path(f"{path}-wal")) if found.is_file()]
    size = sum(found.stat().st_size for found in files)
    if not files or size > _available_bytes() // 2:
        return None
    began = time.perf_counter()
    buffer = bytearray(4 << 20)
    for found in files:
        with open(found, "rb", buffering=0) as stream:
            while stream.readinto(buffer):
                pass
    return size, time.perf_counter() - began


def _available_bytes() -> int:
    """The memory Linux says is available for new work (``MemAvailable``); 0 elsewhere."""
    return _proc_kib("/proc/meminfo", "MemAvailable:") * 1024


async def wait_until_quiet(*, window: float = 0.1, busy: float = 0.05,
                           longest: float = 30.0) -> float:
    """Wait until this process's threads used under ``busy`` of one core over a ``window``
    (another library's worker threads still busy from its last call, a collector pass), at
    most ``longest`` seconds; the seconds waited."""
    began = time.monotonic()
    while time.monotonic() - began < longest:
        cpu = time.process_time()
        await asyncio.sleep(window)
        if time.process_time() - cpu < busy * window:
            break
    return time.monotonic() - began
