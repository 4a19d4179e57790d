"""Crash safety: writers killed with SIGKILL lose nothing acknowledged and half-store nothing.

The long run is ``workbench bench crash`` (README "Reliability"); here the same harness runs
six kills, two per workload, and the checks it relies on are shown to catch what they claim.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from core import Engine
from core.storage.sqlite.connection import open_connection
from core.storage.sqlite.invariants import check_file
from tests.conftest import DETERMINISTIC
from workbench.bench.crash import MUST_BE_ZERO, WORKLOADS, run_crash_bench
from workbench.bench.crash_ledger import Holdings as _Holdings
from workbench.bench.crash_ledger import compare as _compare
from workbench.bench.crash_ledger import expected as _expected
from workbench.bench.crash_ledger import read_acks as _read_acks
from workbench.cli.root import main

CONFIG = {"embedding": {"backend": "deterministic", "fallback_dimensions": 64}}


async def test_killed_writers_lose_nothing_and_leave_nothing_half_stored() -> None:
    figures = await run_crash_bench(CONFIG, kills=8, seed=11, say=lambda _: None,
                                    window=(0.1, 0.4), early_share=0.0)
    assert figures.problems == []
    total = figures.total
    for name in MUST_BE_ZERO:
        assert getattr(total, name) == 0, name
    assert [w.workload for w in figures.workloads] == list(WORKLOADS)
    for workload in figures.workloads:
        assert workload.kills == 2
        assert workload.acknowledged > 0, workload.workload  # there was something to lose
    # Every chunk the recall workload wrote was looked for by both legs in namespace scope,
    # by an engine reopened after the kill and by one kept open across the kills.
    recall = next(w for w in figures.workloads if w.workload == "recall")
    assert recall.chunks_looked_for > 0 and recall.unfindable == 0
    assert figures.passed
    assert any(line.startswith("recall workload") for line in figures.lines())


def test_the_command_prints_the_figures_and_exits_0(runner: CliRunner) -> None:
    result = runner.invoke(main, ["bench", "crash", "--kills", "1", "--seed", "1", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["passed"] is True and report["total"]["kills"] == 1
    assert report["total"]["acknowledged"] > 0 and report["total"]["lost"] == 0


# -- the checks find what they claim to find ------------------------------------------------


def _findings(path: Path) -> Any:
    conn = open_connection(path, read_only=False, busy_timeout_ms=5000)
    try:
        return check_file(conn, max_chars=640, overlap_chars=96)
    finally:
        conn.close()


def _break(path: Path, sql: str, *params: Any) -> None:
    conn = open_connection(path, read_only=False, busy_timeout_ms=5000)
    try:
        conn.execute(sql, params)
    finally:
        conn.close()


async def test_the_file_check_finds_each_kind_of_half_stored_or_orphaned_row(
        db_path: Path) -> None:
    async with Engine.open(db_path, config=DETERMINISTIC) as engine:
        for i in range(1, 7):
            await engine.append("chat", {"role": "user", "content": f"message {i} " * 30})
        await engine.append("chat", {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "function": {"name": "lookup", "arguments": '{"q": "weather"}'}}]})
        await engine.compact("chat")
        await engine.append("other", {"role": "user", "content": "kept apart"})
        note = await engine.add_note("groceries", "milk and bread", namespace="ns")
        kept = await engine.add_note("kept", "a note left whole", namespace="ns")
        await engine.drain()
    found = _findings(db_path)
    assert found.sound, (found.integrity, found.half_stored, found.orphans)
    assert found.events == 12 and found.pending_chunks == 0  # with the marker, the archive note

    def message_chunk(sequence: int) -> tuple[str, int]:
        conn = open_connection(db_path, read_only=True, busy_timeout_ms=5000)
        try:
            return conn.execute("SELECT chunk_id, fts_rowid FROM chunks WHERE session_id ="
                                " 'chat' AND sequence_start = ?", (sequence,)).fetchone()
        finally:
            conn.close()

    def expect(fragment: str, *, orphan: bool = False) -> None:
        found = _findings(db_path)
        listed = found.orphans if orphan else found.half_stored
        assert any(fragment in problem for problem in listed), (fragment, listed)

    _break(db_path, "DELETE FROM chunks_fts WHERE rowid = ?", message_chunk(1)[1])
    expect("chat: 1 chunks without a full-text row")
    _break(db_path, "DELETE FROM chunks WHERE chunk_id = ?", message_chunk(2)[0])
    expect("message chat#2: a chunk of its text is missing")
    _break(db_path, "DELETE FROM chunks_vec WHERE chunk_id = ?", message_chunk(3)[0])
    expect("1 chunks marked embedded without a vector")
    _break(db_path, "DELETE FROM conversation_events WHERE session_id = 'chat' AND sequence = 4")
    expect("no event chat#4", orphan=True)
    _break(db_path, "DELETE FROM archives")
    expect("compact marker chat#8: no archive row names it")
    _break(db_path, "UPDATE session_state SET state_json = json_set(state_json,"
                    " '$.last_sequence', 0) WHERE session_id = 'other'")
    expect("session other: last_sequence 0 is behind its events (1)")
    _break(db_path, "DELETE FROM conversation_events WHERE session_id = 'memory:ns'"
                    " AND sequence = 1")
    expect(f"note {note.note_id} ('groceries'): its event is missing")
    _break(db_path, "DELETE FROM notes WHERE note_id = ?", note.note_id)
    expect(f"chunks of note {note.note_id}, which does not exist", orphan=True)
    _break(db_path, "DELETE FROM chunks WHERE note_id = ?", kept.note_id)
    expect(f"note {kept.note_id} ('kept'): 1 chunks missing")
    assert _findings(db_path).integrity == []  # none of this is SQLite's own corruption


def test_the_comparison_counts_lost_and_unasked_writes_and_allows_the_open_operation(
        tmp_path: Path) -> None:
    before = _Holdings(messages={("s", 1): "d1"}, notes={"n1": {"name": "a"}},
                       archives={}, epochs={"s": 1})
    acks = tmp_path / "acks.jsonl"
    lines = [
        {"k": "begin", "op": "store", "session": "s", "sequence": None, "digest": "d2"},
        {"k": "done", "op": "store", "session": "s", "sequence": 2, "digest": "d2"},
        {"k": "begin", "op": "rename", "note_id": "n1", "after": {"name": "b"}},
        {"k": "done", "op": "rename", "note_id": "n1", "after": {"name": "b"}},
        {"k": "begin", "op": "compact", "session": "s"},
        {"k": "refused", "op": "compact", "session": "s"},
        {"k": "begin", "op": "store", "session": "s", "sequence": 4, "digest": "d4"},
    ]
    acks.write_text("".join(json.dumps(line) + "\n" for line in lines) + '{"k": "do')
    done, open_op = _read_acks(acks)
    assert [entry["op"] for entry in done] == ["store", "rename"]
    assert open_op is not None and open_op["sequence"] == 4
    expected = _expected(before, done)

    whole = _Holdings(messages={("s", 1): "d1", ("s", 2): "d2", ("s", 4): "d4"},
                      notes={"n1": {"name": "b"}}, epochs={"s": 1})
    assert _compare(expected, whole, open_op).problems == []  # the open store committed
    whole.messages.pop(("s", 4))
    assert _compare(expected, whole, open_op).problems == []  # ... or it did not

    broken = _Holdings(messages={("s", 1): "d1", ("s", 3): "dx"},
                       notes={"n1": {"name": "a"}, "n9": {"name": "z"}}, epochs={"s": 0})
    compared = _compare(expected, broken, open_op)
    assert compared.lost == 3  # message 2, the rename, the summary's epoch
    assert compared.phantom == 2  # message 3 (not what the open store wrote), note n9
