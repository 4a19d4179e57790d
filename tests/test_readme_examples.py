"""README's "Use it from your framework" examples run as a person would paste them, offline,
and leave the conversation they had in the memory."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from core import Engine

README = Path(__file__).resolve().parents[1] / "README.md"
CONFIG = {"embedding": {"backend": "deterministic"}}


def example(name: str) -> str:
    """The python block after ``<!-- example: name -->`` in README.md."""
    text = README.read_text(encoding="utf-8")
    found = re.findall(rf"<!-- example: {re.escape(name)} -->\n```python\n(.*?)\n```\n", text,
                       re.DOTALL)
    assert len(found) == 1, f"README has {len(found)} '{name}' examples"
    return str(found[0])


def run_example(name: str, folder: Path) -> str:
    """Run the example in ``folder`` with a deterministic-embedder config; its stdout."""
    script = folder / f"readme_example_{name.replace('-', '_')}.py"
    script.write_text(example(name), encoding="utf-8")
    config = folder / "workbench.toml"
    config.write_text('[embedding]\nbackend = "deterministic"\n', encoding="utf-8")
    env = {**os.environ, "WORKBENCH_CONFIG": str(config), "OPENAI_API_KEY": "",
           "HF_HUB_OFFLINE": "1"}
    result = subprocess.run([sys.executable, str(script)], cwd=folder, env=env,
                            capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


async def conversation(folder: Path, session_id: str) -> list[tuple[str, str]]:
    async with Engine.open(folder / "agent-memory.db", CONFIG) as engine:
        return [(record.payload["role"], record.payload["content"])
                for record in await engine.recall(session_id)]


async def test_the_langgraph_example_keeps_its_thread_and_its_store_item(
        tmp_path: Path) -> None:
    from core.integrations.langgraph import WorkbenchStore

    printed = run_example("langgraph", tmp_path)
    assert "'city': 'Lisbon'" in printed
    assert await conversation(tmp_path, "demo-thread") == [
        ("user", "I'm Ana."), ("assistant", "Hi Ana!"),
        ("user", "What is Lisbon like in May?"),
        ("assistant", "Lisbon in May is mild, about 22 °C."),
        ("user", "Book the morning train."), ("assistant", "Booked: the 9:40 train.")]
    async with Engine.open(tmp_path / "agent-memory.db", CONFIG) as engine:
        item = await WorkbenchStore(engine).aget(("users", "ana"), "trip")
    assert item is not None and item.value == {"city": "Lisbon", "month": "May"}


async def test_the_agents_sdk_example_keeps_its_session(tmp_path: Path) -> None:
    # Needs WorkbenchSession (core.integrations.openai_agents) from its own branch: until
    # it is merged the example fails on that import, and so does this test.
    printed = run_example("openai-agents", tmp_path)
    assert printed.splitlines() == ["Hi Ana!", "Porto is two hours north.",
                                    "Done: a table for two at 8."]
    assert await conversation(tmp_path, "demo-session") == [
        ("user", "I'm Ana."), ("assistant", "Hi Ana!"),
        ("user", "How far is Porto?"), ("assistant", "Porto is two hours north."),
        ("user", "Book dinner there."), ("assistant", "Done: a table for two at 8.")]


@pytest.mark.parametrize("name", ["langgraph", "openai-agents"])
def test_each_example_is_in_the_readme_once(name: str) -> None:
    assert "asyncio.run(main())" in example(name)
