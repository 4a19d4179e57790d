"""The backend contract suite's fixtures: every test here runs once per storage backend.

A backend joins the suite by adding its name to ``BACKENDS`` and a branch to ``_open``.
The PostgreSQL one runs on a real server the tests start themselves (``tests/pg_server.py``:
one per test process, a fresh database per test); it never skips.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from core.config import StorageConfig
from core.locations import parse_location
from core.storage.backend import Backend
from core.storage.pg.backend import PostgresBackend
from core.storage.sqlite.sqlite_backend import SqliteBackend
from tests.backend.builders import DIMENSION, MODEL

BACKENDS = ["sqlite", "postgres"]

Opener = Callable[..., Awaitable[Backend]]


async def _open(kind: str, where: Path | str, *, read_only: bool = False) -> Backend:
    config = StorageConfig(reader_pool_size=2)
    if kind == "sqlite":
        assert isinstance(where, Path)
        return await asyncio.to_thread(SqliteBackend.open, where / "memory.db", config,
                                       read_only=read_only)
    if kind == "postgres":
        assert isinstance(where, str)
        return await PostgresBackend.open(parse_location(where), config, read_only=read_only)
    raise AssertionError(f"no backend {kind!r}")


@pytest.fixture(params=BACKENDS)
async def open_backend(request: pytest.FixtureRequest,
                       tmp_path: Path) -> AsyncIterator[Opener]:
    """Opens more backends over the same memory (a second writer, a read-only reader);
    all of them are closed after the test."""
    opened: list[Backend] = []
    # One memory per test: a file in tmp_path, or a fresh database on the test server.
    where: Path | str = (request.getfixturevalue("pg_url") if request.param == "postgres"
                         else tmp_path)

    async def open_one(*, read_only: bool = False) -> Backend:
        backend = await _open(request.param, where, read_only=read_only)
        opened.append(backend)
        return backend

    yield open_one
    for backend in reversed(opened):
        await backend.close()


@pytest.fixture
async def backend(open_backend: Opener) -> Backend:
    """An opened, empty, writable backend whose vector index is made for the test model."""
    opened = await open_backend()
    await opened.ensure_vector_table(DIMENSION, MODEL)
    return opened
