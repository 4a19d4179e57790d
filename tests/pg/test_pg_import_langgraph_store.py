"""`workbench import langgraph-store` from a PostgresStore database (a postgresql:// URL),
filled by LangGraph's own store: WorkbenchStore reads back the same items, bad rows are
skipped with why, a second import finds everything already there."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psycopg
from click.testing import CliRunner

from tests.test_import_langgraph_store import check_imported, corrupt, fill, reads


def test_a_postgres_store_database_becomes_the_same_items(tmp_path: Path, runner: CliRunner,
                                                          pg_url: str) -> None:
    from langgraph.store.postgres import PostgresStore

    with PostgresStore.from_conn_string(pg_url) as store:
        store.setup()
        fill(store)
        with psycopg.connect(pg_url, autocommit=True) as conn:
            corrupt(conn.execute, "'[1, 2]'")  # jsonb holds only JSON: a list is the bad value

        def original() -> dict[str, Any]:
            store.sweep_ttl()
            return reads(store)

        check_imported(runner, pg_url, tmp_path / "memory.db", 1, original)
