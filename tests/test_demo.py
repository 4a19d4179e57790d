"""The demo memory file: every kind of content the workbench shows, the same on every build."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from core import Engine, clock
from workbench.demo.build import DemoSummary, build_demo, default_demo_path
from workbench.demo.content import AGENTS

CONFIG = {"embedding": {"backend": "deterministic", "fallback_dimensions": 64},
          "consolidation": {"enabled": False}}


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, DemoSummary, list[str]]:
    """One demo file built for the whole module (a build takes about a second)."""
    path = tmp_path_factory.mktemp("demo") / "demo.db"
    said: list[str] = []
    summary = asyncio.run(build_demo(path, CONFIG, progress=said.append))
    return path, summary, said


def _without_note_id(payload: dict[str, Any]) -> dict[str, Any]:
    """A payload with the note id its metadata may carry masked: the engine draws note ids
    at random (uuid4), and the demo has no say in them."""
    metadata = payload.get("metadata") or {}
    if "note_id" not in metadata:
        return payload
    return {**payload, "metadata": {**metadata, "note_id": "note-…"}}


async def _snapshot(path: Path) -> dict[str, Any]:
    """Everything a build wrote that must not change between builds (the ids the engine
    draws at random, of notes and schedules, left out)."""
    async with Engine.open(path, CONFIG, read_only=True) as engine:
        sessions = {info.session_id: [(record.sequence, _without_note_id(record.payload),
                                       record.created_at)
                                      for record in await engine.recall(info.session_id)]
                    for info in await engine.list_sessions()}
        notes = {agent: [(note.name, note.content, note.aliases, note.tags, note.created_at)
                         for note in (await engine.list_notes(namespace=agent)).notes]
                 for agent in AGENTS}
        schedules = []
        for schedule in (await engine.schedules.search_schedules()).schedules:
            runs = await engine.schedules.get_run_history(schedule.schedule_id, 100)
            schedules.append((schedule.name, schedule.status, schedule.next_run_at,
                              [(run.run_id, run.started_at, run.status) for run in runs]))
        summary = await engine.summary_state("research-alta-via-1-planning")
        archives = [(a.archive_name, a.archived_at) for a in await engine.list_archives()]
        return {"sessions": sessions, "notes": notes, "schedules": schedules,
                "summary": (summary.text, summary.upper_sequence, summary.updated_at),
                "archives": archives}


def test_the_summary_counts_what_was_written(demo) -> None:
    _, summary, said = demo
    assert summary.agents == 3
    assert summary.sessions >= 8 and summary.messages >= 150
    assert summary.notes >= 12 and summary.scratchpads >= 3
    assert summary.schedules >= 4 and summary.runs >= 10
    assert any("support-bot" in line for line in said)
    assert default_demo_path() == Path("data/demo.db")


async def test_three_agents_talk_with_tools(demo) -> None:
    path, summary, _ = demo
    async with Engine.open(path, CONFIG, read_only=True) as engine:
        sessions = [s for s in await engine.list_sessions() if not s.session_id.startswith(
            "memory:")]
        assert {s.agent_identity for s in sessions} == set(AGENTS)
        assert len(sessions) == summary.sessions
        payloads = [record.payload for s in sessions
                    for record in await engine.recall(s.session_id)]
        calls = {c["id"]: c["function"]["name"] for p in payloads for c in p.get("tool_calls", [])}
        results = [p for p in payloads if p["role"] == "tool"]
        assert calls and results
        assert all(r["tool_call_id"] in calls and r["tool_name"] for r in results)
        assert any(p.get("importance") == 0.9 for p in payloads)
        assert any(p["role"] == "system" for p in payloads)
        assert any("tags" in (p.get("metadata") or {}) for p in payloads)
        assert max(s.event_count for s in sessions) >= 60
        assert (await engine.embedding_status()).backlog == 0


async def test_a_summary_an_archive_notes_and_scratchpads(demo) -> None:
    path, _, _ = demo
    async with Engine.open(path, CONFIG, read_only=True) as engine:
        assert (await engine.summary_state("research-alta-via-1-planning")).text
        archives = await engine.list_archives()
        assert [a.session_id for a in archives] == ["support-acme-double-charge"]
        acme = await engine.get_note("acme", namespace="support-bot")
        assert acme.name == "customer-acme" and "customer" in acme.tags
        assert (await engine.list_facts(namespace="research-assistant"))
        pads = [await engine.read_scratchpad(s.session_id) for s in await engine.list_sessions()]
        pads = [pad for pad in pads if pad is not None]
        assert len(pads) >= 3 and max(len(pad.items) for pad in pads) >= 28


async def test_schedules_have_runs_failures_and_a_pause(demo) -> None:
    path, _, _ = demo
    async with Engine.open(path, CONFIG, read_only=True) as engine:
        schedules = (await engine.schedules.search_schedules()).schedules
        assert [s.status for s in schedules].count("paused") == 1
        paused = next(s for s in schedules if s.status == "paused")
        assert paused.status_reason
        assert max(s.consecutive_failures for s in schedules) >= 2
        runs = [run for s in schedules
                for run in await engine.schedules.get_run_history(s.schedule_id)]
        assert {"ok", "failed"} <= {run.status for run in runs}
        assert {s.cadence["timezone"] for s in schedules} >= {"Europe/Paris",
                                                              "America/New_York"}


async def test_the_agents_searched_and_judged(demo) -> None:
    path, _, _ = demo
    async with Engine.open(path, CONFIG, read_only=True) as engine:
        logged = await engine.retrieval_log(caller="agent")
        assert {entry["scope_kind"] for entry in logged} == {"session", "namespace"}
        entry = next(e for e in logged if e["scope_value"] == "support-webhook-failures")
        graded = await engine.judgments(entry["query"], session_id=entry["scope_value"])
        assert 3 in graded.values()


async def test_two_builds_write_the_same_content(demo, tmp_path: Path) -> None:
    path, _, _ = demo
    again = tmp_path / "again.db"
    await build_demo(again, CONFIG)
    first, second = await _snapshot(path), await _snapshot(again)
    assert first == second
    stamps = [created for events in first["sessions"].values() for _, _, created in events]
    assert max(stamps) < "2026-11-20T17:00:00.000Z"
    before = datetime.now(UTC)
    assert before <= clock.now() <= datetime.now(UTC)  # the clock runs again, unfrozen


async def test_an_existing_file_is_refused_and_kept(tmp_path: Path) -> None:
    path = tmp_path / "demo.db"
    path.write_text("mine")
    with pytest.raises(FileExistsError):
        await build_demo(path, CONFIG)
    assert path.read_text() == "mine"
