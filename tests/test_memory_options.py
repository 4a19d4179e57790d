"""Where a front end finds the memory: ``--db`` (a file or a URL) on every command that
opens one, else the config's ``[storage] url``, else ./data/memory.db; ``Engine.open(None)``
opens the configured URL or says how to name a memory."""

from __future__ import annotations

from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from core import Engine
from core.config import load_config
from core.errors import ConfigError, InvalidInput
from workbench.cli.root import main
from workbench.command_line import MemoryLocation
from workbench.mcp.server import mcp_command

URL = "postgresql://agent:s3cret-password@db.example:5432/memory"

# Builds a demo FILE (and with --fresh deletes it): a path, not a memory location.
# demo writes its own file; bench peers builds LanceDB from a SQLite file
# The fuzz run searches the file itself for what refused lines may have stored.
FILE_ONLY = {"workbench demo", "workbench bench peers", "workbench bench mcp-fuzz"}


def commands(group: click.Group, prefix: str = "workbench") -> list[tuple[str, click.Command]]:
    found: list[tuple[str, click.Command]] = []
    for name, command in sorted(group.commands.items()):
        found.append((f"{prefix} {name}", command))
        if isinstance(command, click.Group):
            found.extend(commands(command, f"{prefix} {name}"))
    return found


def test_every_db_option_and_the_open_argument_take_a_url() -> None:
    checked = []
    for path, command in commands(main):
        for param in command.params:
            if "--db" in param.opts or (path == "workbench open" and param.name == "db"):
                checked.append(path)
                if path not in FILE_ONLY:
                    assert isinstance(param.type, MemoryLocation), path
    assert "workbench mcp" in checked and "workbench open" in checked
    assert len(checked) > 40, checked  # every command that opens a memory


def test_a_url_passes_the_option_unchanged_and_a_folder_is_refused(tmp_path: Path) -> None:
    location = MemoryLocation().convert(URL, None, None)
    assert location.target == URL and "s3cret" not in str(location)
    with pytest.raises(click.BadParameter, match="is a folder"):
        MemoryLocation().convert(str(tmp_path), None, None)
    with pytest.raises(click.BadParameter, match="postgresql://") as refused:
        MemoryLocation().convert("mysql://agent:s3cret-password@db/memory", None, None)
    assert "s3cret" not in str(refused.value)


async def test_engine_open_without_a_memory_says_how_to_name_one() -> None:
    with pytest.raises(InvalidInput, match=r"give a file path or a postgresql:// URL, or set url "
                                           r"in the \[storage\] section"):
        await Engine.open(None, config={"embedding": {"backend": "deterministic"}})


def test_the_storage_url_is_interpolated_and_an_unknown_scheme_refused(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("WB_TEST_PGPASSWORD", "s3cret-password")
    config = tmp_path / "config.toml"
    config.write_text('[storage]\nurl = "postgresql://agent@db/memory'
                      '?password=${WB_TEST_PGPASSWORD}"\n')
    loaded = load_config(config)
    assert loaded.storage.url == "postgresql://agent@db/memory?password=s3cret-password"
    assert "s3cret" not in repr(loaded)
    config.write_text('[storage]\nurl = "mysql://agent:s3cret-password@db/memory"\n')
    with pytest.raises(ConfigError, match=r"storage.url: .*postgresql://") as refused:
        load_config(config)
    assert "s3cret" not in str(refused.value)


def test_commands_without_db_open_the_configured_memory(tmp_path: Path) -> None:
    memory = tmp_path / "configured.db"
    config = tmp_path / "config.toml"
    config.write_text(f'[storage]\nurl = "{memory}"\n[embedding]\nbackend = "deterministic"\n')
    runner = CliRunner()
    missing = runner.invoke(main, ["--config", str(config), "sessions", "list"])
    assert missing.exit_code == 1 and f"{memory} does not exist" in missing.output
    added = runner.invoke(main, ["--config", str(config), "notes", "add", "trip",
                                 "--namespace", "agent", "--content", "hut in June"])
    assert added.exit_code == 0 and f"created {memory}: a new memory file" in added.stderr
    doctor = runner.invoke(main, ["--config", str(config), "doctor", "--json"])
    assert f'"path": "{memory}"' in doctor.output


def test_mcp_without_db_or_url_says_how_to_name_a_memory() -> None:
    result = CliRunner().invoke(mcp_command, ["--namespace", "agent"], obj={})
    assert result.exit_code == 1
    assert "no memory was named" in result.output
