"""Namespaces never reach each other's notes, whatever ids and names hold; and a note is
found through both retrieval legs, and through neither once removed."""

from __future__ import annotations

from pathlib import Path

import pytest

from core import Engine
from core.errors import NotFound
from tests.conftest import DETERMINISTIC

OWNER = "alice"
# Namespaces an attacker might pick to reach "alice": wildcards, case, look-alikes (Cyrillic
# "а", fullwidth), trailing space, SQL and FTS syntax, and the memory session's own prefix.
INTRUDERS = ["alice%", "alic_", "%", "_", "ALICE", "\u0430lice", "\uff41lice", "alice ",
             "alice' OR '1'='1", 'alice"; DELETE FROM notes; --', "memory:alice",
             "*", "x" * 200]  # "alice\u200b" is refused at entry (tests/test_input_limits.py)
# Names the owner's notes carry: quotes, wildcards, SQL and FTS syntax, very long, look-alikes.
HOSTILE_NAMES = ["secret plan", "100%", "a_b", "'; DELETE FROM notes; --", '" OR 1=1 --',
                 "NEAR(secret plan)", "s" * 200, "\u0455ecret plan", "％", "caf\u00e9"]


async def snapshot(engine: Engine, namespace: str) -> list:
    page = await engine.list_notes(namespace=namespace, limit=1000)
    return [note.to_dict() for note in page.notes]


@pytest.fixture
async def engine(memory: str):
    async with Engine.open(memory, config=DETERMINISTIC) as opened:
        yield opened


async def test_no_namespace_reaches_another_s_notes(engine: Engine, tmp_path: Path) -> None:
    owned = []
    for index, name in enumerate(HOSTILE_NAMES):
        owned.append(await engine.add_note(
            name, f"zanzibar treasure {index} under the old oak", namespace=OWNER,
            aliases=[f"alias of {name}"[:200]], tags=["secret", f"t{index}"]))
    await engine.upsert_fact("vault", "code", "1234", namespace=OWNER)
    await engine.drain()
    before = await snapshot(engine, OWNER)
    words = "zanzibar treasure oak"

    for intruder in INTRUDERS:
        # Reading, listing, searching: nothing of alice's, by any filter.
        page = await engine.list_notes(namespace=intruder, limit=1000)
        assert page.total == 0 and page.notes == []
        for text in (words, "%", "_", "'", "zanz", "secret plan", "; DELETE"):
            assert (await engine.list_notes(namespace=intruder, text=text)).total == 0
        assert (await engine.list_notes(namespace=intruder, tags=["secret"])).total == 0
        assert await engine.notes.list_memories(namespace=intruder) == []
        assert await engine.notes.recall_memories(words, namespace=intruder) == []
        assert await engine.notes.recall_memories("%", namespace=intruder) == []
        for scope in ({"session_id": engine.note_session(intruder)}, {"namespace": intruder}):
            assert await engine.hybrid_query(query=words, **scope) == []
        assert await engine.list_facts(namespace=intruder) == []
        with pytest.raises(NotFound):
            await engine.get_fact("vault", "code", namespace=intruder)
        assert await engine.delete_fact("vault", "code", namespace=intruder) is False

        for note in owned:
            for ref in (note.note_id, f" {note.note_id} ", note.name, note.aliases[0]):
                with pytest.raises(NotFound):
                    await engine.get_note(ref, namespace=intruder)
                with pytest.raises(NotFound):
                    await engine.write_note(ref, "overwritten", namespace=intruder)
                with pytest.raises(NotFound):
                    await engine.rename_note(ref, "stolen", namespace=intruder)
                with pytest.raises(NotFound):
                    await engine.alias_note(ref, "mine now", namespace=intruder)
                assert await engine.remove_note(ref, namespace=intruder) is False
                assert await engine.remove_note(ref, namespace=intruder) is False
            with pytest.raises(NotFound):
                await engine.unalias_note(note.aliases[0], namespace=intruder)

    # The intruders may use the same names for notes of their own: alice's stay hers.
    intruder = INTRUDERS[0]
    for note in owned:
        mine = await engine.notes.save_memory(note.name, "intruder's own text", namespace=intruder)
        await engine.alias_note(mine.note_id, note.aliases[0], namespace=intruder)
        assert mine.note_id != note.note_id and mine.namespace == intruder
    exported = await engine.export_notes(tmp_path / "intruder.json", namespace=intruder)
    assert exported.notes == len(owned)
    result = await engine.import_notes(tmp_path / "intruder.json", namespace=intruder,
                                       overwrite=True)
    assert result.replaced == len(owned) and result.removed == []
    alice_file = await engine.export_notes(tmp_path / "alice.json", namespace=OWNER)
    copied = await engine.import_notes(alice_file.path, namespace=INTRUDERS[1])
    assert copied.added == len(owned)
    copies = await snapshot(engine, INTRUDERS[1])
    assert not {c["note_id"] for c in copies} & {n.note_id for n in owned}  # ids never shared
    await engine.remove_note(copies[0]["note_id"], namespace=INTRUDERS[1])
    await engine.upsert_fact("vault", "code", "0000", namespace=intruder)

    assert await snapshot(engine, OWNER) == before
    found = await engine.notes.recall_memories(words, namespace=OWNER, limit=50)
    assert sorted(hit.note_id for hit in found) == sorted(note.note_id for note in owned)
    assert all(hit.content.startswith("zanzibar") for hit in found)
    assert (await engine.get_fact("vault", "code", namespace=OWNER)).value == "1234"
    in_session = await engine.hybrid_query(session_id=engine.note_session(OWNER), query=words,
                                           top_k=50)
    assert {h.metadata["note_id"] for h in in_session} == {n.note_id for n in owned}


async def test_an_owner_s_search_never_returns_an_intruder_s_notes(engine: Engine) -> None:
    await engine.add_note("mine", "the quokka sleeps", namespace=OWNER)
    for intruder in INTRUDERS:
        await engine.add_note("theirs", "the quokka sleeps", namespace=intruder)
    for scope in ({"session_id": engine.note_session(OWNER)}, {"namespace": OWNER}):
        found = await engine.hybrid_query(query="quokka", top_k=50, **scope)
        assert [h.metadata["name"] for h in found] == ["mine"]
    recalled = await engine.notes.recall_memories("quokka", namespace=OWNER)
    assert [h.key for h in recalled] == ["mine"]
    assert (await engine.list_notes(namespace=OWNER, text="quokka")).total == 1


async def test_a_note_is_found_through_both_legs_and_gone_from_both_after_remove(
        tmp_path: Path, tiny_model_dir: Path) -> None:
    config = {"embedding": {"model": str(tiny_model_dir)}}
    async with Engine.open(tmp_path / "legs.db", config=config) as engine:
        assert engine.embedder.name == "model2vec:tiny-m2v"  # the real model2vec code path
        hiking = await engine.add_note("hiking", "we climb the mountain trail by the river",
                                       namespace=OWNER)
        await engine.add_note("money", "the quarterly tax filing deadline and the bank loan",
                              namespace=OWNER)
        await engine.add_note("pets", "my dog and my cat love the snow", namespace=OWNER)
        await engine.drain()
        for scope in ({"session_id": engine.note_session(OWNER)}, {"namespace": OWNER}):
            found = await engine.search(query="mountain trail", top_k=3, **scope)
            top = found.results[0]
            assert top.metadata["note_id"] == hiking.note_id
            assert (top.vector_rank, top.fts_rank) == (1, 1)  # first in both legs
            assert top.vector_score == top.fts_score == 1.0
            vector_only = await engine.hybrid_query(query="mountain trail", mode="vector",
                                                    **scope)
            assert vector_only[0].metadata["note_id"] == hiking.note_id

        chunk_ids = {top.chunk_id}
        assert await engine.remove_note("hiking", namespace=OWNER) is True
        for scope in ({"session_id": engine.note_session(OWNER)}, {"namespace": OWNER}):
            found = await engine.search(query="mountain trail", top_k=3, **scope)
            assert found.legs.vector, "the vector leg still answers, with the other notes"
            assert not {hit.chunk_id for hit in found.legs.vector} & chunk_ids
            assert not {hit.chunk_id for hit in found.legs.fts} & chunk_ids
            assert all(r.metadata["note_id"] != hiking.note_id for r in found.results)
        vectors = await engine.counts()
        assert vectors["chunks_vec"] == vectors["chunks"] == 2
