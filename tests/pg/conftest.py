"""Fixtures of the PostgreSQL tests: a server per test process, a database per test, and
that database opened through the storage layer."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from core.locations import parse_location
from core.storage.pg.connection import PgDatabase


@pytest.fixture
async def pg_db(pg_url: str) -> AsyncIterator[PgDatabase]:
    """The test's database, opened and migrated."""
    db = PgDatabase(parse_location(pg_url))
    await db.open()
    await db.migrate()
    try:
        yield db
    finally:
        await db.close()
