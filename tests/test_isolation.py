"""Isolation: one namespace's memory attacked from another, through every front end.

The suite (:mod:`workbench.bench.isolation`, also ``workbench bench isolation``) plants secrets in a
victim namespace and attacks it from other namespaces and sessions with crafted ids, LIKE
wildcards, FTS5 syntax, forged scope tokens, JSON-path tags and the victim's own note, schedule
and log ids, through the engine API, the CLI and one real MCP server subprocess. The tests
below run it and pin each leak it found (and that was fixed) with a regression case of its own.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from core import Engine
from core.errors import InvalidInput, NotFound
from tests.conftest import DETERMINISTIC
from workbench.bench.isolation import run_suite
from workbench.bench.isolation.command import report_lines
from workbench.bench.isolation.probe import Probe
from workbench.cli.root import main

pytest.importorskip("mcp")

# What the suite tries at least (it tried 3,728 / 213 / 632 / 24 when written): a floor that
# a shrunken input list or a part that stopped running would fall through.
FLOORS = {"engine API": 3000, "CLI": 180, "MCP server": 500, "victim's view": 20}


def test_no_attack_reaches_the_victim(tmp_path: Path) -> None:
    result = run_suite(tmp_path / "suite", main)
    for line in report_lines(result):
        print(line)
    assert not result.leaks, "\n".join(finding.line() for finding in result.leaks)
    # Every crafted input is answered or refused with the engine's own error: lone
    # surrogates included (the storage layer refuses what the driver cannot bind).
    assert not result.crashes, "\n".join(finding.line() for finding in result.crashes)
    for entry, floor in FLOORS.items():
        assert result.cases[entry] >= floor, (entry, result.cases[entry])


def test_the_probe_catches_a_secret_in_an_answer_and_a_change_to_the_victim() -> None:
    state = {"facts": [("secret",)]}
    probe = Probe({"hxqsecret": "secret word"}, {"vic-chat": "the victim's session"},
                  lambda: dict(state))
    probe.arm()
    probe.check("engine API", "read", ["%"], "found: HXQSecret")  # any letter case
    probe.check("engine API", "read", ["vic-chat%"], "no session 'vic-chat%'")  # echoed input
    probe.check("engine API", "read", ["%"], "VIC-CHAT")  # an id is matched exactly
    probe.check("engine API", "read", ["%"], "session vic-chat belongs to another namespace")
    probe.unchanged("engine API", "write", ["%"])
    state["facts"] = []
    probe.unchanged("engine API", "write", ["%"])
    assert probe.cases["engine API"] == 4
    assert [(f.operation, f.found) for f in probe.leaks] == [
        ("read", "holds secret word"), ("read", "holds the victim's session"),
        ("write", "changed the victim's facts")]


async def test_a_schedule_id_of_another_user_is_not_found(db_path: Path) -> None:
    """Regression: ``get_schedule(id, user_id)`` returned another user's schedule by its id
    (the user scoped names only), goal and all."""
    async with Engine.open(db_path, config=DETERMINISTIC) as engine:
        store = engine.schedules
        theirs = await store.create_schedule(
            "victim", "hxq secret goal", {"kind": "interval", "value": "1h", "timezone": "UTC"},
            name="nightly")
        for user in ("mallory", "VICTIM", "victim ", "%"):
            with pytest.raises(NotFound) as refused:
                await store.get_schedule(theirs.schedule_id, user)
            assert "hxq" not in str(refused.value)
        assert (await store.get_schedule(theirs.schedule_id, "victim")).goal == "hxq secret goal"
        assert (await store.get_schedule(theirs.schedule_id)).user_id == "victim"
        # The same id used as a name by the other user finds that user's own schedule.
        own = await store.create_schedule(
            "mallory", "own goal", {"kind": "interval", "value": "1h", "timezone": "UTC"},
            name=theirs.schedule_id)
        assert (await store.get_schedule(theirs.schedule_id, "mallory")).schedule_id == \
            own.schedule_id


async def test_a_replay_runs_only_in_its_logged_scope(db_path: Path) -> None:
    """The rule for the retrieval log: a replay runs the logged query in the scope it was
    logged in. ``changes`` move ranking knobs, never the scope (``session_id`` refused; a
    namespace entry's scope stays its own), and ``namespace=`` binds the call: an entry of
    another namespace's scope, or of a session it does not own, is not found, and the
    refusal shows nothing of the entry. Unbound (the developer's ``workbench log --replay``,
    the playground) it replays any entry, in that entry's scope."""
    async with Engine.open(db_path, config=DETERMINISTIC) as engine:
        await engine.append("victim-chat", {"role": "user", "content": "hxq aurora secret"},
                            namespace="victim")
        await engine.append("mallory-chat", {"role": "user", "content": "aurora mine"},
                            namespace="mallory")
        await engine.notes.save_memory("key", "aurora memory", namespace="victim")
        await engine.drain()
        asked = await engine.hybrid_query(session_id="victim-chat", query="hxq aurora")
        await engine.hybrid_query(namespace="victim", query="hxq aurora wide")
        await engine.notes.recall_memories("aurora", namespace="victim")
        in_memory, in_namespace, in_session = [e["log_id"] for e in await engine.retrieval_log()]

        for log_id in (in_session, in_namespace, in_memory):
            for namespace in ("mallory", "VICTIM", "victim ", "%"):
                with pytest.raises(NotFound) as refused:
                    await engine.replay(log_id, namespace=namespace)
                assert "hxq" not in str(refused.value) and "aurora" not in str(refused.value)
            with pytest.raises(InvalidInput, match="scope it was logged in"):
                await engine.replay(log_id, session_id="mallory-chat")
            bound = await engine.replay(log_id, namespace="victim")
            unbound = await engine.replay(log_id, top_k=50)
            for found in (bound, unbound):
                assert {r.session_id for r in found.results} <= {"victim-chat", "memory:victim"}
        replayed = await engine.replay(in_session, namespace="victim")
        assert [r.chunk_id for r in replayed.results] == [r.chunk_id for r in asked]
        assert "mallory" not in (await engine.replay(in_namespace)).legs.scope


def test_row_level_security_needs_a_postgres_memory(tmp_path: Path) -> None:
    from click.testing import CliRunner

    for extra in ([], ["--db", str(tmp_path / "memory.db")]):
        result = CliRunner().invoke(main, ["bench", "isolation", "--rls", *extra])
        assert result.exit_code == 2
        assert "--rls needs --db postgresql://" in result.output
    assert not (tmp_path / "memory.db").exists()  # refused before anything was planted
