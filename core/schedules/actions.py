"""What a runner does when a schedule is due: run a command, or POST a webhook.

Both turn every way an action can go wrong (a missing program, a nonzero exit, a hung
process, an unreachable or failing server) into an :class:`ActionResult` with status
``"failed"`` or ``"timeout"`` and an output that says what happened, so one bad schedule is
recorded and rescheduled instead of stopping the runner.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shlex
import signal
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from core.errors import ConfigError
from core.http_post import PostFailed, SecretPost

if TYPE_CHECKING:
    from core.config import SchedulerConfig
    from core.types import ScheduleDefinition

MAX_OUTPUT_BYTES = 1024 * 1024
"""Output kept from one run; the rest is read and dropped, and the output says so."""
ENV_PREFIX = "WORKBENCH_SCHEDULE"
_READ_CHUNK = 64 * 1024


@dataclass(frozen=True)
class ActionResult:
    """How one action went: ``"ok"``, ``"failed"`` or ``"timeout"``, and what it printed."""

    status: str
    output: str


class Action(Protocol):
    """Something a runner does for a due schedule."""

    def describe(self) -> str:
        """The action in words, for the runner's first line."""
        ...

    async def run(self, schedule: ScheduleDefinition, run_id: str,
                  scheduled_for: str | None) -> ActionResult:
        """Do it once for ``schedule``; never raises for the action's own failures."""
        ...


def action_from_config(config: SchedulerConfig) -> Action:
    """The action ``[scheduler]`` names; ``ConfigError`` unless exactly one is set."""
    command, url = config.command.strip(), config.webhook_url.strip()
    if command and url:
        raise ConfigError("scheduler.command and scheduler.webhook_url are both set; a runner "
                          "does one thing per schedule, so set only one of them")
    if not command and not url:
        raise ConfigError("the runner has nothing to run: set scheduler.command (a command "
                          "line run for each due schedule) or scheduler.webhook_url (a URL "
                          "POSTed each due schedule)")
    if config.action_timeout_secs <= 0:
        raise ConfigError("scheduler.action_timeout_secs must be above 0, got "
                          f"{config.action_timeout_secs:g}")
    if command:
        try:
            argv = shlex.split(command)
        except ValueError as exc:
            raise ConfigError(f"scheduler.command: cannot split {command!r} ({exc})") from None
        if not argv:
            raise ConfigError("scheduler.command: the command line names no program")
        return CommandAction(argv, config.action_timeout_secs)
    if not url.startswith(("http://", "https://")):
        raise ConfigError(f"scheduler.webhook_url must be an http:// or https:// URL, "
                          f"got {url!r}")
    return WebhookAction(url, config.webhook_token, config.action_timeout_secs)


def schedule_environment(schedule: ScheduleDefinition, run_id: str,
                         scheduled_for: str | None) -> dict[str, str]:
    """The ``WORKBENCH_SCHEDULE_*`` variables a command sees (absent values are empty)."""
    values = {"ID": schedule.schedule_id, "NAME": schedule.name, "GOAL": schedule.goal,
              "USER_ID": schedule.user_id, "CADENCE": json.dumps(schedule.cadence),
              "RUN_ID": run_id, "SCHEDULED_FOR": scheduled_for,
              "CHANNEL_ID": schedule.channel_id,
              "CHANNEL_CONTEXT_ID": schedule.channel_context_id}
    return {f"{ENV_PREFIX}_{key}": value or "" for key, value in values.items()}


def _cut_note(dropped: int) -> str:
    return f"\n[output cut at {MAX_OUTPUT_BYTES:,} bytes; {dropped:,} more bytes dropped]"


class CommandAction:
    """Runs an argv (no shell) with the schedule in its environment.

    stdout and stderr are read as one stream. The command runs in a session of its own, so
    a timeout kills it and everything it started, not just the first process.
    """

    def __init__(self, argv: list[str], timeout_secs: float) -> None:
        self.argv = list(argv)
        self.timeout_secs = timeout_secs

    def describe(self) -> str:
        return f"command {shlex.join(self.argv)}"

    async def run(self, schedule: ScheduleDefinition, run_id: str,
                  scheduled_for: str | None) -> ActionResult:
        env = {**os.environ, **schedule_environment(schedule, run_id, scheduled_for)}
        try:
            process = await asyncio.create_subprocess_exec(
                *self.argv, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT, env=env, start_new_session=True)
        except (OSError, ValueError) as exc:  # ValueError: a NUL in the goal or argv
            return ActionResult("failed", f"[cannot start {self.argv[0]!r}: {exc}]")
        kept = bytearray()
        dropped = 0

        async def collect() -> None:
            nonlocal dropped
            assert process.stdout is not None
            while chunk := await process.stdout.read(_READ_CHUNK):
                room = MAX_OUTPUT_BYTES - len(kept)
                kept.extend(chunk[:room])
                dropped += max(0, len(chunk) - room)
            await process.wait()

        try:
            await asyncio.wait_for(collect(), self.timeout_secs)
        except TimeoutError:
            await self._kill(process)
            note = (f"[timed out after {self.timeout_secs:g} s; the command and everything "
                    "it started were killed]")
            return ActionResult("timeout", self._text(kept, dropped, note))
        except BaseException:  # cancelled (the runner is stopping): leave nothing behind
            await self._kill(process)
            raise
        code = process.returncode
        if code == 0:
            return ActionResult("ok", self._text(kept, dropped, ""))
        note = (f"[killed by signal {-code}]" if code is not None and code < 0
                else f"[exited with code {code}]")
        return ActionResult("failed", self._text(kept, dropped, note))

    @staticmethod
    def _text(kept: bytearray, dropped: int, note: str) -> str:
        text = kept.decode("utf-8", "replace") + (_cut_note(dropped) if dropped else "")
        if text and note and not text.endswith("\n"):
            text += "\n"
        return text + note

    @staticmethod
    async def _kill(process: asyncio.subprocess.Process) -> None:
        """Kill the command's whole process group and reap it."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            if hasattr(os, "killpg"):
                os.killpg(process.pid, signal.SIGKILL)
            else:  # pragma: no cover - Windows has no process groups to kill
                process.kill()
        with contextlib.suppress(ProcessLookupError):
            await process.wait()


class WebhookAction:
    """POSTs the schedule and the run as JSON; any 2xx answer is success.

    The token goes in the Authorization header and nowhere else: every output this class
    builds passes through ``_redact``, so a server echoing the token back cannot leak it
    into the run history. ``timeout_secs`` bounds each network wait (connect, each read).
    """

    def __init__(self, url: str, token: str, timeout_secs: float) -> None:
        self.url = url
        self.timeout_secs = timeout_secs
        self._http = SecretPost(url, token, timeout_secs)

    def __repr__(self) -> str:
        return self._redact(f"WebhookAction(url={self.url!r})")

    def describe(self) -> str:
        return self._redact(f"webhook POST {self.url}")

    async def run(self, schedule: ScheduleDefinition, run_id: str,
                  scheduled_for: str | None) -> ActionResult:
        body = {**schedule.to_dict(), "run_id": run_id, "scheduled_for": scheduled_for}
        status, output = await asyncio.to_thread(self._post, body)
        return ActionResult(status, self._redact(output))

    def _post(self, body: dict[str, Any]) -> tuple[str, str]:
        where = f"POST {self.url}"
        try:
            status, raw = self._http.post(body, max_bytes=MAX_OUTPUT_BYTES)
        except PostFailed as exc:
            return ("timeout" if exc.timed_out else "failed"), f"{where}: {exc}"
        text = raw[:MAX_OUTPUT_BYTES].decode("utf-8", "replace")
        if len(raw) > MAX_OUTPUT_BYTES:
            text += f"\n[answer cut at {MAX_OUTPUT_BYTES:,} bytes]"
        return "ok", f"{where}: HTTP {status}\n{text}".rstrip("\n")

    def _redact(self, text: str) -> str:
        return self._http.redact(text)
