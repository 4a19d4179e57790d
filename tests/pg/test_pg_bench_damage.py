"""The tests of tests/test_bench_pg.py that read or stage the memory's tables directly (a database
damaged on purpose)."""

from __future__ import annotations

import asyncio

import psycopg

from core import Engine
from core.storage.pg.invariants import check_database
from tests.conftest import DETERMINISTIC


def test_check_database_finds_postings_out_of_step_with_the_chunks(pg_url: str) -> None:
    async def store() -> None:
        async with Engine.open(pg_url, config=DETERMINISTIC) as engine:
            await engine.store("s1", 1, {"role": "user", "content": "the deploy was rolled back"})
    asyncio.run(store())
    with psycopg.connect(pg_url, autocommit=True) as conn:
        assert check_database(conn, max_chars=640, overlap_chars=96).sound
        conn.execute("DELETE FROM chunk_terms WHERE lexeme = 'deploy'")
        conn.execute("UPDATE chunk_terms SET f_text = 5 WHERE lexeme = 'roll'")
        broken = check_database(conn, max_chars=640, overlap_chars=96)
    assert broken.half_stored == ["2 full-text postings missing for their chunks"]
    assert broken.orphans == ["1 full-text postings without their chunk"]


def test_check_database_finds_a_message_without_its_chunks(pg_url: str) -> None:
    async def store() -> None:
        async with Engine.open(pg_url, config=DETERMINISTIC) as engine:
            await engine.store("s1", 1, {"role": "user", "content": "the deploy was rolled back"})
            await engine.store("s1", 2, {"role": "user", "content": "the cache was warmed"})
            await engine.drain()
    asyncio.run(store())
    with psycopg.connect(pg_url, autocommit=True) as conn:
        sound = check_database(conn, max_chars=640, overlap_chars=96)
        assert sound.sound and sound.events == 2 and sound.chunks == 2
        conn.execute("DELETE FROM chunks WHERE session_id = 's1' AND sequence_start = 2")
        broken = check_database(conn, max_chars=640, overlap_chars=96)
    assert broken.half_stored_count == 1 and "s1#2" in broken.half_stored[0]
