"""WorkbenchStore beside LangGraph's InMemoryStore on generated operation sequences.

Each seed drives both stores through the same puts, deletes, gets, searches (filters,
offsets, limits, prefixes) and namespace listings, one operation or a small batch at a
time, and every answer must be the same (namespace, key, value, in the same order). A
search with a query is compared as a set: only the ranking may differ (InMemoryStore
without embeddings does not rank). Times are compared apart (the two clocks differ).
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from typing import Any

import pytest
from langgraph.store.base import GetOp, ListNamespacesOp, MatchCondition, Op, PutOp, SearchOp
from langgraph.store.memory import InMemoryStore

from core import Engine
from core.integrations.langgraph import WorkbenchStore
from core.locations import parse_location
from tests.conftest import DETERMINISTIC

NAMESPACES = [("docs",), ("docs", "a"), ("docs", "a", "deep"), ("docs", "b"), ("users",),
              ("users", "u/1"), ("users", "ü 2"), ("users", " pad "), ("100%",), ("x", "docs")]
KEYS = ["k0", "k1", "k2", "key with spaces", "a/b", "50%", "ünï", " lead", "trail ", ""]
WORDS = ["apple", "banana", "cherry", "delta", "echo", "foxtrot"]


class Reference(InMemoryStore):
    """InMemoryStore without its defaultdict's side effects: a namespace with no item is
    dropped (a get or delete adds an empty one, which it then lists), and a namespace that
    empties and fills again within a batch goes last, as when done one op at a time."""

    async def abatch(self, ops: Iterable[Op]) -> list[Any]:
        ops = list(ops)
        order = [ns for ns, items in self._data.items() if items]
        keys = {ns: set(self._data[ns]) for ns in order}
        last: dict[tuple[tuple[str, ...], str], PutOp] = {}
        for op in ops:
            if isinstance(op, PutOp):
                last[(op.namespace, op.key)] = op
        for (ns, key), op in last.items():
            held = keys.setdefault(ns, set())
            if op.value is None:
                held.discard(key)
                if not held and ns in order:
                    order.remove(ns)
            else:
                if not held and ns not in order:
                    order.append(ns)
                held.add(key)
        results = await super().abatch(ops)
        kept = {ns: self._data[ns] for ns in order if self._data.get(ns)}
        self._data.clear()
        self._data.update(kept)
        return results


def value(rng: random.Random) -> dict[str, Any]:
    found: dict[str, Any] = {"n": rng.randint(0, 9), "word": rng.choice(WORDS)}
    if rng.random() < 0.5:
        found["tags"] = rng.sample(WORDS, rng.randint(0, 3))
    if rng.random() < 0.3:
        found["nested"] = {"flag": rng.random() < 0.5, "x": rng.choice([1, 2.5, None, "s"])}
    if rng.random() < 0.2:
        found["text"] = " ".join(rng.choices(WORDS, k=5))
    return found


def a_filter(rng: random.Random) -> dict[str, Any] | None:
    roll = rng.random()
    if roll < 0.4:
        return None
    if roll < 0.55:
        return {"word": rng.choice(WORDS)}
    if roll < 0.8:
        operator = rng.choice(["$eq", "$ne", "$gt", "$gte", "$lt", "$lte"])
        return {"n": {operator: rng.randint(0, 9)}}
    if roll < 0.9:
        return {"nested": {"flag": rng.random() < 0.5}}
    return {"tags": rng.sample(WORDS, rng.randint(0, 2)), "n": {"$gte": 2, "$lt": 8}}


def a_prefix(rng: random.Random) -> tuple[str, ...]:
    namespace = rng.choice(NAMESPACES)
    return namespace[:rng.randint(0, len(namespace))]


def an_op(rng: random.Random) -> Op:
    roll = rng.random()
    if roll < 0.40:
        return PutOp(rng.choice(NAMESPACES), rng.choice(KEYS), value(rng))
    if roll < 0.52:
        return PutOp(rng.choice(NAMESPACES), rng.choice(KEYS), None)
    if roll < 0.65:
        return GetOp(rng.choice(NAMESPACES), rng.choice(KEYS))
    if roll < 0.85:
        return SearchOp(a_prefix(rng), a_filter(rng), rng.choice([1, 2, 3, 5, 10, 100]),
                        rng.choice([0, 0, 1, 2, 5]))
    if roll < 0.95:
        conditions = []
        if rng.random() < 0.5:
            path = list(a_prefix(rng))
            if path and rng.random() < 0.3:
                path[0] = "*"
            conditions.append(MatchCondition("prefix", tuple(path)))
        if rng.random() < 0.4:
            conditions.append(MatchCondition("suffix", (rng.choice(["a", "docs", "*", "deep"]),)))
        return ListNamespacesOp(tuple(conditions), rng.choice([None, None, 1, 2]),
                                rng.choice([1, 3, 100]), rng.choice([0, 0, 1, 2]))
    return SearchOp(a_prefix(rng), a_filter(rng), 1000, 0, rng.choice(WORDS))


def shape(result: Any) -> Any:
    """What must match: items as (namespace, key, value), in order; times apart."""
    if isinstance(result, list):
        return [shape(item) for item in result]
    if hasattr(result, "key"):
        return (tuple(result.namespace), result.key, result.value)
    return result


async def run_side_by_side(engine: Engine, seed: int, count: int) -> dict[str, int]:
    """Run ``count`` generated ops on both stores; the number of each kind run."""
    rng = random.Random(seed)
    ours, reference = WorkbenchStore(engine), Reference()
    kinds: dict[str, int] = {}
    done = 0
    while done < count:
        batch = [an_op(rng) for _ in range(rng.choice([1, 1, 1, 1, 2, 3, 5]))]
        for op in batch:
            kind = type(op).__name__ + ("+query" if getattr(op, "query", None) else "")
            kinds[kind] = kinds.get(kind, 0) + 1
        done += len(batch)
        got, expected = await ours.abatch(batch), await reference.abatch(batch)
        for op, mine, theirs in zip(batch, got, expected, strict=True):
            if isinstance(op, SearchOp) and op.query:
                assert sorted(map(repr, shape(mine))) == sorted(map(repr, shape(theirs))), op
            else:
                assert shape(mine) == shape(theirs), (seed, done, op)
    # Everything left, searched whole: the same items in the same order, and their times.
    everything = await ours.asearch((), limit=10_000)
    assert shape(everything) == shape(await reference.asearch((), limit=10_000))
    assert all(item.created_at <= item.updated_at for item in everything)
    return kinds


@pytest.mark.parametrize("seed", [1, 2, 3])
async def test_parity_with_in_memory_store_on_sqlite(tmp_path, seed: int) -> None:
    async with Engine.open(tmp_path / "memory.db", config=DETERMINISTIC) as engine:
        kinds = await run_side_by_side(engine, seed, 1500)
    assert sum(kinds.values()) >= 1500 and kinds["PutOp"] > 500


async def test_parity_with_in_memory_store(memory: str) -> None:
    """A shorter run on each backend (PostgreSQL included)."""
    if not parse_location(memory).is_postgres:
        pytest.skip("SQLite runs the long sequences above")
    async with Engine.open(memory, config=DETERMINISTIC) as engine:
        kinds = await run_side_by_side(engine, 7, 400)
    assert kinds["SearchOp"] > 50
