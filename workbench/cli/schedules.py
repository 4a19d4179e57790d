"""``workbench schedules …`` edits schedules by hand; ``workbench scheduler run`` fires them.

Every change goes through ``engine.schedules``, which checks it before writing (a cadence
in the past or firing too often is refused, saying why); what a change will do is shown as
the next five times the schedule fires, in its own time zone.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, TypeVar

import click

from core.locations import Location
from workbench.command_line import (
    command_config,
    db_option,
    echo_json,
    json_option,
    memory_location,
    on_engine,
    require_db,
)
from workbench.text import one_line, table

if TYPE_CHECKING:
    from core.engine import Engine

_REF = click.argument("ref", metavar="REF")
_CRON = click.option("--cron", default=None,
                     help='Fire on a cron expression, e.g. "0 9 * * mon-fri".')
_ONCE = click.option("--once", default=None,
                     help='Fire once, at this time in --tz, e.g. "2030-01-31 09:00".')
_EVERY = click.option("--every", default=None, help='Fire every DURATION, e.g. "30m", "1h30m".')
_TZ = click.option("--tz", "timezone", default=None,
                   help="IANA time zone the cadence is read in, e.g. Europe/Paris (default: UTC"
                        " for a new schedule, its own for an edit).")
_NOTIFY = click.option("--notify", "notification_policy",
                       type=click.Choice(["always", "on_failure", "never"]), default=None,
                       help="When a run's user is to be told of it (default: always).")
T = TypeVar("T")


def _with_schedules(ctx: click.Context, db: Location | None,
                    work: Callable[[Any], Coroutine[Any, Any, T]], *, writes: bool,
                    adds: bool = False) -> T:
    """Run ``work(engine.schedules)`` for one command that reads or ``writes``, without the
    embedding worker; a command that ``adds`` a schedule creates a missing memory file."""
    return on_engine(ctx, db, lambda engine: work(engine.schedules), writes=writes,
                     warn=False, start_worker=False, adds=adds)


def _cadence_choice(cron: str | None, once: str | None,
                    every: str | None) -> tuple[str, str] | None:
    """The (kind, value) of the one cadence option given; None when none was."""
    given = [(kind, value) for kind, value in (("cron", cron), ("once", once),
                                               ("interval", every)) if value is not None]
    if len(given) > 1:
        raise click.UsageError("give only one of --cron, --once and --every")
    return given[0] if given else None


def _local(moment: Any, schedule: Any) -> str:
    from core.schedules.cadence import local_time
    from core.schedules.store import as_cadence

    return local_time(moment, as_cadence(schedule.cadence), missing="-")


def _describe(schedule: Any) -> str:
    from core.schedules.store import as_cadence

    return as_cadence(schedule.cadence).describe()


def _in_words(schedule: Any) -> str:
    from core.schedules.store import as_cadence
    from core.schedules.wording import in_words

    return in_words(as_cadence(schedule.cadence))


def _cadence_in_words(schedule: Any) -> str:
    """The cadence in words, then the cron itself when the words do not spell it out."""
    from core.schedules.store import as_cadence
    from core.schedules.wording import in_words, technical_form

    cadence = as_cadence(schedule.cadence)
    technical = technical_form(cadence)
    return in_words(cadence) if technical is None else f"{in_words(cadence)} · {technical}"


def _report(schedule: Any, as_json: bool, *lines: str) -> None:
    """The schedule as JSON with its next five times; else ``lines``, then those times."""
    from core.schedules.drafts import schedule_preview

    if as_json:
        echo_json(schedule_preview(schedule))
        return
    for line in lines:
        click.echo(line)
    _echo_preview(schedule)


def _echo_preview(schedule: Any) -> None:
    from core.schedules.cadence import local_time
    from core.schedules.drafts import upcoming
    from core.schedules.store import as_cadence

    cadence = as_cadence(schedule.cadence)
    times = upcoming(schedule, cadence=cadence)
    if not times:
        click.echo(f"next runs: none ({schedule.status})")
        return
    click.echo("next runs if resumed:" if schedule.status == "paused" else "next runs:")
    for moment in times:
        click.echo(f"  {local_time(moment, cadence, missing='-')}")


def _label(schedule: Any) -> str:
    return f"{schedule.schedule_id} ({schedule.name})" if schedule.name else schedule.schedule_id


@click.group("schedules")
def schedules_group() -> None:
    """List, add, edit, pause, resume and remove schedules, and read their runs."""


@schedules_group.command("list")
@db_option
@click.option("--user", "user_id", default=None, help="Only this user's schedules.")
@click.option("--status", type=click.Choice(["active", "paused", "completed"]), default=None,
              help="Only schedules in this state.")
@click.option("--name", default=None, help="Only schedules with exactly this name.")
@click.option("--text", default=None, help="Only schedules whose name or goal contains this.")
@click.option("--limit", default=50, show_default=True, type=click.IntRange(min=0),
              help="Schedules to list, newest first.")
@click.option("--offset", default=0, show_default=True, type=click.IntRange(min=0),
              help="Schedules to skip first.")
@json_option
@click.pass_context
def list_command(ctx: click.Context, db: Location | None, user_id: str | None, status: str | None,
                 name: str | None, text: str | None, limit: int, offset: int,
                 as_json: bool) -> None:
    """List schedules: cadence, next run in the schedule's zone, last run, failures (an
    active schedule long past its next run reads "overdue by …")."""
    from core.schedules.wording import status_in_words

    async def work(store: Any) -> Any:
        return await store.search_schedules(
            user_id, status=status, name=name, text=text, limit=limit, offset=offset)

    found = _with_schedules(ctx, db, work, writes=False)
    if as_json:
        echo_json({"total": found.total, "offset": offset,
                   "schedules": [{**s.to_dict(), "cadence_description": _describe(s)}
                                 for s in found.schedules]})
        return
    rows = [(s.schedule_id, s.name or "-", status_in_words(s), _in_words(s),
             _local(s.next_run_at, s) if s.status == "active" else "-",
             s.last_run_status or "-", str(s.consecutive_failures)) for s in found.schedules]
    header = ("id", "name", "status", "cadence", "next run", "last", "failures")
    for line in table(header, rows):
        click.echo(line)
    shown = f"{offset + 1}-{offset + len(rows)} of " if rows else "none of "
    click.echo(f"{shown}{found.total} schedule{'' if found.total == 1 else 's'}")


@schedules_group.command("show")
@_REF
@db_option
@json_option
@click.pass_context
def show_command(ctx: click.Context, ref: str, db: Location | None, as_json: bool) -> None:
    """Show one schedule (by id or name): every field and its next five times."""
    from core.schedules.wording import status_in_words

    schedule = _with_schedules(ctx, db, lambda store: store.get_schedule(ref),
                               writes=False)
    fields = schedule.to_dict()
    fields["cadence"] = _cadence_in_words(schedule)
    fields["status"] = status_in_words(schedule, with_next_run=True)
    _report(schedule, as_json, *(f"{key + ':':<22}{'-' if value is None else value}"
                                 for key, value in fields.items()))


@schedules_group.command("add")
@db_option
@click.option("--user", "user_id", required=True, help="The user the schedule belongs to.")
@click.option("--goal", required=True, help="What the schedule is to do, in words.")
@_CRON
@_ONCE
@_EVERY
@_TZ
@click.option("--name", default=None, help="A name to find it by (instead of its id).")
@_NOTIFY
@json_option
@click.pass_context
def add_command(ctx: click.Context, db: Location | None, user_id: str, goal: str, cron: str | None,
                once: str | None, every: str | None, timezone: str | None, name: str | None,
                notification_policy: str | None, as_json: bool) -> None:
    """Add a schedule (checked before it is written) and show its next five times."""
    choice = _cadence_choice(cron, once, every)
    if choice is None:
        raise click.UsageError("give one of --cron, --once and --every")
    cadence = {"kind": choice[0], "value": choice[1], "timezone": timezone or "UTC"}

    async def work(store: Any) -> Any:
        return await store.create_schedule(
            user_id, goal, cadence, name=name,
            notification_policy=notification_policy or "always")

    schedule = _with_schedules(ctx, db, work, writes=True, adds=True)
    _report(schedule, as_json, f"added {_label(schedule)}: {_describe(schedule)}")


@schedules_group.command("edit")
@_REF
@db_option
@click.option("--goal", default=None, help="A new goal.")
@click.option("--name", default=None, help="A new name.")
@_CRON
@_ONCE
@_EVERY
@_TZ
@_NOTIFY
@json_option
@click.pass_context
def edit_command(ctx: click.Context, ref: str, db: Location | None, goal: str | None,
                 name: str | None, cron: str | None, once: str | None, every: str | None,
                 timezone: str | None, notification_policy: str | None,
                 as_json: bool) -> None:
    """Change a schedule's goal, name, cadence, zone or policy; show its next five times."""
    choice = _cadence_choice(cron, once, every)
    patch: dict[str, Any] = {key: value for key, value in (
        ("goal", goal), ("name", name), ("notification_policy", notification_policy))
        if value is not None}
    if choice is None and timezone is None and not patch:
        raise click.UsageError("nothing to change: give --goal, --name, --cron, --once, "
                               "--every, --tz or --notify")

    async def work(store: Any) -> Any:
        if choice is not None or timezone is not None:
            current = (await store.get_schedule(ref)).cadence
            kind, value = choice or (current["kind"], current["value"])
            patch["cadence"] = {"kind": kind, "value": value,
                                "timezone": timezone or current.get("timezone") or "UTC"}
        return await store.update_schedule(ref, **patch)

    schedule = _with_schedules(ctx, db, work, writes=True)
    _report(schedule, as_json,
            f"changed {_label(schedule)}: {_describe(schedule)}, {schedule.status}")


@schedules_group.command("pause")
@_REF
@db_option
@click.option("--reason", default="paused by hand", show_default=True,
              help="Why, kept as its status reason.")
@json_option
@click.pass_context
def pause_command(ctx: click.Context, ref: str, db: Location | None, reason: str,
                  as_json: bool) -> None:
    """Stop a schedule from firing until it is resumed."""

    schedule = _with_schedules(ctx, db, lambda store: store.pause_schedule(ref, reason),
                               writes=True)
    if as_json:
        echo_json(schedule.to_dict())
    else:
        click.echo(f"paused {_label(schedule)}: {schedule.status_reason}")


@schedules_group.command("resume")
@_REF
@db_option
@json_option
@click.pass_context
def resume_command(ctx: click.Context, ref: str, db: Location | None, as_json: bool) -> None:
    """Let a paused schedule fire again, from its cadence's next time after now."""

    schedule = _with_schedules(ctx, db, lambda store: store.resume_schedule(ref),
                               writes=True)
    _report(schedule, as_json, f"resumed {_label(schedule)}: {_describe(schedule)}")


@schedules_group.command("rm")
@_REF
@db_option
@json_option
@click.pass_context
def rm_command(ctx: click.Context, ref: str, db: Location | None, as_json: bool) -> None:
    """Delete a schedule and its run history (exit 1 when there is none)."""

    async def work(store: Any) -> Any:
        schedule = await store.get_schedule(ref)
        await store.delete_schedule(schedule.schedule_id)
        return schedule

    schedule = _with_schedules(ctx, db, work, writes=True)
    if as_json:
        echo_json({"deleted": schedule.schedule_id, "name": schedule.name})
    else:
        click.echo(f"deleted {_label(schedule)} and its run history")


@schedules_group.command("runs")
@_REF
@db_option
@click.option("--limit", default=20, show_default=True, type=click.IntRange(min=1),
              help="Runs to list, newest first.")
@click.option("--json", "as_json", is_flag=True,
              help="Print the runs as JSON, each with its whole output.")
@click.pass_context
def runs_command(ctx: click.Context, ref: str, db: Location | None, limit: int,
                 as_json: bool) -> None:
    """A schedule's run history: when, how it went, how long, what it printed."""
    from core.schedules.store import run_seconds

    async def work(store: Any) -> Any:
        schedule = await store.get_schedule(ref)
        return schedule, await store.get_run_history(schedule.schedule_id, limit)

    schedule, history = _with_schedules(ctx, db, work, writes=False)
    if as_json:
        echo_json([item.to_dict() for item in history])
        return
    if not history:
        click.echo(f"{_label(schedule)} has not run yet")
        return
    click.echo(f"{'started':<24}  {'status':<7}  {'took':>8}  summary")
    for item in history:
        click.echo(f"{item.started_at:<24}  {item.status:<7}  {run_seconds(item):>7.1f}s  "
                   f"{one_line(item.output_summary, 70)}".rstrip())


@click.group("scheduler")
def scheduler_group() -> None:
    """Fire schedules when they are due, with the configured command or webhook."""


@scheduler_group.command("run")
@db_option
@click.option("--once", is_flag=True, help="Run what is due now, then stop.")
@click.option("--json", "as_json", is_flag=True, help="Print each run as one line of JSON.")
@click.pass_context
def scheduler_run_command(ctx: click.Context, db: Location | None, once: bool,
                          as_json: bool) -> None:
    """Run due schedules (scheduler.command or scheduler.webhook_url) until Ctrl-C.

    Prints one line per run. Several runners may share a file: each due schedule runs once.
    """
    from core.errors import ConfigError
    from core.schedules.actions import action_from_config

    config = command_config(ctx)
    require_db(memory_location(db, config))
    try:  # refuse a runner with nothing to run before the memory is opened
        action_from_config(config.scheduler)
    except ConfigError as exc:
        click.echo(f"error: config: {exc}", err=True)
        raise SystemExit(1) from None

    def emit(run: Any, schedule: Any) -> None:
        if as_json:
            click.echo(json.dumps(_run_record(run, schedule), ensure_ascii=False))
        else:
            click.echo(_run_line(run, schedule))

    count = on_engine(ctx, db, lambda engine: _serve(engine, once, emit), writes=True,
                      start_worker=False)
    if once and count == 0:
        click.echo("nothing was due", err=True)


def _run_record(run: Any, schedule: Any) -> dict[str, Any]:
    return {**run.to_dict(), "schedule_name": schedule.name,
            "schedule_status": schedule.status, "status_reason": schedule.status_reason,
            "next_run_at": schedule.next_run_at}


def _run_line(run: Any, schedule: Any) -> str:
    from core.schedules.store import run_seconds

    if schedule.status == "active":
        after = f"next {_local(schedule.next_run_at, schedule)}"
    else:
        after = f"{schedule.status}: {schedule.status_reason}"
    summary = one_line(run.output_summary, 60)
    return (f"{run.started_at}  {schedule.name or schedule.schedule_id}  {run.status}  "
            f"{run_seconds(run):.1f}s  {after}" + (f"  | {summary}" if summary else ""))


async def _serve(engine: Engine, once: bool, emit: Any) -> int:
    """Run one pass or the loop; how many runs were recorded."""
    import asyncio
    import contextlib
    import signal

    from core.schedules.runner import Runner

    count = 0

    def counted(run: Any, schedule: Any) -> None:
        nonlocal count
        count += 1
        emit(run, schedule)

    runner = Runner(engine)
    if once:
        await runner.run_once(on_run=counted)
        return count
    stop = asyncio.Event()
    main_task = asyncio.current_task()
    loop = asyncio.get_running_loop()

    def on_signal() -> None:
        if stop.is_set() and main_task is not None:
            main_task.cancel()
            return
        click.echo("stopping after the run under way (Ctrl-C again to abandon it)",
                   err=True)
        stop.set()

    for number in (signal.SIGINT, signal.SIGTERM):
        # Not in the main thread, or on Windows: Ctrl-C then stops at once (KeyboardInterrupt).
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(number, on_signal)
    click.echo(f"runner {runner.runner_id}: {runner.action.describe()}; every "
               f"{runner.config.poll_interval_secs:g} s; Ctrl-C stops", err=True)
    try:
        await runner.run_forever(stop, on_run=counted)
    except asyncio.CancelledError:
        click.echo("abandoned the run under way; it is due again", err=True)
    finally:
        for number in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.remove_signal_handler(number)
    return count
