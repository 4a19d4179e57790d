"""The message pipeline (oxydra's nine steps), bulk path, backlog, restore, sessions."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from core import Engine, clock
from core.errors import InvalidInput, InvalidMessage
from tests.conftest import DETERMINISTIC


@pytest.mark.parametrize("payload, words", [
    ({"role": "bot", "content": "x"}, "role"),
    ({"content": "no role"}, "role"),
    ({"role": "user", "content": 42}, "content"),
    (["role", "user"], "dict"),
    ({"role": "user", "content": "x", "importance": 1.5}, "importance"),
    ({"role": "user", "content": "x", "tool_calls": "not a list"}, "tool_calls"),
    ({"role": "user", "content": "bad \ud800 surrogate"}, "content"),
    ({"role": "user", "content": "x", "metadata": {"n": float("nan")}}, "metadata"),
])
async def test_a_payload_that_is_not_a_message_is_refused_clearly(memory: str, payload,
                                                                   words: str) -> None:
    async with Engine.open(memory, config=DETERMINISTIC) as engine:
        with pytest.raises(InvalidMessage, match=words):
            await engine.store("s", 1, payload)
        assert await engine.list_sessions() == []


@pytest.mark.parametrize("session_id, sequence", [("", 1), (None, 1), ("s", "1"), ("s", 1.0),
                                                  ("s", True)])
async def test_wrong_types_are_refused(memory: str, session_id, sequence) -> None:
    async with Engine.open(memory, config=DETERMINISTIC) as engine:
        with pytest.raises(InvalidInput):
            await engine.store(session_id, sequence, {"role": "user", "content": "x"})


async def test_append_allocates_the_next_sequence(memory: str) -> None:
    async with Engine.open(memory, config=DETERMINISTIC) as engine:
        assert (await engine.append("s", {"role": "user", "content": "a"})).sequence == 1
        await engine.store("s", 10, {"role": "user", "content": "b"})
        assert (await engine.append("s", {"role": "user", "content": "c"})).sequence == 11


async def test_bulk_path_stores_many_and_reports_every_refusal(memory: str) -> None:
    items = [("s", i, {"role": "user", "content": f"bulk message {i}"}) for i in range(1, 2501)]
    items.insert(10, ("s", 5, {"role": "user", "content": "out of order"}))
    items.insert(20, ("s", 9999, {"role": "wizard", "content": "bad role"}))
    items.append(("t", None, {"role": "user", "content": "allocated"}))
    async with Engine.open(memory, config=DETERMINISTIC) as engine:
        settled: list[int] = []
        result = await engine.store_many(items, batch_size=500, progress=settled.append)
        assert result.stored == 2501
        # One pipeline: progress after each batch, in input order, up to every item.
        assert settled == [500, 1000, 1500, 2000, 2500, 2503]
        assert sorted(r.index for r in result.rejected) == [10, 20]
        reasons = {r.index: r.reason for r in result.rejected}
        assert "not greater" in reasons[10] and "role" in reasons[20]
        await engine.drain()
        status = await engine.embedding_status()
        assert status.backlog == 0 and status.embedded == 2501
        assert [r.sequence for r in await engine.recall("t")] == [1]


async def test_a_long_import_writes_bigger_transactions_past_its_first_messages(
        memory: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past GROW_FROM_MESSAGES an import's batches hold GROWN_BATCHES times as many (fewer
    commits, each rewriting the random-key index pages): every message still stored once."""
    from core import bulk

    monkeypatch.setattr(bulk, "GROW_FROM_MESSAGES", 1000)
    items = [(f"s{i % 7}", None, {"role": "user", "content": f"bulk message {i}"})
             for i in range(3300)]
    async with Engine.open(memory, config=DETERMINISTIC) as engine:
        settled: list[int] = []
        result = await engine.store_many(items, batch_size=250, progress=settled.append)
        assert result.stored == 3300 and not result.rejected
        assert settled == [250, 500, 750, 1000, 2000, 3000, 3300]
        assert (await engine.counts())["conversation_events"] == 3300


async def test_the_backlog_is_visible_and_resumes_after_reopen(memory: str) -> None:
    async with Engine.open(memory, config=DETERMINISTIC, start_worker=False) as engine:
        await engine.store_many([("s", i, {"role": "user", "content": f"m{i}"})
                                 for i in range(1, 301)])
        assert (await engine.embedding_status()).backlog == 300
        hits = await engine.hybrid_query(session_id="s", query="m42", top_k=1)
        assert hits and hits[0].text == "m42"  # FTS sees a message before its vector exists
    async with Engine.open(memory, config=DETERMINISTIC) as engine:
        await engine.drain()
        status = await engine.embedding_status()
        assert (status.backlog, status.embedded) == (0, 300)


async def test_restore_keeps_the_newest_messages_that_fit(memory: str) -> None:
    async with Engine.open(memory, config=DETERMINISTIC) as engine:
        for seq in range(1, 11):
            await engine.store("s", seq, {"role": "user", "content": "x" * 40})  # 10 + 4 tokens
        whole = await engine.restore("s", 10_000)
        assert whole.sequences == list(range(1, 11)) and whole.dropped == 0
        part = await engine.restore("s", 14 * 3 + 5)
        assert part.sequences == [8, 9, 10] and part.tokens_used == 42 and part.dropped == 7
        assert (await engine.restore("s", 0)).messages == []
        assert "characters / 4" in part.token_counting  # no tokenizer: the estimate


async def test_sessions_are_listed_newest_activity_first_with_counts(memory: str) -> None:
    start = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
    async with Engine.open(memory, config=DETERMINISTIC) as engine:
        # One minute between the writes: two in one millisecond would tie (then by id).
        for minute, (session, sequence, text) in enumerate(
                (("old", 1, "first"), ("new", 1, "second"), ("new", 2, "third"))):
            with clock.frozen(start + timedelta(minutes=minute)):
                await engine.store(session, sequence, {"role": "user", "content": text})
        sessions = await engine.list_sessions()
        assert [s.session_id for s in sessions] == ["new", "old"]
        assert (sessions[0].event_count, sessions[0].chunk_count) == (2, 2)
        with clock.frozen(start + timedelta(minutes=5)):
            await engine.store("old", 2, {"role": "user", "content": "old is active again"})
        assert [s.session_id for s in await engine.list_sessions()] == ["old", "new"]


async def test_recall_never_serves_stale_working_memory(memory: str) -> None:
    async with Engine.open(memory, config=DETERMINISTIC) as first, \
            Engine.open(memory, config=DETERMINISTIC) as second:
        for seq in range(1, 4):
            await first.store("s", seq, {"role": "user", "content": f"m{seq}"})
        assert len(await first.recall("s")) == 3  # loads working memory
        await second.store("s", 4, {"role": "user", "content": "from elsewhere"})
        assert [r.sequence for r in await first.recall("s", limit=2)] == [3, 4]
