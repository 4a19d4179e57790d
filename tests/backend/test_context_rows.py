"""The tests of tests/test_context.py that read or stage the memory's tables directly (the context
column, and files of schema version 2)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from core import Engine
from core.storage.sqlite import connection
from core.storage.sqlite.migrations import available_migrations, latest_version, split_statements
from core.storage.sqlite.search import Scope
from tests.conftest import DETERMINISTIC, rows
from tests.test_context import TURNS, payload


def contexts(where: Path | str, session_id: str) -> list[str]:
    return [row[0] for row in rows(
        where, "SELECT context_text FROM chunks WHERE session_id = ? ORDER BY sequence_start",
        session_id)]


async def test_each_chunk_carries_the_two_messages_before_it(memory: str) -> None:
    async with Engine.open(memory, config=DETERMINISTIC) as engine:
        for role, name, text in TURNS:
            await engine.append("s", payload(role, name, text))
    found = contexts(memory, "s")
    assert found[0] == ""
    assert found[1] == "Caroline: Did you paint anything over the summer?"
    assert found[2] == ("Caroline: Did you paint anything over the summer?\x1e"
                        "Melanie: Yes! A sunset over the lake, I loved it.")
    assert found[4].startswith("Caroline: That sounds lovely.")


async def test_context_is_cut_and_can_be_turned_off(new_memory: Callable[[str], str]) -> None:
    short_at, off_at = new_memory("short"), new_memory("off")
    short = {**DETERMINISTIC, "chunking": {"context_messages": 1, "context_chars": 9}}
    async with Engine.open(short_at, config=short) as engine:
        for role, name, text in TURNS[:3]:
            await engine.append("s", payload(role, name, text))
    assert contexts(short_at, "s") == ["", "Caroline:", "Melanie: "]
    off = {**DETERMINISTIC, "chunking": {"context_messages": 0}}
    async with Engine.open(off_at, config=off) as engine:
        for role, name, text in TURNS[:3]:
            await engine.append("s", payload(role, name, text))
    assert contexts(off_at, "s") == ["", "", ""]


@pytest.mark.parametrize("batch_size", [1, 2, 1000])
async def test_the_bulk_path_gives_the_same_contexts_as_storing_one_by_one(
        new_memory: Callable[[str], str], batch_size: int) -> None:
    one, bulk = new_memory("one"), new_memory("bulk")
    items = [(sid, n, payload(role, name, f"{text} ({sid})"))
             for n, (role, name, text) in enumerate(TURNS, 1) for sid in ("a", "b")]
    async with Engine.open(one, config=DETERMINISTIC) as engine:
        for sid, n, message in items:
            await engine.store(sid, n, message)
    async with Engine.open(bulk, config=DETERMINISTIC) as engine:
        # The session's first message goes in alone, so the bulk path must read it back.
        await engine.store("a", 1, items[0][2])
        result = await engine.store_many(items[1:], batch_size=batch_size)
        assert result.rejected == []
    for sid in ("a", "b"):
        assert contexts(bulk, sid) == contexts(one, sid)


def _version_2_file(path: Path) -> None:
    """A file as the code before migration 3 wrote it: two messages, FTS without context."""
    conn = connection.open_connection(path, read_only=False, busy_timeout_ms=5000)
    conn.execute("CREATE TABLE memory_migrations (version INTEGER PRIMARY KEY,"
                 " name TEXT NOT NULL, applied_at TEXT NOT NULL)")
    for migration in available_migrations()[:2]:
        for statement in split_statements(migration.sql):
            conn.execute(statement)
        conn.execute("INSERT INTO memory_migrations VALUES (?, ?, 'then')",
                     (migration.version, migration.name))
    conn.execute("INSERT INTO sessions(session_id, agent_identity) VALUES ('s', 'x')")
    texts = ["Caroline: Did you paint anything?", "Melanie: A sunset over the lake.",
             "Caroline: Lovely."]
    for n, text in enumerate(texts, 1):
        conn.execute("INSERT INTO conversation_events(session_id, sequence, payload_json,"
                     " created_at, role) VALUES ('s', ?, '{}', 'then', 'user')", (n,))
        conn.execute("INSERT INTO chunks(chunk_id, session_id, chunk_text, content_hash,"
                     " sequence_start, sequence_end, fts_rowid, scope_token)"
                     " VALUES (?, 's', ?, ?, ?, ?, ?, 'tok')", (f"c{n}", text, f"h{n}", n, n, n))
        conn.execute("INSERT INTO chunks_fts(rowid, chunk_text, scope_token)"
                     " VALUES (?, ?, 'tok')", (n, text))
    conn.close()


async def test_migration_3_gives_old_chunks_context_and_session_terms(db_path: Path) -> None:
    _version_2_file(db_path)
    async with Engine.open(db_path, config=DETERMINISTIC) as engine:
        assert engine.backend.schema_version == latest_version()
        rows = await engine.backend.fts_search(Scope(session_id="s"), ["paint"], 10)
        assert [chunk_id for chunk_id, _ in rows] == ["c1", "c2", "c3"]
        assert await engine.forget("s")
        assert (await engine.counts())["chunks_fts"] == 0
    assert contexts(db_path, "s") == []


async def test_migration_3_context_matches_what_the_write_path_computes(db_path: Path) -> None:
    _version_2_file(db_path)
    conn = connection.open_connection(db_path, read_only=False, busy_timeout_ms=5000)
    from core.storage.sqlite.migrations import migrate

    migrate(conn)
    conn.close()
    assert contexts(db_path, "s") == [
        "", "Caroline: Did you paint anything?",
        "Caroline: Did you paint anything?\x1eMelanie: A sunset over the lake."]
