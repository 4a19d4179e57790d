"""Copying a whole memory, PostgreSQL's side (the table list and the row form are in
:mod:`core.storage.sqlite.copying`).

What differs from SQLite's side:

- Vectors are read as ``real[]`` and handed on as float32 bytes, and written back from
  them; the ``vector`` column takes them once its dimension is fixed (``vector_index``).
- Text holding a NUL character cannot be stored by PostgreSQL; such a row is refused with
  that reason (and any row whose parent was refused is refused in turn), never dropped
  silently. A page is inserted in one statement; only a page with a refused row is
  inserted again row by row, each under a savepoint, to tell which rows were refused.
- Ids SQLite numbers itself (``files.file_id``, ``chunks.fts_rowid``, ``facts.id``, the
  log's and judgments' ids, ``schedules.row_order``) are identity columns here: after a
  page lands, each identity is moved past the largest id copied, so the next row written
  by the engine takes a fresh one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import psycopg
from psycopg import AsyncConnection, sql

from core.storage.pg.vector_index import set_meta
from core.storage.rows import COPY_TABLES, CopyTable, copy_table, row_key
from core.storage.vocabulary import RowPage, WriteResult

Conn = AsyncConnection[Any]

# The identity column of each table that has one.
IDENTITIES = {"files": "file_id", "chunks": "fts_rowid", "facts": "id",
              "retrieval_log": "log_id", "relevance_judgments": "judgment_id",
              "schedules": "row_order"}

NUL_REASON = "it holds a NUL character (U+0000), which PostgreSQL text cannot store"


async def copy_tables(conn: Conn) -> list[str]:
    """The tables a memory is copied by, parents first."""
    return [table.name for table in COPY_TABLES]


async def count_rows(conn: Conn, name: str) -> int:
    """How many rows ``name`` holds."""
    table = copy_table(name)
    cursor = await conn.execute(
        sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(table.name)))
    row = await cursor.fetchone()
    assert row is not None
    return int(row[0])


def _select_list(table: CopyTable) -> sql.Composable:
    return sql.SQL(", ").join(
        sql.SQL("embedding_blob::real[]") if column == "embedding_blob"
        else sql.Identifier(column) for column in table.columns)


async def read_rows(conn: Conn, name: str, after: Sequence[Any] | None,
                    limit: int) -> RowPage:
    """Up to ``limit`` rows of ``name`` whose key comes after ``after``, in key order."""
    table = copy_table(name)
    keys = sql.SQL(", ").join(sql.Identifier(column) for column in table.key)
    where: sql.Composable = sql.SQL("")
    params: list[Any] = []
    if after is not None:
        where = sql.SQL(" WHERE ({}) > ({})").format(
            keys, sql.SQL(", ").join(sql.Placeholder() * len(table.key)))
        params = list(after)
    cursor = await conn.execute(
        sql.SQL("SELECT {} FROM {}{} ORDER BY {} LIMIT %s").format(
            _select_list(table), sql.Identifier(table.name), where, keys),
        [*params, limit])
    rows = [dict(zip(table.columns, row, strict=True)) for row in await cursor.fetchall()]
    if table.name == "chunks_vec":
        for row in rows:
            row["embedding_blob"] = np.asarray(row["embedding_blob"], dtype=np.float32).tobytes()
    return RowPage(rows, row_key(table, rows[-1]) if len(rows) == limit else None)


def _holds_nul(row: dict[str, Any]) -> bool:
    return any(isinstance(value, str) and "\x00" in value for value in row.values())


def _insert_sql(table: CopyTable) -> sql.Composed:
    values = sql.SQL(", ").join(
        sql.SQL("%s::real[]::vector") if column == "embedding_blob" else sql.Placeholder()
        for column in table.columns)
    return sql.SQL("INSERT INTO {} ({}) VALUES ({}) ON CONFLICT DO NOTHING").format(
        sql.Identifier(table.name),
        sql.SQL(", ").join(sql.Identifier(column) for column in table.columns), values)


def _values(table: CopyTable, row: dict[str, Any]) -> list[Any]:
    return [np.frombuffer(row[column], dtype=np.float32).tolist()
            if column == "embedding_blob" else row[column] for column in table.columns]


async def write_rows(conn: Conn, name: str, rows: Sequence[dict[str, Any]],
                     mark: tuple[str, str] | None = None) -> WriteResult:
    """Insert a page of ``name`` and set the memory_meta entry ``mark`` in the caller's
    transaction, leaving the rows already there as they are."""
    table = copy_table(name)
    result = WriteResult()
    if mark is not None:
        await set_meta(conn, *mark)
    storable = []
    for row in rows:
        if _holds_nul(row):
            result.refused.append((row_key(table, row), NUL_REASON))
        else:
            storable.append(row)
    statement = _insert_sql(table)
    try:
        # A savepoint: a refused row undoes this page alone.
        async with conn.transaction(), conn.cursor() as cursor:
            await cursor.executemany(statement, [_values(table, row) for row in storable])
            written = max(cursor.rowcount, 0)
        result.written = written
        result.present = len(storable) - written
    except (psycopg.IntegrityError, psycopg.DataError):
        await _write_one_by_one(conn, table, storable, statement, result)
    await _move_identity(conn, table)
    return result


async def _write_one_by_one(conn: Conn, table: CopyTable, rows: Sequence[dict[str, Any]],
                            statement: sql.Composed, result: WriteResult) -> None:
    """Insert each row under its own savepoint, recording why each refused one was."""
    for row in rows:
        try:
            async with conn.transaction():
                cursor = await conn.execute(statement, _values(table, row))
        except psycopg.IntegrityError as exc:
            result.refused.append((row_key(table, row), _integrity_reason(exc)))
            continue
        except psycopg.DataError as exc:
            result.refused.append((row_key(table, row), " ".join(str(exc).split())))
            continue
        if cursor.rowcount == 1:
            result.written += 1
        else:
            result.present += 1


def _integrity_reason(exc: psycopg.IntegrityError) -> str:
    if isinstance(exc, psycopg.errors.ForeignKeyViolation):
        return "the row it belongs to was not copied"
    return f"the destination refused it ({' '.join(str(exc).split())})"


async def _move_identity(conn: Conn, table: CopyTable) -> None:
    """Move the table's identity past its largest id, so new rows do not collide."""
    column = IDENTITIES.get(table.name)
    if column is None:
        return
    await conn.execute(
        sql.SQL("SELECT setval(pg_get_serial_sequence({}, {}), max({})) FROM {}"
                " HAVING max({}) IS NOT NULL").format(
            sql.Literal(table.name), sql.Literal(column), sql.Identifier(column),
            sql.Identifier(table.name), sql.Identifier(column)))
