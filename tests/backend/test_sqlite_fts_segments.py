"""The full-text index's segments are merged while the memory is quiet, and merging never
changes what a query finds or how it scores."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from core import Engine, upkeep
from core.storage.sqlite import fts_segments
from core.storage.sqlite.connection import open_connection
from tests.conftest import DETERMINISTIC, rows
from workbench.bench import synthetic

QUERIES = ["remember the booking", "recipe garlic oven", "check the schedule",
           "flight hotel", "budget invoice", "the", "zzz-no-such-word"]


async def _write_one_by_one(engine: Engine, messages: int) -> None:
    """Messages stored one transaction each: each leaves a segment of its own."""
    for session_id, _, payload in synthetic.messages(messages, 3):
        await engine.append(session_id, payload, agent="agent")


def _segments(path: Path) -> int:
    conn = open_connection(path, read_only=True, busy_timeout_ms=5000)
    try:
        return fts_segments.segment_count(conn)
    finally:
        conn.close()


async def _answers(engine: Engine) -> dict[tuple[str, str], list[tuple[str, float]]]:
    found = {}
    for query in QUERIES:
        for scope in ({"session_id": "session-00001"}, {"namespace": "agent"}):
            hits = await engine.hybrid_query(query=query, top_k=20, mode="keyword", **scope)
            found[query, str(scope)] = [(hit.chunk_id, hit.score) for hit in hits]
    return found


def _assert_same(found: dict[tuple[str, str], list[tuple[str, float]]],
                 expected: dict[tuple[str, str], list[tuple[str, float]]]) -> None:
    """The same chunks in the same order, the same scores but for the last bits: a namespace's
    keyword query is answered by FTS5 until the derived index is built in the background,
    then by that index, whose float sums may end an ulp apart (it ranks the same)."""
    assert found.keys() == expected.keys()
    for key, hits in expected.items():
        assert [cid for cid, _ in found[key]] == [cid for cid, _ in hits], key
        assert [score for _, score in found[key]] == pytest.approx(
            [score for _, score in hits], rel=1e-12, abs=1e-12), key


async def test_merging_leaves_every_answer_and_score_as_it_was(
        db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(upkeep, "QUIET_SECONDS", 3600.0)  # only the explicit merge below
    async with Engine.open(db_path, config=DETERMINISTIC) as engine:
        await _write_one_by_one(engine, 60)
        before_segments = _segments(db_path)
        before = await _answers(engine)
        steps = await engine.upkeep.merge_now()
        after = await _answers(engine)
        assert await engine.backend.integrity_check() == ["ok"]
    assert before_segments > 4
    assert steps > 0
    assert _segments(db_path) == 1
    _assert_same(after, before)
    assert any(hits for hits in before.values())


async def test_a_step_merges_a_bounded_part_and_says_when_nothing_is_left(
        db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(upkeep, "QUIET_SECONDS", 3600.0)
    async with Engine.open(db_path, config=DETERMINISTIC) as engine:
        await _write_one_by_one(engine, 150)
    conn = open_connection(db_path, read_only=False, busy_timeout_ms=5000)
    try:
        counts = [fts_segments.segment_count(conn)]
        while fts_segments.merge_step(conn, pages=2):
            counts.append(fts_segments.segment_count(conn))
        assert not fts_segments.merge_step(conn)  # one segment: nothing to do, again
    finally:
        conn.close()
    assert len(counts) > 2  # two pages at a time took several steps
    assert counts[-1] == 1 < counts[0]
    assert rows(db_path, "SELECT count(*) FROM chunks")[0][0] > 0


async def test_the_engine_merges_once_quiet_and_again_after_new_writes(
        db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(upkeep, "QUIET_SECONDS", 0.05)
    async with Engine.open(db_path, config=DETERMINISTIC) as engine:
        for round_ in range(2):
            await _write_one_by_one(engine, 30 * (round_ + 1))
            steps = engine.upkeep.steps
            for _ in range(400):  # waits for the background task, at most 20 s
                if engine.upkeep.steps > steps and _segments(db_path) == 1:
                    break
                await asyncio.sleep(0.05)
            assert _segments(db_path) == 1, f"round {round_}: not merged"


async def test_a_read_only_memory_is_left_as_it_is(
        db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(upkeep, "QUIET_SECONDS", 3600.0)
    async with Engine.open(db_path, config=DETERMINISTIC) as engine:
        await _write_one_by_one(engine, 20)
    segments = _segments(db_path)
    monkeypatch.setattr(upkeep, "QUIET_SECONDS", 0.0)
    async with Engine.open(db_path, config=DETERMINISTIC, read_only=True) as engine:
        assert await engine.upkeep.merge_now() == 0
        await asyncio.sleep(0.1)
    assert _segments(db_path) == segments > 1


_MERGE_FOREVER = """
import sys
from core.storage.sqlite import fts_segments
from core.storage.sqlite.connection import open_connection
conn = open_connection(sys.argv[1], read_only=False, busy_timeout_ms=5000)
print("merging", flush=True)
while True:
    fts_segments.merge_step(conn, pages=1)
"""


async def test_a_merge_killed_midway_loses_nothing(
        db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import os
    import signal
    import subprocess
    import sys

    monkeypatch.setattr(upkeep, "QUIET_SECONDS", 3600.0)
    async with Engine.open(db_path, config=DETERMINISTIC) as engine:
        await _write_one_by_one(engine, 150)
        before = await _answers(engine)
    segments = _segments(db_path)
    root = Path(__file__).resolve().parents[2]
    child = subprocess.Popen([sys.executable, "-c", _MERGE_FOREVER, str(db_path)],
                             stdout=subprocess.PIPE, text=True,
                             env={**os.environ, "PYTHONPATH": str(root)})
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "merging"
        for _ in range(400):  # until it has merged something, at most 20 s
            if _segments(db_path) < segments:
                break
            await asyncio.sleep(0.05)
        child.send_signal(signal.SIGKILL)
    finally:
        child.wait()
    assert _segments(db_path) < segments  # killed after some merging, before the end
    async with Engine.open(db_path, config=DETERMINISTIC) as engine:
        assert await engine.backend.integrity_check() == ["ok"]
        _assert_same(await _answers(engine), before)
        await engine.upkeep.merge_now()
        _assert_same(await _answers(engine), before)
    assert _segments(db_path) == 1
