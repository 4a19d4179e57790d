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
from core.errors import InvalidInput, NotFound
from core.summary import archive_files
from core.summary.compaction import LAST_RUN_KEY, archive_name
from tests.test_summaries import ROOT, config, fill


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
        assert sorted(a.session_id for a in archives) == ["a", "b", "c"]
        assert all(a.file_path and Path(a.file_path).exists() for a in archives)


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
        assert (await engine.list_archives("s"))[0].file_error == result.file_error
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
        assert [a.session_id for a in await engine.list_archives()] == ["s"]


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
