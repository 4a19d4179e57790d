"""The tests of tests/test_compaction.py that read or stage the memory's tables directly (markers,
archives and what a failed compaction leaves)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from core import Engine
from core.errors import SummaryConflict
from core.summary.compaction import COMPACT_ATTEMPTS, LAST_RUN_KEY
from tests.conftest import rows
from tests.test_compaction import (
    http_config,
)
from tests.test_summaries import config, fill, message


@pytest.fixture
def chat(monkeypatch: pytest.MonkeyPatch):
    from tests.chat_server import ChatServer, serve

    with serve(ChatServer(answer="- user #1: Order 1 ships to Lisbon on May 1."),
               monkeypatch) as state:
        yield state


def markers(memory: str, session: str) -> list[tuple[int, dict[str, Any]]]:
    found = rows(memory, "SELECT sequence, payload_json FROM conversation_events"
                          " WHERE session_id = ? ORDER BY sequence", session)
    return [(sequence, parsed) for sequence, parsed in
            ((sequence, json.loads(payload)) for sequence, payload in found)
            if parsed.get("metadata", {}).get("compact_marker") is not None]


async def test_compaction_archives_marks_and_replays_across_several(memory: str) -> None:
    async with Engine.open(memory, config=config()) as engine:
        await fill(engine, "s", 6)
        first = await engine.compact("s")
        assert (first.archive_name, first.marker_sequence, first.compacted) == (
            "archive s #1", 7, 6)
        assert (first.first_sequence, first.last_sequence) == (1, 6)
        note = await engine.get_note("archive s #1")
        assert (note.kind, note.category, note.tags, note.source) == (
            "Archive", "conversation", ["archive"], "compaction")
        assert "Order 3 ships to Lisbon" in note.content
        assert note.content.startswith("Conversation s: messages #1-#6 (6 messages")
        # Replay starts at the marker; the history itself keeps every event.
        restored = await engine.restore("s", 5000)
        assert restored.sequences == [7] and restored.marker_sequence == 7
        assert "archive s #1" in restored.messages[0]["content"]
        assert restored.last_sequence == 7
        await engine.store("s", 8, message(8))
        await engine.store("s", 9, message(9, "assistant"))
        assert (await engine.restore("s", 5000)).sequences == [7, 8, 9]
        second = await engine.compact("s")
        assert (second.archive_name, second.marker_sequence, second.compacted) == (
            "archive s #2", 10, 2)
        assert (second.first_sequence, second.last_sequence) == (8, 9)
        assert (await engine.restore("s", 5000)).sequences == [10]
        assert [r.sequence for r in await engine.recall("s")] == list(range(1, 11))
        assert [m[0] for m in markers(memory, "s")] == [7, 10]
        assert markers(memory, "s")[1][1]["metadata"]["compact_marker"]["archive_name"] == (
            "archive s #2")
        archives = await engine.list_archives("s")
        assert [(a.archive_name, a.marker_sequence) for a in archives] == [
            ("archive s #1", 7), ("archive s #2", 10)]
        # Every folded event is marked; markers are not indexed as chunks.
        assert rows(memory, "SELECT count(*) FROM conversation_events WHERE session_id = 's'"
                             " AND consolidated_at IS NULL") == [(0,)]
        assert rows(memory, "SELECT count(*) FROM chunks WHERE session_id = 's'"
                             " AND sequence_start IN (7, 10)") == [(0,)]
        # The archive is found through memory search, like any note.
        hits = await engine.notes.recall_memories("Lisbon")
        assert any(hit.key == "archive s #1" and hit.category == "conversation" for hit in hits)


async def test_messages_arriving_at_every_attempt_make_it_write_nothing(memory: str) -> None:
    async with Engine.open(memory, config=config()) as engine:
        await fill(engine, "s", 4)
        summarize = engine.summaries.summarizer.summarize
        loop = asyncio.get_running_loop()
        stored = 4

        def interrupted(turns, max_tokens):
            nonlocal stored
            stored += 1
            asyncio.run_coroutine_threadsafe(engine.store("s", stored, message(stored)),
                                             loop).result()
            return summarize(turns, max_tokens)

        engine.summaries.summarizer.summarize = interrupted
        with pytest.raises(SummaryConflict, match="kept changing while it was being compacted"):
            await engine.compact("s")
        assert stored == 4 + COMPACT_ATTEMPTS  # each attempt lost to a new message
        assert await engine.list_archives() == []
        assert markers(memory, "s") == []
        assert (await engine.list_notes()).total == 0
        assert rows(memory, "SELECT count(*) FROM conversation_events"
                             " WHERE consolidated_at IS NOT NULL") == [(0,)]


async def test_consolidation_compacts_idle_conversations_only(memory: str) -> None:
    async with Engine.open(memory, config=config()) as engine:
        for session in ("a", "b", "c"):
            await fill(engine, session, 3)
        await engine.add_note("plan", "a note is never consolidated")
        seen: list[tuple[int, int, str]] = []
        report = await engine.consolidate(0, progress=lambda *step: seen.append(step))
        assert sorted(r.session_id for r in report.compacted) == ["a", "b", "c"]
        assert seen == [(1, 3, "a"), (2, 3, "b"), (3, 3, "c")]
        assert (report.skipped, report.failed) == ({}, {})
        assert rows(memory, "SELECT value FROM memory_meta WHERE key = ?",
                    LAST_RUN_KEY) == [(report.finished_at,)]
        again = await engine.consolidate(0)
        assert again.compacted == []  # nothing new: nothing summarised twice
        recent = await engine.consolidate(24)
        assert recent.compacted == []  # a day's idleness not reached


async def test_an_endpoint_failing_mid_consolidation_leaves_that_history_as_it_was(
        memory: str, chat) -> None:
    async with Engine.open(memory, config=http_config(chat)) as engine:
        for session in ("a", "b"):
            await fill(engine, session, 3)
        chat.mode = "error"
        before = rows(memory, "SELECT session_id, sequence, payload_json, consolidated_at"
                               " FROM conversation_events ORDER BY 1, 2")
        report = await engine.consolidate(0)
        assert report.compacted == [] and sorted(report.failed) == ["a", "b"]
        assert "HTTP 500" in report.failed["a"] and "sk-secret" not in report.failed["a"]
        assert rows(memory, "SELECT session_id, sequence, payload_json, consolidated_at"
                             " FROM conversation_events ORDER BY 1, 2") == before
        assert await engine.list_archives() == []
        assert (await engine.summary_state("a")).last_error == report.failed["a"]
        chat.mode = "ok"  # the endpoint is back: the next pass does the work
        assert len((await engine.consolidate(0)).compacted) == 2
        assert (await engine.summary_state("a")).last_error is None
