"""A real PostgreSQL 16 with pgvector for the tests: one server per test process (each
xdist worker starts its own), a fresh database per test.

The server comes from the ``pgserver`` wheel (a test dependency: the PostgreSQL binaries
and pgvector's ``vector.so`` ship inside it), in a temporary folder, over a unix socket:
no Docker, no system service, nothing downloaded. Each test's database is copied from a
template that already has the vector extension, which takes a few tens of milliseconds.

Fixtures: ``pg_server`` (session) and ``pg_url`` (a new database's URL, no schema yet).
The engine tests' ``memory`` fixture copies a second template that already holds the
migrated schema (:meth:`PgTestServer.migrated_template`). Imported by
``tests/pg/conftest.py``, and by any other conftest that needs them later.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import shutil
import signal
import tempfile
import time
import warnings
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import psutil
import psycopg
import pytest
from psycopg import sql

TEMPLATE = "memory_template"
# A test server's folder is "memory-workbench-pg-{pid}-{random}", the pid being the test
# process that started it: a later run removes the folder of a process that is gone.
FOLDER_PREFIX = "memory-workbench-pg-"
MIGRATED_TEMPLATE = "memory_template_migrated"


async def _migrate(url: str) -> None:
    """Open (so migrate) and close the memory at ``url``."""
    from core.config import StorageConfig
    from core.locations import parse_location
    from core.storage.pg.backend import PostgresBackend

    backend = await PostgresBackend.open(parse_location(url), StorageConfig())
    await backend.close()


class PgTestServer:
    """A running pgserver and the databases the tests make on it."""

    def __init__(self, server: Any, startup_s: float) -> None:
        self._server = server
        self.startup_s = startup_s
        self._names = itertools.count()
        self.database_s: list[float] = []  # how long each CREATE DATABASE took
        self._migrated: str | None = None

    def url(self, database: str = "postgres") -> str:
        """The database's URL (a unix socket, the superuser ``postgres``, no password)."""
        return str(self._server.get_uri(database))

    def admin(self) -> psycopg.Connection[Any]:
        """An autocommit superuser connection to the ``postgres`` database."""
        return psycopg.connect(self.url(), autocommit=True)

    def create_database(self, template: str = TEMPLATE) -> str:
        """A new, empty database copied from ``template``; its name."""
        name = f"memory_test_{os.getpid()}_{next(self._names)}"
        started = time.perf_counter()
        with self.admin() as conn:
            # FILE_COPY copies the template's files: 11.5 ms at the median here, against 19.5
            # ms for WAL_LOG (PostgreSQL's default), which writes every page to the log.
            conn.execute(sql.SQL("CREATE DATABASE {} TEMPLATE {} STRATEGY FILE_COPY").format(
                sql.Identifier(name), sql.Identifier(template)))
        self.database_s.append(time.perf_counter() - started)
        return name

    def drop_database(self, name: str) -> None:
        """Drop ``name``, ending any connection a test left open on it."""
        with self.admin() as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
                sql.Identifier(name)))

    def migrated_template(self) -> str:
        """A template holding the memory schema, made at first use: an engine test's
        database is copied from it instead of migrating its own (~50 ms a test)."""
        if self._migrated is None:
            with self.admin() as conn:
                conn.execute(sql.SQL("CREATE DATABASE {} TEMPLATE {} STRATEGY FILE_COPY").format(
                    sql.Identifier(MIGRATED_TEMPLATE), sql.Identifier(TEMPLATE)))
            url = self.url(MIGRATED_TEMPLATE)
            # In a thread of its own: the caller may be inside a running event loop.
            with ThreadPoolExecutor(1) as pool:
                pool.submit(asyncio.run, _migrate(url)).result()
            with self.admin() as conn:
                conn.execute(sql.SQL("ALTER DATABASE {} WITH is_template = true").format(
                    sql.Identifier(MIGRATED_TEMPLATE)))
            self._migrated = MIGRATED_TEMPLATE
        return self._migrated

    def stop(self) -> None:
        self._server.cleanup()


def start_server(folder: Path) -> PgTestServer:
    """Start pgserver in ``folder`` and make the template database."""
    started = time.perf_counter()
    with warnings.catch_warnings():
        # platformdirs warns, through pgserver, that a root shell has no XDG_RUNTIME_DIR.
        warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR")
        try:
            import pgserver
        except ImportError:
            pytest.fail("the PostgreSQL tests need the pgserver package (a test dependency): "
                        "pip install -e '.[test]'", pytrace=False)
        server = pgserver.get_server(folder, cleanup_mode="stop")
    test_server = PgTestServer(server, 0.0)
    try:
        _make_template(test_server)
    except BaseException:
        test_server.stop()
        raise
    test_server.startup_s = time.perf_counter() - started
    return test_server


def _make_template(test_server: PgTestServer) -> None:
    """Tune the new server for tests and make the template database with pgvector."""
    with test_server.admin() as conn:
        # A throwaway server: nothing it holds must survive a power cut, and each test's
        # CREATE and DROP DATABASE would otherwise wait on the disk of a busy machine.
        for setting in ("fsync", "synchronous_commit", "full_page_writes"):
            conn.execute(sql.SQL("ALTER SYSTEM SET {} = off").format(sql.Identifier(setting)))
        conn.execute("SELECT pg_reload_conf()")
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(TEMPLATE)))
    with psycopg.connect(test_server.url(TEMPLATE), autocommit=True) as conn:
        conn.execute("CREATE EXTENSION vector")
    with test_server.admin() as conn:
        conn.execute(sql.SQL("ALTER DATABASE {} WITH is_template = true").format(
            sql.Identifier(TEMPLATE)))


def _memory_folder() -> str | None:
    """``/dev/shm`` where it can be written (Linux), else None: the system's temporary
    folder. A test database made in RAM takes ~13 ms; on this machine's disk, shared with
    other busy processes, 50-400 ms."""
    shm = "/dev/shm"
    return shm if os.path.isdir(shm) and os.access(shm, os.W_OK | os.X_OK) else None


def _folder_owner(folder: Path) -> int | None:
    """The pid of the test process that made ``folder``, read from its name; None for a
    folder this module did not name."""
    parts = folder.name.removeprefix(FOLDER_PREFIX).split("-", 1)
    if not folder.name.startswith(FOLDER_PREFIX) or len(parts) != 2 or not parts[0].isdigit():
        return None
    return int(parts[0])


def _stop_orphan(folder: Path) -> None:
    """Stop the server still running in ``folder`` (its test process died without stopping
    it): a fast shutdown of the postmaster named in its pid file, if that process is a
    postgres on this folder, waiting up to 10 s."""
    try:
        pid = int((folder / "postmaster.pid").read_text().split()[0])
        process = psutil.Process(pid)
        owned = process.name() == "postgres" and str(folder) in " ".join(process.cmdline())
    except (OSError, ValueError, IndexError, psutil.Error):
        return
    if owned:
        with contextlib.suppress(psutil.Error):
            process.send_signal(signal.SIGINT)
            process.wait(10)


def remove_orphaned_folders(parent: Path) -> list[Path]:
    """Remove the server folders under ``parent`` whose test process is gone (killed, or
    ended before its session's teardown), stopping any server left running in them; the
    folders removed. Another run's live folders are left alone."""
    removed = []
    for folder in parent.glob(f"{FOLDER_PREFIX}*"):
        owner = _folder_owner(folder)
        if owner is None or owner == os.getpid() or psutil.pid_exists(owner):
            continue
        _stop_orphan(folder)
        shutil.rmtree(folder, ignore_errors=True)
        removed.append(folder)
    return removed


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgTestServer]:
    """This test process's PostgreSQL server, stopped and deleted when its tests are done.

    Its folder is made by ``tempfile`` under the system's temporary folder, not by
    ``tmp_path_factory``: run as root, pgserver starts PostgreSQL as an unprivileged user,
    which must be able to reach the folder, and pytest keeps its own temporary root
    private to the user who runs it (any concurrent pytest run resets it to 0700). Where
    there is a RAM-backed folder the server lives there. The folder goes even when the
    server fails to start or to stop; one a killed test process left behind is removed by
    the next run that starts a server (:func:`remove_orphaned_folders`).
    """
    parent = Path(_memory_folder() or tempfile.gettempdir())
    remove_orphaned_folders(parent)
    folder = Path(tempfile.mkdtemp(prefix=f"{FOLDER_PREFIX}{os.getpid()}-", dir=parent))
    try:
        server = start_server(folder)
        try:
            yield server
        finally:
            server.stop()
    finally:
        shutil.rmtree(folder)


@pytest.fixture
def pg_url(pg_server: PgTestServer) -> Iterator[str]:
    """The URL of a new database of this test's own (with pgvector, no schema yet)."""
    name = pg_server.create_database()
    try:
        yield pg_server.url(name)
    finally:
        pg_server.drop_database(name)
