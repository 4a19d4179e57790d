"""The tests of tests/test_facts.py that read or stage the memory's tables directly (the table's
columns)."""

from __future__ import annotations

from pathlib import Path

from core import Engine
from core.storage.sqlite.connection import open_connection
from tests.conftest import DETERMINISTIC


async def test_the_facts_table_keeps_seed_000s_columns(db_path: Path) -> None:
    # About the SQLite file: its table's column order, read with a PRAGMA.
    async with Engine.open(db_path, config=DETERMINISTIC):
        pass
    conn = open_connection(db_path, read_only=True, busy_timeout_ms=5000)
    columns = [row[1] for row in conn.execute("PRAGMA table_info(facts)")]
    conn.close()
    assert columns[:7] == ["id", "category", "key", "value", "source", "created_at",
                           "updated_at"]
