"""A configured model that cannot load is never silent: the fallback is logged once (logger
``core``), shown by ``embedding_status()``, printed by ``workbench mcp`` at start, and
``embedding.on_missing_model = "refuse"`` refuses instead, with the reason."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

import pytest

from core import Engine
from core.config import EmbeddingConfig
from core.embeddings import load_embedder
from core.errors import ConfigError, EmbeddingError
from tests.embedding_server import isolate_hub_cache

ROOT = Path(__file__).resolve().parents[1]
MISSING = {"backend": "model2vec", "model": "no-such-org/no-such-model", "allow_download": False}


@pytest.fixture(autouse=True)
def isolated_hub_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return isolate_hub_cache(tmp_path, monkeypatch)


def fallback_records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [record for record in caplog.records
            if record.name.startswith("core") and "could not be loaded" in record.getMessage()]


async def test_the_fallback_is_logged_once_and_shown_by_the_status(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="core")
    async with Engine.open(tmp_path / "memory.db", config={"embedding": MISSING}) as engine:
        await engine.store("s", 1, {"role": "user", "content": "I adopted a beagle named Max"})
        await engine.hybrid_query(session_id="s", query="what dog?")
        await engine.drain(timeout=30)
        status = await engine.embedding_status()
    (record,) = fallback_records(caplog)
    assert record.levelno == logging.WARNING
    assert "no-such-org/no-such-model" in record.getMessage()
    assert "not in the local cache" in record.getMessage()
    assert status.fell_back and status.warning == record.getMessage()


async def test_a_loaded_model_logs_nothing(tmp_path: Path, tiny_model_dir: Path,
                                           caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="core")
    config = {"embedding": {"backend": "model2vec", "model": str(tiny_model_dir)}}
    async with Engine.open(tmp_path / "memory.db", config=config) as engine:
        assert not (await engine.embedding_status()).fell_back
    assert fallback_records(caplog) == []


def test_refuse_raises_with_the_reason_the_model_did_not_load() -> None:
    config = EmbeddingConfig(**MISSING, on_missing_model="refuse")
    with pytest.raises(EmbeddingError) as refused:
        load_embedder(config)
    message = str(refused.value)
    assert "no-such-org/no-such-model" in message and "not in the local cache" in message
    assert 'on_missing_model = "refuse"' in message and "\n" not in message


async def test_refuse_keeps_the_engine_from_opening(tmp_path: Path) -> None:
    config = {"embedding": {**MISSING, "on_missing_model": "refuse"}}
    with pytest.raises(EmbeddingError, match="not in the local cache"):
        async with Engine.open(tmp_path / "memory.db", config=config):
            pass


async def test_refuse_under_a_deferred_load_fails_what_needs_the_model(tmp_path: Path) -> None:
    config = {"embedding": {**MISSING, "on_missing_model": "refuse"}}
    async with Engine.open(tmp_path / "memory.db", config=config, defer_model=True) as engine:
        with pytest.raises(EmbeddingError, match="not in the local cache"):
            await engine.append("s", {"role": "user", "content": "hello"})


def test_on_missing_model_takes_only_its_two_values() -> None:
    from core.config import load_config

    assert load_config({}).embedding.on_missing_model == "fallback"
    with pytest.raises(ConfigError, match="on_missing_model"):
        load_config({"embedding": {"on_missing_model": "ignore"}})


def run_mcp(tmp_path: Path, toml: str) -> subprocess.CompletedProcess[str]:
    """``workbench mcp`` with stdin closed at once: it starts, says what it says, ends."""
    config = tmp_path / "mcp.toml"
    config.write_text(toml)
    env = {"WORKBENCH_CONFIG": str(config), "PYTHONPATH": str(ROOT),
           "HF_HOME": str(tmp_path / "hf-home"), "PATH": "/usr/bin:/bin"}
    return subprocess.run(
        [sys.executable, "-m", "workbench.cli", "mcp", "--db", str(tmp_path / "m.db"),
         "--namespace", "alice"], input="", capture_output=True, text=True, env=env,
        cwd=tmp_path, timeout=120)


MISSING_TOML = ('[embedding]\nmodel = "no-such-org/no-such-model"\n'
                "allow_download = false\n")


def test_mcp_prints_the_fallback_on_stderr_at_start(tmp_path: Path) -> None:
    result = run_mcp(tmp_path, MISSING_TOML)
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    said = [i for i, line in enumerate(lines) if "could not be loaded" in line]
    serving = [i for i, line in enumerate(lines) if "serving" in line]
    assert len(said) == 1 and serving and said[0] < serving[0], result.stderr
    assert "no-such-org/no-such-model" in lines[said[0]]
    assert f"created {tmp_path / 'm.db'}: a new memory file" in lines  # the rule of every CLI


def test_mcp_refuses_to_start_when_told_to(tmp_path: Path) -> None:
    result = run_mcp(tmp_path, MISSING_TOML + 'on_missing_model = "refuse"\n')
    assert result.returncode == 1
    assert "serving" not in result.stderr
    (line,) = [line for line in result.stderr.splitlines() if "could not be loaded" in line]
    assert line.startswith("error: ") and "not in the local cache" in line


def test_the_cli_says_the_fallback_once_as_a_warning(tmp_path: Path) -> None:
    config = tmp_path / "cli.toml"
    config.write_text(MISSING_TOML)
    env = {"WORKBENCH_CONFIG": str(config), "PYTHONPATH": str(ROOT),
           "HF_HOME": str(tmp_path / "hf-home"), "PATH": "/usr/bin:/bin"}
    result = subprocess.run(
        [sys.executable, "-m", "workbench.cli", "sessions", "append", "s1", "--db",
         str(tmp_path / "m.db"), "--role", "user", "--content", "hello"],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert result.returncode == 0, result.stderr
    said = [line for line in result.stderr.splitlines() if "could not be loaded" in line]
    assert len(said) == 1 and said[0].startswith("warning: embedding model"), result.stderr


def test_an_error_comes_first_then_the_fallback_once_short(tmp_path: Path) -> None:
    config = tmp_path / "cli.toml"
    config.write_text(MISSING_TOML)
    env = {"WORKBENCH_CONFIG": str(config), "PYTHONPATH": str(ROOT),
           "HF_HOME": str(tmp_path / "hf-home"), "PATH": "/usr/bin:/bin"}

    def workbench(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "workbench.cli", *args], capture_output=True,
                              text=True, env=env, cwd=tmp_path, timeout=120)

    db = str(tmp_path / "m.db")
    assert workbench("sessions", "append", "s1", "--db", db, "--role", "user",
                     "--content", "hello").returncode == 0
    refused = workbench("search", "hello", "--session", "nope", "--db", db)
    assert refused.returncode == 1
    error, warning = refused.stderr.splitlines()
    assert error == "error: no session 'nope' to search"
    assert warning.startswith("warning: embedding model 'no-such-org/no-such-model' could not "
                              "be loaded") and len(warning) <= 200
    doctor = workbench("doctor", "--db", db)
    said = (doctor.stdout + doctor.stderr).count("could not be loaded")
    assert said == 1, doctor.stdout + doctor.stderr
