"""Reading an import's source: another program's SQLite file (read-only) or a text file.

The source is never the memory file being imported into: that one is only reached through
the engine. A source SQLite file is opened read-only (``mode=ro``) on a plain connection
(no extensions: reading another program's tables needs none, and a libSQL file's vector
index is never used), so an import can never change it, and every driver error becomes
``InvalidInput`` naming the file.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.request import pathname2url

from core.clock import format_utc
from core.errors import InvalidInput
from core.storage import sqlite_module

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class SourceDatabase:
    """A foreign SQLite file, read-only: which tables and columns it has, and its rows."""

    def __init__(self, path: Path, conn: Any) -> None:
        self.path = path
        self._conn = conn
        self._error = sqlite_module().Error
        self.tables = {row[0] for row in self._query(
            "SELECT name FROM sqlite_master WHERE type = 'table'")}

    def _query(self, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
        try:
            return self._conn.execute(sql, params).fetchall()
        except self._error as exc:
            raise InvalidInput(f"cannot read {self.path}: {exc}") from None

    def columns(self, table: str) -> list[str]:
        """The table's column names, in order (empty when there is no such table)."""
        if table not in self.tables or not _IDENTIFIER.fullmatch(table):
            return []
        return [row[1] for row in self._query(f'PRAGMA table_info("{table}")')]

    def require(self, table: str, columns: tuple[str, ...], shape: str) -> None:
        """Refuse a file that lacks ``table`` or one of its ``columns``."""
        if table not in self.tables:
            raise InvalidInput(f"{self.path} is not {shape}: it has no {table!r} table")
        missing = [c for c in columns if c not in self.columns(table)]
        if missing:
            raise InvalidInput(f"{self.path} is not {shape}: table {table!r} has no "
                               f"column {', '.join(map(repr, missing))}")

    def rows(self, sql: str, params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
        """The rows of a query, each as a dict by column name."""
        try:
            cursor = self._conn.execute(sql, params)
            names = [d[0] for d in cursor.description]
            return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
        except self._error as exc:
            raise InvalidInput(f"cannot read {self.path}: {exc}") from None

    def scalar(self, sql: str, params: tuple[Any, ...] = ()) -> Any:
        """The first column of the first row of a query (None when there is none)."""
        found = self._query(sql, params)
        return found[0][0] if found else None


@contextlib.contextmanager
def open_source(path: str | Path) -> Iterator[SourceDatabase]:
    """Open a source SQLite file read-only; ``InvalidInput`` when it is missing or is not
    an SQLite database."""
    target = Path(path).expanduser()
    if not target.is_file():
        raise InvalidInput(f"cannot read {target}: no such file")
    sqlite = sqlite_module()
    uri = f"file:{pathname2url(str(target.resolve()))}?mode=ro"
    try:
        conn = sqlite.connect(uri, uri=True, isolation_level=None, check_same_thread=False,
                              timeout=5)
    except sqlite.Error as exc:
        raise InvalidInput(f"cannot open {target}: {exc}") from None
    try:
        try:
            database = SourceDatabase(target, conn)
        except InvalidInput:
            raise InvalidInput(f"{target} is not an SQLite database") from None
        yield database
    finally:
        conn.close()


def read_text(path: str | Path) -> str:
    """A UTF-8 text file's content; ``InvalidInput`` when it cannot be read or decoded."""
    target = Path(path).expanduser()
    try:
        data = target.read_bytes()
    except OSError as exc:
        raise InvalidInput(f"cannot read {target}: {exc.strerror or exc}") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise InvalidInput(f"{target} line {line}: not UTF-8 text ({exc.reason})") from None


def engine_time(value: Any) -> str | None:
    """A source timestamp as the engine writes them (RFC 3339 UTC, milliseconds), or None
    when it is missing or unreadable.

    Reads ISO 8601 / RFC 3339 text (``T`` or a space between date and time, ``Z`` or an
    offset; none is UTC, as SQLite's ``CURRENT_TIMESTAMP`` is) and numbers of seconds (or
    milliseconds, when too large for seconds) since the epoch.
    """
    if isinstance(value, bool) or value is None:
        return None
    try:
        if isinstance(value, int | float):
            seconds = value / 1000 if abs(value) > 1e11 else value
            return format_utc(datetime.fromtimestamp(seconds, UTC))
        if isinstance(value, str) and value.strip():
            text = value.strip()
            if text.endswith(("Z", "z")):
                text = text[:-1] + "+00:00"
            return format_utc(datetime.fromisoformat(text))
    except (ValueError, OverflowError, OSError):
        return None
    return None


def is_url(source: str | Path) -> bool:
    """Whether an import source is a PostgreSQL database's URL rather than a file."""
    return str(source).startswith(("postgresql://", "postgres://"))


def shown_source(source: str | Path) -> str:
    """The source as a report shows it (a URL without its password)."""
    if is_url(source):
        from core.locations import parse_location

        return str(parse_location(str(source)))
    return str(source)


class postgres_source:  # noqa: N801  (a context manager named as what it opens)
    """A read-only connection to another program's PostgreSQL database (autocommit, rows as
    dicts, every transaction read-only, so an import can never change it);
    ``InvalidInput`` when it cannot be reached."""

    def __init__(self, url: str, what: str) -> None:
        self._url = url
        self._what = what
        self._conn: Any = None

    def __enter__(self) -> Any:
        import psycopg
        from psycopg.rows import dict_row

        try:
            self._conn = psycopg.connect(self._url, autocommit=True, row_factory=dict_row,
                                         options="-c default_transaction_read_only=on")
        except psycopg.Error as exc:
            reason = " ".join(str(exc).split()) or type(exc).__name__
            raise InvalidInput(f"cannot connect to the {self._what} database: "
                               f"{reason[:100]}") from None
        return self._conn

    def __exit__(self, *exc: object) -> None:
        self._conn.close()
