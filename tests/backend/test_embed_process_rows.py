"""The tests of tests/test_embed_process.py that read or stage the memory's tables directly (each
vector row against its chunk; an import the helper prepared against one prepared here)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from core import Engine, prepare
from core.embeddings import load_embedder
from core.embeddings.context import embed_with_context
from core.embeddings.process import EmbeddingProcess
from core.storage.messages import PreparedMessage
from core.storage.sqlite.connection import open_connection
from core.storage.sqlite.sqlite_backend import SqliteBackend
from tests.conftest import DETERMINISTIC


@pytest.mark.parametrize("batch_size", [7, 1000])
async def test_every_stored_vector_is_its_own_chunks(db_path: Path, batch_size: int) -> None:
    items = []
    for i in range(1, 120):
        text = "a repeated line" if i % 10 == 0 else f"message number {i} about topic {i % 7}"
        items.append(("s", i, {"role": "user", "content": text * (1 + (i % 3) * 60)}))
    items.insert(30, ("s", 3, {"role": "user", "content": "out of order, rejected"}))
    items.insert(50, ("s", 500, {"role": "robot", "content": "invalid, rejected"}))
    async with Engine.open(db_path, config=DETERMINISTIC) as engine:
        result = await engine.store_many(items, batch_size=batch_size)
        assert len(result.rejected) == 2 and result.chunks_deduplicated > 0
        await engine.drain()
        embedder = engine.embedder
        conn = open_connection(db_path, read_only=True, busy_timeout_ms=5000)
        rows = conn.execute(
            "SELECT c.context_text, c.chunk_text, v.embedding_blob FROM chunks c"
            " JOIN chunks_vec v ON v.chunk_id = c.chunk_id").fetchall()
        conn.close()
        assert len(rows) == (await engine.counts())["chunks"]
        stored = np.stack([np.frombuffer(blob, dtype=np.float32) for _, _, blob in rows])
        expected = embed_with_context(embedder, [text for _, text, _ in rows],
                                      [context for context, _, _ in rows])
        np.testing.assert_allclose(stored, expected, rtol=0, atol=1e-6)


async def test_vectors_from_the_helper_land_on_their_own_chunks(db_path: Path) -> None:
    first = [("s", i, {"role": "user", "content": f"warm-up message {i}"}) for i in range(1, 30)]
    second = [("s", i, {"role": "user", "content": f"helper message {i} " * (i % 4 + 1)})
              for i in range(30, 200)]
    second.insert(5, ("s", 31, {"role": "user", "content": "a duplicate sequence, rejected"}))
    async with Engine.open(db_path, config=DETERMINISTIC) as engine:
        await engine.store_many(first, batch_size=10)  # a second batch starts the helper
        helper = engine.bulk.process
        assert helper is not None
        await helper._starting
        assert helper.usable
        calls = {"local": 0}
        real_embed = engine.embedder.embed

        def counting(texts):
            calls["local"] += 1
            return real_embed(texts)

        engine.embedder.embed = counting  # type: ignore[method-assign]
        result = await engine.store_many(second, batch_size=25)
        assert len(result.rejected) == 1
        assert calls["local"] == 0  # every batch went to the helper
        await engine.drain()
        conn = open_connection(db_path, read_only=True, busy_timeout_ms=5000)
        rows = conn.execute(
            "SELECT c.context_text, c.chunk_text, v.embedding_blob FROM chunks c"
            " JOIN chunks_vec v ON v.chunk_id = c.chunk_id").fetchall()
        conn.close()
        stored = np.stack([np.frombuffer(blob, dtype=np.float32) for _, _, blob in rows])
        engine.embedder.embed = real_embed  # type: ignore[method-assign]
        expected = embed_with_context(engine.embedder, [t for _, t, _ in rows],
                                      [c for c, _, _ in rows])
        np.testing.assert_allclose(stored, expected, rtol=0, atol=1e-6)


def _import_items() -> list[tuple[Any, ...]]:
    """Messages over five sessions with their own times, some refused (a bad payload, a
    time without a zone), and a whole batch with no text to embed (tool calls)."""
    items: list[tuple[Any, ...]] = []
    for i in range(1, 71):
        session = f"s{i % 3}" if i <= 45 else f"t{i % 2}"  # sessions new in later batches
        when = f"2026-03-{1 + i % 28:02d}T10:{i % 60:02d}:00+00:00"
        payload: Any = {"role": "user" if i % 2 else "assistant",
                        "content": f"import message {i} about the {['tax', 'dog', 'deploy'][i % 3]}"
                        f" {'and more words ' * (i % 40)}", "metadata": {"n": i}}
        if 31 <= i <= 40:
            payload = {"role": "assistant", "content": None,
                       "tool_calls": [{"id": f"c{i}", "type": "function",
                                       "function": {"name": "look", "arguments": "{}"}}]}
        if i == 17:
            payload = {"role": "wizard", "content": "not a role"}
        if i == 23:
            when = "2026-03-01T10:00:00"  # no zone: refused
        items.append((session, None, payload, when))
    return items


async def test_the_helper_prepares_exactly_as_this_process_does() -> None:
    """A batch the helper prepared, embedded and put in context is the one this process
    makes from the same items and the same context parts handed over."""
    from core.config import load_config
    from core.embeddings.import_contexts import ImportContexts
    from core.prepare import prepare_batch, texts_to_embed

    config = load_config(DETERMINISTIC)
    local = load_embedder(config.embedding).embedder
    helper = EmbeddingProcess(config.embedding, local.name, local.dimension,
                              prepare_with=config)
    helper.start()
    await helper._starting
    indexed = list(enumerate(_import_items()))
    sessions = {item[0] for _, item in indexed}
    # One session starts from what the file held before the import: a part without a vector.
    earlier = ImportContexts(config.chunking.context_messages, config.chunking.context_chars)
    earlier.from_file(sorted(sessions), {"s1": ["what the file held of s1"]})
    try:
        done = await helper.prepare(indexed, "ann", "2026-04-01T00:00:00.000Z", "an-import",
                                    dict(earlier.tails))
    finally:
        await helper.close()
    assert done is not None
    batch, refused, matrix = done

    here = ImportContexts(config.chunking.context_messages, config.chunking.context_chars)
    here.take(dict(earlier.tails))
    expected_batch, expected_refused = prepare_batch(config, indexed, "ann",
                                                     "2026-04-01T00:00:00.000Z")
    raw = local.embed(texts_to_embed(expected_batch, config.chunking.context_messages,
                                     config.chunking.context_chars))
    missing = here.without_vectors(sorted(sessions))
    assert missing == ["what the file held of s1"]
    here.give_vectors(sorted(sessions), missing, local.embed(missing))
    expected_batch, expected = here.apply(expected_batch, raw)
    assert batch == expected_batch and refused == expected_refused
    assert [r.index for r in refused] == [16, 22]
    first_of_s1 = next(prepared for _, prepared in batch if prepared.session_id == "s1")
    assert first_of_s1.context == "what the file held of s1"
    assert matrix is not None and expected is not None and matrix.shape == expected.shape
    np.testing.assert_allclose(matrix, expected, rtol=0, atol=1e-6)


def full_text_terms(conn: Any) -> list[tuple[Any, ...]]:
    """Every term chunks_fts holds, where: (term, row, column, offset)."""
    conn.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.terms"
                 " USING fts5vocab(main, chunks_fts, instance)")
    return conn.execute("SELECT term, doc, col, offset FROM temp.terms"
                        " ORDER BY doc, col, offset").fetchall()


async def test_an_import_prepared_by_the_helper_stores_what_this_process_would(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every row, vector and full-text term of an import whose batches the helper prepared
    and embedded is the one an import prepared here stores, and the terms are those the
    writer makes itself; refusals are the same, with their places."""
    items = _import_items()
    prepared_there: list[int] = []
    real_prepare = EmbeddingProcess.prepare

    async def counting(self: EmbeddingProcess, batch: Any, *args: Any) -> Any:
        done = await real_prepare(self, batch, *args)
        if done is not None:
            prepared_there.append(len(batch))
        return done

    monkeypatch.setattr(EmbeddingProcess, "prepare", counting)

    async def imported(path: Path) -> tuple[Any, ...]:
        async with Engine.open(path, config=DETERMINISTIC) as engine:
            result = await engine.store_many(items, agent="ann", batch_size=10)
            helper = engine.bulk.process
            used = helper is not None and helper.usable
            rows = await engine.backend._db.read(lambda conn: (
                conn.execute("SELECT session_id, agent_identity, created_at, updated_at"
                             " FROM sessions ORDER BY session_id").fetchall(),
                conn.execute("SELECT session_id, sequence, payload_json, created_at, role,"
                             " importance FROM conversation_events ORDER BY rowid").fetchall(),
                conn.execute("SELECT chunk_id, session_id, chunk_text, content_hash,"
                             " sequence_start, metadata_json, created_at, embedding_status,"
                             " context_text FROM chunks ORDER BY fts_rowid").fetchall(),
                conn.execute("SELECT chunk_id, embedding_blob FROM chunks_vec"
                             " ORDER BY chunk_id").fetchall(),
                full_text_terms(conn)))
        return used, result, *rows

    with_helper = await imported(tmp_path / "helper.db")
    # A helper that dies holding sessions' context parts, at its third batch: the batches
    # after it read them from the file, once it holds every batch before.
    calls = 0

    async def dying(self: EmbeddingProcess, batch: Any, *args: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls == 3 and self._process is not None:
            self._process.kill()
            await self._process.wait()
        return await counting(self, batch, *args)

    monkeypatch.setattr(EmbeddingProcess, "prepare", dying)
    real_write = SqliteBackend.write_messages

    async def slow_write(self: SqliteBackend, *args: Any, **kwargs: Any) -> Any:
        await asyncio.sleep(0.05)  # the batch before the broken one is still being written
        return await real_write(self, *args, **kwargs)

    monkeypatch.setattr(SqliteBackend, "write_messages", slow_write)
    broken = await imported(tmp_path / "broken.db")
    monkeypatch.setattr(SqliteBackend, "write_messages", real_write)
    assert broken[0] is False and prepared_there[6:] == [10, 10]
    del prepared_there[6:]
    monkeypatch.setattr("core.bulk.worth_a_process", lambda config: False)
    here = await imported(tmp_path / "here.db")
    # And with no full-text words worked out ahead: the writer glues them itself.
    real_prepare_message, real_with_context = prepare.prepare_message, PreparedMessage.with_context
    monkeypatch.setattr(prepare, "prepare_message", lambda *args, **kwargs: real_prepare_message(
        *args, **{**kwargs, "words": False}))
    monkeypatch.setattr(PreparedMessage, "with_context",
                        lambda self, context, words=None: real_with_context(self, context))
    by_the_writer = await imported(tmp_path / "writer.db")
    assert len(here[6]) > 1000 and here[6] == by_the_writer[6] == with_helper[6]
    assert with_helper[0] is True and here[0] is False
    assert prepared_there == [10] * 6  # every batch but the first, in the helper
    assert with_helper[1] == here[1] and [r.index for r in here[1].rejected] == [16, 22]
    assert with_helper[2:5] == here[2:5]
    assert {agent for _, agent, _, _ in here[2]} == {"ann"}
    assert len(here[4]) > 50 and {row[7] for row in here[4]} == {"done"}
    assert broken[1:5] == here[1:5] and broken[6] == here[6]
    for ran in (with_helper, broken):
        assert [chunk_id for chunk_id, _ in ran[5]] == [chunk_id for chunk_id, _ in here[5]]
        for (_, ours), (_, theirs) in zip(ran[5], here[5], strict=True):
            np.testing.assert_allclose(np.frombuffer(ours, np.float32),
                                       np.frombuffer(theirs, np.float32), rtol=0, atol=1e-6)
