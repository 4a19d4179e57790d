"""``workbench notes …``: every subcommand, its JSON, its refusals, namespace isolation."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from core import Engine
from tests.cli_helpers import FIXTURE_CONFIG, invoke, memory_file, ok, ok_json, refused


@pytest.fixture
def db(tmp_path: Path) -> Path:
    """An empty memory file the commands can open."""
    return memory_file(tmp_path / "memory.db")


def add(runner: CliRunner, db: Path, name: str, *args: Any,
        stdin: str | None = None) -> dict[str, Any]:
    return ok_json(runner, "notes", "add", name, "--db", db, *args, stdin=stdin)


def names(runner: CliRunner, db: Path, *filters: Any) -> list[str]:
    page = ok_json(runner, "notes", "list", "--db", db, *filters)
    return [note["name"] for note in page["notes"]]


def test_add_from_content_file_and_stdin(runner: CliRunner, db: Path, tmp_path: Path) -> None:
    first = add(runner, db, "packing", "--content", "crampons, ice axe", "--category", "Daily",
                "--tag", " Gear ", "--tag", "gear", "--tag", "alps", "--alias", "kit",
                "--kind", "archive", "--source", "cli-test", "--importance", "0.9")
    assert {key: first[key] for key in ("name", "content", "category", "tags", "aliases",
                                        "kind", "source", "importance", "namespace")} == {
        "name": "packing", "content": "crampons, ice axe", "category": "daily",
        "tags": ["gear", "alps"], "aliases": ["kit"], "kind": "Archive", "source": "cli-test",
        "importance": 0.9, "namespace": "default"}
    assert first["note_id"].startswith("note-")

    source = tmp_path / "route.md"
    source.write_text("# Route\n\nUp the north face.\n", encoding="utf-8")
    from_file = add(runner, db, "route", "--file", source)
    assert (from_file["content"], from_file["category"], from_file["kind"],
            from_file["importance"]) == ("# Route\n\nUp the north face.\n", "core", "Note", 0.5)
    from_stdin = add(runner, db, "weather", "--file", "-", stdin="snow on sunday\n")
    assert from_stdin["content"] == "snow on sunday\n"

    text = ok(runner, "notes", "add", "hut", "--db", db, "--content", "book it").stdout
    assert text.startswith("added 'hut' (note-") and "in namespace 'default': Note, core" in text
    assert names(runner, db) == ["hut", "packing", "route", "weather"]


def test_add_refuses_usage_errors_with_2_and_engine_refusals_with_1(
        runner: CliRunner, db: Path, tmp_path: Path) -> None:
    base = ["notes", "add", "x", "--db", db]
    for wrong in ([], ["--content", "a", "--file", "-"], ["--content", "a", "--category", "odd"],
                  ["--content", "a", "--kind", "Memo"], ["--content", "a", "--importance", "2"],
                  ["--file", tmp_path / "missing.txt"]):
        assert invoke(runner, *base, *wrong).exit_code == 2, wrong
    add(runner, db, "packing", "--content", "crampons", "--alias", "kit")
    assert "already" in refused(runner, "notes", "add", "packing", "--db", db, "--content", "b")
    assert "already" in refused(runner, "notes", "add", "other", "--db", db, "--content", "b",
                                "--alias", "kit")
    assert "blank" in refused(runner, *base, "--content", "   ")
    latin1 = tmp_path / "latin1.txt"
    latin1.write_bytes("caf\xe9".encode("latin-1"))
    assert refused(runner, *base, "--file", latin1) == f"error: {latin1} is not UTF-8 text"
    assert names(runner, db) == ["packing"]


def test_show_by_id_name_and_alias(runner: CliRunner, db: Path) -> None:
    created = add(runner, db, "packing", "--content", "crampons\nice axe", "--alias", "kit",
                  "--tag", "gear")
    for ref in (created["note_id"], "packing", "kit"):
        assert ok_json(runner, "notes", "show", ref, "--db", db) == created
    text = ok(runner, "notes", "show", "kit", "--db", db).stdout
    assert f"note_id:        {created['note_id']}\n" in text
    assert "aliases:        kit\n" in text and "tags:           gear\n" in text
    assert "source:         -\n" in text
    assert text.endswith("\n\ncrampons\nice axe\n")
    assert refused(runner, "notes", "show", "nope", "--db", db) == (
        "error: no note 'nope' in namespace 'default'")


def test_list_filters_and_pages(runner: CliRunner, db: Path) -> None:
    add(runner, db, "packing", "--content", "crampons and an ice axe", "--tag", "gear",
        "--tag", "alps")
    add(runner, db, "route", "--content", "the north face", "--tag", "alps", "--category",
        "daily")
    add(runner, db, "trip 2023", "--content", "archived talk", "--kind", "Archive",
        "--category", "conversation")
    text = ok(runner, "notes", "list", "--db", db).stdout.splitlines()
    assert text[0].split() == ["name", "kind", "category", "tags", "updated", "aliases"]
    assert text[-1] == "1-3 of 3 notes in namespace 'default'"
    page = ok_json(runner, "notes", "list", "--db", db, "--limit", "1", "--offset", "1")
    assert (page["total"], page["offset"], page["limit"], page["namespace"]) == (
        3, 1, 1, "default")
    assert [note["name"] for note in page["notes"]] == ["route"]
    assert names(runner, db, "--category", "daily") == ["route"]
    assert names(runner, db, "--kind", "archive") == ["trip 2023"]
    assert names(runner, db, "--tag", "alps") == ["packing", "route"]
    assert names(runner, db, "--tag", "alps", "--tag", "gear") == ["packing"]
    assert names(runner, db, "--text", "north") == ["route"]
    assert names(runner, db, "--text", "xyz") == []
    assert ok(runner, "notes", "list", "--db", db, "--text", "xyz").stdout == (
        "none of 0 notes in namespace 'default'\n")
    assert invoke(runner, "notes", "list", "--db", db, "--limit", "0").exit_code == 2
    assert invoke(runner, "notes", "list", "--db", db, "--order", "size").exit_code == 2


def test_edit_replaces_content_and_fields_and_indexes_the_new_text(
        runner: CliRunner, db: Path, tmp_path: Path) -> None:
    created = add(runner, db, "packing", "--content", "crampons", "--tag", "gear",
                  "--alias", "kit")
    edited = ok_json(runner, "notes", "edit", "kit", "--db", db, "--content", "rope and helmet",
                     "--category", "daily", "--tag", "Climbing", "--importance", "0.2")
    assert {key: edited[key] for key in ("note_id", "name", "aliases", "content", "category",
                                         "tags", "importance")} == {
        "note_id": created["note_id"], "name": "packing", "aliases": ["kit"],
        "content": "rope and helmet", "category": "daily", "tags": ["climbing"],
        "importance": 0.2}
    assert names(runner, db, "--text", "helmet") == ["packing"]
    assert names(runner, db, "--text", "crampons") == []
    source = tmp_path / "new.txt"
    source.write_text("from a file", encoding="utf-8")
    assert ok_json(runner, "notes", "edit", "packing", "--db", db, "--file", source,
                   "--no-tags")["tags"] == []
    assert ok_json(runner, "notes", "show", "packing", "--db", db)["content"] == "from a file"
    text = ok(runner, "notes", "edit", "packing", "--db", db, "--kind", "Archive").stdout
    assert text.startswith("wrote 'packing'") and ": Archive, daily" in text

    assert invoke(runner, "notes", "edit", "packing", "--db", db).exit_code == 2
    assert invoke(runner, "notes", "edit", "packing", "--db", db, "--tag", "a",
                  "--no-tags").exit_code == 2
    assert refused(runner, "notes", "edit", "nope", "--db", db, "--content", "x") == (
        "error: no note 'nope' in namespace 'default'")


def test_writes_return_once_their_chunks_are_embedded(runner: CliRunner, db: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    backlogs: list[int] = []
    drain = Engine.drain

    async def drain_and_look(engine: Engine, timeout: float | None = None) -> None:
        await drain(engine, timeout)
        backlogs.append((await engine.embedding_status()).backlog)

    monkeypatch.setattr(Engine, "drain", drain_and_look)
    add(runner, db, "packing", "--content", "crampons")
    ok(runner, "notes", "edit", "packing", "--db", db, "--content", "rope")
    ok(runner, "notes", "rename", "packing", "gear", "--db", db)
    assert backlogs == [0, 0, 0]

    async def embedded() -> tuple[int, int]:
        async with Engine.open(db, config=FIXTURE_CONFIG, start_worker=False) as engine:
            status = await engine.embedding_status()
            return status.backlog, status.embedded

    assert asyncio.run(embedded()) == (0, 1)


def test_rm_asks_and_declining_keeps_the_note(runner: CliRunner, db: Path) -> None:
    created = add(runner, db, "packing", "--content", "crampons")
    declined = invoke(runner, "notes", "rm", "packing", "--db", db, stdin="n\n")
    assert declined.exit_code == 1
    assert f"remove note 'packing' ({created['note_id']}) from namespace 'default'?" in (
        declined.stderr)
    assert names(runner, db) == ["packing"]
    assert ok(runner, "notes", "rm", "packing", "--db", db, stdin="y\n").stdout == (
        f"removed 'packing' ({created['note_id']}) from namespace 'default'\n")
    assert names(runner, db) == []

    again = add(runner, db, "route", "--content", "north face")
    assert ok_json(runner, "notes", "rm", again["note_id"], "--db", db, "--yes") == {
        "removed": again["note_id"], "name": "route", "namespace": "default"}
    assert refused(runner, "notes", "rm", "route", "--db", db, "--yes") == (
        "error: no note 'route' in namespace 'default'")


def test_alias_unalias_and_rename(runner: CliRunner, db: Path) -> None:
    created = add(runner, db, "packing", "--content", "crampons")
    add(runner, db, "route", "--content", "north face")
    aliased = ok_json(runner, "notes", "alias", "packing", "kit", "--db", db)
    assert aliased["aliases"] == ["kit"]
    assert ok_json(runner, "notes", "show", "kit", "--db", db)["note_id"] == created["note_id"]
    assert "already" in refused(runner, "notes", "alias", "packing", "route", "--db", db)
    assert refused(runner, "notes", "alias", "nope", "x", "--db", db) == (
        "error: no note 'nope' in namespace 'default'")

    unaliased = ok(runner, "notes", "unalias", "kit", "--db", db).stdout
    assert unaliased.startswith("unaliased 'kit' from 'packing'")
    assert "no note 'kit'" in refused(runner, "notes", "show", "kit", "--db", db)
    assert refused(runner, "notes", "unalias", "kit", "--db", db) == (
        "error: no alias 'kit' in namespace 'default'")
    assert "own name" in refused(runner, "notes", "unalias", "packing", "--db", db)

    renamed = ok_json(runner, "notes", "rename", "packing", "gear list", "--db", db)
    assert (renamed["note_id"], renamed["name"]) == (created["note_id"], "gear list")
    assert "no note 'packing'" in refused(runner, "notes", "show", "packing", "--db", db)
    assert names(runner, db, "--text", "gear") == ["gear list"]
    assert "already" in refused(runner, "notes", "rename", "gear list", "route", "--db", db)
    assert ok(runner, "notes", "rename", "gear list", "kit", "--db", db).stdout.startswith(
        "renamed to 'kit'")
    assert invoke(runner, "notes", "rename", "kit", "--db", db).exit_code == 2


def test_a_namespace_never_reaches_another_namespaces_notes(runner: CliRunner,
                                                           db: Path) -> None:
    mine = add(runner, db, "secret", "--namespace", "team-a", "--content", "the combination")
    assert mine["namespace"] == "team-a"
    assert names(runner, db) == []
    assert names(runner, db, "--namespace", "team-b") == []
    assert names(runner, db, "--namespace", "team-a") == ["secret"]
    for ref in ("secret", mine["note_id"]):
        assert refused(runner, "notes", "show", ref, "--db", db, "--namespace", "team-b") == (
            f"error: no note {ref if ref.startswith('note-') else repr(ref)} in namespace "
            "'team-b'")
        refused(runner, "notes", "edit", ref, "--db", db, "--namespace", "team-b",
                "--content", "x")
        refused(runner, "notes", "rm", ref, "--db", db, "--namespace", "team-b", "--yes")
        refused(runner, "notes", "alias", ref, "x", "--db", db, "--namespace", "team-b")
        refused(runner, "notes", "rename", ref, "x", "--db", db, "--namespace", "team-b")
    # The same name is free in another namespace.
    add(runner, db, "secret", "--namespace", "team-b", "--content", "another")
    assert ok_json(runner, "notes", "show", "secret", "--db", db, "--namespace",
                   "team-a") == mine


def stored_note(db: Path, ref: str, namespace: str | None = None) -> Any:
    """The note as an Engine of its own reads it back, or None when REF names none."""
    from core.errors import NotFound

    async def read() -> Any:
        async with Engine.open(db, config=FIXTURE_CONFIG, start_worker=False) as engine:
            try:
                return await engine.get_note(ref, namespace=namespace)
            except NotFound:
                return None

    return asyncio.run(read())


def test_export_writes_one_file_that_import_reads_back(runner: CliRunner, db: Path,
                                                       tmp_path: Path) -> None:
    add(runner, db, "packing", "--content", "crampons", "--alias", "kit", "--tag", "gear")
    add(runner, db, "route", "--content", "north face")
    out = tmp_path / "notes.json"
    assert ok(runner, "notes", "export", "--db", db, "--out", out).stdout == (
        f"wrote 2 notes of namespace 'default' to {out}\n")
    document = json.loads(out.read_text(encoding="utf-8"))
    assert (document["format"], document["namespace"]) == ("memory-workbench-notes", "default")
    assert [note["name"] for note in document["notes"]] == ["packing", "route"]
    assert ok_json(runner, "notes", "export", "--db", db, "--namespace", "empty",
                   "--out", tmp_path / "empty.json") == {
        "path": str(tmp_path / "empty.json"), "namespace": "empty", "notes": 0}

    text = ok(runner, "notes", "import", out, "--db", db, "--namespace", "team-b").stdout
    assert text == f"imported {out} into namespace 'team-b': 2 added, 0 replaced\n"
    copied = stored_note(db, "kit", "team-b")
    assert (copied.name, copied.content, copied.tags) == ("packing", "crampons", ["gear"])
    assert names(runner, db, "--namespace", "team-b", "--text", "north") == ["route"]
    assert ok_json(runner, "notes", "import", tmp_path / "empty.json", "--db", db,
                   "--namespace", "team-c") == {
        "path": str(tmp_path / "empty.json"), "namespace": "team-c", "imported": True,
        "added": 0, "replaced": 0, "removed": [], "collisions": []}


@pytest.fixture
def colliding_file(runner: CliRunner, db: Path, tmp_path: Path) -> Path:
    """Notes a, b, c, d and old in the file ``db``; a notes file with a (new content), b, c,
    d and a note fresh whose alias is old's name: five names taken, one note new."""
    for name in ("a", "b", "c", "d", "old"):
        add(runner, db, name, "--content", f"{name} before")
    out = tmp_path / "notes.json"
    ok(runner, "notes", "export", "--db", db, "--out", out)
    document = json.loads(out.read_text(encoding="utf-8"))
    notes = [note for note in document["notes"] if note["name"] != "old"]
    notes[0]["content"] = "a from the file"
    notes.append({"name": "fresh", "content": "brand new", "aliases": ["old"]})
    out.write_text(json.dumps({**document, "notes": notes}), encoding="utf-8")
    return out


def test_import_refuses_the_whole_file_when_names_collide(runner: CliRunner, db: Path,
                                                          colliding_file: Path) -> None:
    line = refused(runner, "notes", "import", colliding_file, "--db", db)
    assert line == ("error: 5 names are already taken in namespace 'default' ('a', 'b', 'c' "
                    "and 2 more); nothing was imported (--overwrite lets the file win; --json "
                    "lists each)")
    result = invoke(runner, "notes", "import", colliding_file, "--db", db, "--json")
    assert result.exit_code == 1 and result.stderr.strip() == line
    shown = json.loads(result.stdout)
    assert (shown["imported"], shown["namespace"]) == (False, "default")
    assert [(c["name"], c["imported_note"], c["existing_note"], c["bound_as"])
            for c in shown["collisions"]] == [
        ("a", "a", "a", "name"), ("b", "b", "b", "name"), ("c", "c", "c", "name"),
        ("d", "d", "d", "name"), ("old", "fresh", "old", "name")]
    assert stored_note(db, "fresh") is None
    assert stored_note(db, "a").content == "a before"


def test_import_overwrite_lets_the_file_win(runner: CliRunner, db: Path,
                                            colliding_file: Path) -> None:
    before = stored_note(db, "a")
    text = ok(runner, "notes", "import", colliding_file, "--db", db, "--overwrite").stdout
    assert text == (f"imported {colliding_file} into namespace 'default': 1 added, 4 replaced,"
                    " 1 note removed (old); 5 names taken from notes already here\n")
    after = stored_note(db, "a")
    assert (after.note_id, after.content) == (before.note_id, "a from the file")
    assert stored_note(db, "old").name == "fresh"
    assert names(runner, db) == ["a", "b", "c", "d", "fresh"]


def test_export_without_out_writes_beside_the_memory_and_says_where(
        runner: CliRunner, db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    add(runner, db, "packing", "--content", "crampons", "--namespace", "crew")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    written = (tmp_path / "exports" / "notes-crew.json").resolve()
    assert ok(runner, "notes", "export", "--db", db, "--namespace", "crew").stdout == (
        f"wrote 1 note of namespace 'crew' to {written}\n")
    assert [note["name"] for note in json.loads(written.read_text())["notes"]] == ["packing"]
    assert list(elsewhere.iterdir()) == []


def test_export_and_import_refusals(runner: CliRunner, db: Path, tmp_path: Path) -> None:
    assert invoke(runner, "notes", "import", tmp_path / "missing.json", "--db", db).exit_code == 2
    assert "cannot write" in refused(runner, "notes", "export", "--db", db,
                                     "--out", tmp_path / "no-folder" / "notes.json")
    not_json = tmp_path / "notes.txt"
    not_json.write_text("crampons", encoding="utf-8")
    assert refused(runner, "notes", "import", not_json, "--db", db).startswith(
        f"error: {not_json} is not JSON")
    other = tmp_path / "other.json"
    other.write_text('{"notes": []}', encoding="utf-8")
    assert refused(runner, "notes", "import", other, "--db", db) == (
        'error: not a notes file: it needs "format": "memory-workbench-notes"')
    assert "does not exist" in refused(runner, "notes", "export", "--db", tmp_path / "typo.db",
                                       "--out", tmp_path / "x.json")
    assert not (tmp_path / "x.json").exists()
