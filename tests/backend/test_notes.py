"""Notes: names and aliases resolve inside one namespace; every change is whole or nothing."""

from __future__ import annotations

import asyncio

import pytest

from core.errors import InvalidInput, NameTaken, NotFound
from core.storage.backend import Backend
from core.storage.vocabulary import NoteChanges, NoteQuery, NoteRef, Scope
from core.types import Note
from tests.backend.builders import NOW, chunks, note
from tests.backend.conftest import Opener

LATER = "2026-01-02T00:00:00.000Z"


def name(text: str) -> NoteRef:
    return NoteRef(name=text)


async def test_a_note_is_found_by_id_name_or_alias_in_its_namespace_only(
        backend: Backend) -> None:
    added = await backend.add_note(note("ana", "lisbon", "trip in may", aliases=("trip",)),
                                   NOW)
    assert (added.name, added.aliases, added.content) == ("lisbon", ["trip"],
                                                                   "trip in may")
    for ref in (NoteRef(note_id=added.note_id), name("lisbon"), name("trip")):
        found = await backend.read_note("ana", ref)
        assert found is not None and found.note_id == added.note_id
    assert await backend.read_note("bob", name("lisbon")) is None
    assert await backend.read_note("bob", NoteRef(note_id=added.note_id)) is None
    assert await backend.notes_by_ids("bob", [added.note_id]) == {}
    assert list(await backend.notes_by_ids("ana", [added.note_id])) == [added.note_id]
    assert await backend.note_namespaces() == ["ana"]
    # Indexed as a session's chunks, so the search legs find the note's content.
    assert await backend.fts_search(Scope(namespace="ana"), ["may"], 5) != []


async def test_a_bound_name_or_alias_is_refused_and_nothing_is_written(
        backend: Backend) -> None:
    await backend.add_note(note("ana", "lisbon", "trip", aliases=("trip",)), NOW)
    for taken in (note("ana", "lisbon", "again"), note("ana", "porto", "x", aliases=("trip",))):
        with pytest.raises(NameTaken):
            await backend.add_note(taken, NOW)
    assert await backend.note_names("ana") == ["lisbon"]
    await backend.add_note(note("bob", "lisbon", "bob's own"), NOW)  # another namespace
    assert await backend.note_names("bob") == ["lisbon"]


async def test_rename_alias_and_unalias(backend: Backend) -> None:
    await backend.add_note(note("ana", "lisbon", "trip"), NOW)
    await backend.add_note(note("ana", "porto", "wine"), NOW)
    renamed = await backend.rename_note("ana", name("lisbon"), "lisboa", LATER)
    assert renamed.name == "lisboa" and await backend.read_note("ana", name("lisbon")) is None
    with pytest.raises(NameTaken):
        await backend.rename_note("ana", name("lisboa"), "porto", LATER)
    with pytest.raises(NotFound):
        await backend.rename_note("ana", name("nowhere"), "x", LATER)
    aliased = await backend.alias_note("ana", name("lisboa"), "capital", LATER)
    assert aliased.aliases == ["capital"]
    with pytest.raises(NameTaken):
        await backend.alias_note("ana", name("porto"), "capital", LATER)
    with pytest.raises(InvalidInput):
        await backend.unalias_note("ana", "lisboa", LATER)  # its own name
    with pytest.raises(NotFound):
        await backend.unalias_note("ana", "nothing", LATER)
    assert (await backend.unalias_note("ana", "capital", LATER)).aliases == []
    assert await backend.read_note("ana", name("capital")) is None


async def test_write_keeps_identity_and_edit_is_all_or_nothing(backend: Backend) -> None:
    added = await backend.add_note(note("ana", "lisbon", "trip in may"), NOW)
    await backend.add_note(note("ana", "porto", "wine"), NOW)
    written = await backend.write_note(
        "ana", name("lisbon"), NoteChanges(content="trip in june", chunks=chunks("trip in june"),
                                           tags=("travel",)), LATER)
    assert (written.note_id, written.created_at) == (added.note_id,
                                                           added.created_at)
    assert (written.content, written.tags) == ("trip in june", ["travel"])
    assert await backend.fts_search(Scope(namespace="ana"), ["may"], 5) == []
    with pytest.raises(NotFound):
        await backend.write_note("ana", name("nowhere"), NoteChanges(content="x"), LATER)
    with pytest.raises(NameTaken):
        await backend.edit_note("ana", name("lisbon"), "porto", ["city"],
                                NoteChanges(content="lost"), LATER)
    unchanged = await backend.read_note("ana", name("lisbon"))
    assert unchanged == written  # the refused edit left nothing behind
    edited = await backend.edit_note("ana", name("lisbon"), "lisboa", ["city"],
                                     NoteChanges(content="kept"), LATER)
    assert (edited.name, edited.aliases, edited.content) == ("lisboa", ["city"],
                                                                      "kept")


async def test_remove_takes_the_note_and_its_index(backend: Backend) -> None:
    added = await backend.add_note(note("ana", "lisbon", "zebra crossing"), NOW)
    assert await backend.remove_note("ana", NoteRef(note_id=added.note_id)) is True
    assert await backend.remove_note("ana", name("lisbon")) is False
    assert await backend.fts_search(Scope(namespace="ana"), ["zebra"], 5) == []
    assert await backend.all_notes("ana") == []


async def test_listing_filters_pages_and_counts(backend: Backend) -> None:
    for title, category, tags in (("a-note", "core", ("x",)), ("b-note", "daily", ()),
                                  ("c-note", "core", ("x", "y"))):
        await backend.add_note(note("ana", title, f"{title} about zebras", category=category,
                                    tags=tags), NOW)
    assert await backend.note_names("ana", category="core") == ["a-note", "c-note"]
    page, total, exact, matched = await backend.list_notes(
        NoteQuery(namespace="ana", tags=("x",), limit=1))
    assert ([n.name for n in page], total, exact, matched) == (["a-note"], 2, True, None)
    page, total, _, matched = await backend.list_notes(
        NoteQuery(namespace="ana", text="zebras", category="daily"))
    assert ([n.name for n in page], total, matched) == (["b-note"], 1, "fts")
    assert [n.name for n in await backend.all_notes("ana")] == ["a-note", "b-note",
                                                                   "c-note"]


async def test_an_import_with_collisions_applies_nothing_unless_it_overwrites(
        backend: Backend) -> None:
    await backend.add_note(note("ana", "lisbon", "old content"), NOW)
    drafts = [note("ana", "lisbon", "new content"), note("ana", "porto", "wine")]
    ids = iter(f"note-new-{n}" for n in range(10))
    refused = await backend.import_notes("ana", drafts, False, LATER, lambda: next(ids))
    assert refused.applied is False
    assert [c.name for c in refused.collisions] == ["lisbon"]
    assert await backend.note_names("ana") == ["lisbon"]
    applied = await backend.import_notes("ana", drafts, True, LATER, lambda: next(ids))
    assert (applied.applied, applied.added, applied.replaced) == (True, 1, 1)
    replaced = await backend.read_note("ana", name("lisbon"))
    assert replaced is not None and replaced.content == "new content"
    assert await backend.note_names("ana") == ["lisbon", "porto"]


async def test_of_writers_racing_for_one_name_exactly_one_binds_it(
        backend: Backend, open_backend: Opener) -> None:
    others = [await open_backend() for _ in range(3)]  # other processes on the same memory
    writers = [backend, *others]
    # Each takes "lisbon" as a name or an alias; some also race on "porto".
    drafts = [note("ana", "lisbon", "one"), note("ana", "porto", "two", aliases=("lisbon",)),
              note("ana", "capital", "three", aliases=("lisbon", "porto")),
              note("ana", "porto", "four")]
    results = await asyncio.gather(
        *(writer.add_note(draft, NOW) for writer, draft in zip(writers, drafts, strict=True)),
        return_exceptions=True)
    added = [r for r in results if isinstance(r, Note)]
    assert added and all(isinstance(r, (Note, NameTaken)) for r in results)
    bound = [name for n in added for name in (n.name, *n.aliases)]
    assert bound.count("lisbon") == 1 and bound.count("porto") <= 1
    # What the refused writers tried left nothing behind.
    assert sorted(await backend.note_names("ana")) == sorted(n.name for n in added)
    for refused in (d for d, r in zip(drafts, results, strict=True) if isinstance(r, NameTaken)):
        assert await backend.read_note("ana", NoteRef(note_id=refused.note_id)) is None


async def test_a_rename_and_an_alias_racing_for_one_name_bind_it_once(
        backend: Backend, open_backend: Opener) -> None:
    await backend.add_note(note("ana", "lisbon", "trip"), NOW)
    await backend.add_note(note("ana", "porto", "wine"), NOW)
    other = await open_backend()
    results = await asyncio.gather(
        backend.rename_note("ana", name("lisbon"), "capital", LATER),
        other.alias_note("ana", name("porto"), "capital", LATER), return_exceptions=True)
    assert sum(isinstance(r, NameTaken) for r in results) == 1
    holder = await backend.read_note("ana", name("capital"))
    assert holder is not None
    assert [n.name for n in await backend.all_notes("ana")] in (
        ["capital", "porto"], ["lisbon", "porto"])
