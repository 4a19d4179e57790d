"""Full text's postings (migration 0002, core/storage/pg/fts_bm25.py): kept in step with the
chunks, and ranking exactly as the exhaustive bm25 over the tsvectors does."""

from __future__ import annotations

import random
from typing import Any

import psycopg
import pytest

from core import Engine
from core.storage.pg import fts_bm25, search
from core.storage.vocabulary import Scope
from tests.conftest import DETERMINISTIC

# Word frequencies from a few in every chunk to one in a hundred, as conversation has them.
COMMON = ("good", "deploy", "think", "today")
MIDDLE = ("cache", "invoice", "latency", "rollback", "ticket")
RARE = ("zeppelin", "marmalade", "quokka", "obsidian", "lighthouse", "saxophone")


def sentence(rng: random.Random) -> str:
    words = [rng.choice(COMMON) for _ in range(rng.randint(2, 6))]
    words += [rng.choice(MIDDLE) for _ in range(rng.randint(0, 3))]
    if rng.random() < 0.15:
        words.append(rng.choice(RARE))
    rng.shuffle(words)
    return " ".join(words)


async def fill(url: str) -> None:
    rng = random.Random(5)
    async with Engine.open(url, config=DETERMINISTIC) as engine:
        for session, namespace in (("s1", "a"), ("s2", "a"), ("s3", "b"), ("gone", "a")):
            for sequence in range(1, 61):
                await engine.store(session, sequence, {"role": "user", "content": sentence(rng)},
                                   namespace=namespace)
        await engine.forget("gone")
        await engine.drain()  # embedded: no vector save of this fill runs into the test's


def postings(url: str, source: str) -> list[tuple[Any, ...]]:
    with psycopg.connect(url) as conn:
        return [tuple(row) for row in conn.execute(
            f"SELECT lexeme, session_id, fts_rowid, f_text, f_context, doc_length FROM {source}"
            " ORDER BY 1, 2, 3").fetchall()]


async def test_postings_hold_every_chunk_and_word_and_follow_deletes(pg_url: str) -> None:
    await fill(pg_url)
    with psycopg.connect(pg_url, autocommit=True) as conn:  # chunks gone, their session kept
        conn.execute("DELETE FROM chunks WHERE session_id = 's2' AND sequence_start < 20")
    kept = postings(pg_url, "chunk_terms")
    expected = postings(pg_url, "(SELECT p.* FROM chunks c, memory_chunk_postings("
                                "c.session_id, c.fts_rowid, c.fts, c.fts_length) p) x")
    assert kept == expected
    assert {row[1] for row in kept} == {"s1", "s2", "s3"}
    assert any(row[4] > 0 for row in kept), "the conversational context counts"


def same_ranking(found: list[tuple[str, float]], expected: list[tuple[str, float]]) -> bool:
    """The same scores in order, and the same chunks above the last score: chunks whose
    scores are equal but summed in another order may swap, and the last tie be cut apart."""
    scores = [round(score, 9) for _, score in found]
    if scores != [round(score, 9) for _, score in expected]:
        return False
    last = scores[-1] if scores else 0.0
    above = {(c, round(s, 9)) for c, s in found if round(s, 9) > last}
    return above == {(c, round(s, 9)) for c, s in expected if round(s, 9) > last}


QUERIES = ["good deploy", "quokka", "cache good", "zeppelin marmalade rollback", "today think",
           "obsidian latency ticket good", "lighthouse nowhere", "saxophone invoice deploy today"]


@pytest.mark.parametrize("context_weight", [0.5, 0.0])
async def test_postings_rank_exactly_as_the_exhaustive_bm25(pg_url: str,
                                                            context_weight: float) -> None:
    await fill(pg_url)
    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as conn:
        for scope in (Scope(session_id="s1"), Scope(namespace="a"), Scope(namespace="b")):
            for query in QUERIES:
                terms = query.split()
                for k in (1, 5, 20):
                    exhaustive = await search.fts_search_exhaustive(
                        conn, scope, terms, k, context_weight=context_weight)
                    found = await fts_bm25.top_k(conn, scope, terms, k, context_weight)
                    assert found is not None and same_ranking(found, exhaustive), (
                        scope, query, k)


async def test_a_word_of_several_lexemes_takes_the_exhaustive_query(pg_url: str) -> None:
    async with Engine.open(pg_url, config=DETERMINISTIC):
        pass  # the schema, with its text search configuration
    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as conn:
        scope = Scope(namespace="")
        assert await fts_bm25.top_k(conn, scope, ["deploy", "zeppelins"], 5, 0.5) == []
        assert await fts_bm25.top_k(conn, scope, ["deploy", "foo_bar"], 5, 0.5) is None
