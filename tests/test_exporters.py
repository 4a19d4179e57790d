"""Exporting a session or a namespace to JSONL (which the JSONL importer reads back: a round
trip into a fresh file, times included) and to markdown in pynchy's archive format."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from core import Engine
from core.clock import frozen
from core.errors import InvalidInput, NotFound
from core.exporters import export_namespace, export_session
from core.importers import import_file
from core.types import SessionInfo
from tests.conftest import DETERMINISTIC

CONFIG = {**DETERMINISTIC, "summary": {"auto": False}, "consolidation": {"enabled": False}}

TOOL_CALL = {"id": "c1", "type": "function",
             "function": {"name": "weather", "arguments": "{\"month\": 6}"}}


@pytest.fixture
async def engine(memory: str):
    async with Engine.open(memory, config=CONFIG) as opened:
        yield opened


async def fill(engine: Engine) -> None:
    """Two sessions of "planner" (one with a gap in its sequences), one of another agent,
    and a note (which lives in planner's notes session); the messages stored a minute apart
    on a morning in 2024."""
    messages = [
        ("trip", 1, {"role": "user", "content": "Hike in June?", "name": "Ann",
                     "metadata": {"tags": ["Outdoors"], "mood": "keen"}}, "planner"),
        ("trip", 2, {"role": "assistant", "content": None, "tool_calls": [TOOL_CALL]},
         "planner"),
        ("trip", 5, {"role": "tool", "tool_call_id": "c1", "tool_name": "weather",
                     "content": "19 C and dry", "importance": 0.8}, "planner"),
        ("a/b c", 1, {"role": "user", "content": [
            {"type": "text", "text": "look at this"}, {"type": "image_url", "image_url": {}}]},
         "planner"),
        ("elsewhere", 1, {"role": "user", "content": "not planner's"}, "other"),
    ]
    for minute, (session_id, sequence, payload, agent) in enumerate(messages):
        with frozen(datetime(2024, 5, 1, 9, minute, 30, 250000, tzinfo=UTC)):
            await engine.store(session_id, sequence, payload, agent=agent)
    await engine.add_note("packing", "Bring boots", namespace="planner")


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


async def test_a_namespace_round_trips_through_jsonl_into_a_fresh_file(
        engine: Engine, tmp_path: Path) -> None:
    await fill(engine)
    out = tmp_path / "planner.jsonl"
    result = await export_namespace(engine, "planner", out, "jsonl")
    assert (result.scope, result.sessions, result.messages, result.paths) == (
        "namespace", 2, 4, [str(out)])
    exported = lines(out)
    assert [(line["session_id"], line["sequence"]) for line in exported] == [
        ("a/b c", 1), ("trip", 1), ("trip", 2), ("trip", 5)]
    assert set(exported[1]) == {"session_id", "sequence", "created_at", "message"}

    async with Engine.open(tmp_path / "fresh.db", config=CONFIG) as fresh:
        report = await import_file("jsonl", fresh, out, namespace="planner")
        assert (report.counts["messages"].added, report.skipped) == (4, [])
        for session_id in ("trip", "a/b c"):
            original = await engine.recall(session_id)
            copied = await fresh.recall(session_id)
            assert [(r.sequence, r.payload, r.importance, r.created_at) for r in copied] == [
                (r.sequence, r.payload, r.importance, r.created_at) for r in original]
        assert [r.created_at for r in await fresh.recall("trip")] == [
            "2024-05-01T09:00:30.250Z", "2024-05-01T09:01:30.250Z", "2024-05-01T09:02:30.250Z"]

        def session_times(sessions: list[SessionInfo]) -> dict[str, tuple]:
            return {s.session_id: (s.agent_identity, s.created_at, s.updated_at)
                    for s in sessions if s.session_id in ("trip", "a/b c")}

        assert session_times(await fresh.list_sessions()) == session_times(
            await engine.list_sessions())
        assert session_times(await fresh.list_sessions())["trip"] == (
            "planner", "2024-05-01T09:00:30.250Z", "2024-05-01T09:02:30.250Z")
        found = await fresh.hybrid_query(session_id="trip", query="dry weather")
        assert found and found[0].metadata.get("tool_name") == "weather"
        again = await export_namespace(fresh, "planner", tmp_path / "again.jsonl", "jsonl")
        assert again.messages == 4
    assert lines(tmp_path / "again.jsonl") == exported  # created_at too, to the millisecond


async def test_one_session_to_jsonl_in_a_folder(engine: Engine, tmp_path: Path) -> None:
    await fill(engine)
    result = await export_session(engine, "trip", tmp_path, "jsonl")
    assert result.paths == [str(tmp_path / "trip.jsonl")]
    assert [line["sequence"] for line in lines(tmp_path / "trip.jsonl")] == [1, 2, 5]
    assert lines(tmp_path / "trip.jsonl")[0]["message"]["metadata"]["mood"] == "keen"


async def test_markdown_is_seed_002s_archive_format(engine: Engine, tmp_path: Path) -> None:
    await fill(engine)
    records = await engine.recall("trip")
    result = await export_session(engine, "trip", tmp_path / "trip.md", "markdown")
    assert (result.format, result.messages) == ("markdown", 3)
    text = (tmp_path / "trip.md").read_text(encoding="utf-8")
    assert text.startswith("# trip\n\nConversation trip (namespace 'planner'): 3 messages, "
                           f"#1-#5, {records[0].created_at} to {records[-1].created_at}.\n\n")
    assert f"## #1 · user (Ann) · {records[0].created_at}\n\nHike in June?\n\n" in text
    assert "## #2 · assistant" in text and '→ weather({"month": 6})' in text
    assert "## #5 · tool (weather)" in text and text.endswith("19 C and dry\n")

    folder = tmp_path / "md"
    result = await export_namespace(engine, "planner", folder, "markdown")
    assert sorted(Path(p).name for p in result.paths) == sorted(
        p.name for p in folder.iterdir())
    assert len(result.paths) == 2 and (folder / "trip.md").read_text() == text
    odd = next(Path(p) for p in result.paths if "trip" not in p)
    assert odd.parent == folder and "/" not in odd.name[:-3]
    assert odd.read_text().startswith("# a/b c\n\n")
    assert "look at this\n\n[image_url]" in odd.read_text()
    assert not list(tmp_path.glob("**/*.tmp"))


async def test_what_cannot_be_exported_is_refused_and_nothing_is_written(
        engine: Engine, tmp_path: Path) -> None:
    await fill(engine)
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(NotFound, match="no session 'missing'"):
        await export_session(engine, "missing", out / "m.jsonl", "jsonl")
    with pytest.raises(NotFound, match="no conversation sessions"):
        await export_namespace(engine, "nobody", out / "n.jsonl", "jsonl")
    with pytest.raises(InvalidInput, match="notes"):
        await export_session(engine, engine.note_session("planner"), out / "x.md", "markdown")
    with pytest.raises(InvalidInput, match="export format"):
        await export_session(engine, "trip", out / "t.csv", "csv")
    (out / "file.md").write_text("in the way")
    with pytest.raises(InvalidInput, match="is a file"):
        await export_namespace(engine, "planner", out / "file.md", "markdown")
    blocked = out / "not-a-folder"
    blocked.write_text("")
    with pytest.raises(InvalidInput, match="cannot write"):
        await export_session(engine, "trip", blocked / "trip.jsonl", "jsonl")
    assert sorted(p.name for p in out.iterdir()) == ["file.md", "not-a-folder"]
