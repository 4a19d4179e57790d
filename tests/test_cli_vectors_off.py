"""A file whose vectors another model made: ``search``, ``log --replay`` and ``eval`` say so
in one line on stderr, once; ``doctor`` names both models, says what to do and exits 1,
and never advises replacing real vectors with the deterministic fallback's."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from click.testing import CliRunner

from core import Engine
from core.evaluation import store_dataset
from core.evaluation.dataset import Dataset, DatasetMessage, DatasetQuery, write_dataset
from tests.cli_helpers import invoke
from tests.tiny_model import build_tiny_model

SAID = "vectors made by model2vec:tiny-m2v, engine runs deterministic-"


@pytest.fixture
def other_model_file(tmp_path: Path) -> tuple[Path, Path, Path]:
    """(memory, dataset, model): a memory embedded by a tiny 32-dimension model2vec model,
    which the runner's config (deterministic, 32 dimensions) is not."""
    model = build_tiny_model(tmp_path / "tiny-m2v", dim=32)
    dataset = Dataset()
    dataset.messages["s1"] = [
        DatasetMessage("s1", f"m{n}", n, {"role": "user", "content": text,
                                          "metadata": {"message_id": f"m{n}"}})
        for n, text in enumerate(["the quarterly tax filing", "we went hiking"], 1)]
    dataset.queries.append(DatasetQuery("q1", "s1", "tax filing", ("m1",)))
    write_dataset(dataset, tmp_path / "dataset.jsonl")
    db = tmp_path / "memory.db"

    async def fill() -> None:
        config = {"embedding": {"backend": "model2vec", "model": str(model)},
                  "consolidation": {"enabled": False}}
        async with Engine.open(db, config=config) as engine:
            await store_dataset(engine, dataset)
            await engine.drain()
            await engine.search(query="tax", session_id="s1", caller="cli")

    asyncio.run(fill())
    return db, tmp_path / "dataset.jsonl", model


@pytest.mark.parametrize("command", [["search", "tax filing", "--session", "s1"],
                                     ["log", "--replay", "1"],
                                     ["eval", "--dataset", "DATASET"]])
def test_read_commands_warn_once_in_one_line(runner: CliRunner, command: list[str],
                                             other_model_file: tuple[Path, Path, Path]) -> None:
    db, dataset, model = other_model_file
    args = [str(dataset) if arg == "DATASET" else arg for arg in command]
    result = invoke(runner, *args, "--db", db)
    assert result.exit_code == 0, result.output
    said = [line for line in result.stderr.splitlines() if "vectors made by" in line]
    assert len(said) == 1, result.stderr
    assert said[0].startswith(f"warning: {SAID}")
    assert f"reopen with --model {model.resolve()}" in said[0]
    assert "`workbench reindex --model deterministic` to replace them" in said[0]


def test_doctor_names_both_models_and_exits_1(
        runner: CliRunner, other_model_file: tuple[Path, Path, Path]) -> None:
    db, _, model = other_model_file
    result = invoke(runner, "doctor", "--db", db)
    assert result.exit_code == 1, result.output
    problem = [line.strip() for line in result.stdout.splitlines() if "vectors made by" in line]
    assert len(problem) == 1
    assert problem[0].startswith(f"PROBLEM: {SAID}")
    assert (f": reopen with --model {model.resolve()}, or `workbench reindex --model "
            "deterministic` to replace them") in problem[0]
    assert result.stdout.splitlines()[-1] == "status       PROBLEMS FOUND (see above)"


def test_doctor_on_the_fallback_says_fix_the_model_not_reindex(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        other_model_file: tuple[Path, Path, Path]) -> None:
    db, _, model = other_model_file
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-hub"))
    config = tmp_path / "missing.toml"
    config.write_text('[embedding]\nmodel = "no-such-org/no-such-model"\n'
                      "allow_download = false\n")
    monkeypatch.setenv("WORKBENCH_CONFIG", str(config))
    result = invoke(CliRunner(), "doctor", "--db", db)
    assert result.exit_code == 1, result.output
    problem = [line.strip() for line in result.stdout.splitlines() if "vectors made by" in line]
    assert len(problem) == 1 and "could not load" in problem[0]
    assert "do not reindex" in problem[0] and "`workbench reindex --model" not in problem[0]
    assert f"reopen with --model {model.resolve()}" in problem[0]


def test_the_vectors_off_line_comes_after_the_commands_error(
        runner: CliRunner, other_model_file: tuple[Path, Path, Path]) -> None:
    db, _, _ = other_model_file
    result = invoke(runner, "search", "tax filing", "--session", "nope", "--db", db)
    assert result.exit_code == 1, result.output
    lines = result.stderr.splitlines()
    assert lines[0] == "error: no session 'nope' to search"
    assert [line for line in lines[1:] if "vectors made by" in line] == lines[1:]
    assert len(lines) == 2
