"""`workbench import openai-agents-session`: a file written by the SDK's own SQLiteSession
becomes sessions whose WorkbenchSession gives back the same items, at their times, with
counts, skipped rows and a second import adding nothing."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from agents.memory import SQLiteSession

from core import Engine
from core.errors import InvalidInput
from core.importers import check_source, import_file
from core.integrations.openai_agents import WorkbenchSession
from tests.agents_support import ENGINE_CONFIG, dumped, random_item

FORMAT = "openai-agents-session"


async def _sdk_file(path: Path) -> dict[str, list[Any]]:
    """A file the real SQLiteSession wrote: two sessions, one item popped; their items."""
    import random

    rng = random.Random(7)
    written: dict[str, list[Any]] = {}
    for session_id in ("chat-1", "chat-2"):
        session = SQLiteSession(session_id, path)
        items: list[Any] = [random_item(rng, n) for n in range(30)]
        await session.add_items(items)
        await session.pop_item()
        written[session_id] = await session.get_items()
        session.close()
    return written


async def test_an_sdk_file_imports_as_sessions_giving_back_the_same_items(
        tmp_path: Path) -> None:
    source = tmp_path / "sdk.db"
    written = await _sdk_file(source)
    with sqlite3.connect(source) as conn:  # a known time, and two rows the SDK would skip
        conn.execute("UPDATE agent_messages SET created_at = '2024-03-01 10:20:30'"
                     " WHERE id = (SELECT min(id) FROM agent_messages)")
        conn.execute("INSERT INTO agent_messages(session_id, message_data)"
                     " VALUES ('chat-1', 'not json'), ('chat-2', '[1, 2]')")
    check_source(FORMAT, source)
    async with Engine.open(tmp_path / "memory.db", config=ENGINE_CONFIG) as engine:
        report = await import_file(FORMAT, engine, source)
        assert (report.counts["items"].added, report.counts["items"].skipped) == (58, 2)
        assert all("not a JSON object" in skip.reason for skip in report.skipped)
        for session_id, items in written.items():
            got = await WorkbenchSession(session_id, engine).get_items()
            assert dumped(got) == dumped(items)
            assert len(await engine.recall(session_id)) == 29
        first = (await engine.recall("chat-1"))[0]
        assert first.created_at.startswith("2024-03-01T10:20:30")
        again = await import_file(FORMAT, engine, source)
        assert (again.counts["items"].added, again.counts["items"].already) == (0, 58)
        assert len(await engine.recall("chat-1")) == 29


async def test_a_session_of_another_namespace_or_with_other_items_is_skipped_whole(
        tmp_path: Path) -> None:
    source = tmp_path / "sdk.db"
    await _sdk_file(source)
    async with Engine.open(tmp_path / "memory.db", config=ENGINE_CONFIG) as engine:
        await WorkbenchSession("chat-1", engine, namespace="other").add_items(
            [{"role": "user", "content": "mine"}])
        await WorkbenchSession("chat-2", engine).add_items([{"role": "user", "content": "x"}])
        report = await import_file(FORMAT, engine, source)
        assert report.counts["items"].added == 0
        reasons = {skip.reason for skip in report.skipped}
        assert any("another namespace" in reason for reason in reasons)
        assert any("holds other items" in reason for reason in reasons)


def test_a_file_that_is_not_a_sqlite_sessions_is_refused(tmp_path: Path) -> None:
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE t(x)")
    with pytest.raises(InvalidInput, match="agent_messages"):
        check_source(FORMAT, other)
