"""Editing a note whole (name, aliases and fields in one transaction) and listing namespaces."""

from __future__ import annotations

import pytest

from core import Engine
from core.errors import InvalidInput, NameTaken, NotFound
from tests.conftest import DETERMINISTIC


@pytest.fixture
async def engine(memory: str):
    async with Engine.open(memory, config=DETERMINISTIC) as opened:
        yield opened


async def test_an_edit_renames_realiases_and_writes_at_once(engine: Engine) -> None:
    note = await engine.add_note("packing-list", "Boots.", aliases=["packing", "gear"],
                                 tags=["trip"])
    edited = await engine.edit_note("packing-list", name="kit", aliases=["gear", "bag"],
                                    content="Boots and a shell.", tags=["trip", "gear"],
                                    category="daily", importance=0.9, source="user")
    assert edited.note_id == note.note_id
    assert (edited.name, sorted(edited.aliases)) == ("kit", ["bag", "gear"])
    assert (edited.content, edited.tags, edited.category) == ("Boots and a shell.",
                                                              ["trip", "gear"], "daily")
    assert (edited.importance, edited.source) == (0.9, "user")
    assert (await engine.get_note("bag")).note_id == note.note_id
    for released in ("packing-list", "packing"):
        with pytest.raises(NotFound):
            await engine.get_note(released)
    found = await engine.list_notes(text="shell")
    assert [n.name for n in found.notes] == ["kit"]


async def test_a_taken_name_leaves_the_note_as_it_was(engine: Engine) -> None:
    note = await engine.add_note("packing-list", "Boots.", aliases=["packing"])
    await engine.add_note("standup", "Nine thirty.", aliases=["meeting"])
    for change in ({"name": "standup"}, {"name": "meeting"}, {"aliases": ["bag", "meeting"]}):
        with pytest.raises(NameTaken, match="nothing was written"):
            await engine.edit_note(note.note_id, content="Changed.", importance=0.1,
                                   **change)
        assert await engine.get_note("packing-list") == note
    assert (await engine.list_notes(text="changed")).total == 0


async def test_invalid_fields_are_refused_before_anything_is_written(engine: Engine) -> None:
    note = await engine.add_note("packing-list", "Boots.")
    for change, words in (({"importance": 1.5}, "importance"), ({"name": " "}, "name"),
                          ({"tags": [f"t{i}" for i in range(40)]}, "tags"),
                          ({"content": "  "}, "content"), ({"category": "misc"}, "category")):
        with pytest.raises(InvalidInput, match=words):
            await engine.edit_note("packing-list", **{"name": "renamed", "content": "New.",
                                                      **change})
        assert await engine.get_note(note.note_id) == note


async def test_an_edit_may_take_its_own_alias_as_name_and_keep_the_old_name(
        engine: Engine) -> None:
    await engine.add_note("packing-list", "Boots.", aliases=["packing"])
    edited = await engine.edit_note("packing-list", name="packing",
                                    aliases=["packing", "packing-list"])
    assert (edited.name, edited.aliases) == ("packing", ["packing-list"])
    unchanged = await engine.edit_note("packing", aliases=["packing-list"])
    assert (unchanged.name, unchanged.aliases) == ("packing", ["packing-list"])


async def test_namespaces_are_those_that_hold_notes(engine: Engine) -> None:
    assert await engine.notes.namespaces() == []
    for namespace in ("support", "planner", "support", "Émile"):
        await engine.add_note(f"n-{len(await engine.notes.namespaces())}", "Text.",
                              namespace=namespace)
    assert await engine.notes.namespaces() == ["planner", "support", "Émile"]
    await engine.remove_note("n-0", namespace="support")
    assert await engine.notes.namespaces() == ["planner", "support", "Émile"]
    removed = await engine.list_notes(namespace="planner")
    await engine.remove_note(removed.notes[0].note_id, namespace="planner")
    assert await engine.notes.namespaces() == ["support", "Émile"]
