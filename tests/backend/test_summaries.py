"""Rolling summaries (epoch compare-and-swap) and compaction (one transaction or nothing)."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest

from core.errors import InvalidInput, NotFound, SummaryConflict
from core.storage.backend import Backend
from core.storage.rows import CommittedCompaction
from core.storage.vocabulary import MEMORY_PREFIX, CompactionPlan, SummaryDraft
from tests.backend.builders import NOW, note, store
from tests.backend.conftest import Opener

LATER = "2026-01-02T00:00:00.000Z"


def summary(upper: int, text: str = "so far") -> SummaryDraft:
    return SummaryDraft(text, upper, "test")


def _summary_state(state: dict | None) -> dict:
    return (state or {}).get("summary_state") or {}


async def test_the_summary_is_written_only_over_the_epoch_the_writer_read(
        backend: Backend) -> None:
    for sequence in (1, 2, 3):
        await store(backend, "s", sequence, f"message {sequence}")
    assert await backend.write_summary_state("s", summary(2), 0, NOW) == 1
    assert await backend.write_summary_state("s", summary(3, "stale"), 0, LATER) is None
    stored = _summary_state(await backend.read_session_state("s"))
    assert (stored["text"], stored["epoch"], stored["upper_sequence"]) == ("so far", 1, 2)
    with pytest.raises(InvalidInput, match="outside"):
        await backend.write_summary_state("s", summary(9), 1, LATER)
    with pytest.raises(NotFound):
        await backend.write_summary_state("nobody", summary(0), 0, NOW)


async def test_of_two_writers_that_read_one_epoch_exactly_one_wins(
        backend: Backend, open_backend: Opener) -> None:
    await store(backend, "s", 1, "one")
    other = await open_backend()  # another process writing the same memory
    results = await asyncio.gather(
        backend.write_summary_state("s", summary(1, "mine"), 0, NOW),
        other.write_summary_state("s", summary(1, "theirs"), 0, NOW))
    assert sorted(results, key=str) == [1, None]
    winner = "mine" if results[0] == 1 else "theirs"
    assert _summary_state(await other.read_session_state("s"))["text"] == winner


async def test_a_summary_error_is_kept_and_cleared(backend: Backend) -> None:
    await store(backend, "s", 1, "one")
    await backend.record_summary_error("s", "endpoint down", NOW)
    assert (await backend.read_session_state("s") or {})["summary_error"]["error"] == \
        "endpoint down"
    await backend.record_summary_error("s", None, LATER)
    assert "summary_error" not in (await backend.read_session_state("s") or {})


def _plan(expected_last: int, expected_epoch: int = 0) -> CompactionPlan:
    return CompactionPlan(session_id="s", expected_epoch=expected_epoch,
                          expected_last=expected_last, first_sequence=1,
                          message_count=expected_last, summarizer="test",
                          marker={"role": "system", "content": "compacted"})


async def test_a_compaction_writes_archive_marker_and_reset_summary_at_once(
        backend: Backend) -> None:
    for sequence in (1, 2, 3):
        await store(backend, "s", sequence, f"message {sequence}")
    archive = note("ana", "archive-s-1", "what was said", kind="Archive",
                   category="conversation")
    committed = await backend.commit_compaction(_plan(3), archive, LATER)
    assert committed.marker_sequence == 4
    assert committed.note.name == "archive-s-1"
    events = await backend.read_events("s")
    assert [e.sequence for e in events] == [1, 2, 3, 4]
    assert events[-1].payload == {"role": "system", "content": "compacted"}
    state = await backend.read_session_state("s") or {}
    assert state["last_sequence"] == 4 and state["compaction"]["count"] == 1
    assert (_summary_state(state)["epoch"], _summary_state(state)["text"]) == (1, "")
    assert await backend.archive_count("s") == 1
    (listed,) = await backend.list_archives("s")
    assert (listed.first_sequence, listed.last_sequence) == (1, 3)
    assert [content for _, content in await backend.unwritten_archives()] == ["what was said"]
    await backend.record_archive_file("s", 4, "/tmp/archive.md", None)
    assert await backend.unwritten_archives() == []
    assert (await backend.list_archives())[0].file_path == "/tmp/archive.md"
    # Folded events are consolidated: the session is not idle work any more.
    assert await backend.idle_sessions("2027-01-01T00:00:00.000Z") == []


async def test_a_compaction_over_a_moved_conversation_writes_nothing(
        backend: Backend) -> None:
    for sequence in (1, 2):
        await store(backend, "s", sequence, f"message {sequence}")
    plan = _plan(2)
    await store(backend, "s", 3, "arrived meanwhile")
    before = await backend.table_counts()
    with pytest.raises(SummaryConflict, match="nothing was written"):
        await backend.commit_compaction(plan, note("ana", "archive", "x"), LATER)
    await backend.write_summary_state("s", summary(3), 0, LATER)
    with pytest.raises(SummaryConflict):
        await backend.commit_compaction(_plan(3), note("ana", "archive", "x"), LATER)
    assert await backend.table_counts() == before
    assert await backend.archive_count("s") == 0
    assert await backend.note_names("ana") == []


async def test_idle_sessions_are_conversations_with_unfolded_events(backend: Backend) -> None:
    await store(backend, "quiet", 1, "long ago", created_at="2026-01-01T00:00:00.000Z")
    await store(backend, "busy", 1, "just now", created_at="2026-06-01T00:00:00.000Z")
    await backend.add_note(note("ana", "a-note", "notes are never idle work"), NOW)
    assert await backend.idle_sessions("2026-03-01T00:00:00.000Z") == ["quiet"]
    assert MEMORY_PREFIX + "ana" not in await backend.idle_sessions("2027-01-01T00:00:00.000Z")


async def test_of_two_compactions_of_one_conversation_exactly_one_commits(
        backend: Backend, open_backend: Opener) -> None:
    for sequence in (1, 2, 3):
        await store(backend, "s", sequence, f"message {sequence}")
    other = await open_backend()
    results = await asyncio.gather(
        backend.commit_compaction(_plan(3), note("ana", "archive-a", "mine"), LATER),
        other.commit_compaction(_plan(3), note("ana", "archive-b", "theirs"), LATER),
        return_exceptions=True)
    assert sum(isinstance(r, SummaryConflict) for r in results) == 1
    (committed,) = [r for r in results if isinstance(r, CommittedCompaction)]
    assert committed.marker_sequence == 4
    assert await backend.archive_count("s") == 1
    assert await backend.note_names("ana") == [committed.note.name]
    assert [e.sequence for e in await backend.read_events("s")] == [1, 2, 3, 4]


async def test_a_message_racing_a_compaction_is_stored_or_refuses_it(
        backend: Backend, open_backend: Opener) -> None:
    other = await open_backend()
    for round_ in range(8):  # several rounds, so the two often meet mid-transaction
        session = f"s{round_}"
        for sequence in (1, 2):
            await store(backend, session, sequence, f"message {sequence}")
        plan = dataclasses.replace(_plan(2), session_id=session)
        results = await asyncio.gather(
            backend.commit_compaction(plan, note("ana", f"archive-{round_}", "folded"), LATER),
            store(other, session, None, "arrived meanwhile"), return_exceptions=True)
        assert not isinstance(results[1], BaseException)  # the message is always kept
        sequences = [e.sequence for e in await backend.read_events(session)]
        if isinstance(results[0], CommittedCompaction):  # the compaction went first: marker 3
            assert (results[0].marker_sequence, sequences) == (3, [1, 2, 3, 4])
        else:
            assert isinstance(results[0], SummaryConflict)
            assert sequences == [1, 2, 3]
