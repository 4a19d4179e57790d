"""``workbench bench frameworks``: per-turn figures for LangGraph and the Agents SDK on their
own SQLite memories and on ours, and the driven run that checks every message arrived once,
in order."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from typing import Any

from agents import SQLiteSession
from click.testing import CliRunner

from core import Engine
from workbench.bench.frameworks import run_frameworks_bench, turn_texts
from workbench.bench.frameworks_run import check_conversation, run_turns
from workbench.cli.root import main

CONFIG: dict[str, Any] = {"embedding": {"backend": "deterministic"}}
ROW = re.compile(r"^(langgraph|openai-agents) +(.+?) +p50 +([0-9.]+) ms +p95 +([0-9.]+) ms "
                 r"+(aput \+ aput_writes|add_items \+ get_items)$")
RATIO = re.compile(r"^(langgraph|openai-agents) +ours/theirs +p50 +([0-9.]+) x +p95 +"
                   r"([0-9.]+) x +\(goal: within 2x at p95: goal (met|missed)\)$")
WORKBENCH_SESSION = importlib.util.find_spec("core.integrations.openai_agents") is not None


def rows(lines: list[str]) -> dict[tuple[str, str], tuple[float, float]]:
    """(framework, side) -> (p50, p95) of the lines that are timing rows."""
    found = {}
    for line in lines:
        match = ROW.match(line)
        if match:
            found[(match[1], match[2])] = (float(match[3]), float(match[4]))
    return found


def assert_positive_ratios(lines: list[str], framework: str) -> None:
    ratios = [RATIO.match(line) for line in lines if line.startswith(framework)]
    matched = [match for match in ratios if match]
    assert len(matched) == 1, lines
    assert float(matched[0][2]) > 0 and float(matched[0][3]) > 0


async def test_both_frameworks_print_theirs_ours_worker_off_and_the_ratio() -> None:
    # WorkbenchSession stands in as the SDK's own in-memory session until it is installed:
    # the figures' shape is what is checked here.
    figures = await run_frameworks_bench(
        CONFIG, 6, session_factory=lambda session_id, _: SQLiteSession(session_id),
        say=lambda _: None)
    lines = figures.lines()
    timed = rows(lines)
    assert set(timed) == {
        ("langgraph", "AsyncSqliteSaver (theirs)"), ("langgraph", "WorkbenchSaver (ours)"),
        ("langgraph", "ours, embedding worker off"),
        ("openai-agents", "SQLiteSession (theirs)"),
        ("openai-agents", "WorkbenchSession (ours)"),
        ("openai-agents", "ours, embedding worker off")}, lines
    for p50, p95 in timed.values():
        assert 0 < p50 <= p95
    assert_positive_ratios(lines, "langgraph")
    assert_positive_ratios(lines, "openai-agents")
    assert all(len(values) == 6 for values in figures.langgraph.values())


def test_the_command_prints_the_figures(runner: CliRunner) -> None:
    result = runner.invoke(main, ["bench", "frameworks", "--turns", "4"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    timed = rows(lines)
    assert {side for framework, side in timed if framework == "langgraph"} == {
        "AsyncSqliteSaver (theirs)", "WorkbenchSaver (ours)", "ours, embedding worker off"}
    assert_positive_ratios(lines, "langgraph")
    agents_sides = {side for framework, side in timed if framework == "openai-agents"}
    if WORKBENCH_SESSION:
        assert agents_sides == {"SQLiteSession (theirs)", "WorkbenchSession (ours)",
                                "ours, embedding worker off"}
        assert_positive_ratios(lines, "openai-agents")
    else:
        assert agents_sides == {"SQLiteSession (theirs)"}
        assert any(line.startswith("openai-agents") and "not installed on this branch" in line
                   for line in lines), lines


def test_the_check_finds_a_lost_a_repeated_and_a_reordered_message() -> None:
    texts = [("hi", "hello"), ("how?", "like this")]
    said: list[dict[str, Any]] = [
        {"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"},
        {"role": "user", "content": "how?"},
        {"role": "assistant", "content": [{"type": "output_text", "text": "like this"}]}]
    assert check_conversation(said, texts) == []
    assert check_conversation(said[:3], texts)                       # lost
    assert check_conversation(said[:2] + said[1:], texts)             # repeated
    assert check_conversation([said[1], said[0], *said[2:]], texts)   # reordered
    assert check_conversation([*said, {"role": "tool", "content": "x"}], texts) == []


async def test_a_driven_langgraph_run_is_recalled_once_in_order(tmp_path: Path) -> None:
    report = await run_turns(CONFIG, tmp_path / "run.db", "langgraph", 5, 0.0,
                             say=lambda _: None)
    assert report.passed, report.lines()
    assert (report.expected, report.found, report.notes) == (10, 10, 5)
    assert report.lines()[-1] == "verified      10 messages recalled, each once, in order"
    async with Engine.open(tmp_path / "run.db", CONFIG) as engine:
        recalled = await engine.recall(report.session_id)
    users = [record.payload["content"] for record in recalled
             if record.payload["role"] == "user"]
    assert users == [user for user, _ in turn_texts(5)]


async def test_a_driven_agents_sdk_run_is_recalled_once_in_order(tmp_path: Path) -> None:
    # Needs WorkbenchSession (core.integrations.openai_agents), merged from its own branch.
    report = await run_turns(CONFIG, tmp_path / "run.db", "openai-agents", 5, 0.0,
                             say=lambda _: None)
    assert report.passed, report.lines()
    assert (report.expected, report.found) == (10, 10)


def test_driving_needs_a_file(runner: CliRunner) -> None:
    result = runner.invoke(main, ["bench", "frameworks", "--run-turns", "3"])
    assert result.exit_code == 2
    assert "--run-turns needs --file" in result.output


def test_driving_into_a_file_that_holds_the_session_is_refused(runner: CliRunner,
                                                               tmp_path: Path) -> None:
    target = str(tmp_path / "run.db")
    first = runner.invoke(main, ["bench", "frameworks", "--run-turns", "2", "--file", target])
    assert first.exit_code == 0, first.output
    assert "verified      4 messages recalled, each once, in order" in first.stdout
    again = runner.invoke(main, ["bench", "frameworks", "--run-turns", "2", "--file", target])
    assert again.exit_code == 1
    assert "already holds session bench-langgraph-thread" in again.output
