"""Export a namespace's notes to one JSON file (atomically) and import it back."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from core import Engine
from core.errors import ImportCollision, InvalidInput, NotFound
from core.notes import transfer
from tests.conftest import DETERMINISTIC


@pytest.fixture
async def engine(memory: str):
    async with Engine.open(memory, config=DETERMINISTIC) as opened:
        yield opened


async def fill(engine: Engine, namespace: str = "default") -> None:
    await engine.add_note("groceries", "milk, eggs and flour", aliases=["shopping"],
                          tags=["home"], category="daily", namespace=namespace)
    await engine.add_note("summary 1", "we talked about the trip", kind="Archive",
                          category="conversation", source="compaction", importance=0.8,
                          namespace=namespace)


def notes_of(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["notes"]


async def test_export_then_import_into_a_new_file_round_trips(engine: Engine,
                                                               tmp_path: Path) -> None:
    await fill(engine)
    exported = await engine.export_notes(tmp_path / "notes.json")
    assert (exported.notes, exported.namespace) == (2, "default")
    document = json.loads((tmp_path / "notes.json").read_text(encoding="utf-8"))
    assert (document["format"], document["version"]) == ("memory-workbench-notes", 1)
    original = (await engine.list_notes()).notes
    async with Engine.open(tmp_path / "other.db", config=DETERMINISTIC) as fresh:
        result = await fresh.import_notes(tmp_path / "notes.json")
        assert (result.added, result.replaced, result.removed, result.collisions) == (
            2, 0, [], [])
        restored = (await fresh.list_notes()).notes
        assert [n.to_dict() for n in restored] == [n.to_dict() for n in original]
        found = await fresh.notes.recall_memories("flour")
        assert [h.key for h in found] == ["groceries"]  # imported notes are indexed
        assert (await fresh.get_note("shopping")).name == "groceries"


async def test_a_collision_is_reported_each_and_nothing_is_applied(engine: Engine,
                                                                   tmp_path: Path) -> None:
    await fill(engine)
    await engine.export_notes(tmp_path / "notes.json")
    await engine.write_note("groceries", "changed since the export")
    await engine.add_note("brand new", "only here")
    before = [n.to_dict() for n in (await engine.list_notes()).notes]
    document = json.loads((tmp_path / "notes.json").read_text(encoding="utf-8"))
    document["notes"].append({"name": "fresh", "content": "from the file"})
    (tmp_path / "notes.json").write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(ImportCollision) as refused:
        await engine.import_notes(tmp_path / "notes.json")
    collisions = {(c.name, c.bound_as, c.existing_note) for c in refused.value.collisions}
    assert collisions == {("groceries", "name", "groceries"),
                          ("shopping", "alias", "groceries"),
                          ("summary 1", "name", "summary 1")}
    message = str(refused.value)
    assert "3 names" in message and "nothing was imported" in message
    for name in ("'groceries'", "'shopping'", "'summary 1'"):
        assert name in message
    assert [n.to_dict() for n in (await engine.list_notes()).notes] == before
    with pytest.raises(NotFound):
        await engine.get_note("fresh")  # the note that did not collide was not applied either


async def test_overwrite_lets_the_file_win(engine: Engine, tmp_path: Path) -> None:
    await fill(engine)
    await engine.export_notes(tmp_path / "notes.json")
    groceries = await engine.write_note("groceries", "changed since the export")
    await engine.alias_note("groceries", "list")
    # Another note holds a name the file gives as an alias, and another an alias it claims.
    await engine.remove_note("summary 1")
    await engine.add_note("summary 1", "a different note now")
    holder = await engine.add_note("errands", "post office", aliases=["summary 1 alias"])
    document = json.loads((tmp_path / "notes.json").read_text(encoding="utf-8"))
    document["notes"][1]["aliases"] = ["summary 1 alias"]
    (tmp_path / "notes.json").write_text(json.dumps(document), encoding="utf-8")
    result = await engine.import_notes(tmp_path / "notes.json", overwrite=True)
    assert (result.added, result.replaced, result.removed) == (0, 2, [])
    restored = await engine.get_note("groceries")
    assert restored.note_id == groceries.note_id  # replaced in place: identity kept
    assert restored.created_at == groceries.created_at
    assert (restored.content, restored.aliases) == ("milk, eggs and flour", ["shopping"])
    with pytest.raises(NotFound):
        await engine.get_note("list")  # the file's note has no such alias
    assert (await engine.get_note("summary 1 alias")).name == "summary 1"
    assert (await engine.get_note("errands")).note_id == holder.note_id
    assert (await engine.get_note("errands")).aliases == []
    assert not await engine.notes.recall_memories("changed since the export")
    assert [h.key for h in await engine.notes.recall_memories("flour")] == ["groceries"]


async def test_overwrite_removes_a_note_whose_name_the_file_claims_as_an_alias(
        engine: Engine, tmp_path: Path) -> None:
    (tmp_path / "n.json").write_text(json.dumps({
        "format": "memory-workbench-notes", "version": 1,
        "notes": [{"name": "project", "content": "the file's project", "aliases": ["deadline"]}],
    }), encoding="utf-8")
    await engine.add_note("deadline", "a note of its own", aliases=["due"])
    result = await engine.import_notes(tmp_path / "n.json", overwrite=True)
    assert (result.added, result.replaced, result.removed) == (1, 0, ["deadline"])
    assert (await engine.get_note("deadline")).name == "project"
    with pytest.raises(NotFound):
        await engine.get_note("due")
    assert await engine.notes.list_memories() == ["project"]


async def test_file_ids_are_kept_when_free_and_never_taken_from_another_note(
        engine: Engine, tmp_path: Path) -> None:
    await fill(engine)
    await engine.export_notes(tmp_path / "notes.json")
    ids = {n["note_id"] for n in notes_of(tmp_path / "notes.json")}
    result = await engine.import_notes(tmp_path / "notes.json", namespace="copy")
    assert result.added == 2
    copies = {n.note_id for n in (await engine.list_notes(namespace="copy")).notes}
    assert copies.isdisjoint(ids)
    assert {n.note_id for n in (await engine.list_notes()).notes} == ids


@pytest.mark.parametrize("content, words", [
    ("{not json", "is not JSON"),
    ('{"format": "other", "version": 1, "notes": []}', "not a notes file"),
    ('{"format": "memory-workbench-notes", "version": 2, "notes": []}', "version 2"),
    ('{"format": "memory-workbench-notes", "version": 1, "notes": {}}', '"notes" list'),
    ('{"format": "memory-workbench-notes", "version": 1, "notes": [3]}', "notes\\[0\\] must be"),
    ('{"format": "memory-workbench-notes", "version": 1, "notes": [{"name": "a"}]}',
     "notes\\[0\\]: a note needs a name and content"),
    ('{"format": "memory-workbench-notes", "version": 1, "notes": [{"name": "a", "content": "x",'
     ' "colour": 1}]}', "unknown keys: 'colour'"),
    ('{"format": "memory-workbench-notes", "version": 1, "notes": [{"name": "a", "content": "x"},'
     ' {"name": "b", "content": "y", "tags": ["1","2","3","4","5","6","7","8","9","10","11",'
     '"12","13","14","15","16","17"]}]}', "notes\\[1\\]: 17 tags given; the limit is 16"),
    ('{"format": "memory-workbench-notes", "version": 1, "notes": [{"name": "a", "content": "x"},'
     ' {"name": "b", "content": "y", "aliases": ["a"]}]}', "'a' also names notes\\[0\\]"),
    ('{"format": "memory-workbench-notes", "version": 1, "notes": [{"name": "a", "content": "x",'
     ' "created_at": "yesterday"}]}', "created_at 'yesterday' is not a timestamp"),
    ('{"format": "memory-workbench-notes", "version": 1, "notes": [{"name": "a", "content": "x",'
     ' "note_id": "note-1"}]}', "is not a note id"),
    ('{"format": "memory-workbench-notes", "version": 1, "notes": [{"name": "a", "content": "x",'
     ' "schema_version": 9}]}', "schema_version 9"),
])
async def test_a_bad_file_is_refused_before_anything_is_written(
        engine: Engine, tmp_path: Path, content: str, words: str) -> None:
    (tmp_path / "bad.json").write_text(content, encoding="utf-8")
    with pytest.raises(InvalidInput, match=words):
        await engine.import_notes(tmp_path / "bad.json")
    assert (await engine.list_notes()).total == 0
    assert await engine.list_sessions() == []


async def test_an_empty_file_imports_nothing_and_makes_no_session(engine: Engine,
                                                                 tmp_path: Path) -> None:
    await engine.export_notes(tmp_path / "empty.json", namespace="nobody")
    assert notes_of(tmp_path / "empty.json") == []
    result = await engine.import_notes(tmp_path / "empty.json")
    assert (result.added, result.replaced, result.removed) == (0, 0, [])
    assert await engine.list_sessions() == []


async def test_missing_files_and_folders_are_refused_plainly(engine: Engine,
                                                             tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="cannot read"):
        await engine.import_notes(tmp_path / "absent.json")
    with pytest.raises(InvalidInput, match="cannot write"):
        await engine.export_notes(tmp_path / "no" / "such" / "folder.json")


# --- the atomic write --------------------------------------------------------------------------

def test_the_write_is_fsynced_then_renamed_over_the_target(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    target = tmp_path / "notes.json"
    target.write_bytes(b"old")
    os.chmod(target, 0o640)
    steps: list[str] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        steps.append("fsync")
        real_fsync(fd)

    def replace(source, destination) -> None:
        assert Path(source).parent == tmp_path  # the temporary file is in the same folder
        assert Path(source).read_bytes() == b"new contents"
        steps.append("replace")
        real_replace(source, destination)

    monkeypatch.setattr(transfer.os, "fsync", fsync)
    monkeypatch.setattr(transfer.os, "replace", replace)
    transfer.write_atomically(target, b"new contents")
    assert steps == ["fsync", "replace", "fsync"]  # the file, the rename, then the folder
    assert target.read_bytes() == b"new contents"
    assert (target.stat().st_mode & 0o777) == 0o640  # an existing file keeps its mode
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.json"]


@pytest.mark.parametrize("failing", ["fsync", "replace"])
def test_a_crash_before_the_rename_leaves_the_old_file_whole(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failing: str) -> None:
    target = tmp_path / "notes.json"
    target.write_bytes(b'{"old": true}')

    def crash(*args) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(transfer.os, failing, crash)
    with pytest.raises(OSError, match="No space"):
        transfer.write_atomically(target, b'{"new": "half written')
    assert target.read_bytes() == b'{"old": true}'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.json"]  # no temporary left


async def test_a_failed_export_keeps_the_previous_export(engine: Engine, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    await fill(engine)
    first = await engine.export_notes(tmp_path / "notes.json")
    kept = (tmp_path / "notes.json").read_bytes()
    await engine.add_note("later", "added after the export")

    def crash(*args) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(transfer.os, "replace", crash)
    with pytest.raises(InvalidInput, match="cannot write .*Input/output error"):
        await engine.export_notes(tmp_path / "notes.json")
    assert (tmp_path / "notes.json").read_bytes() == kept and first.notes == 2
    assert len(notes_of(tmp_path / "notes.json")) == 2


async def test_a_new_export_is_private_to_its_owner(engine: Engine, tmp_path: Path) -> None:
    await fill(engine)
    await engine.export_notes(tmp_path / "notes.json")
    assert ((tmp_path / "notes.json").stat().st_mode & 0o777) == 0o600
