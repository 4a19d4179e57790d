"""The schedule runner: real commands and a real webhook, failures, timeouts, two runners."""

from __future__ import annotations

import asyncio
import json
import shlex
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

from core import Engine
from core.clock import format_utc, utc_now
from core.errors import ConfigError
from core.schedules.actions import ActionResult, CommandAction, action_from_config
from core.schedules.runner import Runner, next_fire, should_notify
from core.schedules.store import parse_when
from core.storage.vocabulary import ScheduleChanges
from core.types import ScheduleDefinition
from tests.conftest import DETERMINISTIC
from tests.loopback import loopback

ROOT = Path(__file__).resolve().parents[1]
LONG_AGO = "2000-01-01T00:00:00.000Z"
EVERY_HOUR = {"kind": "interval", "value": "1h", "timezone": "UTC"}
PRINT_ENV = ("import json, os; print(json.dumps({k: v for k, v in os.environ.items() "
             "if k.startswith('WORKBENCH_SCHEDULE_')}))")


def config(**scheduler: Any) -> dict[str, Any]:
    return {**DETERMINISTIC, "consolidation": {"enabled": False},
            "scheduler": {"min_interval_secs": 60, "max_consecutive_failures": 3,
                          "poll_interval_secs": 0.05, **scheduler}}


def python(script: str, *args: str) -> str:
    """A scheduler.command line running ``script`` with this interpreter."""
    return shlex.join([sys.executable, "-c", script, *args])


async def make_due(engine: Engine, schedule_id: str, when: str = LONG_AGO) -> None:
    await engine.backend.update_schedule(schedule_id, ScheduleChanges(next_run_at=when), utc_now())


async def due_schedule(engine: Engine, cadence: dict[str, str] = EVERY_HOUR,
                       when: str = LONG_AGO, **fields: Any) -> ScheduleDefinition:
    created = await engine.schedules.create_schedule(
        fields.pop("user_id", "alice"), fields.pop("goal", "water the plants"), cadence,
        **fields)
    await make_due(engine, created.schedule_id, when)
    return await engine.schedules.get_schedule(created.schedule_id)


class Fixed:
    """An action that answers one result and remembers what it was asked."""

    def __init__(self, status: str = "ok", output: str = "done") -> None:
        self.result = ActionResult(status, output)
        self.calls: list[tuple[str, str, str | None]] = []

    def describe(self) -> str:
        return "fixed"

    async def run(self, schedule: ScheduleDefinition, run_id: str,
                  scheduled_for: str | None) -> ActionResult:
        self.calls.append((schedule.schedule_id, run_id, scheduled_for))
        return self.result


# -- the command action --------------------------------------------------------------------


async def test_a_nonzero_exit_is_a_failed_run_that_says_the_code(memory: str) -> None:
    script = "import sys; print('disk full', flush=True); sys.exit(3)"
    async with Engine.open(memory, config=config(command=python(script))) as engine:
        schedule = await due_schedule(engine)
        [run] = await Runner(engine).run_once()
        assert run.status == "failed"
        assert "disk full" in run.output and "exited with code 3" in run.output
        after = await engine.schedules.get_schedule(schedule.schedule_id)
        assert (after.status, after.consecutive_failures) == ("active", 1)


async def test_a_missing_program_is_a_failed_run(memory: str, tmp_path: Path) -> None:
    missing = str(tmp_path / "no-such-program")
    async with Engine.open(memory, config=config(command=missing)) as engine:
        await due_schedule(engine)
        [run] = await Runner(engine).run_once()
        assert run.status == "failed" and "cannot start" in run.output


async def test_a_command_past_its_timeout_is_killed_with_what_it_started(
        memory: str, tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    script = ("import subprocess, sys, time\n"
              "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
              "open(sys.argv[1], 'w').write(f'{child.pid}')\n"
              "print('started', flush=True)\n"
              "time.sleep(60)\n")
    settings = config(command=python(script, str(pids)), action_timeout_secs=0.5)
    async with Engine.open(memory, config=settings) as engine:
        await due_schedule(engine)
        [run] = await Runner(engine).run_once()
    assert run.status == "timeout"
    assert "started" in run.output and "timed out after 0.5 s" in run.output
    assert_gone(int(pids.read_text()))


def assert_gone(pid: int) -> None:
    """The process is dead: absent, or a zombie waiting for init to reap it."""
    stat = Path(f"/proc/{pid}/stat")
    for _ in range(500):  # SIGKILL is delivered asynchronously; wait for it, not for a time
        try:
            state = stat.read_text().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:
            return
        if state in ("Z", "X"):
            return
        threading.Event().wait(0.01)
    raise AssertionError(f"process {pid} is still running")


async def test_output_is_kept_whole_up_to_a_megabyte(memory: str) -> None:
    script = "import sys; sys.stdout.write('x' * 1_500_000)"
    async with Engine.open(memory, config=config(command=python(script))) as engine:
        await due_schedule(engine)
        [run] = await Runner(engine).run_once()
        assert run.status == "ok"
        assert run.output.startswith("x" * 1024 * 1024)
        assert "output cut at 1,048,576 bytes; 451,424 more bytes dropped" in run.output
        [stored] = await engine.schedules.get_run_history((await engine.schedules
                                                            .search_schedules()).schedules[0]
                                                           .schedule_id)
        assert stored.output == run.output


# -- failures, policies, cadences ------------------------------------------------------------


async def test_consecutive_failures_pause_the_schedule_saying_why(memory: str) -> None:
    script = "import sys; print('no route to host'); sys.exit(1)"
    async with Engine.open(memory, config=config(command=python(script))) as engine:
        schedule = await due_schedule(engine)
        runner = Runner(engine)
        for attempt in range(1, 4):
            [run] = await runner.run_once()
            assert run.status == "failed"
            after = await engine.schedules.get_schedule(schedule.schedule_id)
            assert after.consecutive_failures == attempt
            if attempt < 3:
                assert after.status == "active"
                await make_due(engine, schedule.schedule_id)
        assert after.status == "paused"
        assert "3 consecutive failures" in after.status_reason
        assert "no route to host" in after.status_reason
        far = datetime.now(UTC) + timedelta(days=365)
        assert await engine.schedules.due_schedules(far) == []
        assert await runner.run_once(now=far) == []


@pytest.mark.parametrize(("policy", "status", "notified"), [
    ("always", "ok", True), ("always", "failed", True), ("always", "timeout", True),
    ("on_failure", "ok", False), ("on_failure", "failed", True),
    ("on_failure", "timeout", True),
    ("never", "ok", False), ("never", "failed", False), ("never", "timeout", False),
])
async def test_the_notification_policy_decides_notified(memory: str, policy: str,
                                                       status: str, notified: bool) -> None:
    assert should_notify(policy, status) is notified
    async with Engine.open(memory, config=config()) as engine:
        schedule = await due_schedule(engine, notification_policy=policy)
        [run] = await Runner(engine, action=Fixed(status)).run_once()
        assert run.notified is notified
        [stored] = await engine.schedules.get_run_history(schedule.schedule_id)
        assert stored.notified is notified


async def test_a_once_schedule_completes_after_its_run(memory: str) -> None:
    when = datetime.now(UTC) + timedelta(days=1)
    once = {"kind": "once", "value": when.strftime("%Y-%m-%dT%H:%M:%S"), "timezone": "UTC"}
    async with Engine.open(memory, config=config()) as engine:
        schedule = await engine.schedules.create_schedule("alice", "renew passport", once)
        action = Fixed("failed", "office closed")
        runner = Runner(engine, action=action)
        assert await runner.run_once() == []  # not due yet
        [run] = await runner.run_once(now=when + timedelta(minutes=1))
        assert action.calls == [(schedule.schedule_id, run.run_id, schedule.next_run_at)]
        after = await engine.schedules.get_schedule(schedule.schedule_id)
        assert (after.status, after.next_run_at) == ("completed", None)
        assert "ran once" in after.status_reason and "failed" in after.status_reason
        assert await runner.run_once(now=when + timedelta(days=30)) == []


async def test_a_runner_that_was_down_fires_a_missed_schedule_once(memory: str) -> None:
    async with Engine.open(memory, config=config()) as engine:
        down_since = datetime.now(UTC) - timedelta(hours=5, minutes=30)
        schedule = await due_schedule(engine, when=format_utc(down_since))
        runner = Runner(engine, action=Fixed())
        runs = await runner.run_once()
        assert len(runs) == 1
        assert await runner.run_once() == []  # the four other missed hours are not replayed
        next_run = parse_when((await engine.schedules.get_schedule(
            schedule.schedule_id)).next_run_at)
        # The next hour on the schedule's own grid, not an hour after the runner woke up.
        assert next_run == parse_when(format_utc(down_since)) + timedelta(hours=6)


async def test_the_next_run_follows_the_due_time_not_the_end_of_the_run(memory: str) -> None:
    async with Engine.open(memory, config=config()) as engine:
        due = (datetime.now(UTC) - timedelta(minutes=10)).replace(microsecond=0)
        schedule = await due_schedule(engine, when=format_utc(due))
        await Runner(engine, action=Fixed()).run_once()
        after = await engine.schedules.get_schedule(schedule.schedule_id)
        assert parse_when(after.next_run_at) == due + timedelta(hours=1)


def test_next_fire_skips_what_already_passed() -> None:
    from core.schedules.cadence import parse_cadence

    hourly = parse_cadence("cron", "0 * * * *")
    now = datetime(2030, 5, 1, 12, 20, tzinfo=UTC)
    assert next_fire(hourly, datetime(2030, 5, 1, 12, 0, tzinfo=UTC), now) == datetime(
        2030, 5, 1, 13, 0, tzinfo=UTC)
    assert next_fire(hourly, datetime(2030, 5, 1, 3, 0, tzinfo=UTC), now) == datetime(
        2030, 5, 1, 13, 0, tzinfo=UTC)
    assert next_fire(hourly, None, now) == datetime(2030, 5, 1, 13, 0, tzinfo=UTC)
    every_90m = parse_cadence("interval", "90m")
    start = datetime(2030, 5, 1, 8, 0, tzinfo=UTC)
    assert next_fire(every_90m, start, now) == datetime(2030, 5, 1, 12, 30, tzinfo=UTC)
    assert next_fire(every_90m, start, start) == datetime(2030, 5, 1, 9, 30, tzinfo=UTC)
    assert next_fire(every_90m, datetime(2030, 5, 1, 11, 20, tzinfo=UTC), now) == datetime(
        2030, 5, 1, 12, 50, tzinfo=UTC)  # not yet passed: no skip
    once = parse_cadence("once", "2030-05-01T12:00")
    assert next_fire(once, datetime(2030, 5, 1, 12, 0, tzinfo=UTC), now) is None


# -- claims and the loop -----------------------------------------------------------------------


async def test_run_forever_polls_until_stopped(memory: str) -> None:
    async with Engine.open(memory, config=config()) as engine:
        first = await due_schedule(engine)
        second = await due_schedule(engine, goal="feed the cat")
        stop = asyncio.Event()
        seen: list[str] = []

        def on_run(run: Any, schedule: ScheduleDefinition) -> None:
            seen.append(schedule.schedule_id)
            if len(seen) == 2:
                stop.set()

        await asyncio.wait_for(Runner(engine, action=Fixed()).run_forever(stop, on_run=on_run),
                               timeout=30)
        assert sorted(seen) == sorted([first.schedule_id, second.schedule_id])


async def test_the_runner_refuses_without_exactly_one_action(memory: str) -> None:
    async with Engine.open(memory, config=config()) as engine:
        with pytest.raises(ConfigError, match="set scheduler.command .* or scheduler.webhook_url"):
            Runner(engine)
    with pytest.raises(ConfigError, match="only one"):
        action_from_config(_scheduler(command="true", webhook_url="http://127.0.0.1:9/"))
    with pytest.raises(ConfigError, match="claim_secs"):
        async with Engine.open(memory, config=config(command="true", claim_secs=5)) as engine:
            Runner(engine)
    with pytest.raises(ConfigError, match="cannot split"):
        action_from_config(_scheduler(command="echo 'unbalanced"))
    assert isinstance(action_from_config(_scheduler(command="echo hi")), CommandAction)


def _scheduler(**fields: Any) -> Any:
    from core.config import load_config

    return load_config(config(**fields)).scheduler


# -- the webhook action --------------------------------------------------------------------


class Hook:
    """A loopback webhook: answers ``status`` with ``body`` and keeps every request."""

    def __init__(self) -> None:
        self.status = 200
        self.body = b'{"accepted": true}'
        self.requests: list[tuple[dict[str, str], dict[str, Any]]] = []

    @contextmanager
    def serve(self, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
        hook = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                length = int(self.headers.get("Content-Length", 0))
                hook.requests.append((dict(self.headers), json.loads(self.rfile.read(length))))
                self.send_response(hook.status)
                self.send_header("Content-Length", str(len(hook.body)))
                self.end_headers()
                self.wfile.write(hook.body)

            def log_message(self, *args: Any) -> None:
                return None

        with loopback(Handler, monkeypatch) as root:
            yield f"{root}/hook"


TOKEN = "tok-very-secret-1234"


async def test_a_webhook_gets_the_schedule_and_its_answer_decides_the_status(
        memory: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOOK_TOKEN", TOKEN)
    hook = Hook()
    with hook.serve(monkeypatch) as url:
        settings = config(webhook_url=url, webhook_token="${HOOK_TOKEN}", action_timeout_secs=1)
        async with Engine.open(memory, config=settings) as engine:
            assert TOKEN not in repr(engine.config.scheduler)
            schedule = await due_schedule(engine, name="digest")
            runner = Runner(engine)
            assert TOKEN not in runner.action.describe() and TOKEN not in repr(runner.action)
            [ok] = await runner.run_once()
            headers, body = hook.requests[0]
            assert headers["Authorization"] == f"Bearer {TOKEN}"
            assert (body["schedule_id"], body["goal"], body["name"]) == (
                schedule.schedule_id, "water the plants", "digest")
            assert (body["run_id"], body["scheduled_for"]) == (ok.run_id, LONG_AGO)
            assert ok.status == "ok" and "HTTP 200" in ok.output and "accepted" in ok.output

            hook.status, hook.body = 500, f"bad token {TOKEN} rejected".encode()
            await make_due(engine, schedule.schedule_id)
            [failed] = await runner.run_once()
            assert failed.status == "failed"
            assert "HTTP 500" in failed.output and "bad token *** rejected" in failed.output
            for run in await engine.schedules.get_run_history(schedule.schedule_id):
                assert TOKEN not in run.output and TOKEN not in run.output_summary


async def test_an_unreachable_webhook_is_a_failed_run(memory: str, unused_port: int) -> None:
    settings = config(webhook_url=f"http://127.0.0.1:{unused_port}/", action_timeout_secs=1)
    async with Engine.open(memory, config=settings) as engine:
        await due_schedule(engine)
        [run] = await Runner(engine).run_once()
        assert run.status == "failed" and f"127.0.0.1:{unused_port}" in run.output


# -- two runner processes --------------------------------------------------------------------

APPEND_ID = ("import os, sys, time\n"
             "time.sleep(0.05)\n"
             "with open(sys.argv[1], 'a') as out:\n"
             "    out.write(os.environ['WORKBENCH_SCHEDULE_ID'] + '\\n')\n")
