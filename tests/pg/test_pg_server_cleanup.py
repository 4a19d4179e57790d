"""The test servers' folders: a run removes what a killed test process left behind (its
folder, and the server still running in it), and nothing of a live one."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from tests.pg_server import FOLDER_PREFIX, _memory_folder, remove_orphaned_folders

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def parent() -> Iterator[Path]:
    """A folder pgserver's unprivileged user can reach (pytest's tmp_path is private)."""
    folder = Path(tempfile.mkdtemp(prefix="cleanup-test-", dir=_memory_folder()))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def dead_pid() -> int:
    """The pid of a process that has ended."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_only_the_folders_of_ended_test_processes_are_removed(parent: Path) -> None:
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        gone = parent / f"{FOLDER_PREFIX}{dead_pid()}-abc"
        mine = parent / f"{FOLDER_PREFIX}{os.getpid()}-abc"
        alive = parent / f"{FOLDER_PREFIX}{sleeper.pid}-abc"
        unnamed = parent / f"{FOLDER_PREFIX}abc"  # not named by this module: never touched
        for folder in (gone, mine, alive, unnamed):
            (folder / "base").mkdir(parents=True)
        assert remove_orphaned_folders(parent) == [gone]
        assert sorted(p.name for p in parent.iterdir()) == sorted(
            p.name for p in (mine, alive, unnamed))
    finally:
        sleeper.kill()
        sleeper.wait()


KILLED_WITH_ITS_SERVER = """
import os, signal, sys, tempfile
from pathlib import Path
from tests.pg_server import FOLDER_PREFIX, start_server
folder = Path(tempfile.mkdtemp(prefix=f"{FOLDER_PREFIX}{os.getpid()}-", dir=sys.argv[1]))
server = start_server(folder)
print(folder, flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.mark.slow
def test_a_server_left_running_by_a_killed_test_process_is_stopped_and_removed(
        parent: Path) -> None:
    child = subprocess.run([sys.executable, "-c", KILLED_WITH_ITS_SERVER, str(parent)],
                           cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert child.returncode == -9, child.stderr
    folder = Path(child.stdout.strip())
    postmaster = psutil.Process(int((folder / "postmaster.pid").read_text().split()[0]))
    assert postmaster.is_running()
    try:
        assert remove_orphaned_folders(parent) == [folder]
        assert not folder.exists()
        assert not postmaster.is_running() or postmaster.status() == psutil.STATUS_ZOMBIE
    finally:
        if postmaster.is_running():
            postmaster.kill()
