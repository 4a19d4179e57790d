"""`workbench import langgraph-checkpoints`: a SqliteSaver file and a PostgresSaver database,
made by LangGraph's own savers, become sessions with their messages (once each, removed
ones marked), times and checkpoints; a second import adds nothing; bad rows are skipped
with why."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.sqlite import SqliteSaver

from core import Engine
from core.clock import normalise_timestamp
from core.errors import InvalidInput
from core.importers import check_source
from core.integrations.langgraph import WorkbenchSaver
from tests.test_langgraph_saver import chat_graph
from workbench.cli.root import main

CONFIG = {"embedding": {"backend": "deterministic", "fallback_dimensions": 32}}


def run_graph(saver: Any) -> dict[str, Any]:
    """Two threads through the chat graph (one drops a message); what LangGraph reads back."""
    graph = chat_graph(saver)
    one = {"configurable": {"thread_id": "t-1"}}
    graph.invoke({"messages": [HumanMessage("Lisbon", id="u-1")]}, one)
    graph.invoke({"messages": [HumanMessage("forget:tool-Lisbon", id="u-2")]}, one)
    graph.invoke({"messages": [HumanMessage("Porto", id="u-3")]},
                 {"configurable": {"thread_id": "t-2"}})
    return {thread: [(t.checkpoint, t.metadata) for t in saver.list(
        {"configurable": {"thread_id": thread}})] for thread in ("t-1", "t-2")}


def first_ts(saver: Any, thread: str, message_id: str) -> str:
    """The time of the first checkpoint of the thread holding the message."""
    listed = sorted(saver.list({"configurable": {"thread_id": thread}}),
                    key=lambda t: t.checkpoint["id"])
    return next(t.checkpoint["ts"] for t in listed if message_id in [
        m.id for m in t.checkpoint["channel_values"].get("messages", [])])


def sqlite_source(path: Path) -> tuple[dict[str, Any], str]:
    with sqlite3.connect(path, check_same_thread=False) as conn:
        saver = SqliteSaver(conn)
        read = run_graph(saver)
        return read, first_ts(saver, "t-1", "u-2")


async def imported(db: Path) -> dict[str, Any]:
    async with Engine.open(db, config=CONFIG) as engine:
        saver = WorkbenchSaver(engine)
        return {
            "events": {t: [(r.payload["role"], r.payload["content"], r.created_at)
                           for r in await engine.recall(t)] for t in ("t-1", "t-2")},
            "removed": {t: await engine.backend.removed_sequences(t) for t in ("t-1", "t-2")},
            "read": {t: [(x.checkpoint, x.metadata) async for x in saver.alist(
                {"configurable": {"thread_id": t}})] for t in ("t-1", "t-2")},
        }


def counts(output: str) -> dict[str, Any]:
    """The report's counts, from the JSON after the "created" line (stderr, which the
    runner mixes in)."""
    return json.loads(output[output.index("{"):])["counts"]


def test_a_sqlite_saver_file_becomes_sessions_once(tmp_path: Path, runner: CliRunner) -> None:
    source, db = tmp_path / "checkpoints.sqlite", tmp_path / "memory.db"
    read, forget_ts = sqlite_source(source)
    result = runner.invoke(main, ["import", "langgraph-checkpoints", str(source), "--db",
                                  str(db), "--json"])
    assert result.exit_code == 0, result.output
    assert counts(result.output) == {
        "checkpoints": {"added": 9, "already": 0, "skipped": 0},
        "writes": {"added": 9, "already": 0, "skipped": 0},
        "messages": {"added": 7, "already": 0, "skipped": 0}}
    got = asyncio.run(imported(db))
    assert [e[:2] for e in got["events"]["t-1"]] == [
        ("user", "Lisbon"), ("assistant", "about Lisbon\nok"), ("tool", "found Lisbon"),
        ("user", "forget:tool-Lisbon")]
    assert got["events"]["t-1"][3][2] == normalise_timestamp(forget_ts)
    assert got["removed"] == {"t-1": [3], "t-2": []}
    assert got["read"] == read  # the graph carries on from the memory
    again = runner.invoke(main, ["import", "langgraph-checkpoints", str(source), "--db",
                                 str(db), "--json"])
    assert counts(again.output) == {
        "checkpoints": {"added": 0, "already": 9, "skipped": 0},
        "writes": {"added": 0, "already": 9, "skipped": 0},
        "messages": {"added": 0, "already": 7, "skipped": 0}}
    assert asyncio.run(imported(db)) == got


def test_unreadable_rows_and_another_namespaces_thread_are_skipped_with_why(
        tmp_path: Path, runner: CliRunner) -> None:
    source, db = tmp_path / "checkpoints.sqlite", tmp_path / "memory.db"
    sqlite_source(source)
    with sqlite3.connect(source) as conn:
        (broken,) = conn.execute("SELECT checkpoint_id FROM checkpoints WHERE thread_id = 't-2'"
                                 " ORDER BY checkpoint_id DESC LIMIT 1").fetchone()
        conn.execute("UPDATE checkpoints SET checkpoint = x'c1' WHERE checkpoint_id = ?",
                     (broken,))

    async def theirs() -> None:
        async with Engine.open(db, config=CONFIG) as engine:
            await engine.append("t-1", {"role": "user", "content": "mine"}, namespace="other")

    asyncio.run(theirs())
    result = runner.invoke(main, ["import", "langgraph-checkpoints", str(source), "--db",
                                  str(db)])
    assert result.exit_code == 0, result.output
    assert "checkpoints  2 added, 0 already there, 7 skipped" in result.output
    assert f"thread 't-2' checkpoint {broken}): LangGraph's serializer cannot read it" \
        in result.output
    assert "belongs to another namespace in the target, not to 'default'" in result.output
    # t-2's last checkpoint is gone, so its answer never reached a stored checkpoint.
    assert "messages     1 added, 0 already there, 4 skipped" in result.output


def test_a_file_that_is_not_a_sqlite_saver_is_refused(tmp_path: Path) -> None:
    other = tmp_path / "other.sqlite"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE t (x)")
    with pytest.raises(InvalidInput, match="is not a LangGraph SqliteSaver file: it has no "
                                           "'checkpoints' table"):
        check_source("langgraph-checkpoints", other)
