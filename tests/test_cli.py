"""The workbench command: help everywhere, README coverage, exit codes, the main commands."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from workbench.cli.root import main

ROOT = Path(__file__).resolve().parents[1]


def all_commands(group: click.Group, prefix: str = "workbench") -> list[tuple[str, click.Command]]:
    found = []
    for name, command in sorted(group.commands.items()):
        path = f"{prefix} {name}"
        found.append((path, command))
        if isinstance(command, click.Group):
            found.extend(all_commands(command, path))
    return found


def test_every_command_has_help_text_and_is_in_the_readme() -> None:
    readme = (ROOT / "README.md").read_text()
    for path, command in all_commands(main):
        assert (command.help or "").strip(), f"{path} has no help text"
        assert path in readme, f"{path} is not mentioned in README.md"
        for param in command.params:
            if isinstance(param, click.Option):
                assert (param.help or "").strip(), f"{path} {param.opts[0]} has no help"


def test_doctor_reports_the_engine_and_a_file(runner: CliRunner, tmp_path: Path) -> None:
    missing = runner.invoke(main, ["doctor", "--db", str(tmp_path / "none.db"), "--json"])
    assert missing.exit_code == 0, missing.output
    report = json.loads(missing.output)
    assert report["sqlite"]["fts5"] is True and report["sqlite"]["sqlite_vec"].startswith("v")
    assert report["model"]["dimension"] == 32
    assert report["database"]["exists"] is False
    text = runner.invoke(main, ["doctor"])
    assert text.exit_code == 0 and "sqlite-vec" in text.output and "status       ok" in text.output


def test_reindex_moves_a_file_to_another_model(runner: CliRunner, tmp_path: Path,
                                               tiny_model_dir: Path) -> None:
    import asyncio

    from core import Engine

    db = tmp_path / "m.db"

    async def fill() -> None:
        config = {"embedding": {"backend": "deterministic", "fallback_dimensions": 32}}
        async with Engine.open(db, config=config) as engine:
            for seq in range(1, 30):
                await engine.store("s", seq, {"role": "user", "content": f"the dog {seq}"})
            await engine.drain()

    asyncio.run(fill())
    result = runner.invoke(main, ["reindex", "--db", str(db), "--model", str(tiny_model_dir)])
    assert result.exit_code == 0, result.output
    assert "re-embedded 29 chunks" in result.output
    report = json.loads(runner.invoke(main, ["doctor", "--db", str(db), "--json"]).output)
    assert report["database"]["vector_dimension"] == 16
    assert report["database"]["vector_model"] == f"model2vec:{tiny_model_dir.name}"
    again = runner.invoke(main, ["reindex", "--db", str(db), "--model", str(tiny_model_dir),
                                 "--json"])
    assert again.exit_code == 0, again.output
    assert json.loads(again.stdout) == {"db": str(db), "model": f"model2vec:{tiny_model_dir.name}",
                                        "dimension": 16, "chunks": 29, "failed": 0}


def test_bench_ingest_prints_its_figures(runner: CliRunner) -> None:
    result = runner.invoke(main, ["bench", "ingest", "--model", "deterministic",
                                  "--messages", "400", "--sessions", "4"])
    assert result.exit_code == 0, result.output
    for label in ("encode only", "ingest, store()", "ingest, store_many()", "ratio to encode",
                  "peak RSS"):
        assert label in result.output


def test_errors_are_one_line_and_exit_1(runner: CliRunner, tmp_path: Path) -> None:
    result = runner.invoke(main, ["reindex", "--db", str(tmp_path / "missing.db")])
    assert result.exit_code == 1
    assert result.output.strip().count("\n") == 0 and "does not exist" in result.output
    bad = tmp_path / "bad.toml"
    bad.write_text("[embeding]\nmodel = 'x'\n")
    result = runner.invoke(main, ["--config", str(bad), "doctor"])
    assert result.exit_code == 1 and "unknown key 'embeding'" in result.output


def test_usage_errors_exit_2(runner: CliRunner) -> None:
    assert runner.invoke(main, ["bench", "ingest", "--messages", "zero"]).exit_code == 2
    assert runner.invoke(main, ["no-such-command"]).exit_code == 2


def test_every_config_key_is_documented_in_the_readme() -> None:
    from core.config import describe_fields

    readme = (ROOT / "README.md").read_text()
    sections = {key.split(".")[0] for key, _, _ in describe_fields() if "." in key}
    for section in sections:
        assert f"[{section}]" in readme, section
    for key, _, doc in describe_fields():
        name = key.rsplit(".", 1)[-1]
        assert f"{name} =" in readme, f"{key} is not in the README's configuration reference"
        assert doc, f"{key} has no doc"


def test_reindex_to_a_model_that_cannot_load_changes_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import asyncio

    from core import Engine

    config = tmp_path / "offline.toml"
    config.write_text("[embedding]\nbackend = \"deterministic\"\nallow_download = false\n")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    db = tmp_path / "m.db"

    async def fill() -> None:
        async with Engine.open(db, config=config) as engine:
            await engine.store("s", 1, {"role": "user", "content": "keep my vectors"})
            await engine.drain()

    asyncio.run(fill())
    result = CliRunner().invoke(main, ["--config", str(config), "reindex", "--db", str(db),
                                       "--model", "nobody/no-such-model"])
    assert result.exit_code == 1
    assert "reindex refused, nothing was changed" in result.output
    assert "nobody/no-such-model" in result.output
    report = json.loads(CliRunner().invoke(
        main, ["--config", str(config), "doctor", "--db", str(db), "--json"]).output)
    assert report["database"]["embedding"]["embedded"] == 1


def test_search_explains_and_the_log_replays(runner: CliRunner, tmp_path: Path) -> None:
    import asyncio

    from core import Engine

    db = tmp_path / "m.db"

    async def fill() -> None:
        config = {"embedding": {"backend": "deterministic", "fallback_dimensions": 32}}
        async with Engine.open(db, config=config) as engine:
            for seq, text in enumerate(["the violin recital is on friday",
                                        "dinner with Sam on saturday"], 1):
                await engine.store("s", seq, {"role": "user", "content": text})
            await engine.drain()

    asyncio.run(fill())
    plain = runner.invoke(main, ["search", "violin recital", "--db", str(db), "--session", "s"])
    assert plain.exit_code == 0, plain.output
    assert "violin recital is on friday" in plain.output
    explained = json.loads(runner.invoke(main, [
        "search", "When is the violin? NEAR(", "--db", str(db), "--session", "s",
        "--explain", "--json", "--min-score", "0.5"]).output)
    assert explained["parsed_terms"] == ["violin", "near"]
    assert {"results", "cut", "notes", "filters", "legs"} <= set(explained)
    log = json.loads(runner.invoke(main, ["log", "--db", str(db), "--json"]).output)
    assert [entry["caller"] for entry in log] == ["cli", "cli"]
    replay = runner.invoke(main, ["log", "--db", str(db), "--replay",
                                  str(log[-1]["log_id"]), "--json"])
    assert replay.exit_code == 0 and "violin" in replay.output
    missing = runner.invoke(main, ["log", "--db", str(db), "--replay", "999"])
    assert missing.exit_code == 1 and "no retrieval log entry 999" in missing.output
    usage = runner.invoke(main, ["search", "x", "--db", str(db)])
    assert usage.exit_code == 2


def test_summarize_compact_and_consolidate_from_the_command_line(runner: CliRunner,
                                                                 tmp_path: Path) -> None:
    import asyncio

    from core import Engine

    db = tmp_path / "memory.db"

    async def fill() -> None:
        config = {"embedding": {"backend": "deterministic", "fallback_dimensions": 32},
                  "summary": {"auto": False}}
        async with Engine.open(db, config=config) as engine:
            for session in ("a", "b"):
                for seq in range(1, 6):
                    await engine.store(session, seq, {"role": "user",
                                                      "content": f"ferry {seq} leaves at noon"})

    asyncio.run(fill())
    summary = runner.invoke(main, ["summarize", "a", "--db", str(db), "--budget", "60"])
    assert summary.exit_code == 0, summary.output
    assert summary.output.startswith("a: summarised: token use")
    compacted = runner.invoke(main, ["compact", "a", "--db", str(db), "--json"])
    assert compacted.exit_code == 0, compacted.output
    result = json.loads(compacted.output)
    assert (result["archive_name"], result["marker_sequence"]) == ("archive a #1", 6)
    assert Path(result["file_path"]).exists()
    again = runner.invoke(main, ["compact", "a", "--db", str(db)])
    assert again.exit_code == 1 and "nothing to compact" in again.output
    consolidated = runner.invoke(main, ["consolidate", "--db", str(db), "--idle-hours", "0"])
    assert consolidated.exit_code == 0, consolidated.output
    assert "consolidated 1 conversations" in consolidated.output
    missing = runner.invoke(main, ["consolidate", "--db", str(tmp_path / "none.db")])
    assert missing.exit_code == 1 and "does not exist" in missing.output
