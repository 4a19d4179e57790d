"""Sessions and events: the one-transaction store, the monotonic sequence, cascades."""

from __future__ import annotations

import asyncio

import pytest

from core.errors import OutOfNamespace, ReadOnlyDatabase, SequenceError
from core.storage.backend import Backend
from tests.backend.builders import embed_backlog, message, store
from tests.backend.conftest import Opener


async def test_events_come_back_oldest_first_with_their_payload(backend: Backend) -> None:
    for sequence, text in ((1, "first"), (2, "second"), (5, "fifth")):
        await store(backend, "s", sequence, text)
    events = await backend.read_events("s")
    assert [(e.sequence, e.payload["content"]) for e in events] == [
        (1, "first"), (2, "second"), (5, "fifth")]
    assert [e.sequence for e in await backend.read_events("s", limit=2)] == [2, 5]
    assert [e.sequence for e in await backend.read_events("s", after_sequence=1)] == [2, 5]
    assert await backend.last_sequence("s") == 5
    assert await backend.last_sequence("nobody") is None
    assert await backend.read_events("nobody") == []


async def test_a_sequence_not_above_the_last_is_refused_and_nothing_is_written(
        backend: Backend) -> None:
    await store(backend, "s", 3, "three")
    for sequence in (3, 2):
        with pytest.raises(SequenceError, match="not greater"):
            await backend.write_messages(
                [message("s", 4, "four"), message("s", sequence, "again")],
                all_or_nothing=True)
    assert [e.sequence for e in await backend.read_events("s")] == [3]
    assert (await backend.table_counts())["chunks"] == 1


async def test_without_all_or_nothing_a_refused_message_is_reported_and_the_rest_stored(
        backend: Backend) -> None:
    await store(backend, "s", 3, "three")
    outcomes = await backend.write_messages(
        [message("s", 2, "late"), message("s", 4, "four"), message("t", None, "auto")],
        all_or_nothing=False)
    assert outcomes[0].error is not None and "not greater" in outcomes[0].error
    assert (outcomes[1].sequence, outcomes[1].inserted, outcomes[1].error) == (4, 1, None)
    assert outcomes[2].sequence == 1  # None: the next sequence, allocated in the transaction
    assert [e.sequence for e in await backend.read_events("s")] == [3, 4]


async def test_a_bound_write_to_another_agents_session_writes_nothing(
        backend: Backend) -> None:
    await store(backend, "theirs", 1, "bob was here", agent="bob")
    with pytest.raises(OutOfNamespace):
        await backend.write_messages([message("theirs", 2, "ana too", bound=True)],
                                     all_or_nothing=False)
    assert await backend.last_sequence("theirs") == 1
    assert await backend.session_agent("theirs") == "bob"
    assert await backend.session_agent("nobody") is None


async def test_sessions_list_most_recent_first_with_counts(backend: Backend) -> None:
    await store(backend, "old", 1, "old news", created_at="2026-01-01T00:00:00.000Z")
    await store(backend, "new", 1, "fresh", created_at="2026-01-02T00:00:00.000Z")
    await store(backend, "new", 2, "fresher", created_at="2026-01-03T00:00:00.000Z")
    await store(backend, "bobs", 1, "elsewhere", agent="bob",
                created_at="2026-01-04T00:00:00.000Z")
    listed = await backend.list_sessions(agent_identity="ana")
    assert [(s.session_id, s.event_count, s.chunk_count, s.last_sequence)
            for s in listed] == [("new", 2, 2, 2), ("old", 1, 1, 1)]
    assert [s.session_id for s in await backend.list_sessions(limit=1, offset=1)] == ["new"]


async def test_state_snapshot_and_salient_events(backend: Backend) -> None:
    await store(backend, "s", 1, "passport number", importance=0.9)
    await store(backend, "s", 2, "small talk", importance=0.2)
    assert (await backend.read_session_state("s") or {})["last_sequence"] == 2
    assert await backend.read_session_state("nobody") is None
    assert [e.sequence for e in await backend.salient_events("s", 0.85)] == [1]
    snapshot = await backend.read_session_snapshot("s")
    assert snapshot is not None
    assert await backend.read_session_snapshot("nobody") is None


async def test_delete_session_removes_every_dependent_row(backend: Backend) -> None:
    for sequence in range(1, 6):
        await store(backend, "gone", sequence, f"message {sequence} " * 80)
    await store(backend, "kept", 1, "a survivor")
    await embed_backlog(backend, {})
    before = await backend.session_row_counts("gone")
    assert all(before[t] > 0 for t in ("sessions", "conversation_events", "session_state",
                                       "chunks", "chunks_fts", "chunks_vec")), before
    assert await backend.delete_session("gone") is True
    after = await backend.session_row_counts("gone")
    assert after == {table: 0 for table in after}
    assert await backend.delete_session("gone") is False
    kept = await backend.session_row_counts("kept")
    assert kept["chunks"] == kept["chunks_fts"] == kept["chunks_vec"] == 1
    assert await backend.integrity_check() == ["ok"]


async def test_session_tails_are_the_last_messages_first_chunks(backend: Backend) -> None:
    for sequence, text in enumerate(["one", "two", "three"], 1):
        await store(backend, "s", sequence, text)
    assert await backend.session_tails(["s", "nobody"], 2) == {"s": ["two", "three"],
                                                              "nobody": []}


async def test_a_read_only_backend_refuses_writes_and_still_reads(
        backend: Backend, open_backend: Opener) -> None:
    await store(backend, "s", 1, "written")
    reader = await open_backend(read_only=True)
    assert reader.read_only
    with pytest.raises(ReadOnlyDatabase, match="read-only"):
        await store(reader, "s", 2, "refused")
    with pytest.raises(ReadOnlyDatabase):
        await reader.delete_session("s")
    assert [e.sequence for e in await reader.read_events("s")] == [1]


async def test_two_writers_racing_on_a_session_give_one_win_and_one_refusal(
        backend: Backend, open_backend: Opener) -> None:
    other = await open_backend()
    await store(backend, "s", 1, "first")
    for sequence in range(2, 12):
        results = await asyncio.gather(
            backend.write_messages([message("s", sequence, f"mine {sequence}")],
                                   all_or_nothing=True),
            other.write_messages([message("s", sequence, f"theirs {sequence}")],
                                 all_or_nothing=True),
            return_exceptions=True)
        refused = [r for r in results if isinstance(r, BaseException)]
        assert len(refused) == 1, results
        assert isinstance(refused[0], SequenceError) and "not greater" in str(refused[0])
    events = await backend.read_events("s")
    assert [e.sequence for e in events] == list(range(1, 12))
    assert (await backend.read_session_state("s") or {})["last_sequence"] == 11
