"""Move a whole memory between backends (a SQLite file, a PostgreSQL database), either way.

:func:`migrate` copies every table the backends share (``Backend.copy_tables``, parents
first) page by page, with ids, sequences, original times and metadata as stored. Nothing is
re-derived but what each backend derives itself (SQLite's full-text rows, PostgreSQL's
tsvector), and vectors are copied, not re-embedded, when the destination has none yet or
has the source's model. With another model (or dimension) the chunks arrive pending and the
destination's embedding worker embeds them with its own model; the report says so.

Progress is kept in the destination's ``memory_meta`` (``migrate.source``, and
``migrate.<table>.after`` written in the same transaction as each page), so a run that was
interrupted resumes at the page after the last one stored. A destination that already
holds a memory, or was migrated from another source, is refused before anything is
written.

It ends by checking the copy: row counts per table on both sides, and a sample of rows
(evenly spread over each table's key order, so the same rows on every run) compared field
by field.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.errors import InvalidInput
from core.locations import Location, parse_location
from core.storage.derived.changes import LINEAGE_KEY
from core.storage.derived.saving import DATABASE_ID_KEY
from core.storage.opening import open_backend
from core.storage.rows import copy_table, decode_key, encode_key, row_key
from core.storage.vocabulary import VECTOR_IDENTITY_KEY

if TYPE_CHECKING:
    from core.config import StorageConfig
    from core.storage.backend import Backend

Progress = Callable[[str, int, int], None]
"""Called after each page: (table, rows of it read so far in this run, rows it holds)."""

SOURCE_KEY = "migrate.source"
DONE = "done"
# memory_meta keys that are not copied: the vector index's own (set when the destination's
# vector table is made), the memory's identity and change-log lineage (the destination's own,
# which its saved derived indexes are checked against) and a migration's progress (this
# one's, or the source's own).
_VECTOR_KEYS = frozenset({"embedding_dimension", "embedding_model", VECTOR_IDENTITY_KEY})
_IDENTITY_KEYS = frozenset({DATABASE_ID_KEY, LINEAGE_KEY})
# Columns a destination re-embedding the chunks itself holds its own values in.
_EMBEDDING_COLUMNS = ("embedding_status", "embedding_error", "embedding_attempts")


@dataclass
class TableCheck:
    """One table after the copy: its counts on both sides and the sampled rows that differ."""

    table: str
    source_rows: int
    destination_rows: int
    sampled: int = 0
    differing: list[str] = field(default_factory=list)
    note: str = ""

    @property
    def ok(self) -> bool:
        return self.source_rows == self.destination_rows and not self.differing


@dataclass
class MigrationReport:
    """What :func:`migrate` did and found."""

    source: str
    destination: str
    resumed: bool
    vectors: str
    tables: list[TableCheck] = field(default_factory=list)
    refused: list[tuple[str, list[Any], str]] = field(default_factory=list)
    """Rows the destination could not hold: (table, key, reason)."""

    @property
    def ok(self) -> bool:
        return not self.refused and all(check.ok for check in self.tables)


def _source_name(location: Location) -> str:
    """How the destination remembers its source: a file by its absolute path, a database by
    its URL without the password."""
    if location.is_postgres:
        return location.display
    return str(Path(location.target).expanduser().resolve())


def _copied_meta(key: str) -> bool:
    return (key not in _VECTOR_KEYS and key not in _IDENTITY_KEYS
            and not key.startswith("migrate."))


async def migrate(source: str | os.PathLike[str] | Location,
                  destination: str | os.PathLike[str] | Location, *,
                  progress: Progress | None = None, batch: int = 1000, sample: int = 50,
                  config: StorageConfig | None = None) -> MigrationReport:
    """Copy the memory at ``source`` into ``destination`` (created if need be), resuming an
    interrupted copy, then verify it. ``InvalidInput`` when the destination already holds
    another memory or was migrated from elsewhere, or both name the same memory."""
    from core.config import StorageConfig

    if batch < 1:
        raise InvalidInput("batch must be at least 1 row")
    config = config or StorageConfig()
    src_location = source if isinstance(source, Location) else parse_location(source)
    dst_location = (destination if isinstance(destination, Location)
                    else parse_location(destination))
    if _source_name(src_location) == _source_name(dst_location):
        raise InvalidInput(f"{src_location} is both the source and the destination")
    src = await open_backend(src_location, config, read_only=True)
    try:
        dst = await open_backend(dst_location, config)
        try:
            return await _migrate(src, dst, progress, batch, sample)
        finally:
            await dst.close()
    finally:
        await src.close()


async def _migrate(src: Backend, dst: Backend, progress: Progress | None, batch: int,
                   sample: int) -> MigrationReport:
    source_name = _source_name(src.location)
    marks = await _marks(dst)
    resumed = await _claim(src, dst, source_name, marks)
    copy_vectors, vectors_note = await _vector_plan(src, dst)
    report = MigrationReport(str(src.location), str(dst.location), resumed, vectors_note)
    tables = await src.copy_tables()
    missing = [table for table in tables if table not in await dst.copy_tables()]
    if missing:
        raise InvalidInput(f"{dst.location} has no table {', '.join(missing)} to copy into")
    for table in tables:
        if table == "chunks_vec" and not copy_vectors:
            continue
        await _copy_table(src, dst, table, marks.get(f"migrate.{table}.after"), copy_vectors,
                          batch, progress, report)
    for table in tables:
        report.tables.append(await _check_table(src, dst, table, copy_vectors, batch, sample))
    return report


async def _marks(dst: Backend) -> dict[str, str]:
    """The destination's migration entries in memory_meta (a handful of rows: read whole)."""
    marks: dict[str, str] = {}
    after = None
    while True:
        page = await dst.read_rows("memory_meta", after, 1000)
        marks.update((row["key"], row["value"]) for row in page.rows
                     if row["key"].startswith("migrate."))
        if (after := page.after) is None:
            return marks


async def _claim(src: Backend, dst: Backend, source_name: str,
                 marks: dict[str, str]) -> bool:
    """Mark the destination as this source's copy; True when it already was (a resume)."""
    recorded = marks.get(SOURCE_KEY)
    if recorded is not None:
        if recorded != source_name:
            raise InvalidInput(
                f"{dst.location} was migrated from {recorded}, not from {src.location}; "
                "nothing was written. Migrate into a new file or an empty database")
        return True
    for table in await dst.copy_tables():
        if table == "memory_meta":
            continue
        if await dst.count_rows(table):
            raise InvalidInput(
                f"{dst.location} already holds a memory ({table} has rows); nothing was "
                "written. Migrate into a new file or an empty database")
    await dst.write_rows("memory_meta", [], mark=(SOURCE_KEY, source_name))
    return False


async def _vector_plan(src: Backend, dst: Backend) -> tuple[bool, str]:
    """Whether vectors are copied, and the words that say what happens to them."""
    src_dimension, src_model = await src.vector_meta()
    dst_dimension, dst_model = await dst.vector_meta()
    if src_dimension is None:
        return False, "the source holds no vector index; chunks keep their embedding status"
    if dst_dimension is None:
        await dst.ensure_vector_table(src_dimension, src_model or "",
                                      await src.vector_identity())
        return True, f"copied ({src_dimension} dimensions, {src_model})"
    if dst_dimension == src_dimension and dst_model == src_model:
        return True, f"copied ({src_dimension} dimensions, {src_model})"
    return False, (f"not copied: the destination's vectors are {dst_dimension}-dimension "
                   f"from {dst_model}, the source's {src_dimension}-dimension from "
                   f"{src_model}; its chunks are left pending, for the destination's "
                   "embedding worker to embed")


def _outgoing(table: str, rows: list[dict[str, Any]],
              copy_vectors: bool) -> list[dict[str, Any]]:
    """The rows as the destination is to hold them."""
    if table == "memory_meta":
        return [row for row in rows if _copied_meta(row["key"])]
    if table == "chunks" and not copy_vectors:
        return [{**row, "embedding_status": "pending", "embedding_error": None,
                 "embedding_attempts": 0} for row in rows]
    return rows


async def _copy_table(src: Backend, dst: Backend, table: str, stored: str | None,
                      copy_vectors: bool, batch: int, progress: Progress | None,
                      report: MigrationReport) -> None:
    """Copy ``table`` from after the key ``stored`` (None: from the start), each page
    written with the key it ends at, so an interrupted copy resumes at the next page."""
    if stored == DONE:
        return
    after = decode_key(stored)
    total = await src.count_rows(table)
    done = 0
    while True:
        page = await src.read_rows(table, after, batch)
        after = page.after
        result = await dst.write_rows(
            table, _outgoing(table, page.rows, copy_vectors),
            mark=(f"migrate.{table}.after", DONE if after is None else encode_key(after)))
        report.refused.extend((table, key, reason) for key, reason in result.refused)
        done += len(page.rows)
        if progress is not None:
            progress(table, done, total)
        if after is None:
            return


def _compared(table: str, row: dict[str, Any], copy_vectors: bool) -> dict[str, Any]:
    if table == "chunks" and not copy_vectors:
        return {k: v for k, v in row.items() if k not in _EMBEDDING_COLUMNS}
    return row


async def _count(backend: Backend, table: str, batch: int) -> int:
    if table != "memory_meta":
        return await backend.count_rows(table)
    counted, after = 0, None
    while True:  # a handful of rows: read them to leave out the keys that are not copied
        page = await backend.read_rows(table, after, batch)
        counted += sum(_copied_meta(row["key"]) for row in page.rows)
        if (after := page.after) is None:
            return counted


async def _check_table(src: Backend, dst: Backend, table: str, copy_vectors: bool,
                       batch: int, sample: int) -> TableCheck:
    """Counts on both sides, and ``sample`` rows spread evenly over the source's key order
    read from both sides and compared field by field."""
    source_rows = await _count(src, table, batch)
    destination_rows = await _count(dst, table, batch)
    if table == "chunks_vec" and not copy_vectors:
        return TableCheck(table, source_rows, source_rows, note=f"not copied "
                          f"({destination_rows} embedded at the destination so far)")
    check = TableCheck(table, source_rows, destination_rows)
    step = max(1, -(-source_rows // max(1, sample)))
    index = 0
    previous: list[Any] | None = None
    picks: list[list[Any] | None] = []  # the key before each sampled row
    after: list[Any] | None = None
    while True:
        page = await src.read_rows(table, after, batch)
        for row in page.rows:
            if (table != "memory_meta" or _copied_meta(row["key"])) and index % step == 0:
                picks.append(previous)
            index += 1
            previous = row_key(copy_table(table), row)
        if (after := page.after) is None:
            break
    for before in picks[:sample]:
        ours = (await src.read_rows(table, before, 1)).rows
        theirs = (await dst.read_rows(table, before, 1)).rows
        check.sampled += 1
        if not ours:
            continue
        key = row_key(copy_table(table), ours[0])
        if not theirs or row_key(copy_table(table), theirs[0]) != key:
            check.differing.append(f"{_show_key(key)}: missing")
            continue
        left = _compared(table, ours[0], copy_vectors)
        right = _compared(table, theirs[0], copy_vectors)
        columns = [column for column in left if left[column] != right.get(column)]
        if columns:
            check.differing.append(f"{_show_key(key)}: {', '.join(columns)} differ")
    return check


def _show_key(key: Sequence[Any]) -> str:
    return "/".join(str(value) for value in key)
