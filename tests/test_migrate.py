"""``migrate``: a whole memory copied between backends, file to file and through PostgreSQL,
resumed after an interruption, refused into another memory."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from core import Engine
from core.clock import utc_now
from core.config import StorageConfig
from core.errors import InvalidInput
from core.migrate import migrate
from core.storage.opening import open_backend
from tests.test_summaries import config, fill
from workbench.cli.root import main

EVERY_HOUR = {"kind": "interval", "value": "1h", "timezone": "UTC"}
QUERIES = ["Lisbon", "order ships in May", "tickets", "lookup order", "said before"]


async def build_memory(path: Path) -> None:
    """A memory holding every kind of row the engine writes."""
    async with Engine.open(path, config=config()) as engine:
        await engine.store("conv", 1, {
            "role": "user", "content": "Where does order 12 ship? Café at the port.",
            "metadata": {"channel": "slack", "thread": "T1"}})
        await engine.store("conv", 2, {
            "role": "assistant", "content": "Let me look that order up.",
            "tool_calls": [{"id": "call-1", "type": "function", "function": {
                "name": "lookup", "arguments": '{"order": 12}'}}]})
        await engine.store("conv", 3, {"role": "tool", "tool_call_id": "call-1",
                                       "content": "order 12: ships to Lisbon on May 3"})
        await fill(engine, "long", 9)
        assert (await engine.summarize("long")).applied
        await engine.compact("long")
        await fill(engine, "long", 6, start=11)
        assert (await engine.summarize("long", token_budget=300)).applied
        await engine.add_note("lisbon trip", "We fly to Lisbon in May to buy tickets.",
                              tags=["travel", "may"], aliases=["the trip"])
        await engine.add_note("packing", "Sunscreen, tickets, passport.", category="daily",
                              tags=["travel"])
        await engine.upsert_fact("user", "home city", "Porto")
        await engine.upsert_fact("agent", "style", "short answers", source="agent")
        await engine.write_scratchpad("conv", ["book the ferry", "check order 12"])
        made = await engine.schedules.create_schedule("alice", "summarise my inbox",
                                                      EVERY_HOUR, name="inbox")
        await engine.schedules.create_schedule("bob", "water the plants", EVERY_HOUR)
        await engine.schedules.record_run_and_reschedule(made.schedule_id, {
            "status": "ok", "output": "3 new mails", "started_at": utc_now(),
            "finished_at": utc_now()}, None)
        found = await engine.hybrid_query(session_id="conv", query="Lisbon")
        await engine.judge("Lisbon", found[0].chunk_id, 3, session_id="conv")
        await engine.drain()


async def everything(where: str | Path) -> dict[str, list[dict[str, Any]]]:
    """Every row of every copied table, as the backend reads it (migrate's keys and the
    memory's own identity and log lineage aside: each memory has its own)."""
    backend = await open_backend(where, StorageConfig(reader_pool_size=1), read_only=True)
    try:
        tables: dict[str, list[dict[str, Any]]] = {}
        for table in await backend.copy_tables():
            rows: list[dict[str, Any]] = []
            after = None
            while True:
                page = await backend.read_rows(table, after, 7)
                rows.extend(page.rows)
                if (after := page.after) is None:
                    break
            tables[table] = [row for row in rows if not str(row.get("key", "")).startswith(
                "migrate.") and row.get("key") not in ("database_id", "log_lineage")]
        return tables
    finally:
        await backend.close()


async def searches(path: Path) -> list[list[tuple[str, float]]]:
    async with Engine.open(path, config=config()) as engine:
        found = []
        for query in QUERIES:
            for scope in ({"session_id": "conv"}, {"session_id": "long"}, {"namespace": "default"}):
                results = await engine.hybrid_query(query=query, top_k=5, caller="test",
                                                    **scope)
                found.append([(r.chunk_id, r.score) for r in results])
        return found


def same_searches(got: list[list[tuple[str, float]]],
                  expected: list[list[tuple[str, float]]]) -> bool:
    """The same chunks in the same order, scores equal to 1e-5: vector distances come from
    sqlite-vec or, once built, from the derived matrix's exact rows, which differ in the
    last float32 bits (rounding a score to six places could still split them)."""
    ids = [[chunk for chunk, _ in found] for found in got]
    assert ids == [[chunk for chunk, _ in found] for found in expected]
    scores = [score for found in got for _, score in found]
    return scores == pytest.approx([score for found in expected for _, score in found],
                                   abs=1e-5)


@pytest.fixture
async def source(tmp_path: Path) -> Path:
    path = tmp_path / "source.db"
    await build_memory(path)
    return path


async def test_a_file_is_copied_to_another_file_whole(source: Path, tmp_path: Path) -> None:
    before = await everything(source)
    # Files, and the framework tables a graph fills (their own test below), stay empty here.
    empty = {"files", "framework_items", "langgraph_checkpoints", "langgraph_writes"}
    assert all(before[table] for table in before if table not in empty), {
        table: len(rows) for table, rows in before.items()}
    seen: list[tuple[str, int, int]] = []
    report = await migrate(source, tmp_path / "copy.db", batch=3,
                           progress=lambda *step: seen.append(step))
    assert report.ok, report
    assert not report.resumed and report.vectors.startswith("copied (64 dimensions")
    assert [check.table for check in report.tables] == list(before)
    assert all(check.sampled == min(50, check.source_rows) for check in report.tables)
    assert seen[-1] == ("relevance_judgments", 1, 1)
    assert await everything(tmp_path / "copy.db") == before
    expected = await searches(source)
    assert any(expected) and same_searches(await searches(tmp_path / "copy.db"), expected)


async def test_an_interrupted_migration_resumes_where_it_stopped(source: Path,
                                                                 tmp_path: Path) -> None:
    class Stop(Exception):
        pass

    def interrupt(table: str, done: int, total: int) -> None:
        if table == "chunks" and done >= 6:
            raise Stop

    with pytest.raises(Stop):
        await migrate(source, tmp_path / "copy.db", batch=3, progress=interrupt)
    chunks_seen: list[int] = []
    report = await migrate(source, tmp_path / "copy.db", batch=3, progress=lambda table, done,
                           total: chunks_seen.append(done) if table == "chunks" else None)
    assert report.ok and report.resumed
    assert chunks_seen[0] == 3  # the page after the last one recorded, not the first page
    assert await everything(tmp_path / "copy.db") == await everything(source)


async def test_a_destination_holding_another_memory_is_refused(source: Path,
                                                               tmp_path: Path) -> None:
    other = tmp_path / "other.db"
    async with Engine.open(other, config=config()) as engine:
        await engine.store("x", 1, {"role": "user", "content": "hello"})
    await migrate(other, tmp_path / "copy.db")
    with pytest.raises(InvalidInput, match="was migrated from .*other.db, not from"):
        await migrate(source, tmp_path / "copy.db")
    with pytest.raises(InvalidInput, match="already holds a memory"):
        await migrate(source, other)
    with pytest.raises(InvalidInput, match="both the source and the destination"):
        await migrate(source, source)
    assert len((await everything(other))["sessions"]) == 1


async def test_vectors_of_another_model_are_left_for_the_destination_to_embed(
        source: Path, tmp_path: Path) -> None:
    target = tmp_path / "copy.db"
    other = {**config(), "embedding": {"backend": "deterministic", "fallback_dimensions": 32}}
    async with Engine.open(target, config=other):
        pass
    report = await migrate(source, target)
    assert report.ok, report
    assert report.vectors.startswith("not copied") and "left pending" in report.vectors
    copied = await everything(target)
    assert {row["embedding_status"] for row in copied["chunks"]} == {"pending"}
    assert copied["chunks_vec"] == []


async def test_a_file_goes_through_postgresql_and_back_unchanged(source: Path, tmp_path: Path,
                                                                 pg_url: str) -> None:
    before = await everything(source)
    there = await migrate(source, pg_url, batch=4)
    assert there.ok, there
    assert "password" not in there.destination
    on_postgres = await everything(pg_url)
    assert {table: len(rows) for table, rows in on_postgres.items()} == {
        table: len(rows) for table, rows in before.items()}
    assert on_postgres == before
    back = await migrate(pg_url, tmp_path / "back.db", batch=5)
    assert back.ok, back
    assert await everything(tmp_path / "back.db") == before
    expected = await searches(source)
    assert same_searches(await searches(tmp_path / "back.db"), expected)


async def test_rows_postgresql_cannot_hold_are_reported_not_dropped(tmp_path: Path,
                                                                    pg_url: str) -> None:
    path = tmp_path / "nul.db"
    async with Engine.open(path, config=config()) as engine:
        await engine.store("s", 1, {"role": "user", "content": "fine"})
        await engine.upsert_fact("user", "odd", "a\x00b")
    report = await migrate(path, pg_url)
    assert not report.ok
    assert [(table, reason) for table, _key, reason in report.refused] == [
        ("facts", "it holds a NUL character (U+0000), which PostgreSQL text cannot store")]
    facts = next(check for check in report.tables if check.table == "facts")
    assert (facts.source_rows, facts.destination_rows) == (1, 0)


def test_the_command_shows_progress_and_the_verification(source: Path, tmp_path: Path,
                                                          runner: CliRunner) -> None:
    result = runner.invoke(main, ["migrate", str(source), str(tmp_path / "copy.db"),
                                  "--batch", "4"])
    assert result.exit_code == 0, result.output
    assert "vectors: copied (64 dimensions" in result.stdout
    lines = {line.split()[0]: line.split()[1:] for line in result.stdout.splitlines()[3:]}
    assert lines["chunks"][-1] == "ok" and lines["chunks"][0] == lines["chunks"][1]
    assert set(lines) >= {"schedule_runs", "relevance_judgments", "archives", "note_names"}
    assert "relevance_judgments" in result.stderr  # the progress, beside the report
    again = runner.invoke(main, ["migrate", str(source), str(tmp_path / "copy.db"), "--json"])
    assert again.exit_code == 0 and json.loads(again.stdout)["resumed"] is True


def test_the_command_fails_on_rows_left_behind(tmp_path: Path, pg_url: str,
                                               runner: CliRunner) -> None:
    path = tmp_path / "nul.db"
    asyncio.run(_with_nul(path))
    url = pg_url.replace("postgres:@", "postgres:s3cret@", 1)
    assert "s3cret" in url
    result = runner.invoke(main, ["migrate", str(path), url])
    assert result.exit_code == 1
    assert "not copied: facts" in result.stderr and "NUL character" in result.stderr
    assert "s3cret" not in result.output


async def _with_nul(path: Path) -> None:
    async with Engine.open(path, config=config()) as engine:
        await engine.upsert_fact("user", "odd", "a\x00b")


async def test_a_langgraph_thread_goes_through_postgresql_and_back(tmp_path: Path,
                                                                   pg_url: str) -> None:
    from langchain_core.messages import HumanMessage

    from core.integrations.langgraph import WorkbenchSaver
    from tests.test_langgraph_saver import chat_graph

    source = tmp_path / "graph.db"
    thread = {"configurable": {"thread_id": "t-1"}}

    async def state_of(where: str | Path) -> tuple[Any, ...]:
        async with Engine.open(where, config=config()) as engine:
            saver = WorkbenchSaver(engine)
            listed = [(found.checkpoint, found.metadata, found.pending_writes)
                      async for found in saver.alist(thread)]
            return (listed, [r.payload for r in await engine.recall("t-1")],
                    await engine.backend.removed_sequences("t-1"))

    async with Engine.open(source, config=config()) as engine:
        saver = WorkbenchSaver(engine)
        graph = chat_graph(saver)
        await graph.ainvoke({"messages": [HumanMessage("Lisbon", id="u-1")]}, thread)
        await graph.ainvoke({"messages": [HumanMessage("forget:tool-Lisbon", id="u-2")]},
                            thread)
        latest = await saver.aget_tuple(thread)
        assert latest is not None
        await saver.aput_writes(latest.config, [("messages", ["pending"])], "task-1")
    before = await state_of(source)
    assert len(before[0]) == 6 and before[2] == [3] and before[0][0][2]
    assert (await migrate(source, pg_url, batch=2)).ok
    assert await state_of(pg_url) == before
    assert (await migrate(pg_url, tmp_path / "back.db", batch=3)).ok
    assert await state_of(tmp_path / "back.db") == before
