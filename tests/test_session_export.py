"""Export one session (events, rolling summary, scratchpad) to a JSON file, atomically."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from core import Engine
from core.errors import InvalidInput, NotFound
from core.notes import transfer
from tests.conftest import DETERMINISTIC

CONFIG = {**DETERMINISTIC, "summary": {"auto": False}, "consolidation": {"enabled": False}}


@pytest.fixture
async def engine(memory: str):
    async with Engine.open(memory, config=CONFIG) as opened:
        yield opened


async def fill(engine: Engine) -> None:
    await engine.append("trip", {"role": "user", "content": "Hike in June?"}, agent="planner")
    await engine.append("trip", {"role": "assistant", "content": "",
                                 "tool_calls": [{"id": "c1", "type": "function",
                                                 "function": {"name": "weather",
                                                              "arguments": "{\"m\": 6}"}}]})
    await engine.append("trip", {"role": "tool", "tool_call_id": "c1", "content": "19 C"})
    await engine.write_scratchpad("trip", ["book the hut"])


def read(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


async def test_the_file_holds_events_summary_and_scratchpad(engine: Engine,
                                                            tmp_path: Path) -> None:
    await fill(engine)
    assert await engine.write_summary_state("trip", "- user #1: hike in June", 1, 0)
    result = await engine.export_session("trip", tmp_path / "trip.json")
    assert (result.session_id, result.events, result.has_summary, result.scratchpad_items) == (
        "trip", 3, True, 1)
    assert result.path == str(tmp_path / "trip.json")
    document = read(tmp_path / "trip.json")
    assert (document["format"], document["version"]) == ("memory-workbench-session", 1)
    assert document["session"]["agent_identity"] == "planner"
    assert document["session"]["last_sequence"] == 3
    records = await engine.recall("trip")
    assert document["events"] == [
        {"sequence": r.sequence, "created_at": r.created_at, "importance": r.importance,
         "payload": r.payload} for r in records]
    assert document["events"][1]["payload"]["tool_calls"][0]["function"]["name"] == "weather"
    summary = document["summary_state"]
    assert (summary["text"], summary["upper_sequence"], summary["epoch"]) == (
        "- user #1: hike in June", 1, 1)
    assert document["scratchpad"]["items"] == ["book the hut"]


async def test_a_session_without_summary_or_scratchpad(engine: Engine, tmp_path: Path) -> None:
    await engine.append("plain", {"role": "user", "content": "hello"})
    result = await engine.export_session("plain", tmp_path / "plain.json")
    assert (result.events, result.has_summary, result.scratchpad_items) == (1, False, 0)
    document = read(tmp_path / "plain.json")
    assert document["scratchpad"] is None
    assert document["summary_state"]["text"] == ""


async def test_no_such_session_writes_nothing(engine: Engine, tmp_path: Path) -> None:
    with pytest.raises(NotFound):
        await engine.export_session("missing", tmp_path / "missing.json")
    assert not (tmp_path / "missing.json").exists()


async def test_an_unwritable_place_is_invalid_input_and_leaves_no_file(
        engine: Engine, tmp_path: Path) -> None:
    await fill(engine)
    with pytest.raises(InvalidInput, match="cannot write"):
        await engine.export_session("trip", tmp_path / "no-such-folder" / "trip.json")


async def test_a_failed_write_keeps_the_old_file_whole(
        engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    await fill(engine)
    target = tmp_path / "trip.json"
    target.write_text("the old export", encoding="utf-8")

    def full_disk(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(transfer.os, "fsync", full_disk)
    with pytest.raises(InvalidInput, match="No space left"):
        await engine.export_session("trip", target)
    assert target.read_text(encoding="utf-8") == "the old export"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".trip.json")] == []


async def test_it_reads_a_file_another_engine_writes(engine: Engine, memory: str,
                                                      tmp_path: Path) -> None:
    await fill(engine)
    async with Engine.open(memory, config=CONFIG) as other:
        await other.append("trip", {"role": "user", "content": "and in July?"})
    result = await engine.export_session("trip", tmp_path / "trip.json")
    assert result.events == 4
    assert read(tmp_path / "trip.json")["events"][-1]["payload"]["content"] == "and in July?"
    assert os.stat(tmp_path / "trip.json").st_size > 0
