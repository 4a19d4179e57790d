"""`workbench import langgraph-store`: a SqliteStore file made by LangGraph's own store
becomes notes that `WorkbenchStore` reads back as the same items (values and times); an
expired item, a value that is not a JSON object, a reserved root label and a name over the
limit are skipped with why; a second import finds everything already there.
(The PostgresStore source: tests/pg/test_pg_import_langgraph_store.py.)"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from langgraph.store.base import BaseStore, Item
from langgraph.store.sqlite import SqliteStore

from core import Engine
from core.errors import InvalidInput
from core.importers import check_source
from core.integrations.langgraph import WorkbenchStore
from workbench.cli.root import main

CONFIG = {"embedding": {"backend": "deterministic", "fallback_dimensions": 32}}
LONG_KEY = "k" * 300
PREFIXES = [("users",), ("users", "u1"), ("users", "u2"), ("docs",)]
"""Where the items are compared (the skipped rows live in other namespaces)."""
KEYS = [(("users", "u1"), "prefs"), (("users", "u1"), "name"), (("users", "u2"), "prefs"),
        (("docs",), "readme"), (("users", "u1"), "temp")]


def fill(store: BaseStore) -> None:
    """Items in several namespaces through the store itself: one overwritten, one already
    expired (a negative TTL), one whose name is too long for a note."""
    store.put(("users", "u1"), "prefs", {"theme": "dark", "size": 3})
    store.put(("users", "u1"), "name", {"text": "Ana", "langs": ["pt", "en"]})
    store.put(("users", "u2"), "prefs", {"theme": "light"})
    store.put(("docs",), "readme", {"text": "hello world", "nested": {"a": None}})
    store.put(("users", "u2"), "prefs", {"theme": "light", "size": 2})
    store.put(("users", "u1"), "temp", {"text": "gone soon"}, ttl=-1)
    store.put(("long",), LONG_KEY, {"text": "a key of 300 characters"})


def corrupt(execute: Callable[[str], Any], value: str) -> None:
    """Rows LangGraph's store would never write, by raw SQL."""
    execute(f"INSERT INTO store (prefix, key, value) VALUES ('broken', 'list', {value})")
    execute("INSERT INTO store (prefix, key, value) VALUES ('langgraph.x', 'k', '{}')")


def _moment(value: datetime | str) -> datetime:
    """A store time at the engine's precision (UTC, milliseconds); naive is UTC."""
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    value = value.astimezone(UTC)
    return value.replace(microsecond=value.microsecond // 1000 * 1000)


def _items(found: list[Any]) -> list[tuple[Any, ...]]:
    return sorted((tuple(i.namespace), i.key, json.dumps(i.value, sort_keys=True),
                   _moment(i.created_at), _moment(i.updated_at)) for i in found)


def reads(store: BaseStore) -> dict[str, Any]:
    """What the store answers on the compared namespaces (order aside: LangGraph's SQL
    stores page by updated_at, ours by insertion)."""
    got: dict[str, Any] = {str(p): _items(store.search(p, limit=100)) for p in PREFIXES}
    got["get"] = _items([i for i in (store.get(n, k) for n, k in KEYS) if i is not None])
    got["namespaces"] = store.list_namespaces(prefix=("users",))
    return got


async def workbench_reads(db: Path) -> dict[str, Any]:
    """The same reads through WorkbenchStore over the memory (its sync methods from a
    thread, as LangGraph calls them)."""
    async with Engine.open(db, config=CONFIG) as engine:
        store = WorkbenchStore(engine)
        return await asyncio.to_thread(reads, store)


def counts(output: str) -> dict[str, Any]:
    """The report's counts, from the JSON after the "created" line."""
    return json.loads(output[output.index("{"):])["counts"]


def run_import(runner: CliRunner, source: str, db: Path, *, as_json: bool = True) -> str:
    result = runner.invoke(main, ["import", "langgraph-store", source, "--db", str(db)]
                           + (["--json"] if as_json else []))
    assert result.exit_code == 0, result.output
    return result.output


def check_imported(runner: CliRunner, source: str, db: Path, bad_rows: int,
                   original: Callable[[], dict[str, Any]]) -> None:
    """Import twice through the CLI and compare with the original store's own reads."""
    first = run_import(runner, source, db)
    assert counts(first) == {"items": {"added": 4, "already": 0, "skipped": 3 + bad_rows}}
    text = run_import(runner, db=db, source=source, as_json=False)
    assert "items  0 added, 4 already there, " in text
    assert "(its TTL ran out)" in text
    assert "is not a JSON object" in text
    assert "root label 'langgraph'" in text
    assert "characters; the limit is 200" in text
    got = asyncio.run(workbench_reads(db))
    assert got == original()  # the original after its TTL sweep: the expired item gone
    assert {k for _, k, *_ in got["get"]} == {"prefs", "name", "readme"}
    assert got["namespaces"] == [("users", "u1"), ("users", "u2")]


def test_a_sqlite_store_file_becomes_the_same_items(tmp_path: Path, runner: CliRunner) -> None:
    source, db = tmp_path / "store.sqlite", tmp_path / "memory.db"
    conn = sqlite3.connect(source, check_same_thread=False, isolation_level=None)
    try:
        store = SqliteStore(conn)
        store.setup()
        fill(store)
        corrupt(conn.execute, "'[1, 2]'")
        conn.execute("INSERT INTO store (prefix, key, value) VALUES ('broken', 'text', "
                     "'not json')")

        def original() -> dict[str, Any]:
            store.sweep_ttl()
            return reads(store)

        check_imported(runner, str(source), db, 2, original)
    finally:
        conn.close()


def test_items_keep_the_stores_times(tmp_path: Path, runner: CliRunner) -> None:
    source, db = tmp_path / "store.sqlite", tmp_path / "memory.db"
    with sqlite3.connect(source, check_same_thread=False, isolation_level=None) as conn:
        SqliteStore(conn).setup()
        conn.execute("INSERT INTO store (prefix, key, value, created_at, updated_at) VALUES "
                     "('a', 'b', '{\"x\": 1}', '2024-03-01 10:00:00', '2024-05-02 11:30:00')")
    run_import(runner, str(source), db)

    async def item() -> Item | None:
        async with Engine.open(db, config=CONFIG) as engine:
            return await WorkbenchStore(engine).aget(("a",), "b")

    got = asyncio.run(item())
    assert got is not None and got.value == {"x": 1}
    assert got.created_at == datetime(2024, 3, 1, 10, tzinfo=UTC)
    assert got.updated_at == datetime(2024, 5, 2, 11, 30, tzinfo=UTC)


def test_imported_items_follow_what_the_memory_already_holds(tmp_path: Path,
                                                              runner: CliRunner) -> None:
    source, db = tmp_path / "store.sqlite", tmp_path / "memory.db"
    with sqlite3.connect(source, check_same_thread=False, isolation_level=None) as conn:
        store = SqliteStore(conn)
        store.setup()
        store.put(("later",), "x", {"n": 1})
        store.put(("users",), "imported", {"n": 2})

    async def before() -> None:
        async with Engine.open(db, config=CONFIG) as engine:
            await WorkbenchStore(engine).aput(("users",), "mine", {"n": 0})

    async def after() -> list[tuple[tuple[str, ...], str]]:
        async with Engine.open(db, config=CONFIG) as engine:
            return [(tuple(i.namespace), i.key)
                    for i in await WorkbenchStore(engine).asearch(())]

    asyncio.run(before())
    run_import(runner, str(source), db)
    # Insertion order, as InMemoryStore lists: ("users",) got its first item before the
    # import, so it stays first, and the imported item comes after the held one.
    assert asyncio.run(after()) == [(("users",), "mine"), (("users",), "imported"),
                                    (("later",), "x")]


def test_a_file_that_is_not_a_sqlite_store_is_refused(tmp_path: Path) -> None:
    other = tmp_path / "other.sqlite"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE store (prefix, key)")
    with pytest.raises(InvalidInput, match="is not a LangGraph SqliteStore file: table "
                                           "'store' has no column 'value', 'created_at'"):
        check_source("langgraph-store", other)
