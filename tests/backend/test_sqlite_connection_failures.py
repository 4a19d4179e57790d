"""The tests of tests/test_readonly_diskfull.py that read or stage the memory's tables directly
(connections that cannot commit)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from core.storage.sqlite import refusals
from core.storage.sqlite.connection import open_connection, transaction


async def test_a_failed_write_surfaces_its_own_error_not_the_rollbacks(tmp_path: Path) -> None:
    """SQLite rolls the transaction back itself on SQLITE_FULL; a second ROLLBACK used to
    raise "cannot rollback - no transaction is active" in place of the real error."""
    conn = open_connection(tmp_path / "t.db", read_only=False, busy_timeout_ms=1000)
    try:
        conn.execute("CREATE TABLE t(x)")
        conn.execute("PRAGMA max_page_count = 1")
        with pytest.raises(Exception, match="database or disk is full"), transaction(conn):
            conn.execute("INSERT INTO t VALUES (zeroblob(100000))")
        assert not conn.in_transaction
        with transaction(conn):
            conn.execute("INSERT INTO t VALUES (1)")
        assert conn.execute("SELECT count(*) FROM t").fetchone() == (1,)
    finally:
        conn.close()


def test_a_connection_that_cannot_commit_is_recognised() -> None:
    """What sqlite-vec 0.1.9 leaves behind when an insert fails on a full disk: a blob handle
    open, so every later COMMIT on that connection fails. (This driver has no blob handles to
    leave open, so a stand-in connection answers as SQLite then does.)"""

    class Stuck:
        in_transaction = False
        statements: list[str] = []

        def execute(self, sql: str) -> None:
            self.statements.append(sql)
            if sql == "BEGIN":
                self.in_transaction = True
            elif sql == "COMMIT":
                raise RuntimeError("cannot commit transaction - SQL statements in progress")
            elif sql == "ROLLBACK":
                self.in_transaction = False

    stuck = Stuck()
    assert refusals.wedged(stuck)
    assert stuck.statements == ["BEGIN", "COMMIT", "ROLLBACK"]
    assert not stuck.in_transaction


async def test_a_writer_left_unable_to_commit_is_replaced(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from core.storage.sqlite import connection

    db = connection.Database(tmp_path / "w.db", read_only=False, reader_pool_size=1,
                             busy_timeout_ms=1000)
    db.open_writer()
    assert db.writer is not None
    try:
        def setup(conn: Any) -> None:
            with transaction(conn):
                conn.execute("CREATE TABLE t(x)")
                conn.execute("INSERT INTO t VALUES (1)")

        def fail(conn: Any) -> None:
            conn.execute("SELECT no_such_function()")

        def insert(conn: Any) -> int:
            with transaction(conn):
                conn.execute("INSERT INTO t VALUES (2)")
            return conn.execute("SELECT count(*) FROM t").fetchone()[0]

        await db.write(setup)
        first = db.writer.conn
        monkeypatch.setattr(refusals, "wedged", lambda conn: True)
        with pytest.raises(Exception, match="no such function"):
            await db.write(fail)
        monkeypatch.undo()
        assert db.writer.conn is not first  # a fresh connection, fully set up
        assert await db.write(insert) == 2
        assert await db.write(lambda conn: conn.execute("PRAGMA journal_mode").fetchone()[0]) \
            == "wal"
    finally:
        db.close()
