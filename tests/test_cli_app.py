"""``workbench``, ``workbench FILE`` and ``workbench open`` all open the app."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from core.locations import Location
from workbench.cli import app_commands
from workbench.cli.root import main


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Path | str, str | None]]:
    """What the app was opened on: a file's path, or a URL as the driver gets it."""
    calls: list[tuple[Path | str, str | None]] = []

    def fake_run(db: Location, config: Any, theme: str | None) -> None:
        calls.append((db.target if db.is_postgres else db.path, theme))

    monkeypatch.setattr(app_commands, "_run_app", fake_run)
    return calls


@pytest.mark.parametrize(("args", "expected"), [
    ([], (Path("data/memory.db"), None)),
    (["agent.db"], (Path("agent.db"), None)),
    (["open", "agent.db", "--theme", "nord"], (Path("agent.db"), "nord")),
    (["--theme", "nord"], (Path("data/memory.db"), "nord")),
    (["agent.db", "--theme", "nord"], (Path("agent.db"), "nord")),
])
def test_the_app_opens_by_default(runner: CliRunner, opened: list[Any], args: list[str],
                                  expected: tuple[Path, str | None]) -> None:
    result = runner.invoke(main, args)
    assert result.exit_code == 0, result.output
    assert opened == [expected]


@pytest.mark.parametrize("args", [
    ["postgresql://agent:s3cret@db.example:5432/memory"],
    ["open", "postgresql://agent:s3cret@db.example:5432/memory"],
    ["--theme", "nord", "postgresql://agent:s3cret@db.example:5432/memory"],
])
def test_a_url_opens_the_app_like_a_file(runner: CliRunner, opened: list[Any],
                                         args: list[str]) -> None:
    result = runner.invoke(main, args)
    assert result.exit_code == 0, result.output
    assert opened[0][0] == "postgresql://agent:s3cret@db.example:5432/memory"


def test_the_configured_url_opens_when_no_memory_is_named(
        runner: CliRunner, opened: list[Any], tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[storage]\nurl = "postgresql://agent@db.example/memory"\n')
    result = runner.invoke(main, ["--config", str(config)])
    assert result.exit_code == 0, result.output
    assert opened == [("postgresql://agent@db.example/memory", None)]


def test_a_url_of_another_scheme_is_a_usage_error_naming_what_works(
        runner: CliRunner, opened: list[Any]) -> None:
    result = runner.invoke(main, ["mysql://agent:s3cret@db/memory"])
    assert result.exit_code == 2 and "postgresql://" in result.output
    assert "s3cret" not in result.output
    assert opened == []


def test_a_mistyped_command_is_a_usage_error_not_a_new_file(runner: CliRunner,
                                                            opened: list[Any]) -> None:
    result = runner.invoke(main, ["serach"])
    assert result.exit_code == 2 and "No such command" in result.output
    assert opened == []


def test_commands_still_run_and_help_still_lists_them(runner: CliRunner,
                                                      opened: list[Any]) -> None:
    result = runner.invoke(main, ["--help"])
    assert result.exit_code == 0 and "demo" in result.output and "doctor" in result.output
    assert runner.invoke(main, ["doctor", "--help"]).exit_code == 0
    assert opened == []
