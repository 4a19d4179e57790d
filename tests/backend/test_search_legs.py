"""The search legs: full text (with the LIKE fallback), vectors, scopes and tags."""

from __future__ import annotations

import numpy as np

from core.storage.backend import Backend
from core.storage.vocabulary import LegRequest, Scope
from tests.backend.builders import embed_backlog, store, unit

MINE = Scope(session_id="mine")
ANA = Scope(namespace="ana")


async def _texts(backend: Backend, rows: list[tuple[str, float]]) -> list[str]:
    chunks = await backend.fetch_chunks([chunk_id for chunk_id, _ in rows])
    return [chunks[chunk_id].text for chunk_id, _ in rows]


async def test_full_text_ranks_matches_inside_the_scope_only(backend: Backend) -> None:
    await store(backend, "mine", 1, "a zebra in lisbon")
    await store(backend, "mine", 2, "zebra zebra zebra stripes")
    await store(backend, "mine", 3, "nothing of note")
    await store(backend, "yours", 1, "a zebra of yours")
    await store(backend, "bobs", 1, "bob's zebra", agent="bob")
    rows = await backend.fts_search(MINE, ["zebra"], 10)
    assert await _texts(backend, rows) == ["zebra zebra zebra stripes", "a zebra in lisbon"]
    assert rows[0][1] > rows[1][1]  # higher is better
    namespace = await _texts(backend, await backend.fts_search(ANA, ["zebra"], 10))
    assert sorted(namespace) == ["a zebra in lisbon", "a zebra of yours",
                                 "zebra zebra zebra stripes"]
    assert await backend.fts_search(MINE, ["zebra"], 1) == rows[:1]
    # Words, never syntax: an operator or a quote is just text to look for.
    assert await backend.fts_search(MINE, ['"zebra', "OR", "NEAR("], 10) != []


async def test_tags_filter_every_leg_before_the_cut(backend: Backend) -> None:
    await store(backend, "mine", 1, "tagged zebra", tags=("travel", "pets"))
    await store(backend, "mine", 2, "untagged zebra zebra")
    await embed_backlog(backend, {"tagged zebra": unit(0.0, 1.0),
                                  "untagged zebra zebra": unit(1.0)})
    full_text = await backend.fts_search(MINE, ["zebra"], 1, tags=["travel"])
    assert await _texts(backend, full_text) == ["tagged zebra"]
    assert await backend.fts_search(MINE, ["zebra"], 5, tags=["travel", "work"]) == []
    nearest = await backend.vector_search(MINE, unit(1.0), 1, "contract-model",
                                          tags=["pets"])
    assert await _texts(backend, nearest) == ["tagged zebra"]


async def test_like_fallback_answers_when_full_text_finds_nothing(backend: Backend) -> None:
    await store(backend, "mine", 1, "the zebra-crossing")
    await store(backend, "mine", 2, "order ab4521 shipped")
    found = LegRequest(scope=MINE, depth=10, terms=("zebra",), like_text="zebra")
    rows, answered, _ = await backend.full_text_leg(found)
    assert answered is None and await _texts(backend, rows) == ["the zebra-crossing"]
    # Inside a word: no full-text match, so the substring search answers.
    fallback = LegRequest(scope=MINE, depth=10, terms=("452",), like_text="452")
    rows, answered, ran = await backend.full_text_leg(fallback)
    assert answered == "like" and await _texts(backend, rows) == ["order ab4521 shipped"]
    # What ran says so: the full-text statement (no rows), then the substring search.
    assert [(step.engine, step.rows) for step in ran] == [(ran[0].engine, 0), ("like", 1)]
    assert ran[1].expression == "%452%"
    nothing = LegRequest(scope=MINE, depth=10, terms=("absent",), like_text="absent")
    assert (await backend.full_text_leg(nothing))[:2] == ([], None)
    wildcard = LegRequest(scope=MINE, depth=10, terms=("%",), like_text="%")
    # Its wildcards are literal.
    assert (await backend.full_text_leg(wildcard))[:2] == ([], None)


async def test_vector_search_is_nearest_first_inside_the_scope(backend: Backend) -> None:
    await store(backend, "mine", 1, "north")
    await store(backend, "mine", 2, "north-east")
    await store(backend, "mine", 3, "east")
    await store(backend, "bobs", 1, "bob's north", agent="bob")
    await embed_backlog(backend, {"north": unit(1.0), "north-east": unit(1.0, 1.0),
                                  "east": unit(0.0, 1.0), "bob's north": unit(1.0)})
    nearest = await backend.vector_search(MINE, unit(1.0, 0.1), 3, "contract-model")
    assert await _texts(backend, nearest) == ["north", "north-east", "east"]
    distances = [distance for _, distance in nearest]
    assert distances == sorted(distances) and distances[0] < 0.01
    namespace = await backend.vector_search(ANA, unit(1.0), 10, "contract-model")
    assert sorted(await _texts(backend, namespace)) == ["east", "north", "north-east"]


async def test_run_legs_brings_both_legs_and_their_chunks(backend: Backend) -> None:
    await store(backend, "mine", 1, "a zebra")
    await store(backend, "mine", 2, "a horse")
    await embed_backlog(backend, {"a zebra": unit(0.0, 1.0), "a horse": unit(1.0)})
    request = LegRequest(scope=MINE, depth=5, terms=("zebra",), like_text="zebra",
                         query_vector=unit(1.0), model="contract-model")
    legs = await backend.run_legs(request, full_text=True)
    assert await _texts(backend, legs.fts) == ["a zebra"]
    assert await _texts(backend, legs.vector) == ["a horse", "a zebra"]
    assert {chunk.text for chunk in legs.chunks.values()} == {"a zebra", "a horse"}
    vector_only = await backend.run_legs(request, full_text=False)
    assert vector_only.fts == [] and len(vector_only.vector) == 2


async def test_namespace_legs_bring_both_legs_their_chunks_and_what_answered(
        backend: Backend) -> None:
    await store(backend, "mine", 1, "a zebra")
    await store(backend, "yours", 1, "a horse")
    await store(backend, "bobs", 1, "bob's zebra", agent="bob")
    await embed_backlog(backend, {"a zebra": unit(0.0, 1.0), "a horse": unit(1.0),
                                  "bob's zebra": unit(1.0)})
    request = LegRequest(scope=ANA, depth=5, terms=("zebra",), like_text="zebra",
                         model="contract-model")
    embedded: list[str] = []

    async def vector() -> np.ndarray:
        embedded.append("asked")
        return unit(1.0)

    legs = await backend.namespace_legs(request, full_text=True, query_vector=vector())
    assert embedded == ["asked"]
    assert await _texts(backend, legs.fts) == ["a zebra"]
    assert await _texts(backend, legs.vector) == ["a horse", "a zebra"]
    assert {chunk.text for chunk in legs.chunks.values()} == {"a zebra", "a horse"}
    assert legs.vector_path
    full_text_only = await backend.namespace_legs(request, full_text=True, query_vector=None)
    assert full_text_only.vector == [] and full_text_only.vector_path is None
    assert {chunk.text for chunk in full_text_only.chunks.values()} == {"a zebra"}
