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

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from core.errors import InvalidInput
from core.storage.fts_rows import FTS_COLUMNS, fts_rows
from core.storage.sqlite.connection import select_in, sqlite_module, transaction
from core.storage.sqlite.events import insert_rows
from core.storage.sqlite.vectors import set_meta


@dataclass(frozen=True)
class CopyTable:
    """One table as ``migrate`` copies it: its key (the page order) and its columns."""

    name: str
    key: tuple[str, ...]
    columns: tuple[str, ...]


@dataclass
class RowPage:
    """A page of rows and the key to read the next page after (None: the table is done).

    A page may hold fewer rows than asked, even none, before the table is done (a page of
    chunks of which none has a vector)."""

    rows: list[dict[str, Any]]
    after: list[Any] | None


@dataclass
class WriteResult:
    """What a page's write did: rows stored now, rows already there, and rows refused with
    the reason (the destination cannot hold them as they are)."""

    written: int = 0
    present: int = 0
    refused: list[tuple[list[Any], str]] = field(default_factory=list)


COPY_TABLES: tuple[CopyTable, ...] = (
    CopyTable("memory_meta", ("key",), ("key", "value")),
    CopyTable("sessions", ("session_id",),
              ("session_id", "agent_identity", "created_at", "updated_at")),
    CopyTable("conversation_events", ("session_id", "sequence"),
              ("session_id", "sequence", "payload_json", "created_at", "role", "importance",
               "consolidated_at")),
    CopyTable("session_state", ("session_id",), ("session_id", "state_json", "updated_at")),
    CopyTable("files", ("file_id",),
              ("file_id", "session_id", "source_uri", "content_hash", "metadata_json",
               "created_at")),
    CopyTable("chunks", ("fts_rowid",),
              ("chunk_id", "session_id", "chunk_text", "content_hash", "sequence_start",
               "sequence_end", "metadata_json", "fts_rowid", "scope_token", "embedding_status",
               "embedding_error", "embedding_attempts", "created_at", "context_text",
               "note_id")),
    CopyTable("chunks_vec", ("chunk_id",),
              ("chunk_id", "agent_identity", "session_id", "embedding_blob", "embedding_model")),
    CopyTable("notes", ("note_id",),
              ("note_id", "namespace", "session_id", "name", "content", "kind", "category",
               "tags_json", "source", "importance", "event_sequence", "created_at",
               "updated_at", "schema_version")),
    CopyTable("note_names", ("namespace", "name"), ("namespace", "name", "note_id", "is_alias")),
    CopyTable("note_tags", ("note_id", "tag"), ("note_id", "namespace", "tag")),
    CopyTable("facts", ("id",),
              ("id", "category", "key", "value", "source", "created_at", "updated_at",
               "namespace")),
    CopyTable("archives", ("session_id", "marker_sequence"),
              ("session_id", "marker_sequence", "archive_name", "namespace", "note_id",
               "first_sequence", "last_sequence", "message_count", "archived_at", "summarizer",
               "file_path", "file_error")),
    CopyTable("framework_items", ("session_id", "sequence"),
              ("session_id", "sequence", "framework", "item_key", "raw_json", "removed_at")),
    CopyTable("langgraph_checkpoints", ("session_id", "checkpoint_ns", "checkpoint_id"),
              ("session_id", "checkpoint_ns", "checkpoint_id", "parent_checkpoint_id",
               "checkpoint_type", "checkpoint", "metadata_json", "created_at")),
    CopyTable("langgraph_writes", ("session_id", "checkpoint_ns", "checkpoint_id", "task_id",
                                   "idx"),
              ("session_id", "checkpoint_ns", "checkpoint_id", "task_id", "task_path", "idx",
               "channel", "value_type", "value")),
    CopyTable("schedules", ("row_order",),
              ("schedule_id", "user_id", "name", "goal", "cadence_json", "notification_policy",
               "status", "created_at", "updated_at", "next_run_at", "last_run_at",
               "last_run_status", "consecutive_failures", "channel_id", "channel_context_id",
               "claimed_by", "claim_expires_at", "status_reason", "row_order")),
    CopyTable("schedule_runs", ("run_id",),
              ("run_id", "schedule_id", "started_at", "finished_at", "status",
               "output_summary", "output", "turn_count", "cost", "notified")),
    CopyTable("retrieval_log", ("log_id",),
              ("log_id", "created_at", "caller", "scope_kind", "scope_value", "query",
               "params_json", "results_json", "timings_json")),
    CopyTable("relevance_judgments", ("judgment_id",),
              ("judgment_id", "scope_kind", "scope_value", "query", "chunk_id", "grade",
               "created_at", "updated_at")),
)

TABLES_BY_NAME = {table.name: table for table in COPY_TABLES}


def copy_table(name: str) -> CopyTable:
    """The table ``name`` as copied; ``InvalidInput`` for a table that is not copied."""
    try:
        return TABLES_BY_NAME[name]
    except KeyError:
        raise InvalidInput(f"{name!r} is not a table a memory is copied by; the tables are "
                           + ", ".join(TABLES_BY_NAME)) from None


def row_key(table: CopyTable, row: dict[str, Any]) -> list[Any]:
    """The row's key values, in the table's key order."""
    return [row[column] for column in table.key]


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


def encode_key(after: Sequence[Any] | None) -> str:
    """A resume key as memory_meta stores it."""
    return json.dumps(None if after is None else list(after), ensure_ascii=False)


def decode_key(value: str | None) -> list[Any] | None:
    """A resume key read back from memory_meta."""
    return None if value is None else json.loads(value)
