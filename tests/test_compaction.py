"""Compaction into archives and markers (crabtalk, pynchy) and consolidation (aidaemon)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from core import Engine
from core.errors import InvalidInput, NotFound, SummaryConflict
from core.summary import archive_files
from core.summary.compaction import COMPACT_ATTEMPTS, LAST_RUN_KEY, archive_name
from tests.conftest import rows
from tests.test_summaries import ROOT, config, fill, message


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
        assert [(a["archive_name"], a["marker_sequence"]) for a in archives] == [
            ("archive s #1", 7), ("archive s #2", 10)]
        # Every folded event is marked; markers are not indexed as chunks.
        assert rows(memory, "SELECT count(*) FROM conversation_events WHERE session_id = 's'"
                             " AND consolidated_at IS NULL") == [(0,)]
        assert rows(memory, "SELECT count(*) FROM chunks WHERE session_id = 's'"
                             " AND sequence_start IN (7, 10)") == [(0,)]
        # The archive is found through memory search, like any note.
        hits = await engine.notes.recall_memories("Lisbon")
        assert any(hit.key == "archive s #1" and hit.category == "conversation" for hit in hits)


async def test_the_markdown_copy_is_written_beside_the_file(db_path: Path) -> None:
    # Beside the SQLite file; a server's memory has no folder (see the archive_dir test).
    async with Engine.open(db_path, config=config()) as engine:
        await fill(engine, "chat/42: ünïcode", 4)
        result = await engine.compact("chat/42: ünïcode")
        path = Path(result.file_path)
        assert path.parent.parent == db_path.parent / "conversations"
        assert path.parent.name.startswith("chat_42_n_code-")  # made safe, kept unique
        text = path.read_text("utf-8")
        assert text.startswith("# archive chat/42: ünïcode #1\n\nConversation chat/42")
        assert "Order 2 ships to Lisbon" in text
        assert not [p for p in path.parent.iterdir() if p.name.endswith(".tmp")]


async def test_archive_dir_from_config(memory: str, tmp_path: Path) -> None:
    where = tmp_path / "elsewhere"
    async with Engine.open(memory, config=config(archive_dir=str(where))) as engine:
        await fill(engine, "s", 4)
        result = await engine.compact("s")
        assert Path(result.file_path) == where / "s" / "archive_s_1-" \
            f"{archive_files.safe_name('archive s #1').rsplit('-', 1)[1]}.md"


async def test_nothing_to_compact_is_refused_clearly(memory: str) -> None:
    async with Engine.open(memory, config=config()) as engine:
        with pytest.raises(NotFound):
            await engine.compact("nobody")
        await fill(engine, "s", 2)
        await engine.compact("s")
        with pytest.raises(InvalidInput, match="no messages since its last compact marker"):
            await engine.compact("s")


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


async def test_compaction_folds_the_rolling_summary_in_and_resets_it(memory: str) -> None:
    async with Engine.open(memory, config=config()) as engine:
        await fill(engine, "s", 9)
        assert (await engine.summarize("s")).applied
        result = await engine.compact("s")
        assert (result.first_sequence, result.last_sequence, result.compacted) == (1, 9, 9)
        state = await engine.summary_state("s")
        assert (state.text, state.upper_sequence, state.epoch) == ("", 10, 2)
        note = await engine.get_note(result.archive_name)
        # The summary's lines went back in as the turns they stand for: one list, #1 to #9.
        bullets = [line.split(":")[0] for line in note.content.splitlines()[2:]]
        assert bullets == [f"- {'user' if i % 2 else 'assistant'} #{i}" for i in range(1, 10)]


def test_archive_names_fit_the_name_limit() -> None:
    assert archive_name("s", 3) == "archive s #3"
    long = archive_name("x" * 500, 12)
    assert len(long) <= 200 and long.endswith(" #12") and "~" in long
    assert archive_name("a\nb", 1) != archive_name("a b", 1)


# -- consolidation ------------------------------------------------------------------------

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


CRASHER = textwrap.dedent("""
    import asyncio, json, os, sys
    from core import Engine

    async def main(path, config):
        async with Engine.open(path, config=config) as engine:
            def crash_after_first(done, total, session):
                print("compacted", session, flush=True)
                os._exit(9)  # no cleanup, no close: as if the power went
            await engine.consolidate(0, progress=crash_after_first)

    asyncio.run(main(sys.argv[1], json.loads(sys.argv[2])))
""")


async def test_consolidation_resumes_after_a_crash_without_summarising_twice(
        memory: str) -> None:
    async with Engine.open(memory, config=config()) as engine:
        for session in ("a", "b", "c"):
            await fill(engine, session, 3)
    crashed = subprocess.run([sys.executable, "-c", CRASHER, str(memory), json.dumps(config())],
                             capture_output=True, text=True, cwd=str(ROOT), timeout=120)
    assert crashed.returncode == 9, crashed.stderr
    assert crashed.stdout.split() == ["compacted", "a"]
    async with Engine.open(memory, config=config()) as engine:
        summarised: list[list[int]] = []
        summarize = engine.summaries.summarizer.summarize

        def counting(turns, max_tokens):
            summarised.append([turn.sequence for turn in turns])
            return summarize(turns, max_tokens)

        engine.summaries.summarizer.summarize = counting
        report = await engine.consolidate(0)
        assert sorted(r.session_id for r in report.compacted) == ["b", "c"]
        assert summarised == [[1, 2, 3], [1, 2, 3]]  # b and c, once each; a not again
        archives = await engine.list_archives()
        assert sorted(a["session_id"] for a in archives) == ["a", "b", "c"]
        assert all(a["file_path"] and Path(a["file_path"]).exists() for a in archives)


async def test_a_missing_markdown_file_is_written_again_from_the_note(memory: str) -> None:
    async with Engine.open(memory, config=config()) as engine:
        await fill(engine, "s", 3)
        result = await engine.compact("s")
        os.unlink(result.file_path)
        await engine.backend.record_archive_file("s", result.marker_sequence, None,
                                                 "crashed before the file was written")
        report = await engine.consolidate(0)
        assert report.files_repaired == 1 and report.compacted == []
        assert Path(result.file_path).read_text("utf-8").startswith("# archive s #1")


async def test_an_unwritable_archive_folder_keeps_the_compaction_and_says_why(
        memory: str, tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the archive folder should be")
    async with Engine.open(memory, config=config(archive_dir=str(blocker))) as engine:
        await fill(engine, "s", 3)
        result = await engine.compact("s")
        assert result.file_path is None and result.file_error
        assert (await engine.list_archives("s"))[0]["file_error"] == result.file_error
        assert (await engine.restore("s", 1000)).marker_sequence == result.marker_sequence


async def test_the_background_loop_runs_when_the_interval_is_due(memory: str) -> None:
    background = {**config(), "consolidation": {"enabled": True, "idle_hours": 0,
                                                "interval_hours": 6}}
    async with Engine.open(memory, config=config()) as engine:
        await fill(engine, "s", 3)
        await engine.backend.write_meta(LAST_RUN_KEY, "2000-01-01T00:00:00.000Z")
    async with Engine.open(memory, config=background) as engine:
        for _ in range(500):  # the loop starts at open; wait for it to finish its pass
            if await engine.backend.read_meta(LAST_RUN_KEY) != "2000-01-01T00:00:00.000Z":
                break
            await asyncio.sleep(0.02)
        assert [a["session_id"] for a in await engine.list_archives()] == ["s"]


async def test_a_new_file_waits_one_interval_before_its_first_pass(memory: str) -> None:
    background = {**config(), "consolidation": {"enabled": True, "idle_hours": 0}}
    async with Engine.open(memory, config=background) as engine:
        await fill(engine, "s", 3)
        for _ in range(50):
            if await engine.backend.read_meta(LAST_RUN_KEY):
                break
            await asyncio.sleep(0.02)
        assert await engine.backend.read_meta(LAST_RUN_KEY)
        assert await engine.list_archives() == []


# -- the http summarizer, end to end against a loopback chat server -----------------------

@pytest.fixture
def chat(monkeypatch: pytest.MonkeyPatch):
    from tests.chat_server import ChatServer, serve

    with serve(ChatServer(answer="- user #1: Order 1 ships to Lisbon on May 1."),
               monkeypatch) as state:
        yield state


def http_config(chat, **summary: Any) -> dict[str, Any]:
    return config(backend="http", base_url=chat.url, model="tiny-chat", api_key="sk-secret",
                  timeout_secs=5, **summary)


async def test_the_http_summarizer_writes_summaries_and_archives(memory: str, chat) -> None:
    async with Engine.open(memory, config=http_config(chat)) as engine:
        await fill(engine, "s", 9)
        outcome = await engine.summarize("s")
        assert outcome.applied, outcome.reason
        state = await engine.summary_state("s")
        assert state.text == "Recent condensed turns:\n- user #1: Order 1 ships to Lisbon on May 1."
        assert state.summarizer == "http:tiny-chat"
        asked = chat.requests[-1]
        assert asked["body"]["model"] == "tiny-chat" and asked["auth"] == "Bearer sk-secret"
        assert "#6" in asked["body"]["messages"][-1]["content"]  # the condensed turns went out
        result = await engine.compact("s")
        note = await engine.get_note(result.archive_name)
        assert note.content.endswith("- user #1: Order 1 ships to Lisbon on May 1.")


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
