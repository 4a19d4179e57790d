"""Notes: every operation, every limit, pynchy's memory tools, and how a note is indexed."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from core import Engine
from core.errors import InvalidInput, NameTaken, NotFound, ReadOnlyDatabase
from core.locations import parse_location
from core.storage.sqlite import note_listing
from tests.conftest import DETERMINISTIC

NOTE_ID = re.compile(r"note-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")


def fts_table(where: Path | str) -> str:
    """Where full-text rows live: SQLite's FTS5 table, or PostgreSQL's chunks themselves
    (their ``fts`` column is generated from the text, so a chunk's row is its FTS row)."""
    return "chunks" if parse_location(where).is_postgres else "chunks_fts"


def fts_key(where: Path | str) -> str:
    return "fts_rowid" if parse_location(where).is_postgres else "rowid"


@pytest.fixture
async def engine(memory: str):
    async with Engine.open(memory, config=DETERMINISTIC) as opened:
        yield opened


async def hits(engine: Engine, query: str, mode: str = "keyword", namespace: str | None = None):
    return await engine.hybrid_query(session_id=engine.note_session(namespace), query=query,
                                     mode=mode, top_k=20)


# --- add ---------------------------------------------------------------------------------------

async def test_add_stores_every_field_with_backend_owned_times(engine: Engine) -> None:
    note = await engine.add_note("  Trip plan ", "Flight to Lisbon on May 3rd.",
                                 tags=[" Travel", "travel", "PORTUGAL ", ""],
                                 aliases=["lisbon trip", "lisbon trip", "Trip plan"],
                                 source="memory_save", importance=0.9, category="daily",
                                 kind="archive")
    assert NOTE_ID.fullmatch(note.note_id)
    assert (note.name, note.aliases) == ("Trip plan", ["lisbon trip"])
    assert note.tags == ["travel", "portugal"]
    assert (note.kind, note.category, note.source, note.importance) == (
        "Archive", "daily", "memory_save", 0.9)
    assert note.schema_version == 1 and note.namespace == "default"
    assert note.session_id == "memory:default" == engine.note_session()
    assert note.created_at == note.updated_at
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", note.created_at)
    assert await engine.get_note(note.note_id) == note


async def test_defaults_are_core_note_half_importance(engine: Engine) -> None:
    note = await engine.add_note("n", "text")
    assert (note.kind, note.category, note.importance, note.source, note.tags) == (
        "Note", "core", 0.5, "", [])


async def test_the_configured_default_category_applies(memory: str) -> None:
    config = {**DETERMINISTIC, "notes": {"default_category": "daily"}}
    async with Engine.open(memory, config=config) as engine:
        assert (await engine.add_note("n", "text")).category == "daily"


@pytest.mark.parametrize("kwargs, words", [
    ({"name": "", "content": "x"}, "name must not be empty"),
    ({"name": "   ", "content": "x"}, "name must not be empty"),
    ({"name": "x" * 201, "content": "x"}, "201 characters; the limit is 200"),
    ({"name": "tab\there", "content": "x"}, "U\\+0009"),
    ({"name": "zero\u200bwidth", "content": "x"}, "U\\+200B"),
    ({"name": "rtl\u202eoverride", "content": "x"}, "U\\+202E"),
    ({"name": "note-12345678-1234-4234-8234-123456789abc", "content": "x"}, "shape of a note id"),
    ({"name": 7, "content": "x"}, "name must be a string"),
    ({"name": "n", "content": "   \n"}, "content must not be blank"),
    ({"name": "n", "content": "\x00\x01"}, "no text to index"),
    ({"name": "n", "content": None}, "content must be a string"),
    ({"name": "n", "content": "bad \ud800"}, "not valid UTF-8"),
    ({"name": "n", "content": "x", "kind": "Memo"}, "kind must be one of Note, Archive"),
    ({"name": "n", "content": "x", "category": "misc"}, "category must be one of"),
    ({"name": "n", "content": "x", "importance": 1.5}, "importance must be a number from 0"),
    ({"name": "n", "content": "x", "importance": True}, "importance"),
    ({"name": "n", "content": "x", "importance": float("nan")}, "importance"),
    ({"name": "n", "content": "x", "tags": "single"}, "tags must be a list"),
    ({"name": "n", "content": "x", "tags": [f"t{i}" for i in range(17)]},
     "17 tags given; the limit is 16"),
    ({"name": "n", "content": "x", "tags": ["ok", "y" * 65]},
     "'yyyy.*' is 65 characters; the limit is 64"),
    ({"name": "n", "content": "x", "aliases": ["fine", ""]}, "alias must not be empty"),
    ({"name": "n", "content": "x", "aliases": "one"}, "aliases must be a list"),
    ({"name": "n", "content": "x", "source": "s" * 201}, "source is 201 characters"),
])
async def test_a_refused_note_says_why_and_writes_nothing(engine: Engine, kwargs,
                                                          words: str) -> None:
    with pytest.raises(InvalidInput, match=words):
        await engine.add_note(**kwargs)
    assert (await engine.list_notes()).total == 0
    assert await engine.list_sessions() == []


async def test_limits_are_inclusive(engine: Engine) -> None:
    note = await engine.add_note("x" * 200, "y", tags=[f"{i:064d}" for i in range(16)])
    assert len(note.name) == 200 and len(note.tags) == 16
    assert all(len(tag) == 64 for tag in note.tags)
    # 17 given, but two are the same tag once normalised: 16 remain, which is allowed.
    again = await engine.add_note("z", "y", tags=[f"t{i}" for i in range(16)] + [" T0 "])
    assert len(again.tags) == 16


async def test_a_name_or_alias_already_bound_is_refused(engine: Engine) -> None:
    first = await engine.add_note("alpha", "one", aliases=["a"])
    for name, aliases in (("alpha", []), ("a", []), ("beta", ["alpha"]), ("beta", ["a"])):
        with pytest.raises(NameTaken, match="already"):
            await engine.add_note(name, "two", aliases=aliases)
    assert [n.note_id for n in (await engine.list_notes()).notes] == [first.note_id]


async def test_two_writers_racing_for_a_name_get_one_note(memory: str) -> None:
    async with Engine.open(memory, config=DETERMINISTIC) as first, \
            Engine.open(memory, config=DETERMINISTIC) as second:
        outcomes = await asyncio.gather(
            *[engine.add_note("contested", f"from writer {n}")
              for n, engine in enumerate([first, second] * 3)], return_exceptions=True)
        assert sum(not isinstance(o, BaseException) for o in outcomes) == 1
        assert all(isinstance(o, NameTaken) for o in outcomes if isinstance(o, BaseException))
        assert (await second.list_notes()).total == 1


async def test_names_are_nfc_and_trimmed_but_otherwise_exact(engine: Engine) -> None:
    composed = await engine.add_note("caf\u00e9", "one")
    assert (await engine.get_note("cafe\u0301  ")).note_id == composed.note_id
    with pytest.raises(NameTaken):
        await engine.add_note(" cafe\u0301", "two")
    # Case, fullwidth and Cyrillic look-alikes are other text, hence other names.
    for other in ("Caf\u00e9", "\uff43\uff41\uff46\u00e9", "\u0441af\u00e9"):
        assert (await engine.add_note(other, "x")).note_id != composed.note_id
    with pytest.raises(NotFound):
        await engine.get_note("cafe")


# --- get ---------------------------------------------------------------------------------------

async def test_get_by_id_name_or_alias(engine: Engine) -> None:
    note = await engine.add_note("alpha", "one", aliases=["first", "α"])
    for ref in (note.note_id, "alpha", "first", "α", " alpha "):
        assert (await engine.get_note(ref)).note_id == note.note_id
    for ref in ("beta", "ALPHA", "note-00000000-0000-4000-8000-000000000000"):
        with pytest.raises(NotFound):
            await engine.get_note(ref)
    with pytest.raises(InvalidInput, match="got nothing"):
        await engine.get_note("  ")


# --- write -------------------------------------------------------------------------------------


async def test_write_changes_the_fields_given_and_only_those(engine: Engine) -> None:
    note = await engine.add_note("n", "text", tags=["a"], source="tool", importance=0.2)
    written = await engine.write_note(note.note_id, tags=["B", "c"], category="daily",
                                      kind="Archive", importance=0.95)
    assert written.content == "text" and written.source == "tool"
    assert (written.tags, written.category, written.kind, written.importance) == (
        ["b", "c"], "daily", "Archive", 0.95)
    tagged = await engine.hybrid_query(session_id=note.session_id, query="text", tags=["c"])
    assert [h.metadata["note_id"] for h in tagged] == [note.note_id]
    assert tagged[0].metadata["tags"] == ["b", "c"]
    assert not await engine.hybrid_query(session_id=note.session_id, query="text", tags=["a"])
    salient = await engine.get_context(note.session_id, "")
    assert salient.counts["salience"] == 1  # the event carries the note's importance


async def test_write_of_a_missing_note_or_over_a_limit_changes_nothing(engine: Engine) -> None:
    note = await engine.add_note("n", "kept text", tags=["kept"])
    with pytest.raises(NotFound):
        await engine.write_note("other", "x")
    with pytest.raises(InvalidInput, match="limit is 16"):
        await engine.write_note("n", "new", tags=[str(i) for i in range(17)])
    with pytest.raises(InvalidInput, match="blank"):
        await engine.write_note("n", " ")
    assert await engine.get_note("n") == note


# --- rename, alias, unalias --------------------------------------------------------------------

async def test_rename_moves_the_name_and_its_search_words(engine: Engine) -> None:
    note = await engine.add_note("quokka facts", "they live on Rottnest", aliases=["q"])
    renamed = await engine.rename_note("q", "wombat facts")
    assert (renamed.note_id, renamed.name, renamed.aliases) == (note.note_id, "wombat facts",
                                                                 ["q"])
    with pytest.raises(NotFound):
        await engine.get_note("quokka facts")
    assert (await engine.get_note("wombat facts")).note_id == note.note_id
    assert not await hits(engine, "quokka")  # the old name's words left the index
    found = await hits(engine, "wombat")  # the name is searched with the content
    assert [h.metadata["name"] for h in found] == ["wombat facts"]
    assert found[0].context == "wombat facts"


async def test_rename_to_an_own_alias_or_a_taken_name(engine: Engine) -> None:
    note = await engine.add_note("a", "x", aliases=["b"])
    await engine.add_note("c", "y")
    renamed = await engine.rename_note("a", "b")
    assert (renamed.name, renamed.aliases) == ("b", [])
    with pytest.raises(NameTaken, match="'c' is already the name of note 'c'"):
        await engine.rename_note("b", "c")
    assert (await engine.rename_note("b", " b ")).updated_at == renamed.updated_at  # no change
    with pytest.raises(NotFound):
        await engine.rename_note("missing", "d")
    assert (await engine.get_note(note.note_id)).name == "b"


async def test_an_alias_resolves_but_adds_no_search_words(engine: Engine) -> None:
    note = await engine.add_note("rosebud", "a sled from childhood")
    aliased = await engine.alias_note("rosebud", "xylophone")
    assert aliased.aliases == ["xylophone"] and aliased.updated_at >= note.updated_at
    assert (await engine.get_note("xylophone")).note_id == note.note_id
    assert not await hits(engine, "xylophone")
    assert not await engine.notes.recall_memories("xylophone")
    assert (await engine.list_notes(text="xylophone")).total == 0
    assert await engine.alias_note(note.note_id, "xylophone") == aliased  # already bound
    assert await engine.alias_note(note.note_id, "rosebud") == aliased  # its own name


async def test_alias_and_unalias_refusals(engine: Engine) -> None:
    await engine.add_note("one", "x", aliases=["uno"])
    await engine.add_note("two", "y")
    with pytest.raises(NameTaken, match="alias of note 'one'"):
        await engine.alias_note("two", "uno")
    with pytest.raises(NameTaken, match="name of note 'one'"):
        await engine.alias_note("two", "one")
    with pytest.raises(NotFound):
        await engine.alias_note("three", "tres")
    with pytest.raises(InvalidInput, match="own name, not an alias"):
        await engine.unalias_note("one")
    with pytest.raises(NotFound, match="no alias 'dos'"):
        await engine.unalias_note("dos")
    note = await engine.unalias_note("uno")
    assert note.name == "one" and note.aliases == []
    with pytest.raises(NotFound):
        await engine.get_note("uno")
    assert (await engine.alias_note("two", "uno")).name == "two"  # a released alias is free


# --- remove ------------------------------------------------------------------------------------


async def test_two_notes_sharing_text_keep_their_own_chunks(engine: Engine) -> None:
    first = await engine.add_note("first", "identical paragraph about otters")
    second = await engine.add_note("second", "identical paragraph about otters")
    await engine.remove_note("first")
    found = await hits(engine, "otters")
    assert [h.metadata["note_id"] for h in found] == [second.note_id] != [first.note_id]


async def test_a_removed_notes_sequence_is_never_reused(engine: Engine) -> None:
    await engine.add_note("a", "x")
    await engine.add_note("b", "y")
    await engine.remove_note("b")
    await engine.add_note("c", "z")
    assert [e.sequence for e in await engine.recall(engine.note_session())] == [1, 3]


# --- list --------------------------------------------------------------------------------------

@pytest.fixture
async def shelf(engine: Engine) -> Engine:
    return await fill_shelf(engine)


async def fill_shelf(engine: Engine) -> Engine:
    specs = [
        ("apple pie", "bake at 180 degrees with cinnamon", "core", "Note", ["food", "dessert"]),
        ("banana bread", "overripe bananas and walnuts", "daily", "Note", ["food"]),
        ("carrot cake", "cream cheese frosting", "daily", "Archive", ["dessert"]),
        ("deadline", "quarterly tax filing due May 15", "core", "Note", ["work"]),
        ("email", "reply to https://example.com/a_b?x=1 today", "conversation", "Archive", []),
    ]
    for name, content, category, kind, tags in specs:
        await engine.add_note(name, content, category=category, kind=kind, tags=tags)
    return engine


async def names(page) -> list[str]:
    return [note.name for note in page.notes]


async def test_list_filters_combine(shelf: Engine) -> None:
    assert await names(await shelf.list_notes()) == [
        "apple pie", "banana bread", "carrot cake", "deadline", "email"]
    assert await names(await shelf.list_notes(category="daily")) == [
        "banana bread", "carrot cake"]
    assert await names(await shelf.list_notes(kind="archive")) == ["carrot cake", "email"]
    assert await names(await shelf.list_notes(tags=["FOOD"])) == ["apple pie", "banana bread"]
    assert await names(await shelf.list_notes(tags=["food", "dessert"])) == ["apple pie"]
    assert await names(await shelf.list_notes(category="daily", kind="Note",
                                              tags=["food"])) == ["banana bread"]
    assert (await shelf.list_notes(tags=["nothing"])).total == 0


async def test_list_text_matches_word_prefixes_in_content_and_name(shelf: Engine) -> None:
    page = await shelf.list_notes(text="bake cinn")
    assert (await names(page), page.text_match) == (["apple pie"], "fts")
    assert await names(await shelf.list_notes(text="Pie")) == ["apple pie"]  # by name
    assert await names(await shelf.list_notes(text="frosting", category="core")) == []
    # FTS syntax is only words: quotes, stars and brackets never reach MATCH as syntax, and
    # every word must be there ("or" and "near" are not).
    assert await names(await shelf.list_notes(text='"quarterly"* (tax:')) == ["deadline"]
    assert await names(await shelf.list_notes(text='"quarterly" OR NEAR(')) == []


async def test_list_text_falls_back_to_substrings(shelf: Engine) -> None:
    page = await shelf.list_notes(text="ample.com/a_b?")  # "ample" starts no word: LIKE
    assert (await names(page), page.text_match) == (["email"], "like")
    assert (await shelf.list_notes(text="%")).total == 0  # a wildcard is only a character
    assert (await shelf.list_notes(text="_")).total == 1  # the one note holding "_"
    assert await names(await shelf.list_notes(text="verripe")) == ["banana bread"]


async def test_list_pages_and_orders(shelf: Engine) -> None:
    first = await shelf.list_notes(limit=2)
    second = await shelf.list_notes(limit=2, offset=2)
    last = await shelf.list_notes(limit=2, offset=4)
    assert (first.total, first.limit, second.offset) == (5, 2, 2)
    assert await names(first) + await names(second) + await names(last) == [
        "apple pie", "banana bread", "carrot cake", "deadline", "email"]
    await shelf.write_note("banana bread", "now with chocolate")
    recent = await shelf.list_notes(order="updated", limit=1)
    assert await names(recent) == ["banana bread"]


@pytest.mark.parametrize("kwargs, words", [
    ({"limit": 0}, "limit must be an integer from 1 to 1000"),
    ({"limit": 1001}, "limit"),
    ({"offset": -1}, "offset must be a non-negative"),
    ({"order": "size"}, "order must be one of name, updated"),
    ({"category": "misc"}, "category"),
    ({"kind": "memo"}, "kind"),
    ({"text": 3}, "text must be a string"),
])
async def test_list_refuses_bad_arguments(engine: Engine, kwargs, words: str) -> None:
    with pytest.raises(InvalidInput, match=words):
        await engine.list_notes(**kwargs)


# --- pynchy's memory tools -------------------------------------------------------------------

async def test_save_memory_adds_then_updates_under_the_key(engine: Engine) -> None:
    saved = await engine.notes.save_memory("favorite_color", "blue")
    assert (saved.name, saved.category, saved.source) == ("favorite_color", "core",
                                                          "save_memory")
    await engine.write_note("favorite_color", category="daily")
    again = await engine.notes.save_memory("favorite_color", "green")
    assert (again.note_id, again.content, again.category) == (saved.note_id, "green", "daily")
    moved = await engine.notes.save_memory("favorite_color", "teal", "conversation")
    assert moved.category == "conversation"
    await engine.alias_note("favorite_color", "colour")
    assert (await engine.notes.save_memory("colour", "red")).note_id == saved.note_id
    with pytest.raises(InvalidInput, match="category must be one of"):
        await engine.notes.save_memory("k", "v", "misc")
    with pytest.raises(InvalidInput, match="key must not be empty"):
        await engine.notes.save_memory(" ", "v")


async def test_recall_memories_ranks_by_bm25_then_falls_back_to_like(engine: Engine) -> None:
    await engine.notes.save_memory("deadline",
                                   "the tax deadline is the tax office's May 15 deadline")
    await engine.notes.save_memory("office", "the office has a tax desk")
    await engine.notes.save_memory("docs", "see http://localhost:8080/api_v2 for docs")
    found = await engine.notes.recall_memories("tax deadline")
    assert [h.key for h in found] == ["deadline", "office"]
    assert found[0].score > found[1].score and {h.matched_by for h in found} == {"fts"}
    assert found[0].content.startswith("the tax deadline") and found[0].category == "core"
    fallback = await engine.notes.recall_memories("calhost:80")  # no word matches: substrings
    assert [(h.key, h.matched_by) for h in fallback] == [("docs", "like")]
    assert await engine.notes.recall_memories("nothing matches this") == []
    assert await engine.notes.recall_memories("") == []
    assert [h.key for h in await engine.notes.recall_memories("tax", limit=1)] == ["deadline"]
    log = await engine.retrieval_log(caller="recall_memories")
    assert log and log[0]["scope_value"] == engine.note_session()


async def test_forget_and_list_memories(engine: Engine) -> None:
    await engine.notes.save_memory("b", "two")
    await engine.notes.save_memory("a", "one", "daily")
    assert await engine.notes.list_memories() == ["a", "b"]
    assert await engine.notes.list_memories(category="daily") == ["a"]
    assert await engine.remove_note("a") is True
    assert await engine.remove_note("a") is False
    assert await engine.notes.list_memories() == ["b"]


# --- the memory session ------------------------------------------------------------------------

async def test_a_notes_session_holds_notes_only(engine: Engine) -> None:
    await engine.add_note("n", "x")
    for call in (engine.store("memory:default", 9, {"role": "user", "content": "sneak"}),
                 engine.append("memory:other", {"role": "user", "content": "sneak"})):
        with pytest.raises(InvalidInput, match="holds a namespace's notes"):
            await call
    result = await engine.store_many([("memory:default", None, {"role": "user",
                                                                "content": "sneak"})])
    assert result.stored == 0 and "notes" in result.rejected[0].reason
    events = await engine.recall(engine.note_session())
    assert [(e.payload["role"], e.payload["metadata"]["name"]) for e in events] == [
        ("system", "n")]


async def test_a_read_only_engine_reads_notes_and_refuses_writes(memory: str) -> None:
    async with Engine.open(memory, config=DETERMINISTIC) as engine:
        await engine.add_note("n", "x")
    async with Engine.open(memory, config=DETERMINISTIC, read_only=True) as engine:
        assert (await engine.get_note("n")).content == "x"
        with pytest.raises(ReadOnlyDatabase):
            await engine.add_note("m", "y")
        with pytest.raises(ReadOnlyDatabase):
            await engine.remove_note("n")


async def test_a_text_filter_matching_very_many_notes_walks_in_page_order(
        db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # About the SQLite listing's limits (note_listing's word-set and count-ahead caps).
    async with Engine.open(db_path, config=DETERMINISTIC) as engine:
        await _walk_in_page_order(engine, monkeypatch)


async def _walk_in_page_order(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    for n in range(12):
        await engine.add_note(f"n{n:02d}", f"weekly meeting number {n}" if n % 3 else "lunch",
                              category="daily" if n % 2 else "core", tags=[f"t{n % 4}"])
    asks = [{}, {"category": "daily"}, {"tags": ["t1"]}, {"offset": 2, "limit": 3},
            {"order": "updated", "limit": 4}, {"text": "lunch"},
            {"category": "daily", "text": "lunch meeting"},  # no note has both: LIKE
            {"category": "core", "tags": ["t1"], "text": "number"}]  # none in both filters
    exact = {}
    for n, ask in enumerate(asks):
        exact[n] = await engine.list_notes(**{"text": "meet", **ask})
    # The same listings with every word counted as "found in very many notes".
    monkeypatch.setattr(note_listing, "TEXT_SET_LIMIT", 1)
    for n, ask in enumerate(asks):
        walked = await engine.list_notes(**{"text": "meet", **ask})
        assert [x.name for x in walked.notes] == [x.name for x in exact[n].notes], ask
        assert (walked.total, walked.total_exact, walked.text_match) == (
            exact[n].total, True, exact[n].text_match), ask
    # Counting stops a little past the page: the total becomes a lower bound, and says so.
    monkeypatch.setattr(note_listing, "COUNT_AHEAD", 2)
    page = await engine.list_notes(text="meeting", limit=3)
    assert [x.name for x in page.notes] == ["n01", "n02", "n04"]
    assert (page.total, page.total_exact) == (5, False)  # 8 notes hold "meeting"
    assert exact[0].total == 8 and exact[0].total_exact
