"""Every command on a file that is not a memory: one line on stderr, exit 1, the file untouched.

The kinds: a truncated memory, a damaged one, a text file, ``/dev/null``, a symlink loop and
another application's SQLite database are refused by every command (the app included,
before it starts); an empty (0-byte) file is refused by every command that reads or
changes memory and made a memory by the commands that add to it (tests/test_cli_new_file.py
lists both sides). A file in a folder this user cannot write opens read-only with a
warning. "Untouched" is checked byte for byte, with no ``-wal``, ``-shm`` or ``-journal``
left beside the file.

Tests run as root here, where permission bits stop nothing; the folder cases run the CLI in
a new user namespace (``unshare -U``), where root's files are checked by their owner bits
like any user's, and are skipped where that is not permitted.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from core import Engine
from core.errors import InvalidInput
from core.storage.sqlite.memory_file import examine
from tests.cli_helpers import FIXTURE_CONFIG, invoke, memory_file
from tests.test_cli_new_file import ADDS, NEEDS, arguments
from workbench.app.app import WorkbenchApp

SIDECARS = ("-wal", "-shm", "-journal")


def _memory(tmp_path: Path) -> bytes:
    """The bytes of a small memory file (one message)."""
    path = memory_file(tmp_path / "source" / "m.db", lambda engine: engine.append(
        "s1", {"role": "user", "content": "hello there"}))
    return path.read_bytes()


def truncated(tmp_path: Path) -> Path:
    data = _memory(tmp_path)
    path = tmp_path / "truncated.db"
    path.write_bytes(data[:len(data) // 3])
    return path


def damaged(tmp_path: Path) -> Path:
    data = bytearray(_memory(tmp_path))
    data[100:4096] = b"\xab" * (4096 - 100)  # page 1 past the header: the schema
    path = tmp_path / "damaged.db"
    path.write_bytes(bytes(data))
    return path


def text_file(tmp_path: Path) -> Path:
    path = tmp_path / "notes.db"
    path.write_text("hello, I am not a database\n" * 100)
    return path


def dev_null(tmp_path: Path) -> Path:
    return Path("/dev/null")


def symlink_loop(tmp_path: Path) -> Path:
    (tmp_path / "loop-a").symlink_to(tmp_path / "loop-b")
    (tmp_path / "loop-b").symlink_to(tmp_path / "loop-a")
    return tmp_path / "loop-a"


def foreign_sqlite(tmp_path: Path) -> Path:
    path = tmp_path / "other-app.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE contacts (name TEXT, phone TEXT)")
    conn.execute("INSERT INTO contacts VALUES ('Ada', '555')")
    conn.commit()
    conn.close()
    return path


def foreign_wal_sqlite(tmp_path: Path) -> Path:
    """Another application's database in WAL mode: a read-only look at it would leave a
    ``-wal`` and ``-shm`` beside it."""
    path = tmp_path / "other-app-wal.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("CREATE TABLE contacts (name TEXT, phone TEXT)")
    conn.commit()
    conn.close()
    return path


BAD: dict[str, Callable[[Path], Path]] = {
    "truncated": truncated, "damaged": damaged, "not a database": text_file,
    "/dev/null": dev_null, "symlink loop": symlink_loop, "another app's SQLite": foreign_sqlite,
    "another app's WAL SQLite": foreign_wal_sqlite}

# What each kind's line says, so the line names the file and what is wrong with it.
SAYS = {"truncated": "is truncated", "damaged": "is damaged",
        "not a database": "not a SQLite database", "/dev/null": "is a character device",
        "symlink loop": "symbolic links loop", "another app's SQLite": "another application's",
        "another app's WAL SQLite": "another application's"}


def snapshot(path: Path) -> tuple[str, list[str]]:
    """The file's bytes (by hash; a device or a loop by what it is) and the sidecars beside it."""
    beside = sorted(p.name for p in path.parent.iterdir()
                    if any(p.name == path.name + s for s in SIDECARS))
    if path.is_symlink() or not path.is_file():
        return (path.is_char_device() and "char device" or "link"), beside
    return hashlib.sha256(path.read_bytes()).hexdigest(), beside


@pytest.fixture
def no_dev_null_sidecars() -> Iterator[None]:
    """/dev/null's own sidecars (the old code made /dev/null-journal) removed after the test."""
    existing = {s for s in SIDECARS if Path(f"/dev/null{s}").exists()}
    yield
    for suffix in set(SIDECARS) - existing:
        Path(f"/dev/null{suffix}").unlink(missing_ok=True)


def assert_one_line_refusal(result: Result, path: Path, says: str) -> None:
    assert result.exit_code == 1, (result.output, result.exception)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith("error: ") and says in result.stderr, result.stderr
    assert str(path) in result.stderr or path.name in result.stderr, result.stderr


@pytest.mark.usefixtures("no_dev_null_sidecars")
@pytest.mark.parametrize("kind", sorted(BAD))
def test_every_command_refuses_a_file_that_is_not_a_memory_in_one_line_untouched(
        runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str) -> None:
    monkeypatch.chdir(tmp_path)
    path = BAD[kind](tmp_path)
    before = snapshot(path)
    for command, args in sorted({**NEEDS, **ADDS}.items()):
        result = invoke(runner, *command.split(), *arguments(args, tmp_path), "--db", path)
        assert_one_line_refusal(result, path, SAYS[kind])
        assert snapshot(path) == before, command


@pytest.mark.usefixtures("no_dev_null_sidecars")
@pytest.mark.parametrize("kind", sorted(BAD))
def test_the_app_and_the_mcp_server_refuse_it_in_one_line_before_starting(
        runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str) -> None:
    def started(self: WorkbenchApp) -> None:
        raise AssertionError("the app started on a file that is not a memory")

    monkeypatch.setattr(WorkbenchApp, "run", started)
    path = BAD[kind](tmp_path)
    before = snapshot(path)
    assert_one_line_refusal(invoke(runner, path), path, SAYS[kind])
    assert_one_line_refusal(invoke(runner, "mcp", "--namespace", "a", "--db", path, stdin=""),
                            path, SAYS[kind])
    assert snapshot(path) == before


@pytest.mark.usefixtures("no_dev_null_sidecars")
@pytest.mark.parametrize("kind", sorted(BAD))
def test_doctor_reports_the_problem_and_exits_1(runner: CliRunner, tmp_path: Path,
                                                kind: str) -> None:
    path = BAD[kind](tmp_path)
    before = snapshot(path)
    result = invoke(runner, "doctor", "--db", path)
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    (line,) = [line for line in result.stdout.splitlines() if line.startswith("database")]
    assert "PROBLEM" in line and SAYS[kind] in line, line
    assert "status       PROBLEMS FOUND" in result.stdout
    assert snapshot(path) == before


def test_an_empty_file_is_refused_by_reads_and_made_a_memory_by_adds(
        runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "empty.db"
    path.touch()
    for command, args in sorted(NEEDS.items()):
        result = invoke(runner, *command.split(), *arguments(args, tmp_path), "--db", path)
        assert_one_line_refusal(result, path, "is empty, not a memory yet")
        assert snapshot(path) == (hashlib.sha256(b"").hexdigest(), []), command
    doctor = invoke(runner, "doctor", "--db", path)
    assert "is empty, not a memory yet" in doctor.stdout and path.stat().st_size == 0
    added = invoke(runner, "notes", "add", "n1", "--content", "a note", "--db", path)
    assert added.exit_code == 0, added.output
    assert f"created {path}" in added.stderr
    listed = invoke(runner, "notes", "list", "--db", path)
    assert listed.exit_code == 0 and "n1" in listed.stdout


# -- folders this user cannot write or read, as a user without root's override ---------------

def _unshare() -> list[str]:
    if shutil.which("unshare") is None:
        pytest.skip("unshare is not installed")
    done = subprocess.run(["unshare", "-U", "true"], capture_output=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"user namespaces are not permitted here: {done.stderr.decode().strip()}")
    return ["unshare", "-U"]


def as_a_user(tmp_path: Path, *args: object) -> subprocess.CompletedProcess[str]:
    """``workbench ARGS`` run by a user whose file access the permission bits decide."""
    config = tmp_path / "workbench.toml"
    config.write_text('[embedding]\nbackend = "deterministic"\nfallback_dimensions = 32\n')
    env = {**os.environ, "WORKBENCH_CONFIG": str(config)}
    return subprocess.run([*_unshare(), sys.executable, "-m", "workbench.cli",
                           *map(str, args)], capture_output=True, text=True, env=env,
                          check=False, timeout=120)


@pytest.fixture
def locked_folder(tmp_path: Path) -> Iterator[Path]:
    """A folder holding a memory file, that its owner may read but not write."""
    folder = tmp_path / "locked"
    memory_file(folder / "m.db", lambda engine: engine.append(
        "s1", {"role": "user", "content": "hello there"}))
    folder.chmod(0o555)
    yield folder
    folder.chmod(0o755)


def test_a_memory_in_a_folder_the_user_cannot_write_reads_with_a_warning(
        tmp_path: Path, locked_folder: Path) -> None:
    path = locked_folder / "m.db"
    before = snapshot(path)
    listed = as_a_user(tmp_path, "sessions", "list", "--db", path)
    assert listed.returncode == 0, listed.stderr
    assert "s1" in listed.stdout
    assert listed.stderr.count("\n") == 1 and listed.stderr.startswith("warning: ")
    assert "read-only" in listed.stderr
    found = as_a_user(tmp_path, "search", "hello", "--session", "s1", "--db", path)
    assert found.returncode == 0 and "hello there" in found.stdout, found.stderr
    added = as_a_user(tmp_path, "sessions", "append", "s1", "--role", "user", "--content", "x",
                      "--db", path)
    assert added.returncode == 1 and "Traceback" not in added.stderr, added.stderr
    assert added.stderr.splitlines()[-1].startswith("error: ")
    assert "nothing was written" in added.stderr.splitlines()[-1]
    assert snapshot(path) == before


def test_a_file_the_user_cannot_read_is_one_line(tmp_path: Path) -> None:
    folder = tmp_path / "closed"
    path = memory_file(folder / "m.db")
    path.chmod(0o000)
    try:
        for args in (["sessions", "list"], ["notes", "add", "n", "--content", "x"]):
            result = as_a_user(tmp_path, *args, "--db", path)
            assert result.returncode == 1, result.stderr
            assert result.stderr.count("\n") == 1, result.stderr
            assert "permission denied" in result.stderr
    finally:
        path.chmod(0o644)


# -- the engine's own rule, which every front end inherits ----------------------------------

async def test_engine_open_refuses_another_apps_database_untouched(tmp_path: Path) -> None:
    path = foreign_sqlite(tmp_path)
    before = snapshot(path)
    for read_only in (False, True):
        with pytest.raises(InvalidInput, match="another application's SQLite database"):
            await Engine.open(path, config=FIXTURE_CONFIG, read_only=read_only)
    assert snapshot(path) == before


async def test_engine_open_makes_an_empty_file_a_memory_only_for_writing(tmp_path: Path) -> None:
    path = tmp_path / "empty.db"
    path.touch()
    with pytest.raises(InvalidInput, match="is empty, not a memory yet"):
        await Engine.open(path, config=FIXTURE_CONFIG, read_only=True)
    assert snapshot(path) == (hashlib.sha256(b"").hexdigest(), [])
    async with Engine.open(path, config=FIXTURE_CONFIG) as engine:
        await engine.append("s1", {"role": "user", "content": "hello"})
    assert examine(path) == "memory"


async def test_a_memory_still_in_its_write_ahead_log_is_a_memory(tmp_path: Path) -> None:
    """A new memory another process holds open may have its schema only in its -wal: the
    look reads through the log, and a command opens it alongside."""
    path = tmp_path / "m.db"
    async with Engine.open(path, config=FIXTURE_CONFIG) as engine:
        await engine.append("s1", {"role": "user", "content": "hello"})
        assert Path(f"{path}-wal").stat().st_size > 0
        assert examine(path) == "memory"
        async with Engine.open(path, config=FIXTURE_CONFIG, read_only=True) as reader:
            assert [r.payload["content"] for r in await reader.recall("s1")] == ["hello"]
