"""Facts (a key unique per category and namespace) and the scratchpad (whole-replace)."""

from __future__ import annotations

import asyncio

import pytest

from core.errors import OutOfNamespace
from core.storage.backend import Backend
from core.types import ScratchpadState
from tests.backend.builders import NOW, store
from tests.backend.conftest import Opener

LATER = "2026-01-02T00:00:00.000Z"


async def test_a_fact_upsert_replaces_value_and_source_and_keeps_created_at(
        backend: Backend) -> None:
    first = await backend.upsert_fact("ana", "user", "city", "Lisbon", "user", NOW)
    assert (first.value, first.source, first.created_at) == ("Lisbon", "user", NOW)
    second = await backend.upsert_fact("ana", "user", "city", "Porto", "agent", LATER)
    assert (second.value, second.source) == ("Porto", "agent")
    assert (second.created_at, second.updated_at) == (NOW, LATER)
    assert await backend.read_fact("ana", "user", "city") == second
    assert await backend.read_fact("bob", "user", "city") is None


async def test_concurrent_upserts_of_one_fact_leave_one_whole_row(
        backend: Backend, open_backend: Opener) -> None:
    other = await open_backend()
    await asyncio.gather(*(writer.upsert_fact("ana", "user", "city", city, source, NOW)
                           for writer, city, source in ((backend, "Lisbon", "user"),
                                                        (other, "Porto", "agent"),
                                                        (backend, "Faro", "agent"),
                                                        (other, "Braga", "user"))))
    (fact,) = await backend.list_facts("ana")
    # The later writer wins whole: value and source come from the same upsert.
    assert (fact.value, fact.source) in {("Lisbon", "user"), ("Porto", "agent"),
                                               ("Faro", "agent"), ("Braga", "user")}


async def test_facts_list_by_category_then_key_and_delete(backend: Backend) -> None:
    for category, key in (("user", "name"), ("project", "name"), ("user", "city")):
        await backend.upsert_fact("ana", category, key, "v", "user", NOW)
    await backend.upsert_fact("bob", "user", "name", "Bob", "user", NOW)
    assert [(f.category, f.key) for f in await backend.list_facts("ana")] == [
        ("project", "name"), ("user", "city"), ("user", "name")]
    assert [f.key for f in await backend.list_facts("ana", "user")] == ["city", "name"]
    assert await backend.delete_fact("ana", "user", "name") is True
    assert await backend.delete_fact("ana", "user", "name") is False
    assert await backend.read_fact("bob", "user", "name") is not None


async def test_a_scratchpad_write_replaces_it_whole(backend: Backend) -> None:
    await store(backend, "s", 1, "hello")
    written = await backend.write_scratchpad("s", "ana", ["one", "two"], NOW)
    assert written == ScratchpadState("s", ["one", "two"], NOW)
    await backend.write_scratchpad("s", "ana", ["three"], LATER)
    assert await backend.read_scratchpad("s") == ScratchpadState("s", ["three"], LATER)
    assert await backend.last_sequence("s") == 1  # the message history is untouched
    await backend.write_scratchpad("new", "ana", ["made"], NOW)  # creates the session
    assert await backend.session_agent("new") == "ana"
    assert [s.session_id for s in await backend.scratchpad_sessions(10)] == ["s", "new"]


async def test_a_bound_scratchpad_write_to_another_agents_session_writes_nothing(
        backend: Backend) -> None:
    await store(backend, "bobs", 1, "bob's", agent="bob")
    await backend.write_scratchpad("bobs", "bob", ["bob's item"], NOW)
    with pytest.raises(OutOfNamespace):
        await backend.write_scratchpad("bobs", "ana", ["ana's"], LATER, bound=True)
    kept = await backend.read_scratchpad("bobs")
    assert kept is not None and kept.items == ["bob's item"]
    assert await backend.clear_scratchpad("bobs", LATER, agent_identity="ana") is False
    assert await backend.clear_scratchpad("bobs", LATER) is True
    assert await backend.clear_scratchpad("bobs", LATER) is False
    assert await backend.read_scratchpad("bobs") is None
