"""``workbench schedules …`` and ``workbench scheduler run``: every subcommand, its JSON, its
refusals, and the five-time preview in the schedule's zone."""

from __future__ import annotations

import asyncio
import json
import shlex
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from core import Engine
from core.clock import format_utc, frozen, utc_now
from core.storage.vocabulary import ScheduleChanges
from tests.cli_helpers import FIXTURE_CONFIG, invoke, memory_file, ok, ok_json


@pytest.fixture
def db(tmp_path: Path) -> Path:
    """An empty memory file the commands can open."""
    return memory_file(tmp_path / "memory.db")


def add(runner: CliRunner, db: Path, *args: str) -> dict[str, Any]:
    return ok_json(runner, "schedules", "add", "--db", db, *args)


def make_due(db: Path, schedule_id: str) -> None:
    async def write() -> None:
        async with Engine.open(db, config=FIXTURE_CONFIG) as engine:
            await engine.backend.update_schedule(
                schedule_id, ScheduleChanges(next_run_at="2000-01-01T00:00:00.000Z"),
                utc_now())

    asyncio.run(write())


def test_add_previews_the_next_five_times_in_the_schedules_zone(runner: CliRunner,
                                                                db: Path) -> None:
    result = ok(runner, "schedules", "add", "--db", db, "--user", "alice", "--goal", "standup",
                "--cron", "0 9 * * *", "--tz", "Asia/Tokyo", "--name", "standup")
    lines = result.output.splitlines()
    assert lines[0].startswith("added sched-") and "(standup)" in lines[0]
    assert "cron '0 9 * * *' in Asia/Tokyo" in lines[0]
    times = [line.strip() for line in lines[2:]]
    assert len(times) == 5
    assert all(t.endswith("09:00 JST (Asia/Tokyo)") for t in times), times
    assert len({t.split()[0] for t in times}) == 5  # five different days

    every = add(runner, db, "--user", "bob", "--goal", "check the feed", "--every", "90m",
                "--tz", "Europe/Paris", "--notify", "on_failure")
    assert (every["cadence"], every["notification_policy"]) == (
        {"kind": "interval", "value": "1h30m", "timezone": "Europe/Paris"}, "on_failure")
    assert every["cadence_description"] == "every 1h30m"
    assert len(every["next_runs"]) == len(every["next_runs_local"]) == 5
    assert every["next_runs"][0] == every["next_run_at"]
    assert all(local.endswith("(Europe/Paris)") for local in every["next_runs_local"])


@pytest.mark.parametrize(("cadence", "message"), [
    (["--cron", "*/1 * * * *"], "fires as often as every 60 s; the minimum is 300 s"),
    (["--every", "2m"], "fires every 120 s; the minimum is 300 s"),
    (["--once", "2001-01-01 09:00"], "is in the past"),
    (["--cron", "0 9 * * *", "--tz", "Europe/Pariss"], "did you mean 'Europe/Paris'"),
    (["--cron", "not cron at all"], "cron"),
])
def test_add_refuses_a_bad_cadence_saying_why_and_writes_nothing(
        runner: CliRunner, db: Path, cadence: list[str], message: str) -> None:
    result = invoke(runner, "schedules", "add", "--db", db, "--user", "u", "--goal", "g",
                    *cadence)
    assert result.exit_code == 1
    assert result.output.startswith("error: ") and message in result.output
    assert result.output.strip().count("\n") == 0
    assert ok_json(runner, "schedules", "list", "--db", db)["total"] == 0


def test_add_needs_exactly_one_cadence_and_makes_a_missing_file(
        runner: CliRunner, db: Path, tmp_path: Path) -> None:
    base = ["schedules", "add", "--db", db, "--user", "u", "--goal", "g"]
    assert invoke(runner, *base).exit_code == 2
    assert invoke(runner, *base, "--cron", "0 9 * * *", "--every", "1h").exit_code == 2
    missing = invoke(runner, "schedules", "add", "--db", tmp_path / "none.db", "--user", "u",
                     "--goal", "g", "--every", "1h")
    assert missing.exit_code == 0 and f"created {tmp_path / 'none.db'}" in missing.stderr


def test_list_filters_pages_and_shows_the_next_run_in_the_zone(runner: CliRunner,
                                                               db: Path) -> None:
    first = add(runner, db, "--user", "alice", "--goal", "water the plants", "--cron",
                "30 7 * * *", "--tz", "America/New_York", "--name", "plants")
    add(runner, db, "--user", "alice", "--goal", "pay rent", "--cron", "0 9 1 * *")
    bob = add(runner, db, "--user", "bob", "--goal", "walk the dog", "--every", "6h")
    ok(runner, "schedules", "pause", bob["schedule_id"], "--db", db)

    text = ok(runner, "schedules", "list", "--db", db).output.splitlines()
    assert text[0].split() == ["id", "name", "status", "cadence", "next", "run", "last",
                               "failures"]
    plants = next(line for line in text if line.startswith(first["schedule_id"]))
    assert "plants" in plants and "07:30 E" in plants and "(America/New_York)" in plants
    assert text[-1] == "1-3 of 3 schedules"

    listed = ok_json(runner, "schedules", "list", "--db", db)
    assert listed["total"] == 3 and len(listed["schedules"]) == 3
    assert {"schedule_id", "goal", "cadence", "status", "next_run_at", "consecutive_failures",
            "cadence_description"} <= set(listed["schedules"][0])

    def ids(*filters: str) -> set[str]:
        found = ok_json(runner, "schedules", "list", "--db", db, *filters)
        return {s["goal"] for s in found["schedules"]}

    assert ids("--user", "alice") == {"water the plants", "pay rent"}
    assert ids("--status", "paused") == {"walk the dog"}
    assert ids("--name", "plants") == {"water the plants"}
    assert ids("--text", "RENT") == {"pay rent"}
    page = ok_json(runner, "schedules", "list", "--db", db, "--limit", "1", "--offset", "1")
    assert (page["total"], len(page["schedules"])) == (3, 1)
    assert invoke(runner, "schedules", "list", "--db", db, "--status", "odd").exit_code == 2


def test_show_prints_every_field_and_the_next_five_times(runner: CliRunner, db: Path) -> None:
    created = add(runner, db, "--user", "alice", "--goal", "stretch", "--cron", "0 16 * * 1-5",
                  "--tz", "Europe/London", "--name", "stretch")
    text = ok(runner, "schedules", "show", "stretch", "--db", db).output
    for field in ("schedule_id:", "user_id:", "goal:", "cadence:", "notification_policy:",
                  "status:", "next_run_at:", "consecutive_failures:", "status_reason:"):
        assert field in text
    assert "cron '0 16 * * 1-5' in Europe/London" in text
    preview = text.split("next runs:\n")[1].splitlines()
    assert len(preview) == 5 and all("16:00 " in line for line in preview)
    shown = ok_json(runner, "schedules", "show", created["schedule_id"], "--db", db)
    assert shown["schedule_id"] == created["schedule_id"] and len(shown["next_runs"]) == 5
    missing = invoke(runner, "schedules", "show", "nope", "--db", db)
    assert missing.exit_code == 1 and "no schedule with id or name 'nope'" in missing.output


def test_show_prints_the_cadence_once(runner: CliRunner, db: Path) -> None:
    add(runner, db, "--user", "alice", "--goal", "stretch", "--cron", "0 16 * * 1-5",
        "--tz", "Europe/London", "--name", "stretch")
    add(runner, db, "--user", "alice", "--goal", "news", "--every", "6h", "--name", "news")

    def cadence_line(ref: str) -> str:
        text = ok(runner, "schedules", "show", ref, "--db", db).output
        return next(line for line in text.splitlines() if line.startswith("cadence:"))

    stretch = cadence_line("stretch")
    assert stretch.count("0 16 * * 1-5") == 1, stretch
    assert "every Monday to Friday at 16:00 Europe/London" in stretch
    news = cadence_line("news")
    assert news.count("6h") == 1 and "every 6h" in news, news


def set_next_run(db: Path, schedule_id: str, moment: datetime) -> None:
    async def write() -> None:
        async with Engine.open(db, config=FIXTURE_CONFIG) as engine:
            await engine.backend.update_schedule(
                schedule_id, ScheduleChanges(next_run_at=format_utc(moment)), utc_now())

    asyncio.run(write())


def test_a_schedule_days_past_its_next_run_is_overdue_not_active(runner: CliRunner,
                                                                 db: Path) -> None:
    late = add(runner, db, "--user", "alice", "--goal", "digest", "--cron", "0 9 * * *",
               "--tz", "Europe/Paris", "--name", "digest")
    add(runner, db, "--user", "alice", "--goal", "news", "--every", "1h", "--name", "news")
    missed = datetime(2026, 11, 25, 8, 0, tzinfo=UTC)  # 09:00 in Paris
    set_next_run(db, late["schedule_id"], missed)

    with frozen(missed + timedelta(days=3, hours=2)):
        rows = ok(runner, "schedules", "list", "--db", db).output.splitlines()
        shown = ok(runner, "schedules", "show", "digest", "--db", db).output
    digest = next(line for line in rows if line.startswith(late["schedule_id"]))
    assert "overdue by 3 days" in digest and " active " not in digest, digest
    news = next(line for line in rows if " news " in line)
    assert " active " in news and "overdue" not in news
    status = next(line for line in shown.splitlines() if line.startswith("status:"))
    assert status.split(None, 1)[1] == ("overdue by 3 days (next run 2026-11-25 09:00 CET, "
                                        "Europe/Paris)")


def test_edit_validates_and_previews(runner: CliRunner, db: Path) -> None:
    created = add(runner, db, "--user", "alice", "--goal", "backup", "--cron", "0 2 * * *",
                  "--name", "backup")
    text = ok(runner, "schedules", "edit", "backup", "--db", db, "--cron", "0 3 * * *",
              "--goal", "backup the photos").output
    assert text.startswith(f"changed {created['schedule_id']} (backup): cron '0 3 * * *'")
    assert len(text.split("next runs:\n")[1].splitlines()) == 5
    zoned = ok_json(runner, "schedules", "edit", "backup", "--db", db, "--tz", "Asia/Kolkata")
    assert zoned["cadence"] == {"kind": "cron", "value": "0 3 * * *", "timezone": "Asia/Kolkata"}
    assert zoned["goal"] == "backup the photos"
    assert all(t.endswith("03:00 IST (Asia/Kolkata)") for t in zoned["next_runs_local"])
    renamed = ok_json(runner, "schedules", "edit", "backup", "--db", db, "--name", "photos",
                      "--notify", "never")
    assert (renamed["name"], renamed["notification_policy"]) == ("photos", "never")

    refused = invoke(runner, "schedules", "edit", "photos", "--db", db, "--every", "1m")
    assert refused.exit_code == 1 and "the minimum is 300 s" in refused.output
    assert ok_json(runner, "schedules", "show", "photos", "--db", db)["cadence"]["value"] == (
        "0 3 * * *")
    assert invoke(runner, "schedules", "edit", "photos", "--db", db).exit_code == 2
    assert invoke(runner, "schedules", "edit", "nope", "--db", db, "--goal", "x").exit_code == 1


def test_pause_and_resume(runner: CliRunner, db: Path) -> None:
    add(runner, db, "--user", "alice", "--goal", "news", "--every", "1h", "--name", "news")
    paused = ok_json(runner, "schedules", "pause", "news", "--db", db, "--reason", "on holiday")
    assert (paused["status"], paused["status_reason"]) == ("paused", "on holiday")
    text = ok(runner, "schedules", "show", "news", "--db", db).output
    assert "on holiday" in text and "next runs if resumed:" in text
    assert ok(runner, "schedules", "pause", "news", "--db", db).output.startswith("paused ")
    resumed = ok_json(runner, "schedules", "resume", "news", "--db", db)
    assert (resumed["status"], resumed["consecutive_failures"]) == ("active", 0)
    assert len(resumed["next_runs"]) == 5
    assert "resumed" in ok(runner, "schedules", "resume", "news", "--db", db).output


def test_rm_deletes_and_exits_1_when_there_is_nothing(runner: CliRunner, db: Path) -> None:
    created = add(runner, db, "--user", "alice", "--goal", "g", "--every", "1h", "--name", "x")
    assert ok_json(runner, "schedules", "rm", "x", "--db", db) == {
        "deleted": created["schedule_id"], "name": "x"}
    again = invoke(runner, "schedules", "rm", "x", "--db", db)
    assert again.exit_code == 1 and "no schedule" in again.output
    assert ok_json(runner, "schedules", "list", "--db", db)["total"] == 0


def runner_config(tmp_path: Path, script: str) -> Path:
    command = shlex.join([sys.executable, "-c", script])
    path = tmp_path / "runner.toml"
    path.write_text('[embedding]\nbackend = "deterministic"\nfallback_dimensions = 32\n'
                    "[consolidation]\nenabled = false\n"
                    f"[scheduler]\ncommand = {json.dumps(command)}\n")
    return path


def test_scheduler_run_once_and_the_run_history(runner: CliRunner, db: Path,
                                                tmp_path: Path) -> None:
    script = ("import os; print('report for', os.environ['WORKBENCH_SCHEDULE_GOAL']); "
              "print('.' * 600)")
    config = runner_config(tmp_path, script)
    created = add(runner, db, "--user", "alice", "--goal", "weekly report", "--every", "1h",
                  "--name", "report")
    assert ok(runner, "schedules", "runs", "report", "--db", db).output.strip() == (
        f"{created['schedule_id']} (report) has not run yet")
    make_due(db, created["schedule_id"])
    line = ok(runner, "--config", config, "scheduler", "run", "--db", db, "--once").output
    assert line.count("\n") == 1
    assert "report  ok  " in line and "next " in line and "report for weekly report" in line
    nothing = invoke(runner, "--config", config, "scheduler", "run", "--db", db, "--once")
    assert (nothing.exit_code, nothing.stdout) == (0, "")

    make_due(db, created["schedule_id"])
    [record] = [json.loads(item) for item in ok(
        runner, "--config", config, "scheduler", "run", "--db", db, "--once", "--json"
    ).output.splitlines()]
    assert (record["schedule_id"], record["status"], record["schedule_status"]) == (
        created["schedule_id"], "ok", "active")
    assert record["output"].startswith("report for weekly report")

    text = ok(runner, "schedules", "runs", "report", "--db", db).output.splitlines()
    assert text[0].split() == ["started", "status", "took", "summary"]
    assert len(text) == 3 and all(" ok " in row and "report for" in row for row in text[1:])
    runs = ok_json(runner, "schedules", "runs", "report", "--db", db, "--limit", "1")
    assert len(runs) == 1 and runs[0]["run_id"] == record["run_id"]
    assert len(runs[0]["output"]) > 600 and len(runs[0]["output_summary"]) == 500


def test_scheduler_run_refuses_without_an_action(runner: CliRunner, db: Path) -> None:
    result = invoke(runner, "scheduler", "run", "--db", db, "--once")
    assert result.exit_code == 1
    assert "set scheduler.command" in result.output and "scheduler.webhook_url" in result.output
