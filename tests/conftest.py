"""Shared fixtures: throwaway databases in tmp_path, the tiny real model, the shared model."""

from __future__ import annotations

import atexit
import gc
import os
import shutil
import socket
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest
import textual._wait
from click.testing import CliRunner
from textual._styles_cache import StylesCache

from core.locations import Location, parse_location
from core.storage.sqlite.connection import open_connection
from tests.pg_server import pg_server, pg_url  # noqa: F401  (fixtures: a real PostgreSQL)
from tests.tiny_model import build_tiny_model

SHARED_MODEL = Path(__file__).resolve().parents[1].parent / "shared" / "models" / "m2v-minilm-256"

# Pilot's pause waits for the app to go idle by sleeping in 20 ms steps until one step saw
# almost no CPU: most of a Pilot test was those sleeps. 4 ms steps (the same 5 % idle test)
# took the pane tests from 47 to 38 s; what they wait for is unchanged.
textual._wait.SLEEP_GRANULARITY = 0.004
textual._wait.SLEEP_IDLE = textual._wait.SLEEP_GRANULARITY / 20

# The collector's full passes were a third of the app tests' time: a running app holds some
# 25,000 objects, young passes promote them to the oldest generation while it runs, and at the
# default thresholds (700, 10, 10) that set off a full pass over the whole heap (0.2 s or more)
# two or three times a Pilot test. With young passes some 70 times rarer an app lives and dies
# between full passes (playground and schedules tests: collector 26 -> 7 s, 73 -> 45 s).
# Garbage is still collected, in bigger batches.
gc.set_threshold(50_000, 20, 10)

# PostgreSQL memories save their derived indexes under the user's cache folder: the tests'
# go to a folder of the run's own (subprocesses inherit it), removed when the process that
# made it ends (left behind, each test process's added up to 900 MB in /tmp in a day).
if "WORKBENCH_INDEX_CACHE" not in os.environ:
    os.environ["WORKBENCH_INDEX_CACHE"] = tempfile.mkdtemp(prefix="workbench-index-")
    atexit.register(shutil.rmtree, os.environ["WORKBENCH_INDEX_CACHE"], ignore_errors=True)

DETERMINISTIC = {"embedding": {"backend": "deterministic", "fallback_dimensions": 64}}


def rows(where: Path | str | Location, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    """Rows of ``sql`` read from the memory at ``where`` (a file, a PostgreSQL URL, or an
    engine's ``location``) through a connection of its own.

    Both schemas name their tables and columns alike, so a plain query reads the same on
    either; ``?`` placeholders become psycopg's ``%s``.
    """
    location = where if isinstance(where, Location) else parse_location(where)
    if location.is_postgres:
        with psycopg.connect(location.target, autocommit=True) as pg:
            query = sql.replace("%", "%%").replace("?", "%s")
            return [tuple(row) for row in pg.execute(query, params).fetchall()]
    conn = open_connection(location.path, read_only=True, busy_timeout_ms=5000)
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


def execute(where: Path | str | Location, sql: str, *params: Any) -> None:
    """Run one writing statement on the memory at ``where`` and commit it (what a test
    stages that the engine would refuse to write)."""
    location = where if isinstance(where, Location) else parse_location(where)
    if location.is_postgres:
        with psycopg.connect(location.target, autocommit=True) as pg:
            pg.execute(sql.replace("%", "%%").replace("?", "%s"), params)
        return
    conn = open_connection(location.path, read_only=False, busy_timeout_ms=5000)
    try:
        conn.execute(sql, params)
    finally:
        conn.close()


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    """A path for a new memory file."""
    return tmp_path / "memory.db"


@pytest.fixture(params=["sqlite", "postgres"])
def new_memory(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[str], str]:
    """Makes new memories, all of one backend per test (run once per backend): ``new_memory
    ("name")`` is a file path under ``tmp_path``, or the URL of a fresh PostgreSQL database
    (the test server starts only for that param), dropped after the test."""
    def make(name: str) -> str:
        if request.param == "postgres":
            server = request.getfixturevalue("pg_server")
            database = server.create_database(server.migrated_template())
            request.addfinalizer(lambda: server.drop_database(database))
            return str(server.url(database))
        return str(tmp_path / f"{name}.db")
    return make


@pytest.fixture
def memory(new_memory: Callable[[str], str]) -> str:
    """Where a new memory lives: a file under ``tmp_path``, or a fresh PostgreSQL database's
    URL; test ids read ``[sqlite]`` / ``[postgres]``."""
    return new_memory("memory")


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny real model2vec model, built once per test run."""
    return build_tiny_model(tmp_path_factory.mktemp("models") / "tiny-m2v")


@pytest.fixture
def shared_model() -> Path:
    """The real 256-dimension model from ../shared, or skip when it is absent."""
    if not (SHARED_MODEL / "model.safetensors").exists():
        pytest.skip("../shared/models/m2v-minilm-256 is not present")
    return SHARED_MODEL


@pytest.fixture
def runner(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    """A CLI runner whose config ($WORKBENCH_CONFIG) uses the deterministic backend."""
    config = tmp_path / "workbench.toml"
    config.write_text('[embedding]\nbackend = "deterministic"\nfallback_dimensions = 32\n')
    monkeypatch.setenv("WORKBENCH_CONFIG", str(config))
    return CliRunner()


@pytest.fixture
def unused_port() -> int:
    """A loopback port nothing listens on (bound once by the OS, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: one test process more than the cores. A test process is busy about 85 %
    of the time (the rest it waits for PostgreSQL, a subprocess or a thread), and the extra
    process fills those waits: on 2 cores the suite took 298 s with 3 processes against
    320 s with 2, CPU-bound as a whole."""
    return (os.cpu_count() or 1) + 1


# A full collection walks every object the process holds. By the end of a run a test process
# held 440,000-830,000 of them, and each of the run's full passes took 0.5-2 s (11-18 s of a
# run), as did each of the five pytest makes when the session ends (4-5 s after the last test).
# Two things that no test needs walked are taken out of those passes:


def pytest_collection_finish(session: pytest.Session) -> None:
    """What importing the code and the tests made (modules, classes, functions: some 150,000
    objects, kept to the end anyway) moves to the collector's permanent generation, which no
    pass walks; they are still freed by reference counting if they go."""
    gc.collect()
    gc.freeze()


def pytest_runtest_teardown(item: pytest.Item) -> None:
    """Textual caches ``StylesCache.get_inner_outer`` with the widget's StylesCache in the key
    (an lru_cache of 1,024 on a method), so the last 1,024 widgets' caches of rendered lines
    outlive their apps: some 250,000 objects after a few Pilot tests. A test's app is gone by
    its teardown; emptying the cache there frees them (it only holds two styles per pair of
    colours, made again at the next render)."""
    StylesCache.get_inner_outer.cache_clear()
