"""`workbench import langgraph-checkpoints` from a PostgresSaver database (a postgresql://
URL), filled by LangGraph's own saver: the same sessions, messages, checkpoints and pending
writes (with their task paths) as from a SqliteSaver file."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import psycopg
from click.testing import CliRunner

from core import Engine
from core.clock import normalise_timestamp
from core.integrations.langgraph import WorkbenchSaver
from tests.test_import_langgraph_checkpoints import CONFIG, counts, first_ts, imported, run_graph
from workbench.cli.root import main


async def stored_writes(db: Path) -> list[tuple[Any, ...]]:
    """Every pending write the memory holds: (thread, ns, checkpoint, task, path, idx,
    channel)."""
    found = []
    async with Engine.open(db, config=CONFIG) as engine:
        saver = WorkbenchSaver(engine)
        for thread in ("t-1", "t-2"):
            async for item in saver.alist({"configurable": {"thread_id": thread}}):
                mark = item.config["configurable"]
                stored = await engine.backend.langgraph_get(
                    saver.namespace, thread, mark["checkpoint_ns"], mark["checkpoint_id"])
                assert stored is not None
                found += [(w.session_id, w.checkpoint_ns, w.checkpoint_id, w.task_id,
                           w.task_path, w.idx, w.channel) for w in stored.writes]
    return sorted(found)



def test_a_postgres_saver_database_becomes_sessions(tmp_path: Path, runner: CliRunner,
                                                    pg_url: str) -> None:
    from langgraph.checkpoint.postgres import PostgresSaver

    with PostgresSaver.from_conn_string(pg_url) as saver:
        saver.setup()
        read = run_graph(saver)
        forget_ts = first_ts(saver, "t-1", "u-2")
    db = tmp_path / "memory.db"
    result = runner.invoke(main, ["import", "langgraph-checkpoints", pg_url, "--db", str(db),
                                  "--json"])
    assert result.exit_code == 0, result.output
    assert counts(result.output)["messages"] == {"added": 7, "already": 0, "skipped": 0}
    assert counts(result.output)["checkpoints"] == {"added": 9, "already": 0, "skipped": 0}
    got = asyncio.run(imported(db))
    assert [e[1] for e in got["events"]["t-2"]] == ["Porto", "about Porto\nok", "found Porto"]
    assert got["events"]["t-1"][3][2] == normalise_timestamp(forget_ts)
    assert got["removed"] == {"t-1": [3], "t-2": []}
    assert got["read"] == read
    # Each pending write keeps the task path and index it was stored at.
    with psycopg.connect(pg_url) as conn:
        source = sorted(tuple(row) for row in conn.execute(
            "SELECT thread_id, checkpoint_ns, checkpoint_id, task_id, task_path, idx, channel"
            " FROM checkpoint_writes").fetchall())
    assert any(row[4] for row in source)  # the case: writes with a task path
    assert asyncio.run(stored_writes(db)) == source
