"""What only the SQLite backend has: its file's schema, migrations, extensions, connections.

What every backend must do (cascades included) is in the contract suite beside this file.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from core import Engine
from core.errors import DimensionMismatch, ExtensionMissing, ReadOnlyDatabase
from core.storage.sqlite import connection
from core.storage.sqlite.migrations import latest_version, split_statements
from tests.conftest import DETERMINISTIC

SEED_001_COLUMNS = {
    "sessions": ["session_id", "agent_identity", "created_at", "updated_at"],
    "conversation_events": ["session_id", "sequence", "payload_json", "created_at"],
    "session_state": ["session_id", "state_json", "updated_at"],
    "files": ["file_id", "session_id", "source_uri", "content_hash", "metadata_json",
              "created_at"],
    "chunks": ["chunk_id", "session_id", "chunk_text", "content_hash", "sequence_start",
               "sequence_end", "metadata_json"],
    "schedules": ["schedule_id", "user_id", "name", "goal", "cadence_json",
                  "notification_policy", "status", "created_at", "updated_at", "next_run_at",
                  "last_run_at", "last_run_status", "consecutive_failures", "channel_id",
                  "channel_context_id"],
    "schedule_runs": ["run_id", "schedule_id", "started_at", "finished_at", "status",
                      "output_summary", "output", "turn_count", "cost", "notified"],
}


def raw(path: Path):
    """A plain connection with sqlite-vec loaded, for looking inside the file."""
    return connection.open_connection(path, read_only=False, busy_timeout_ms=5000)


async def test_new_file_has_seed_001_tables_and_columns(db_path: Path) -> None:
    async with Engine.open(db_path, config=DETERMINISTIC):
        pass
    conn = raw(db_path)
    for table, columns in SEED_001_COLUMNS.items():
        found = [row[1] for row in conn.execute(f"PRAGMA table_info({table})")]
        assert found[: len(columns)] == columns, table
    events = [row[1] for row in conn.execute("PRAGMA table_info(conversation_events)")]
    assert {"importance", "consolidated_at"} <= set(events)
    chunks = [row[1] for row in conn.execute("PRAGMA table_info(chunks)")]
    assert {"embedding_status", "embedding_error"} <= set(chunks)
    vec_sql = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'chunks_vec'").fetchone()[0]
    assert "vec0" in vec_sql and "partition key" in vec_sql.lower()
    # sqlite-vec does not index its blocks by partition; without this, each insert scans them.
    plan = " ".join(row[3] for row in conn.execute(
        "EXPLAIN QUERY PLAN SELECT chunk_id FROM chunks_vec_chunks"
        " WHERE partition00 = 'a' AND partition01 = 's'"))
    assert "chunks_vec_blocks_by_partition" in plan
    plan = " ".join(row[3] for row in conn.execute(
        "EXPLAIN QUERY PLAN SELECT chunk_id FROM chunks_vec_chunks WHERE partition01 = 's'"))
    assert "chunks_vec_blocks_by_session" in plan
    indexes = {row[0] for row in conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'schedules'")}
    assert {"schedules_by_user", "schedules_due", "schedules_by_user_status",
            "schedules_by_user_name"} <= indexes
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    versions = conn.execute("SELECT version, name FROM memory_migrations").fetchall()
    assert [v for v, _ in versions] == list(range(1, latest_version() + 1))


async def test_opening_twice_applies_nothing_again(db_path: Path) -> None:
    for _ in range(2):
        async with Engine.open(db_path, config=DETERMINISTIC):
            pass
    conn = raw(db_path)
    assert conn.execute("SELECT count(*) FROM memory_migrations").fetchone()[0] == latest_version()


async def test_a_newer_schema_opens_read_only_and_refuses_writes(db_path: Path) -> None:
    async with Engine.open(db_path, config=DETERMINISTIC) as engine:
        await engine.store("s", 1, {"role": "user", "content": "before the upgrade"})
    conn = raw(db_path)
    conn.execute("INSERT INTO memory_migrations VALUES (999, 'from_the_future', 'x')")
    conn.close()
    async with Engine.open(db_path, config=DETERMINISTIC) as engine:
        assert engine.read_only
        assert any("newer than this workbench" in w for w in engine.warnings)
        assert len(await engine.recall("s")) == 1  # still readable
        with pytest.raises(ReadOnlyDatabase, match="read-only"):
            await engine.store("s", 2, {"role": "user", "content": "after"})
    conn = raw(db_path)
    assert conn.execute("SELECT count(*) FROM conversation_events").fetchone()[0] == 1
    assert conn.execute("SELECT max(version) FROM memory_migrations").fetchone()[0] == 999


async def test_fts_index_survives_vacuum(db_path: Path) -> None:
    async with Engine.open(db_path, config=DETERMINISTIC) as engine:
        for seq in range(1, 40):
            await engine.store("s", seq, {"role": "user", "content": f"word{seq} filler text"})
        await engine.forget("s")
        for seq in range(1, 5):
            await engine.store("t", seq, {"role": "user", "content": f"zebra{seq} stripes"})
    conn = raw(db_path)
    conn.execute("VACUUM")
    conn.close()
    async with Engine.open(db_path, config=DETERMINISTIC) as engine:
        hits = await engine.hybrid_query(session_id="t", query="zebra3", top_k=5,
                                         vector_weight=0.0, fts_weight=1.0)
        assert hits and hits[0].text.startswith("zebra3")
        assert await engine.backend.integrity_check() == ["ok"]


async def test_a_file_of_another_dimension_is_refused_naming_both(db_path: Path) -> None:
    async with Engine.open(db_path, config=DETERMINISTIC):
        pass
    other = {"embedding": {"backend": "deterministic", "dimensions": 32}}
    with pytest.raises(DimensionMismatch) as caught:
        async with Engine.open(db_path, config=other):
            pass
    assert "64" in str(caught.value) and "32" in str(caught.value)


def test_missing_extension_loading_says_what_to_install(monkeypatch: pytest.MonkeyPatch,
                                                        tmp_path: Path) -> None:
    class NoExtensions:
        def __init__(self, real):
            self._real = real

        def __getattr__(self, name):
            if name == "enable_load_extension":
                raise AttributeError(name)
            return getattr(self._real, name)

    real_module = connection.sqlite_module()

    class Module:
        @staticmethod
        def connect(*args, **kwargs):
            return NoExtensions(real_module.connect(*args, **kwargs))

    monkeypatch.setattr(connection, "sqlite_module", lambda: Module)
    with pytest.raises(ExtensionMissing, match="pip install"):
        connection.open_connection(tmp_path / "x.db", read_only=False, busy_timeout_ms=100)


def test_missing_fts5_says_what_to_install() -> None:
    conn = sqlite3.connect(":memory:")

    class NoFts:
        def execute(self, sql, *args):
            if "fts5" in sql:
                raise sqlite3.OperationalError("no such module: fts5")
            return conn.execute(sql, *args)

    with pytest.raises(ExtensionMissing, match="FTS5.*sqlean"):
        connection._check_fts5(NoFts())


def test_split_statements_keeps_triggers_whole() -> None:
    script = """-- a comment
CREATE TABLE a(x);
CREATE TRIGGER t AFTER INSERT ON a BEGIN
    INSERT INTO a VALUES (1);
    INSERT INTO a VALUES (2);
END;
"""
    statements = split_statements(script)
    assert len(statements) == 2
    assert statements[1].startswith("CREATE TRIGGER") and statements[1].endswith("END;")


async def test_connections_read_through_the_configured_memory_map(db_path: Path) -> None:
    mapped = {"embedding": DETERMINISTIC["embedding"], "storage": {"mmap_mb": 64}}
    unmapped = {"embedding": DETERMINISTIC["embedding"], "storage": {"mmap_mb": 0}}
    for config, expected in ((mapped, 64 * 1024 * 1024), (unmapped, 0)):
        async with Engine.open(db_path, config=config) as engine:
            sizes = {await engine.backend._db.read(
                lambda conn: conn.execute("PRAGMA mmap_size").fetchone()[0])}
            sizes.add(await engine.backend._db.write(
                lambda conn: conn.execute("PRAGMA mmap_size").fetchone()[0]))
            assert sizes == {expected}
