"""WorkbenchStore: items as notes, search through hybrid retrieval, refusals that store nothing."""

from __future__ import annotations

import asyncio
import json
import math

import pytest
from langgraph.store.base import InvalidNamespaceError, PutOp

from core import Engine
from core.errors import InvalidInput, NameTaken
from core.integrations.langgraph import WorkbenchStore
from core.notes.store_items import item_name, parse_item_name
from tests.conftest import DETERMINISTIC


@pytest.fixture
async def engine(memory: str):
    async with Engine.open(memory, config=DETERMINISTIC) as opened:
        yield opened


async def test_an_item_is_a_readable_note(engine: Engine) -> None:
    store = WorkbenchStore(engine)
    await store.aput(("users", "123"), "prefs", {"theme": "dark", "sizes": [1, 2.5]})
    note = await engine.get_note("users/123/prefs")
    assert json.loads(note.content) == {"theme": "dark", "sizes": [1, 2.5]}
    assert note.source == "langgraph" and note.tags == ["users", "users/123"]
    item = await store.aget(("users", "123"), "prefs")
    assert item is not None and item.value == {"theme": "dark", "sizes": [1, 2.5]}
    # An update keeps created_at and moves updated_at; a delete removes the note.
    await asyncio.sleep(0.01)
    await store.aput(("users", "123"), "prefs", {"theme": "light"})
    again = await store.aget(("users", "123"), "prefs")
    assert again is not None and again.created_at == item.created_at
    assert again.updated_at > item.updated_at and again.value == {"theme": "light"}
    await store.adelete(("users", "123"), "prefs")
    assert await store.aget(("users", "123"), "prefs") is None
    assert (await engine.list_notes()).total == 0


def test_names_decode_to_exactly_the_tuple_and_key() -> None:
    for labels, key in [(("a",), ""), (("u/1", "100%"), "a/b"), ((" x ",), "k "),
                        (("e\u0301",), "tab\there"), (("%2F",), "%")]:
        name = item_name(labels, key)
        assert parse_item_name(name) == (labels, key)
    with pytest.raises(InvalidInput, match="limit is 200"):
        item_name(("a",), "k" * 300)


async def test_namespace_option_and_query_search_is_logged(engine: Engine) -> None:
    store = WorkbenchStore(engine, namespace="agent-b")
    await store.aput(("docs",), "d1", {"text": "the deploy runs on fridays"})
    await store.aput(("docs",), "d2", {"text": "lunch is at noon"})
    await store.aput(("other",), "d3", {"text": "deploy elsewhere"})
    found = await store.asearch(("docs",), query="deploy fridays")
    assert [item.key for item in found] == ["d1", "d2"]
    assert found[0].score is not None and found[0].score > 0
    assert found[1].score is None or found[1].score < found[0].score  # the vector leg ranks all
    logged = await engine.retrieval_log(limit=1, caller="langgraph")
    assert logged and logged[0]["query"] == "deploy fridays"
    assert (await engine.list_notes()).total == 0  # nothing in the configured namespace
    assert (await engine.list_notes(namespace="agent-b")).total == 3


async def test_index_argument(engine: Engine) -> None:
    store = WorkbenchStore(engine, index={"fields": ["title"]})
    await store.aput(("d",), "a", {"title": "zebra", "body": "giraffe"})
    await store.aput(("d",), "b", {"title": "giraffe", "body": "zebra"}, index=False)
    await store.aput(("d",), "c", {"title": "lion", "body": "zebra"}, index=["body"])
    scored = {i.key for i in await store.asearch(("d",), query="zebra") if i.score is not None}
    assert scored == {"a", "c"}


async def test_invalid_namespaces_as_langgraph_raises_them(engine: Engine) -> None:
    store = WorkbenchStore(engine)
    for bad in [(), ("langgraph", "x"), ("a.b",), ("",)]:
        with pytest.raises(InvalidNamespaceError):
            await store.aput(bad, "k", {"v": 1})
        with pytest.raises(InvalidNamespaceError):  # ops given to abatch directly too
            await store.abatch([PutOp(bad, "k", {"v": 1})])
    assert await store.aget((), "k") is None
    await store.adelete((), "k")
    assert (await engine.list_notes()).total == 0


@pytest.mark.parametrize("bad, said", [
    (["not", "a", "dict"], "must be a dict, got list"),
    ({"when": object()}, r"value\['when'\] of key 'k'.* is a object, which is not JSON"),
    ({"x": {1: "int key"}}, "has the key 1 \\(int\\)"),
    ({"x": [math.nan]}, "is nan, which JSON cannot hold"),
    ({"s": "\ud800"}, "lone surrogate"),
])
async def test_bad_values_are_refused_and_nothing_of_the_batch_is_stored(
        engine: Engine, bad: object, said: str) -> None:
    store = WorkbenchStore(engine)
    with pytest.raises(InvalidInput, match=said):
        await store.abatch([PutOp(("ok",), "first", {"v": 1}), PutOp(("ok",), "k", bad)])
    assert await store.aget(("ok",), "first") is None
    assert (await engine.list_notes()).total == 0


async def test_a_note_the_store_did_not_write_is_never_touched(engine: Engine) -> None:
    await engine.add_note("users/1/prefs", "a person's own note")
    store = WorkbenchStore(engine)
    assert await store.aget(("users", "1"), "prefs") is None
    with pytest.raises(NameTaken, match="not written by the LangGraph store"):
        await store.abatch([PutOp(("users", "2"), "x", {"v": 1}),
                            PutOp(("users", "1"), "prefs", {"v": 2})])
    assert await store.aget(("users", "2"), "x") is None
    await store.adelete(("users", "1"), "prefs")
    assert (await engine.get_note("users/1/prefs")).content == "a person's own note"
    assert await store.alist_namespaces() == []


async def test_sync_methods_from_another_thread(engine: Engine) -> None:
    store = WorkbenchStore(engine)
    await asyncio.to_thread(store.put, ("t",), "k", {"v": 1})
    item = await asyncio.to_thread(store.get, ("t",), "k")
    assert item is not None and item.value == {"v": 1}
    with pytest.raises(asyncio.InvalidStateError, match="async ones"):
        store.get(("t",), "k")


async def test_comparison_on_a_missing_field_matches_nothing(engine: Engine) -> None:
    store = WorkbenchStore(engine)
    await store.aput(("n",), "with", {"n": 5})
    await store.aput(("n",), "without", {"m": 5})
    assert [i.key for i in await store.asearch(("n",), filter={"n": {"$gt": 1}})] == ["with"]
    with pytest.raises(InvalidInput, match="compares numbers"):
        await store.asearch(("n",), filter={"n": {"$gt": "many"}})
