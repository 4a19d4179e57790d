"""The tests of tests/test_schedule_runner.py that read or stage the memory's tables directly
(claims and runs as stored)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from core import Engine
from core.schedules.actions import ActionResult
from core.schedules.runner import Runner
from core.schedules.store import parse_when
from tests.conftest import rows
from tests.test_schedule_runner import (
    APPEND_ID,
    LONG_AGO,
    PRINT_ENV,
    ROOT,
    Fixed,
    config,
    due_schedule,
    python,
)


async def test_a_command_runs_with_the_schedule_in_its_environment(memory: str) -> None:
    async with Engine.open(memory, config=config(command=python(PRINT_ENV))) as engine:
        schedule = await due_schedule(engine, name="plants", channel_id="slack")
        runs = await Runner(engine).run_once()
        assert [r.status for r in runs] == ["ok"]
        run = runs[0]
        env = json.loads(run.output)
        assert env["WORKBENCH_SCHEDULE_GOAL"] == "water the plants"
        assert env["WORKBENCH_SCHEDULE_ID"] == schedule.schedule_id
        assert env["WORKBENCH_SCHEDULE_NAME"] == "plants"
        assert env["WORKBENCH_SCHEDULE_USER_ID"] == "alice"
        assert env["WORKBENCH_SCHEDULE_RUN_ID"] == run.run_id
        assert env["WORKBENCH_SCHEDULE_SCHEDULED_FOR"] == LONG_AGO
        assert json.loads(env["WORKBENCH_SCHEDULE_CADENCE"])["kind"] == "interval"
        assert (env["WORKBENCH_SCHEDULE_CHANNEL_ID"],
                env["WORKBENCH_SCHEDULE_CHANNEL_CONTEXT_ID"]) == ("slack", "")
        assert run.output_summary == run.output[:500] and run.notified is True
        after = await engine.schedules.get_schedule(schedule.schedule_id)
        assert (after.last_run_status, after.consecutive_failures) == ("ok", 0)
        assert parse_when(after.next_run_at) > datetime.now(UTC)
        assert await engine.schedules.get_run_history(schedule.schedule_id) == runs
        assert rows(memory, "SELECT claimed_by FROM schedules") == [(None,)]


async def test_a_runner_that_crashes_mid_action_leaves_its_claim_to_expire(
        memory: str) -> None:
    class Crashing(Fixed):
        async def run(self, *args: Any) -> ActionResult:
            raise RuntimeError("the runner's own bug")

    async with Engine.open(memory, config=config(action_timeout_secs=10)) as engine:
        schedule = await due_schedule(engine)
        first = Runner(engine, runner_id="first", action=Crashing())
        with pytest.raises(RuntimeError):
            await first.run_once()
        assert rows(memory, "SELECT claimed_by FROM schedules") == [("first",)]
        second = Runner(engine, runner_id="second", action=Fixed())
        assert await second.run_once() == []  # still held
        later = datetime.now(UTC) + timedelta(seconds=71)  # past the 10 + 60 s claim
        [run] = await second.run_once(now=later)
        assert run.schedule_id == schedule.schedule_id
        assert rows(memory, "SELECT claimed_by FROM schedules") == [(None,)]


async def test_a_runner_stopped_mid_action_hands_the_schedule_back(memory: str) -> None:
    started = asyncio.Event()

    class Hanging(Fixed):
        async def run(self, *args: Any) -> ActionResult:
            started.set()
            await asyncio.Event().wait()
            raise AssertionError("unreachable")

    async with Engine.open(memory, config=config()) as engine:
        await due_schedule(engine)
        task = asyncio.create_task(Runner(engine, action=Hanging()).run_once())
        await started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert rows(memory, "SELECT claimed_by, next_run_at FROM schedules") == [
            (None, LONG_AGO)]


def test_two_runner_processes_run_each_due_schedule_exactly_once(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    ran = tmp_path / "ran.txt"
    settings = config(command=python(APPEND_ID, str(ran)))
    toml = tmp_path / "workbench.toml"
    command_line = json.dumps(settings["scheduler"]["command"])  # a TOML basic string too
    toml.write_text('[embedding]\nbackend = "deterministic"\nfallback_dimensions = 64\n'
                    "[consolidation]\nenabled = false\n"
                    f"[scheduler]\nmin_interval_secs = 60\ncommand = {command_line}\n")

    async def prepare() -> list[str]:
        async with Engine.open(db, config=settings) as engine:
            return [(await due_schedule(engine, goal=f"job {n}")).schedule_id for n in range(8)]

    ids = asyncio.run(prepare())
    env = {**os.environ, "WORKBENCH_CONFIG": str(toml)}
    command = [sys.executable, "-m", "workbench.cli", "scheduler", "run", "--once", "--json",
               "--db", str(db)]
    runners = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, cwd=ROOT, env=env) for _ in range(2)]
    outputs = [runner.communicate(timeout=60) for runner in runners]
    for runner, (_, err) in zip(runners, outputs, strict=True):
        assert runner.returncode == 0, err
        assert "Traceback" not in err and "locked" not in err, err
    assert sorted(ran.read_text().split()) == sorted(ids)
    reported = [json.loads(line) for out, _ in outputs for line in out.splitlines()]
    assert sorted(r["schedule_id"] for r in reported) == sorted(ids)
    assert {r["status"] for r in reported} == {"ok"}
    assert rows(db, "SELECT count(*), count(DISTINCT schedule_id) FROM schedule_runs") == [
        (8, 8)]
    assert rows(db, "SELECT count(*) FROM schedules WHERE claimed_by IS NOT NULL") == [(0,)]
