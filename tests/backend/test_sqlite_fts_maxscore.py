"""The SQLite backend's namespace full-text leg: its MaxScore rewrite gives exactly the plain
bm25 top k."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from core import Engine
from core.storage.sqlite import connection, fts_maxscore
from core.storage.vocabulary import agent_token_for
from tests.conftest import DETERMINISTIC

# A skewed vocabulary, as conversation has: a few words in most chunks, a long rare tail.
COMMON = ["good", "plan", "today", "check"]
TOPICAL = ["lisbon", "flight", "hotel", "recipe", "garlic", "oven", "budget", "invoice"]
RARE = [f"word{n}" for n in range(60)]
WEIGHTS = "1.0, 0, 0.5, 0, 0"


def _text(rng: random.Random) -> str:
    words = [w for w in COMMON if rng.random() < 0.6]
    words += rng.sample(TOPICAL, rng.randint(0, 2)) + rng.sample(RARE, rng.randint(0, 2))
    words += [rng.choice(COMMON) for _ in range(rng.randint(0, 3))]  # repeats: tf > 1
    rng.shuffle(words)
    return " ".join(words) or "hello"


async def _file(path: Path, messages: int = 400) -> str:
    rng = random.Random(7)
    data = [(f"s{n % 8}", n // 8 + 1, {"role": "user", "content": _text(rng)})
            for n in range(messages)]
    async with Engine.open(path, config={**DETERMINISTIC, "agent": "ana"}) as engine:
        result = await engine.store_many(data)
        assert result.stored == messages
        # Another agent's chunks share the words; the scope token keeps them out.
        await engine.store_many([("other", 1, {"role": "user", "content": "good plan lisbon"})],
                                agent="bob")
    return agent_token_for("ana")


def _plain(conn: object, terms: list[str], scope_filter: str, k: int) -> list[tuple[int, float]]:
    ors = " OR ".join(f'"{t}"' for t in terms)
    return conn.execute(  # type: ignore[attr-defined]
        f"SELECT rowid, -bm25(chunks_fts, {WEIGHTS}) AS score FROM chunks_fts"
        " WHERE chunks_fts MATCH ? ORDER BY score DESC LIMIT ?",
        (f"{{chunk_text context}} : ({ors}) AND {scope_filter}", k)).fetchall()


async def test_the_rewrite_ranks_exactly_as_the_plain_query(db_path: Path) -> None:
    token = await _file(db_path)
    scope_filter = f'scope_token : "{token}"'
    conn = connection.open_connection(db_path, read_only=True, busy_timeout_ms=5000)
    rng = random.Random(3)
    rounds_used = set()
    real = fts_maxscore.bm25_rowids
    calls: list[str] = []

    def counting(conn_: object, match: str, weights: str, k: int) -> list[tuple[int, float]]:
        calls.append(match)
        return real(conn_, match, weights, k)

    try:
        fts_maxscore.bm25_rowids = counting  # type: ignore[assignment]
        for _ in range(150):
            terms = rng.sample(COMMON + TOPICAL + RARE[:10], rng.randint(1, 5))
            k = rng.choice([1, 3, 5, 20])
            calls.clear()
            got = fts_maxscore.ranked_rowids(conn, terms, scope_filter, WEIGHTS, k)
            want = _plain(conn, terms, scope_filter, k)
            assert [row for row, _ in got] == [row for row, _ in want], terms
            assert [s for _, s in got] == pytest.approx([s for _, s in want], abs=1e-12)
            rounds_used.add(len(calls))
    finally:
        fts_maxscore.bm25_rowids = real  # type: ignore[assignment]
        conn.close()
    # Both kinds of query happened: answered on the rarest word alone, and widened.
    assert 1 in rounds_used and max(rounds_used) > 1


async def test_term_counts_follow_the_index(db_path: Path) -> None:
    await _file(db_path, messages=40)
    conn = connection.open_connection(db_path, read_only=True, busy_timeout_ms=5000)
    try:
        before = fts_maxscore.term_docs(conn, ["zebra", "painting", "snake_case"])
        assert before == {"zebra": 0, "painting": 0, "snake_case": None}
        async with Engine.open(db_path, config=DETERMINISTIC) as engine:
            await engine.store("new", 1, {"role": "user", "content": "a zebra painted"})
        after = fts_maxscore.term_docs(conn, ["zebra", "painting"])
        assert after == {"zebra": 1, "painting": 1}  # stems as the index does: paint
    finally:
        conn.close()


async def test_namespace_queries_use_it_and_stay_in_their_namespace(db_path: Path) -> None:
    await _file(db_path)
    async with Engine.open(db_path, config=DETERMINISTIC) as engine:
        found = await engine.search(namespace="ana", query="good plan lisbon", mode="keyword",
                                    top_k=50)
        assert len(found.results) == 50
        assert {r.session_id for r in found.results} <= {f"s{n}" for n in range(8)}
        theirs = await engine.search(namespace="bob", query="good plan lisbon", mode="keyword")
        assert [r.session_id for r in theirs.results] == ["other"]
