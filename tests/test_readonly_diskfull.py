"""Read-only and full disks: a file that cannot take writes opens read-only and says so; a
disk that fills mid-write refuses that write whole, keeps the file sound, and recovers.

These tests run as root in CI, where file modes do not stop a write, so each one makes the
real condition: ``chattr +i`` (an immutable file or folder stops root too), a tmpfs mounted
read-only, a tmpfs filled to ENOSPC, or SQLite's ``PRAGMA max_page_count``, which fails a
write with SQLITE_FULL exactly as a full disk does. Where a condition cannot be made here
(no chattr, mounting not permitted), its test is skipped, saying why.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from core import Engine
from core.embeddings import worker as embed_worker
from core.embeddings.worker import EmbeddingWorker
from core.errors import ReadOnlyDatabase, StorageFull
from core.types import Pulse
from tests.cli_helpers import FIXTURE_CONFIG, invoke, memory_file
from workbench.app.widgets.header import StatusHeader, _pulse_parts
from workbench.bench.diskfull import drill, mounted_tmpfs

CONFIG: dict[str, Any] = {
    "embedding": {"backend": "deterministic", "fallback_dimensions": 64, "batch_size": 8},
    "summary": {"token_budget": 400, "auto": False, "min_turns": 2},
    "consolidation": {"enabled": False},
}
INTERVAL = {"kind": "interval", "value": "6h", "timezone": "UTC"}


# -- making the conditions -------------------------------------------------------------------

def _chattr(flag: str, *paths: Path) -> None:
    if shutil.which("chattr") is None:
        pytest.skip("chattr is not installed")
    done = subprocess.run(["chattr", flag, *map(str, paths)], capture_output=True, text=True,
                          check=False)
    if done.returncode != 0:
        pytest.skip(f"chattr {flag} is not supported here: {done.stderr.strip()}")


@contextlib.contextmanager
def immutable(*paths: Path) -> Iterator[None]:
    """The paths immutable (``chattr +i``: nobody, root included, may change them)."""
    _chattr("+i", *paths)
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", *map(str, paths)], check=False)


@contextlib.contextmanager
def tmpfs(size_mb: int) -> Iterator[Path]:
    with mounted_tmpfs(size_mb) as where:
        if isinstance(where, str):
            pytest.skip(f"no tmpfs here: {where}")
        yield where


def fill_disk(folder: Path) -> Path:
    """Write a ballast file until the file system says ENOSPC; the ballast's path."""
    ballast = folder / "ballast"
    fd = os.open(ballast, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    try:
        while True:
            os.write(fd, b"\0" * 4096)
    except OSError:
        pass
    finally:
        os.close(fd)
    return ballast


class BackOffs:
    """``asyncio`` as :mod:`core.embeddings.worker` sees it, with the delay of each
    ``asyncio.timeout`` the worker waits on recorded (its back-off between refused saves);
    each wait lasts a tenth of its delay, so a test sees several without taking seconds."""

    def __init__(self, waits: int) -> None:
        self.delays: list[float] = []
        self.enough = asyncio.Event()  # set once ``waits`` delays are recorded
        self._waits = waits

    def __getattr__(self, name: str) -> Any:
        return getattr(asyncio, name)

    def timeout(self, delay: float) -> asyncio.Timeout:
        self.delays.append(delay)
        if len(self.delays) >= self._waits:
            self.enough.set()
        return asyncio.timeout(delay / 10)


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


async def make_memory(path: Path) -> None:
    """A file with a conversation, a note, a fact, a schedule and a logged query."""
    async with Engine.open(path, config=CONFIG) as engine:
        for text in ("We hike the Dolomites in late June.", "Book the Lagazuoi hut.",
                     "I am allergic to peanuts."):
            await engine.append("trip", {"role": "user", "content": text})
        await engine.add_note("packing", "Boots, rain shell, hut liner.")
        await engine.upsert_fact("diet", "allergy", "peanuts")
        await engine.schedules.create_schedule("default", "check huts", INTERVAL, name="huts")
        await engine.hybrid_query(session_id="trip", query="peanut allergy", caller="agent")
        await engine.drain()


async def assert_reads_work_and_writes_are_refused(path: Path, reason: str) -> None:
    before = digest(path)
    async with Engine.open(path, config=CONFIG) as engine:
        assert engine.read_only and engine.backend.read_only_reason is not None
        assert reason in engine.backend.read_only_reason
        assert any("opened read-only" in w and reason in w for w in engine.warnings)
        # browse, search, replay
        assert [r.payload["content"] for r in await engine.recall("trip")][-1].startswith("I am")
        found = await engine.hybrid_query(session_id="trip", query="peanuts")
        assert "peanuts" in found[0].text
        (logged,) = await engine.retrieval_log(5)
        replayed = await engine.replay(logged["log_id"])
        assert replayed.results and "peanuts" in replayed.results[0].text
        assert (await engine.get_note("packing")).content.startswith("Boots")
        # every kind of write: refused plainly, nothing written
        writes = (lambda: engine.append("trip", {"role": "user", "content": "more"}),
                  lambda: engine.add_note("x", "y"),
                  lambda: engine.write_scratchpad("trip", ["a"]),
                  lambda: engine.upsert_fact("a", "b", "c"),
                  lambda: engine.schedules.create_schedule("default", "g", INTERVAL),
                  lambda: engine.forget("trip"))
        for write in writes:
            with pytest.raises(ReadOnlyDatabase, match=f"open read-only .*{reason}.*nothing "
                                                       "was written"):
                await write()
    assert digest(path) == before


# -- read-only locations -----------------------------------------------------------------------

async def test_an_immutable_file_opens_read_only_and_refuses_writes(db_path: Path) -> None:
    await make_memory(db_path)
    with immutable(db_path):
        await assert_reads_work_and_writes_are_refused(db_path, "the file is not writable")


async def test_a_file_in_an_immutable_folder_opens_read_only(tmp_path: Path) -> None:
    """No -shm can be made beside it, which SQLite reports only as "unable to open"."""
    path = tmp_path / "folder" / "memory.db"
    path.parent.mkdir()
    await make_memory(path)
    assert not path.with_name("memory.db-shm").exists()
    with immutable(path.parent):
        await assert_reads_work_and_writes_are_refused(path, "its folder is not writable")


async def test_a_file_on_a_read_only_mount_opens_read_only(tmp_path: Path) -> None:
    with tmpfs(16) as where:
        path = where / "memory.db"
        await make_memory(path)
        done = subprocess.run(["mount", "-o", "remount,ro", str(where)], capture_output=True,
                              text=True, check=False)
        if done.returncode != 0:
            pytest.skip(f"cannot remount read-only: {done.stderr.strip()}")
        await assert_reads_work_and_writes_are_refused(path, "read-only file system")


# -- SQLITE_FULL in the middle of writes ---------------------------------------------------------

async def test_each_kind_of_write_on_a_full_disk_is_refused_whole_and_then_succeeds(
        db_path: Path) -> None:
    config = {**CONFIG, "summary": {"token_budget": 4000, "auto": False}}
    async with Engine.open(db_path, config=config) as engine:
        for i in range(8):
            await engine.append("s", {"role": "user", "content": " ".join(
                f"Order {i}.{j} ships to Lisbon on May {j}." for j in range(70))})
        await engine.drain()
        counts = await engine.counts()
        await engine.backend.cap_size(0)
        big = "word " * 3000
        writes = {
            "append": lambda: engine.append("s", {"role": "user", "content": big}),
            "note": lambda: engine.add_note("big", big),
            "scratchpad": lambda: engine.write_scratchpad("s", ["x" * 200] * 30),
            "fact": lambda: engine.upsert_fact("c", "k", big),
            "schedule": lambda: engine.schedules.create_schedule("u", big[:7000], INTERVAL),
            "summary": lambda: engine.summarize("s"),
            "compaction": lambda: engine.compact("s"),
        }
        for write in writes.values():
            with pytest.raises(StorageFull, match="disk is full.*nothing of it was kept"):
                await write()
        assert await engine.backend.integrity_check() == ["ok"]
        assert await engine.counts() == counts  # every refused write entirely absent
        assert len(await engine.recall("s")) == 8  # earlier writes intact
        assert (await engine.summary_state("s")).epoch == 0
        await engine.backend.cap_size(None)  # space is freed
        for write in writes.values():
            await write()
        assert (await engine.summary_state("s")).epoch == 2  # summarised, then compacted
        assert len(await engine.list_archives("s")) == 1
        assert await engine.backend.integrity_check() == ["ok"]


async def test_the_embedding_worker_waits_out_a_full_disk_and_saves_after(
        db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async with Engine.open(db_path, config=CONFIG, start_worker=False) as engine:
        for i in range(20):
            await engine.append(f"s{i}", {"role": "user", "content": f"alpine hut number {i}"})
        await engine.backend.cap_size(0)
        attempts = 0
        save = engine.backend.save_vectors

        async def counted(*args: Any) -> int:
            nonlocal attempts
            attempts += 1
            return await save(*args)

        monkeypatch.setattr(engine.backend, "save_vectors", counted)
        backed_off = BackOffs(waits=4)
        monkeypatch.setattr(embed_worker, "asyncio", backed_off)
        engine.worker = EmbeddingWorker(engine.backend, engine.embedder, batch_size=8,
                                        max_attempts=3)
        engine.worker.start()
        with pytest.raises(StorageFull, match="disk is full"):
            await engine.drain(timeout=30)
        pulse = await engine.pulse()
        assert pulse.backlog == 20 and pulse.failed == 0  # nothing lost, nothing marked failed
        assert pulse.storage_error and "disk is full" in pulse.storage_error
        async with asyncio.timeout(30):
            await backed_off.enough.wait()
        # Backing off, not spinning: each refused save is followed by a wait that doubles.
        assert backed_off.delays[:4] == [0.1, 0.2, 0.4, 0.8]
        assert len(backed_off.delays) <= attempts <= len(backed_off.delays) + 1, attempts
        assert await engine.backend.integrity_check() == ["ok"]
        await engine.backend.cap_size(None)
        await engine.drain(timeout=30)
        pulse = await engine.pulse()
        assert (pulse.backlog, pulse.storage_error) == (0, None)
        assert (await engine.hybrid_query(session_id="s3", query="alpine hut"))[0].vector_score


async def test_a_real_disk_fills_writes_are_refused_and_the_file_stays_sound() -> None:
    with tmpfs(8) as where:
        path = where / "memory.db"
        async with Engine.open(path, config=CONFIG) as engine:
            for i in range(5):
                await engine.append("s", {"role": "user", "content": f"message {i}"})
            await engine.drain()
            ballast = fill_disk(where)
            refused = 0
            for i in range(20):
                with contextlib.suppress(StorageFull):
                    await engine.append("s", {"role": "user", "content": f"more {i} " * 400})
                    continue
                refused += 1
            assert refused == 20
            assert await engine.backend.integrity_check() == ["ok"]
            assert len(await engine.recall("s")) == 5
            ballast.unlink()
            await engine.append("s", {"role": "user", "content": "space again"})
            await engine.drain()
        # Opened on a disk with no room at all: read-only, saying why.
        fill_disk(where)
        async with Engine.open(path, config=CONFIG) as engine:
            assert engine.read_only and "disk is full" in (engine.backend.read_only_reason or "")
            assert len(await engine.recall("s")) == 6
        # A new file on a full disk: a clear refusal, and no empty file left behind.
        with pytest.raises(StorageFull, match="disk is full"):
            await Engine.open(where / "new.db", config=CONFIG)
        assert not (where / "new.db").exists()


async def test_the_disk_full_drill_counts_no_crash_and_no_corruption(tmp_path: Path) -> None:
    figures = await drill(tmp_path / "drill.db", operations=150, seed=3)
    print("\n" + "\n".join(figures.lines()))
    assert figures.crashes == [] and figures.corruptions == []
    assert sum(figures.refused.values()) > 0 and figures.succeeded > 0
    assert figures.recovered and figures.worker_alive


# -- front ends ----------------------------------------------------------------------------------

def test_the_cli_warns_in_one_line_and_refuses_writes_without_a_traceback(
        runner: CliRunner, tmp_path: Path) -> None:
    path = memory_file(tmp_path / "m.db", lambda engine: engine.append(
        "s", {"role": "user", "content": "alpine huts in June"}))
    with immutable(path):
        searched = invoke(runner, "search", "huts", "--db", path, "--session", "s")
        assert searched.exit_code == 0 and "alpine huts" in searched.stdout
        assert searched.stderr.count("\n") == 1
        assert searched.stderr.startswith("warning: ") and "read-only" in searched.stderr
        listed = invoke(runner, "notes", "list", "--db", path)  # a quiet command says it too
        assert listed.exit_code == 0 and "read-only" in listed.stderr
        added = invoke(runner, "notes", "add", "n", "--content", "x", "--db", path)
        assert added.exit_code == 1 and "Traceback" not in added.output
        assert added.stderr.splitlines()[-1].startswith("error: ")
        assert "read-only" in added.stderr.splitlines()[-1]


def test_the_cli_says_the_disk_is_full_in_one_line(runner: CliRunner) -> None:
    with tmpfs(8) as where:
        path = memory_file(where / "m.db")
        ballast = fill_disk(where)
        # The file opened while the disk was full is read-only: the write is refused so.
        added = invoke(runner, "notes", "add", "n", "--content", "x " * 2000, "--db", path)
        assert added.exit_code == 1 and "Traceback" not in added.output
        assert "disk is full" in added.stderr
        ballast.unlink()
        assert invoke(runner, "notes", "add", "n", "--content", "x", "--db", path).exit_code == 0
    assert FIXTURE_CONFIG  # the runner's config made the file


async def test_the_app_header_shows_a_read_only_banner(tmp_path: Path) -> None:
    from tests.app_support import build_fixture, fixture_clock, running_app, settle

    path = tmp_path / "fixture.db"
    with fixture_clock():
        await build_fixture(path)
    with immutable(path):
        async with running_app(path, build=False) as (app, pilot):
            await settle(pilot)
            header = str(app.query_one(StatusHeader).render())
            assert "READ-ONLY: the file is not writable" in header
            assert "READ-ONLY" in app.export_screenshot()
            assert app.engine is not None and app.engine.read_only


async def test_the_app_shows_a_worker_the_disk_refuses_and_keeps_running(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.app_support import running_app, settle

    async with running_app(tmp_path / "fixture.db") as (app, pilot):
        await settle(pilot)
        engine = app.engine
        assert engine is not None

        async def full(*args: Any) -> int:
            raise StorageFull(f"{engine.location}: the disk is full (SQLite: database or disk is "
                              "full); this write was rolled back")

        monkeypatch.setattr(engine.backend, "save_vectors", full)
        told: list[str] = []
        monkeypatch.setattr(app, "notify", lambda message, **kw: told.append(message))
        await engine.append("trip-dolomites", {"role": "user", "content": "one more"})
        with pytest.raises(StorageFull):
            await engine.drain(timeout=30)
        app.memory_written()  # what a pane does after a write: poll now
        await settle(pilot)
        assert "embedding paused" in str(app.query_one(StatusHeader).render())
        assert any("disk is full" in message for message in told)
        assert app.is_running and app.return_code is None


def test_the_header_says_when_the_worker_cannot_save() -> None:
    pulse = Pulse(data_version=1, backlog=12, failed=0, model="m", model_loaded=True,
                  fell_back=False, warning=None, storage_error="x.db: the disk is full")
    text = "".join(part if isinstance(part, str) else part[0] for part in _pulse_parts(pulse))
    assert "embedding backlog 12" in text and "embedding paused" in text
