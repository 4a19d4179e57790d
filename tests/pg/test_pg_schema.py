"""What the PostgreSQL schema does by itself: full text kept in step with each chunk and
stemmed like FTS5's porter tokenizer, vectors removed with their chunk, their dimension
fixed at the first open, and values read back as SQLite holds them."""

from __future__ import annotations

from typing import Any

import pytest
from psycopg import AsyncConnection
from psycopg import errors as pg_errors

from core.errors import DimensionMismatch
from core.storage.pg import vector_index
from core.storage.pg.connection import PgDatabase

Conn = AsyncConnection[Any]


async def add_chunk(conn: Conn, chunk_id: str, text: str, context: str = "") -> None:
    await conn.execute("INSERT INTO sessions(session_id, agent_identity) VALUES ('s', 'a')"
                       " ON CONFLICT DO NOTHING")
    await conn.execute(
        "INSERT INTO chunks(chunk_id, session_id, chunk_text, content_hash, sequence_start,"
        " sequence_end, scope_token, context_text) VALUES (%s, 's', %s, %s, 1, 1, 't', %s)",
        (chunk_id, text, chunk_id, context))


async def one(conn: Conn, query: str, *params: Any) -> Any:
    cursor = await conn.execute(query.encode(), params or None)
    row = await cursor.fetchone()
    return None if row is None else row[0]


async def test_full_text_stems_like_porter_and_keeps_stop_words(pg_db: PgDatabase) -> None:
    await pg_db.write(add_chunk, "c1", "She said the paintings were lovely",
                      "What did she do on Sunday?\x1eWent to the museum")

    async def matches(conn: Conn, words: str) -> bool:
        return bool(await one(conn, "SELECT count(*) FROM chunks"
                                    " WHERE fts @@ plainto_tsquery('memory_english', %s)", words))

    for words in ("painting", "paint", "she said the", "what did she do", "museum"):
        assert await pg_db.read(matches, words), words
    assert not await pg_db.read(matches, "sculpture")


async def test_the_context_is_indexed_at_a_lower_weight_than_the_text(pg_db: PgDatabase) -> None:
    await pg_db.write(add_chunk, "c1", "paintings", "museum")
    text_words = await pg_db.read(one, "SELECT ts_filter(fts, '{a}')::text FROM chunks")
    context_words = await pg_db.read(one, "SELECT ts_filter(fts, '{b}')::text FROM chunks")
    assert (text_words, context_words) == ("'paint':1A", "'museum':2B")


async def test_the_full_text_column_follows_an_edited_chunk(pg_db: PgDatabase) -> None:
    await pg_db.write(add_chunk, "c1", "first words")

    async def edit(conn: Conn) -> None:
        await conn.execute("UPDATE chunks SET chunk_text = 'second thoughts'")

    await pg_db.write(edit)
    assert await pg_db.read(one, "SELECT fts::text FROM chunks") == "'second':1A 'thought':2A"


async def test_a_vector_goes_with_its_chunk_and_its_dimension_is_fixed_once(
        pg_db: PgDatabase) -> None:
    await pg_db.write(add_chunk, "c1", "words")
    assert await pg_db.write(vector_index.ensure_vector_dimension, 3, "tiny-model") is True
    assert await pg_db.write(vector_index.ensure_vector_dimension, 3, "tiny-model") is False
    assert await pg_db.read(one, "SELECT indexdef FROM pg_indexes WHERE indexname = %s",
                            vector_index.HNSW_INDEX) is not None

    async def add_vector(conn: Conn, literal: str) -> None:
        await conn.execute("INSERT INTO chunks_vec(chunk_id, agent_identity, session_id,"
                           " embedding_blob, embedding_model)"
                           " VALUES ('c1', 'a', 's', %s::vector, 'tiny-model')", (literal,))

    with pytest.raises(pg_errors.DataException, match="expected 3 dimensions"):
        await pg_db.write(add_vector, "[1, 0]")
    await pg_db.write(add_vector, "[1, 0, 0]")

    async def remove_chunk(conn: Conn) -> None:
        await conn.execute("DELETE FROM chunks WHERE chunk_id = 'c1'")

    await pg_db.write(remove_chunk)
    assert await pg_db.read(one, "SELECT count(*) FROM chunks_vec") == 0
    with pytest.raises(DimensionMismatch, match="3-dimension vectors from tiny-model"):
        await pg_db.write(vector_index.ensure_vector_dimension, 4, "other-model")


async def test_values_read_back_exactly_as_written(pg_db: PgDatabase) -> None:
    async def store(conn: Conn) -> None:
        await conn.execute("INSERT INTO sessions(session_id, created_at)"
                           " VALUES ('s', '2024-05-01 12:00:00')")
        await conn.execute("INSERT INTO conversation_events(session_id, sequence,"
                           " payload_json, importance) VALUES ('s', %s, %s, 0.1)",
                           (2**62, '{"role": "user",  "content": "x"}'))

    await pg_db.write(store)
    assert await pg_db.read(one, "SELECT created_at FROM sessions") == "2024-05-01 12:00:00"
    assert await pg_db.read(one, "SELECT sequence FROM conversation_events") == 2**62
    assert await pg_db.read(one, "SELECT payload_json FROM conversation_events") \
        == '{"role": "user",  "content": "x"}'  # as written: not re-rendered as jsonb
    assert await pg_db.read(one, "SELECT importance FROM conversation_events") == 0.1
    default_time = await pg_db.read(one, "SELECT created_at FROM conversation_events")
    assert len(default_time) == len("2024-05-01T12:00:00.000Z") and default_time[-1] == "Z"


async def test_text_sorts_in_byte_order_as_sqlite_does(pg_db: PgDatabase) -> None:
    async def store(conn: Conn) -> None:
        for session_id in ("b", "B", "a-2", "a 1", "é", "_x"):
            await conn.execute("INSERT INTO sessions(session_id) VALUES (%s)", (session_id,))

    await pg_db.write(store)

    async def ordered(conn: Conn) -> list[str]:
        cursor = await conn.execute("SELECT session_id FROM sessions ORDER BY session_id")
        return [row[0] for row in await cursor.fetchall()]

    found = await pg_db.read(ordered)
    assert found == sorted(found, key=lambda text: text.encode("utf-8"))
