"""LangGraph's long-term store: a ``SqliteStore`` file or a ``PostgresStore`` database.

Every row of the source's ``store`` table (``prefix``, ``key``, ``value``, ``created_at``,
``updated_at``, ``expires_at``) becomes the note :class:`WorkbenchStore` would have written
for that item (:mod:`core.notes.store_items`): the prefix's ``.``-separated labels and the
key make its name, the value its JSON content, its source is ``langgraph`` and its tags are
the tuple's paths; it keeps the row's ``created_at`` and ``updated_at``. So a
``WorkbenchStore`` over the memory returns the items the source's store returned. Note ids
keep the store's order: tuples by their first item (a tuple the memory already holds keeps
its place), items by ``created_at``.

Counted as ``items``, landed by :func:`~core.importers.notes.land_notes` in one transaction:
an item whose note already holds the same value is "already"; skipped, with why: an
expired row (its ``expires_at`` is past: LangGraph no longer returns it), a value that is
not a JSON object, a prefix LangGraph refuses (empty, an empty label, a root label
``langgraph``), a name over the note name limit, a name another note holds.

The tables are read directly (``sqlite3`` / psycopg): importing needs no LangGraph. A
SQLite file is opened read-only, a database in read-only transactions.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.clock import format_utc, now
from core.errors import InvalidInput
from core.importers.notes import PlannedNote, land_notes
from core.importers.report import ImportReport, Progress
from core.importers.source import (
    engine_time,
    is_url,
    open_source,
    postgres_source,
    shown_source,
)
from core.inputs import shown
from core.notes import store_items

if TYPE_CHECKING:
    from core.engine import Engine

FORMAT = "langgraph-store"
KIND = "items"
SHAPE = "a LangGraph SqliteStore file"
COLUMNS = ("prefix", "key", "value", "created_at", "updated_at")
EXPIRES = "expires_at"  # added by a later migration of LangGraph's stores: may be missing


@dataclass(frozen=True)
class SourceItem:
    """One row of the source's ``store`` table, as its driver returns it."""

    prefix: Any
    key: Any
    value: Any
    created_at: Any
    updated_at: Any
    expires_at: Any = None

    @property
    def where(self) -> str:
        return f"item {shown(self.key)} in namespace {shown(self.prefix)}"


def check(source: str | Path) -> None:
    """Refuse a source that is not a SqliteStore file or a PostgresStore database
    (``InvalidInput``), touching no memory file."""
    if is_url(source):
        with postgres_source(str(source), "LangGraph store") as conn:
            _require_postgres(conn)
        return
    with open_source(source) as database:
        database.require("store", COLUMNS, SHAPE)


async def import_langgraph_store(engine: Engine, source: str | Path, *,
                                 namespace: str | None = None,
                                 progress: Progress | None = None) -> ImportReport:
    """Import a LangGraph store's items (see the module docstring) into ``namespace``
    (default: the engine's agent)."""
    import asyncio

    namespace = engine.notes.namespace(namespace)
    report = ImportReport(shown_source(source), FORMAT, str(engine.location), namespace)
    report.kind(KIND)
    rows = (await asyncio.to_thread(_read_postgres, str(source)) if is_url(source)
            else _read_sqlite(source))
    stamps: dict[tuple[str, ...], int] = {}
    planned: list[PlannedNote] = []
    moment = format_utc(now())
    for row in rows:
        try:
            planned.append(await _planned(engine, namespace, row, moment, stamps))
        except InvalidInput as exc:
            report.skip(KIND, row.where, str(exc))
    await land_notes(engine, planned, report, namespace=namespace, kind=KIND)
    if progress is not None:
        progress(len(rows), len(rows))
    report.remark("items keep the store's created_at and updated_at; expired ones are "
                  "skipped, as LangGraph no longer returns them")
    return report


async def _planned(engine: Engine, namespace: str, row: SourceItem, moment: str,
                   stamps: dict[tuple[str, ...], int]) -> PlannedNote:
    """The note of one row, or ``InvalidInput`` saying why the row cannot be an item."""
    expires = engine_time(_text(row.expires_at))
    if expires is not None and expires <= moment:
        raise InvalidInput(f"it expired at {expires} (its TTL ran out), so LangGraph no "
                           "longer returns it")
    labels = _labels(row.prefix)
    if not isinstance(row.key, str) or not row.key:
        raise InvalidInput(f"its key {shown(row.key)} is not a non-empty string")
    name = store_items.item_name(labels, row.key)
    where = f"key {shown(row.key)} in namespace {shown(labels)}"
    content = store_items.item_content(_value(row.value), where)
    if labels not in stamps:
        stamps[labels] = await _namespace_stamp(engine, namespace, labels)
    limits = engine.config.notes
    created = engine_time(_text(row.created_at))
    return PlannedNote(
        where=row.where, name=name, content=content, source=store_items.SOURCE,
        tags=store_items.prefix_tags(labels, limits.max_tags, limits.max_tag_chars),
        note_id=store_items.item_note_id(stamps[labels]), created_at=created,
        updated_at=engine_time(_text(row.updated_at)) or created)


def _labels(prefix: Any) -> tuple[str, ...]:
    """A row's namespace tuple, refused as LangGraph refuses it."""
    if not isinstance(prefix, str) or not prefix:
        raise InvalidInput(f"its namespace {shown(prefix)} is empty or not text")
    labels = tuple(prefix.split("."))
    if any(not label or "\x00" in label for label in labels):
        raise InvalidInput(f"namespace {shown(labels)} has an empty label or a NUL byte, "
                           "which LangGraph refuses")
    if labels[0] == "langgraph":
        raise InvalidInput(f"namespace {shown(labels)} has the root label 'langgraph', "
                           "which LangGraph reserves")
    return labels


def _value(value: Any) -> Any:
    """A row's value as a JSON object (PostgreSQL's jsonb arrives decoded)."""
    if isinstance(value, dict):
        return value
    try:
        text = value.decode("utf-8") if isinstance(value, bytes) else value
        decoded = json.loads(text) if isinstance(text, str) else None
    except (UnicodeDecodeError, ValueError):
        raise InvalidInput(f"its value {shown(value)} is not JSON") from None
    if not isinstance(decoded, dict):
        raise InvalidInput(f"its value {shown(value)} is not a JSON object; LangGraph store "
                           "values are dicts")
    return decoded


def _text(moment: Any) -> Any:
    """A timestamp column as :func:`engine_time` reads it (PostgreSQL gives datetimes)."""
    return moment.isoformat() if hasattr(moment, "isoformat") else moment


async def _namespace_stamp(engine: Engine, namespace: str, labels: tuple[str, ...]) -> int:
    """The stamp of the tuple's items in the memory (a new one when it holds none), so an
    imported item joins its tuple where the store already lists it."""
    siblings = await engine.notes.under(namespace, store_items.SOURCE,
                                        store_items.namespace_path(labels) + "/",
                                        children_only=True, limit=1)
    if siblings:
        return store_items.namespace_stamp(siblings[0].note_id)
    return store_items.new_stamp()


def _read_sqlite(path: str | Path) -> list[SourceItem]:
    """A SqliteStore file's rows, oldest first."""
    with open_source(path) as database:
        database.require("store", COLUMNS, SHAPE)
        expires = EXPIRES if EXPIRES in database.columns("store") else "NULL"
        return [SourceItem(**row) for row in database.rows(
            f"SELECT {', '.join(COLUMNS)}, {expires} AS expires_at FROM store"
            " ORDER BY created_at, rowid")]


def _require_postgres(conn: Any) -> list[str]:
    """The ``store`` table's columns, or ``InvalidInput`` when it is not a PostgresStore's."""
    found = [row["column_name"] for row in conn.execute(
        "SELECT column_name FROM information_schema.columns WHERE table_name = 'store'"
        " AND table_schema = current_schema()")]
    if not found:
        raise InvalidInput("the database is not a LangGraph PostgresStore's: it has no "
                           "'store' table")
    missing = [c for c in COLUMNS if c not in found]
    if missing:
        raise InvalidInput(f"the database is not a LangGraph PostgresStore's: table 'store' "
                           f"has no column {', '.join(map(repr, missing))}")
    return found


def _read_postgres(url: str) -> list[SourceItem]:
    """A PostgresStore database's rows, oldest first."""
    with postgres_source(url, "LangGraph store") as conn:
        expires = EXPIRES if EXPIRES in _require_postgres(conn) else "NULL"
        return [SourceItem(**row) for row in conn.execute(
            f"SELECT {', '.join(COLUMNS)}, {expires} AS expires_at FROM store"
            " ORDER BY created_at, prefix, key")]
