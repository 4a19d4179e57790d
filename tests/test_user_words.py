"""Words a user reads never say "seed 002": they name the behaviour or the system it comes
from (aidaemon, oxydra, pynchy, nexo-rs, crabtalk).

Docstrings and comments cite the specification by seed number for the people who read the
code; everything else can reach a user: every other string constant in ``core/`` and
``workbench/`` (errors, explanations, notes, TUI text, config descriptions, stored
``source`` values), and the texts built from docstrings at run time (the CLI's help, the
MCP tools' descriptions and schemas).
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterator
from pathlib import Path

import click

ROOT = Path(__file__).resolve().parents[1]
SEED = re.compile(r"seed[ _-]?0\d\d", re.IGNORECASE)


def docstring_nodes(tree: ast.AST) -> set[int]:
    """The ids of the constants that are docstrings (of a module, class or function)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                found.add(id(body[0].value))
        # A string right after an assignment documents it (attribute docstrings).
        for field in ("body", "orelse"):
            block = getattr(node, field, None)
            if not isinstance(block, list):
                continue
            for before, after in zip(block, block[1:], strict=False):
                if (isinstance(before, ast.Assign | ast.AnnAssign) and isinstance(after, ast.Expr)
                        and isinstance(after.value, ast.Constant)):
                    found.add(id(after.value))
    return found


def shown_strings(path: Path) -> Iterator[tuple[int, str]]:
    tree = ast.parse(path.read_text(), str(path))
    documented = docstring_nodes(tree)
    for node in ast.walk(tree):
        if (isinstance(node, ast.Constant) and isinstance(node.value, str)
                and id(node) not in documented):
            yield node.lineno, node.value


def test_the_scanner_finds_a_seed_number_in_a_message_and_not_in_a_docstring(
        tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text('"""Seed 001\'s pipeline."""\n\ndef f():\n    """seed 002."""\n'
                      '    raise ValueError(f"refused (seed 002) {1}")\n\nX = 1\n"""seed 003"""\n')
    assert [line for line, _ in shown_strings(sample) if SEED.search(_)] == [5]


def test_no_string_a_user_can_read_names_a_seed_number() -> None:
    found = [f"{path.relative_to(ROOT)}:{line}: {text!r}"
             for folder in ("core", "workbench") for path in sorted((ROOT / folder).rglob("*.py"))
             for line, text in shown_strings(path) if SEED.search(text)]
    assert found == []


def test_no_help_text_names_a_seed_number() -> None:
    from workbench.cli.root import main

    def texts(command: click.Command) -> Iterator[str]:
        yield command.name or ""
        yield command.help or ""
        for param in command.params:
            yield getattr(param, "help", None) or ""
        if isinstance(command, click.Group):
            for sub in command.commands.values():
                yield from texts(sub)

    assert [text for text in texts(main) if SEED.search(text)] == []


def test_no_mcp_tool_description_names_a_seed_number() -> None:
    from workbench.mcp.server import INSTRUCTIONS
    from workbench.mcp.tools import TOOLS

    shown = [INSTRUCTIONS] + [f"{tool.name}: {tool.description} "
                              f"{json.dumps(tool.input_schema())}" for tool in TOOLS]
    assert [text for text in shown if SEED.search(text)] == []
