"""What the CLI tests share: the runner's config, a fixture file, and invoking a command."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result

from core import Engine
from workbench.cli.root import main

# The ``runner`` fixture's config (tests/conftest.py): deterministic vectors of 32 dimensions.
FIXTURE_CONFIG = {"embedding": {"backend": "deterministic", "fallback_dimensions": 32},
                  "consolidation": {"enabled": False}}


def memory_file(path: Path, fill: Callable[[Engine], Awaitable[Any]] | None = None) -> Path:
    """A memory file at ``path``, made with the runner's config and filled by ``fill``."""
    async def create() -> None:
        async with Engine.open(path, config=FIXTURE_CONFIG) as engine:
            if fill is not None:
                await fill(engine)

    asyncio.run(create())
    return path


def invoke(runner: CliRunner, *args: Any, stdin: str | None = None) -> Result:
    return runner.invoke(main, [str(arg) for arg in args], input=stdin)


def ok(runner: CliRunner, *args: Any, stdin: str | None = None) -> Result:
    result = invoke(runner, *args, stdin=stdin)
    assert result.exit_code == 0, result.output
    return result


def ok_json(runner: CliRunner, *args: Any, stdin: str | None = None) -> Any:
    return json.loads(ok(runner, *args, "--json", stdin=stdin).stdout)


def refused(runner: CliRunner, *args: Any, stdin: str | None = None) -> str:
    """The one stderr line (``error: …``) of a command that exits 1."""
    result = invoke(runner, *args, stdin=stdin)
    assert result.exit_code == 1, result.output
    assert result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith("error: "), result.stderr
    return result.stderr.strip()
