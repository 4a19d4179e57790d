"""Copying a whole memory table by table, the way ``workbench migrate`` moves it between
backends: the tables in the order their parents come first, each read in pages in the order
of its key and written back page by page.

Rows travel as dicts of portable values: the column names are the same on every backend
(core/storage/pg/migrations/0001_initial.sql mirrors the SQLite schema), text is exactly as
stored, numbers are Python ints and floats, a vector is its float32 bytes. What each
backend derives from a row is rebuilt on its side, never copied: SQLite's ``chunks_fts``
rows (:mod:`core.storage.fts_rows`) and PostgreSQL's generated ``chunks.fts``.

Two columns stand for something that is not a column on one side:

- ``schedules.row_order`` is PostgreSQL's stand-in for the rowid SQLite breaks ``created_at``
  ties with; on SQLite it is read from and written to the rowid.
- ``chunks_vec`` is read in ``chunk_id`` order through ``chunks`` (sqlite-vec's vec0 table
  answers a lookup by its key, not a range of keys).

This module holds the table list and SQLite's side; :mod:`core.storage.pg.copying` holds
PostgreSQL's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from core.errors import InvalidInput
from core.storage.fts_rows import FTS_COLUMNS, fts_rows
from core.storage.rows import COPY_TABLES, TABLES_BY_NAME, CopyTable, copy_table, row_key
from core.storage.sqlite.connection import select_in, sqlite_module, transaction
from core.storage.sqlite.events import insert_rows
from core.storage.sqlite.vectors import set_meta
from core.storage.vocabulary import RowPage, WriteResult


def copy_tables(conn: Any) -> list[str]:
    """The tables a memory is copied by, parents first."""
    return [table.name for table in COPY_TABLES]


def _has_vectors(conn: Any) -> bool:
    return conn.execute(
        "SELECT 1 FROM sqlite_master WHERE name = 'chunks_vec'").fetchone() is not None


def _column_sql(table: CopyTable) -> str:
    return ", ".join("rowid AS row_order" if table.name == "schedules" and column == "row_order"
                     else column for column in table.columns)


def _key_sql(table: CopyTable) -> str:
    return ", ".join("rowid" if table.name == "schedules" and column == "row_order"
                     else column for column in table.key)


def count_rows(conn: Any, name: str) -> int:
    """How many rows ``name`` holds (0 for chunks_vec before the vector table exists)."""
    table = copy_table(name)
    if table.name == "chunks_vec" and not _has_vectors(conn):
        return 0
    return int(conn.execute(f"SELECT count(*) FROM {table.name}").fetchone()[0])


def read_rows(conn: Any, name: str, after: Sequence[Any] | None, limit: int) -> RowPage:
    """Up to ``limit`` rows of ``name`` whose key comes after ``after`` (None: from the
    start), in key order."""
    table = copy_table(name)
    if table.name == "chunks_vec":
        return _read_vectors(conn, after, limit)
    keys = _key_sql(table)
    where = ""
    params: list[Any] = []
    if after is not None:
        where = f" WHERE ({keys}) > ({', '.join('?' * len(table.key))})"
        params = list(after)
    cursor = conn.execute(f"SELECT {_column_sql(table)} FROM {table.name}{where}"
                          f" ORDER BY {keys} LIMIT ?", [*params, limit])
    rows = [dict(zip(table.columns, row, strict=True)) for row in cursor.fetchall()]
    return RowPage(rows, row_key(table, rows[-1]) if len(rows) == limit else None)


def _read_vectors(conn: Any, after: Sequence[Any] | None, limit: int) -> RowPage:
    """A page of vectors, walked through the chunks' key; each found by its chunk_id."""
    if not _has_vectors(conn):
        return RowPage([], None)
    chunk_ids = [row[0] for row in conn.execute(
        "SELECT chunk_id FROM chunks WHERE chunk_id > ? ORDER BY chunk_id LIMIT ?",
        (after[0] if after else "", limit)).fetchall()]
    rows = []
    for chunk_id in chunk_ids:
        found = conn.execute(
            "SELECT chunk_id, agent_identity, session_id, embedding_blob, embedding_model"
            " FROM chunks_vec WHERE chunk_id = ?", (chunk_id,)).fetchone()
        if found is not None:
            rows.append(dict(zip(TABLES_BY_NAME["chunks_vec"].columns, found, strict=True)))
    return RowPage(rows, [chunk_ids[-1]] if len(chunk_ids) == limit else None)


def write_rows(conn: Any, name: str, rows: Sequence[dict[str, Any]],
               mark: tuple[str, str] | None = None) -> WriteResult:
    """Insert a page of ``name`` and set the memory_meta entry ``mark`` in one transaction,
    leaving the rows already there as they are. A chunk's full-text row is made with it;
    vectors need the vector table (``ensure_vector_table``) first."""
    table = copy_table(name)
    result = WriteResult()
    with transaction(conn):
        if mark is not None:
            set_meta(conn, *mark)
        present = _present_keys(conn, table, rows)
        fresh = [row for row in rows if tuple(row_key(table, row)) not in present]
        result.present = len(rows) - len(fresh)
        if not fresh:
            return result
        if table.name == "chunks_vec" and not _has_vectors(conn):
            raise InvalidInput("the destination has no vector table; fix its dimension "
                               "(ensure_vector_table) before copying vectors")
        integrity_error = sqlite_module().IntegrityError
        try:
            with transaction(conn):  # a savepoint: a refused row undoes this page alone
                _insert(conn, table, fresh)
            result.written = len(fresh)
        except integrity_error:
            for row in fresh:  # again row by row, to tell which rows were refused and why
                try:
                    with transaction(conn):
                        _insert(conn, table, [row])
                except integrity_error as exc:
                    result.refused.append((row_key(table, row), _integrity_reason(exc)))
                else:
                    result.written += 1
    return result


def _insert(conn: Any, table: CopyTable, rows: Sequence[dict[str, Any]]) -> None:
    columns = ["rowid" if table.name == "schedules" and column == "row_order" else column
               for column in table.columns]
    insert_rows(conn, table.name, columns,
                [[row[column] for column in table.columns] for row in rows])
    if table.name == "chunks_vec":  # vec0 takes no trigger: its change is logged here
        conn.executemany("INSERT INTO chunk_changes(fts_rowid, op) SELECT fts_rowid, 'vector'"
                         " FROM chunks WHERE chunk_id = ?", [(row["chunk_id"],) for row in rows])
    if table.name == "chunks":
        insert_rows(conn, "chunks_fts", FTS_COLUMNS, fts_rows(
            (row["fts_rowid"], row["session_id"], row["chunk_text"], row["scope_token"],
             row["context_text"]) for row in rows))


def _integrity_reason(exc: Exception) -> str:
    if "FOREIGN KEY" in str(exc):
        return "the row it belongs to was not copied"
    return f"the destination refused it ({exc})"


def _present_keys(conn: Any, table: CopyTable, rows: Sequence[dict[str, Any]],
                  ) -> set[tuple[Any, ...]]:
    """The keys among ``rows`` that the table already holds."""
    if not rows:
        return set()
    if len(table.key) == 1:
        column = _key_sql(table)
        if table.name == "chunks_vec":  # vec0: one lookup per key
            if not _has_vectors(conn):
                return set()
            return {(row["chunk_id"],) for row in rows if conn.execute(
                "SELECT 1 FROM chunks_vec WHERE chunk_id = ?", (row["chunk_id"],)).fetchone()}
        return {(value,) for (value,) in select_in(
            conn, f"SELECT {column} FROM {table.name} WHERE {column} IN",
            [row[table.key[0]] for row in rows])}
    condition = " AND ".join(f"{column} = ?" for column in table.key)
    return {tuple(row_key(table, row)) for row in rows if conn.execute(
        f"SELECT 1 FROM {table.name} WHERE {condition}", row_key(table, row)).fetchone()}


