"""The tests of tests/test_migrate.py that read or stage the memory's tables directly (the
sequences after a copy)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import psycopg
import pytest

from core.migrate import migrate
from tests.test_migrate import build_memory


@pytest.fixture
async def source(tmp_path: Path) -> Path:
    path = tmp_path / "source.db"
    await build_memory(path)
    return path


def test_postgresql_numbers_new_rows_after_the_copied_ids(source: Path, pg_url: str) -> None:
    asyncio.run(migrate(source, pg_url))
    with psycopg.connect(pg_url) as conn:
        for table, column, insert in [
                ("facts", "id", "INSERT INTO facts(category, key, value, source, created_at,"
                                " updated_at, namespace) VALUES ('c', 'new', 'v', 'user', 't',"
                                " 't', 'n')"),
                ("retrieval_log", "log_id", "INSERT INTO retrieval_log(created_at, caller,"
                 " scope_kind, scope_value, query, params_json, results_json) VALUES"
                 " ('t', 'new', 'session', 's', 'q', '{}', '[]')")]:
            (copied,) = conn.execute(f"SELECT max({column}) FROM {table}").fetchone()
            assert copied >= 1
            (made,) = conn.execute(f"{insert} RETURNING {column}").fetchone()
            assert made == copied + 1
