"""`workbench bench concurrency` in short: an agent over MCP and the app's engine write one
file at once and nothing surfaces as an error or goes missing; and the check it ends with
finds a lost write when there is one."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from core import Engine
from tests.conftest import DETERMINISTIC
from workbench.bench.concurrency_check import AGENT, DEVELOPER, Ledger, Write, last_writes, verify
from workbench.cli.root import main

pytest.importorskip("mcp")


def test_an_agent_over_mcp_and_the_apps_engine_write_at_once_and_lose_nothing(
        runner: CliRunner) -> None:
    result = runner.invoke(main, ["bench", "concurrency", "--ops", "150", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["ops"][AGENT] >= 150 and report["ops"][DEVELOPER] >= 150
    assert report["errors"] == {AGENT: 0, DEVELOPER: 0}, report["error_examples"]
    assert report["background_errors"] == 0, report["error_examples"]
    assert report["lost_writes"] == 0, report["lost_examples"]
    assert report["integrity"] == ["ok"] and report["embedding_failed"] == 0
    # What was checked is what the run wrote: appends of both sides, notes and scratchpads.
    assert report["appends_checked"] > 100 and report["registers_checked"] > 10
    assert report["pulses"] >= 1
    assert report["write_latency"][AGENT]["count"] > 50
    assert set(report["latency_by_kind"][AGENT]) >= {"conversation_append", "save_memory",
                                                     "scratchpad_write"}
    assert set(report["latency_by_kind"][DEVELOPER]) >= {"append", "write_agent_memory",
                                                         "edit_agent_note", "search"}


def test_a_write_is_one_of_the_last_when_no_write_began_after_its_acknowledgement() -> None:
    first = Write(AGENT, 0.0, 1.0, "a")
    overlapping = Write(DEVELOPER, 0.5, 2.0, "b")
    later = Write(AGENT, 3.0, 4.0, "c")
    assert last_writes([first, overlapping]) == [first, overlapping]
    assert last_writes([first, overlapping, later]) == [later]
    assert last_writes([later, first]) == [later]


async def test_the_check_finds_lost_appends_notes_scratchpads_and_removals(
        memory: str) -> None:
    async with Engine.open(memory, config=DETERMINISTIC) as engine:
        for i in (1, 2):
            await engine.append("chat", {"role": "user", "content": f"turn {i}",
                                         "metadata": {"op": f"A{i}"}}, namespace=AGENT)
        await engine.append("chat", {"role": "user", "content": "nobody acknowledged this"},
                            namespace=AGENT)
        kept = await engine.add_note("kept", "the last write", namespace=AGENT)
        stale = await engine.add_note("stale", "an older value", namespace=AGENT)
        back = await engine.add_note("back", "removed, yet here", namespace=DEVELOPER)
        await engine.write_scratchpad("chat", ["step one"])
        await engine.drain()

    ledger = Ledger()
    ledger.appends[("chat", 1)] = ("A1", "user", "turn 1")
    ledger.appends[("chat", 2)] = ("A2", "user", "turn two")  # the content differs
    ledger.registers[("note", AGENT, kept.note_id)].append(Write(AGENT, 0, 1, "the last write"))
    ledger.registers[("note", AGENT, stale.note_id)] += [
        Write(AGENT, 0, 1, "an older value"), Write(DEVELOPER, 2, 3, "a newer value")]
    ledger.registers[("scratchpad", "chat")].append(Write(DEVELOPER, 0, 1, ["step two"]))
    ledger.removed.add((DEVELOPER, back.note_id))
    ledger.keys["kept"] = stale.note_id  # the key names another note

    verdict = await verify(memory, DETERMINISTIC, ledger)
    assert verdict.appends_checked == 2 and verdict.lost_appends == 1
    assert verdict.unacknowledged_events == 1
    assert verdict.registers_checked == 3
    assert verdict.lost_notes == 1 and verdict.lost_scratchpads == 1
    assert verdict.removed_back == 1 and verdict.keys_moved == 1
    assert verdict.lost == 6 and verdict.integrity == ["ok"]
