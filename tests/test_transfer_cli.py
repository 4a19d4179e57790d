"""`workbench import jsonl|aidaemon|oxydra|pynchy|crabtalk` and `workbench export`: exit codes
0/1/2, one line on stderr for a failure, counts per kind, --json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.cli_helpers import invoke, ok, ok_json
from tests.test_importers import (
    SEED000_FACTS,
    SEED000_MESSAGES,
    make_seed000,
    make_seed001,
    make_seed002,
    make_seed004,
    write_jsonl,
)

CHATS = [{"session_id": "trip", "role": "user", "content": "Hike in June?"},
         {"session_id": "trip", "role": "assistant", "content": "June is fine."}]


def test_import_jsonl_prints_counts_and_a_second_run_adds_nothing(
        runner: CliRunner, tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "chats.jsonl", CHATS)
    db = tmp_path / "new" / "memory.db"
    db.parent.mkdir()
    first = invoke(runner, "import", "jsonl", source, "--db", db)
    assert first.exit_code == 0, first.output
    assert "messages  2 added, 0 already there, 0 skipped" in first.stdout
    assert db.exists()
    again = invoke(runner, "import", "jsonl", source, "--db", db, "--json")
    assert again.exit_code == 0, again.output
    report = json.loads(again.stdout)
    assert report["counts"] == {"messages": {"added": 0, "already": 2, "skipped": 0}}
    assert (report["format"], report["namespace"], report["target"]) == (
        "jsonl", "default", str(db))


def test_the_progress_line_says_when_the_memory_is_searchable(
        runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """On a terminal the line counts the messages, then says what the wait after the last one
    is for (a large import's indexes being saved), and ends once the memory is searchable."""
    from workbench.cli import transfer

    monkeypatch.setattr(transfer, "_import_line", transfer._ImportLine)  # as on a terminal
    source = write_jsonl(tmp_path / "chats.jsonl", CHATS)
    result = invoke(runner, "import", "jsonl", source, "--db", tmp_path / "memory.db")
    assert result.exit_code == 0, result.output
    assert result.stderr.endswith(
        "\rimporting   2/2 · making it searchable … searchable\n"), result.stderr
    progress = result.stderr.rstrip("\n").split("\n")[-1]  # one line, rewritten in place
    assert progress.startswith("\rimporting   0/2\rimporting   2/2"), progress


def test_a_malformed_file_is_one_line_exit_1_and_no_memory_file(
        runner: CliRunner, tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "bad.jsonl", [CHATS[0], "{oops"])
    db = tmp_path / "memory.db"
    result = invoke(runner, "import", "jsonl", source, "--db", db)
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1
    assert f"{source} line 2: not JSON" in result.stderr
    assert not db.exists()


def test_usage_errors_exit_2(runner: CliRunner, tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "chats.jsonl", CHATS)
    assert invoke(runner, "import", "jsonl", source).exit_code == 2  # no --db
    assert invoke(runner, "import", "aidaemon", tmp_path / "missing.db", "--db",
                  tmp_path / "m.db").exit_code == 2
    assert invoke(runner, "export", "session", "trip", "--db", tmp_path / "m.db",
                  "--format", "csv", "--out", tmp_path / "x").exit_code == 2
    assert invoke(runner, "export", "namespace", "--db", tmp_path / "m.db",
                  "--format", "jsonl", "--out", tmp_path / "x").exit_code == 2
    assert not (tmp_path / "m.db").exists()


def test_every_seed_imports_into_its_namespace(runner: CliRunner, tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    sources = {
        "aidaemon": make_seed000(tmp_path / "s0.db", SEED000_MESSAGES, SEED000_FACTS),
        "oxydra": make_seed001(tmp_path / "s1.db"),
        "pynchy": make_seed002(tmp_path / "memories.db", [("color", "teal", "core")]),
        "crabtalk": make_seed004(tmp_path / "s4.json", [
            {"id": 1, "name": "deploy", "aliases": ["ship"], "content": "Fridays",
             "kind": "Note"}]),
    }
    added = {"aidaemon": {"messages": 5, "facts": 2}, "oxydra": {"messages": 3, "notes": 2},
             "pynchy": {"memories": 1}, "crabtalk": {"notes": 1}}
    for source_format, source in sources.items():
        result = invoke(runner, "import", source_format, source, "--db", db,
                        "--namespace", "crew", "--json")
        assert result.exit_code == 0, result.output
        report = json.loads(result.stdout)
        assert report["namespace"] == "crew"
        for kind, number in added[source_format].items():
            assert report["counts"][kind]["added"] == number, (source_format, kind)
        for skip in report["skipped"]:
            assert skip["reason"] and skip["where"]
    human = invoke(runner, "import", "aidaemon", sources["aidaemon"], "--db", db,
                   "--namespace", "crew")
    assert human.exit_code == 0, human.output
    assert "messages  0 added, 5 already there, 2 skipped" in human.stdout
    assert "skipped messages (messages row 'f6'): message.role" in human.stdout
    assert "note: vectors:" in human.stdout


def test_export_session_and_namespace(runner: CliRunner, tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    assert invoke(runner, "import", "jsonl", write_jsonl(tmp_path / "c.jsonl", CHATS),
                  "--db", db, "--namespace", "crew").exit_code == 0
    result = invoke(runner, "export", "session", "trip", "--db", db, "--format", "markdown",
                    "--out", tmp_path / "trip.md")
    assert result.exit_code == 0, result.output
    assert result.stdout == (f"exported session 'trip': 1 session, 2 messages as markdown to "
                             f"{tmp_path / 'trip.md'}\n")
    assert (tmp_path / "trip.md").read_text().startswith("# trip\n\n")

    out = tmp_path / "crew.jsonl"
    result = invoke(runner, "export", "namespace", "crew", "--db", db, "--format", "jsonl",
                    "--out", out, "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {"scope": "namespace", "name": "crew",
                                         "format": "jsonl", "sessions": 1, "messages": 2,
                                         "paths": [str(out)]}
    fresh = tmp_path / "fresh.db"
    back = invoke(runner, "import", "jsonl", out, "--db", fresh, "--namespace", "crew", "--json")
    assert back.exit_code == 0, back.output
    assert json.loads(back.stdout)["counts"]["messages"]["added"] == 2


def test_export_without_out_writes_beside_the_memory_not_the_current_folder(
        runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "memory.db"
    assert invoke(runner, "import", "jsonl", write_jsonl(tmp_path / "c.jsonl", CHATS),
                  "--db", db, "--namespace", "crew").exit_code == 0
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    exports = (tmp_path / "exports").resolve()

    session = invoke(runner, "export", "session", "trip", "--db", db, "--format", "jsonl")
    assert session.exit_code == 0, session.output
    assert session.stdout.endswith(f" to {exports / 'trip.jsonl'}\n")
    assert (exports / "trip.jsonl").read_text().count("\n") == 2
    folder = invoke(runner, "export", "namespace", "crew", "--db", db, "--format", "markdown",
                    "--json")
    assert folder.exit_code == 0, folder.output
    assert json.loads(folder.stdout)["paths"] == [str(exports / "crew" / "trip.md")]
    relative = invoke(runner, "export", "session", "trip", "--db", db, "--format", "markdown",
                      "--out", "mine.md")
    assert relative.exit_code == 0, relative.output
    assert relative.stdout.endswith(f" to {elsewhere.absolute() / 'mine.md'}\n")
    assert sorted(p.name for p in elsewhere.iterdir()) == ["mine.md"]


def test_export_failures_are_one_line_and_exit_1(runner: CliRunner, tmp_path: Path) -> None:
    missing = invoke(runner, "export", "session", "trip", "--db", tmp_path / "none.db",
                     "--format", "jsonl", "--out", tmp_path / "t.jsonl")
    assert missing.exit_code == 1
    assert missing.stderr.startswith(f"error: {tmp_path / 'none.db'} does not exist; ")
    assert missing.stderr.count("\n") == 1
    db = tmp_path / "memory.db"
    assert invoke(runner, "import", "jsonl", write_jsonl(tmp_path / "c.jsonl", CHATS),
                  "--db", db).exit_code == 0
    nothing = invoke(runner, "export", "session", "nope", "--db", db, "--format", "jsonl",
                     "--out", tmp_path / "t.jsonl")
    assert nothing.exit_code == 1
    assert nothing.stderr == "error: no session 'nope'\n"
    assert not (tmp_path / "t.jsonl").exists()


def test_skips_for_one_reason_are_one_line(runner: CliRunner, tmp_path: Path) -> None:
    lines = [json.dumps({"session_id": "taken", "role": "user", "content": f"hi {n}"})
             for n in range(1, 8)]
    source = tmp_path / "chat.jsonl"
    source.write_text("\n".join(lines) + "\n")
    db = tmp_path / "memory.db"
    ok(runner, "import", "jsonl", source, "--db", db, "--namespace", "alice")
    human = ok(runner, "import", "jsonl", source, "--db", db, "--namespace", "bob").stdout
    skipped = [line for line in human.splitlines() if line.startswith("skipped")]
    assert skipped == [
        "skipped 7 messages (line 1; line 2; line 3; and 4 more): session 'taken' belongs to "
        "another namespace in the target, not to 'bob'"]
    report = ok_json(runner, "import", "jsonl", source, "--db", db, "--namespace", "bob")
    assert [s["where"] for s in report["skipped"]] == [f"line {n}" for n in range(1, 8)]
