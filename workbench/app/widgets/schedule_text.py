"""How schedules and their runs read on screen: times on the schedule's own clock, cadences
in words, status and failures coloured by the theme.

DataTable cells are Rich ``Text`` (a plain string there is read as Rich markup, which a
schedule's name must never be), so the theme's colours are passed in as a :class:`Palette`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from zoneinfo import ZoneInfo

from rich.text import Text
from textual.content import Content

from core.schedules.cadence import Cadence, local_time
from core.schedules.store import parse_when, run_seconds
from core.schedules.wording import in_words, overdue_by, status_in_words, technical_form
from core.types import ScheduleDefinition, ScheduleRun
from workbench.text import one_line

NO_RUNS_YET = ("has not run yet. `workbench scheduler run` fires due schedules; an agent's own "
               "runner records runs with engine.schedules.record_run_and_reschedule().")


@dataclass(frozen=True)
class Palette:
    """The theme's colours, as Rich styles for table cells."""

    success: str
    warning: str
    error: str

    @classmethod
    def of(cls, theme_variables: dict[str, str]) -> Palette:
        return cls(success=theme_variables.get("success", "green"),
                   warning=theme_variables.get("warning", "yellow"),
                   error=theme_variables.get("error", "red"))

    def status(self, status: str | None) -> str:
        """The style of a schedule's or a run's status."""
        return {"active": self.success, "ok": self.success, "paused": self.warning,
                "timeout": self.warning, "failed": self.error}.get(status or "", "dim")


def cadence_of(schedule: ScheduleDefinition) -> Cadence:
    """The stored cadence (already normalised by the store, so not parsed again)."""
    cadence = schedule.cadence
    return Cadence(cadence["kind"], cadence["value"], cadence.get("timezone") or "UTC")


def label(schedule: ScheduleDefinition) -> str:
    """What a person calls a schedule: its name, else its id."""
    return schedule.name or schedule.schedule_id


def weekday_time(moment: datetime, cadence: Cadence) -> str:
    """``Tue 2026-05-05 08:00 CEST``: a fire time in a preview."""
    weekday = parse_when(moment).astimezone(ZoneInfo(cadence.timezone)).strftime("%a")
    return f"{weekday} {local_time(moment, cadence, zone=False)}"


def compact_times(moments: list[datetime], cadence: Cadence) -> str:
    """Fire times on one line: the first in full, the rest as ``05-06 08:00`` while they
    share its year and zone abbreviation."""
    if not moments:
        return ""
    first = local_time(moments[0], cadence, zone=False)
    texts = [first]
    for moment in moments[1:]:
        text = local_time(moment, cadence, zone=False)
        same = text[:4] == first[:4] and text.split()[-1] == first.split()[-1]
        texts.append(text[5:16] if same else text)
    return " · ".join(texts)


def took(run: ScheduleRun) -> str:
    return f"{run_seconds(run):.1f} s"


def schedule_cells(schedule: ScheduleDefinition, palette: Palette) -> list[Text]:
    """The list's row: name, user, cadence in words, next run, status, failures, last run."""
    cadence = cadence_of(schedule)
    next_run = (local_time(schedule.next_run_at, cadence) if schedule.status == "active"
                else "—")
    overdue = overdue_by(schedule) is not None
    status = Text(status_in_words(schedule),
                  style=palette.warning if overdue else palette.status(schedule.status))
    if schedule.status_reason and schedule.status != "active":
        status.append(f": {one_line(schedule.status_reason, 28)}", style="dim")
    failures = schedule.consecutive_failures
    return [
        Text(label(schedule), style="bold"),
        Text(schedule.user_id),
        Text(in_words(cadence)),
        Text(next_run, style="" if schedule.status == "active" else "dim"),
        status,
        Text(str(failures), justify="right",
             style=f"bold {palette.error}" if failures else "dim"),
        Text(schedule.last_run_status or "—", style=palette.status(schedule.last_run_status)),
    ]


def run_cells(run: ScheduleRun, cadence: Cadence, palette: Palette) -> list[Text]:
    """The run history's row: started (schedule's clock), status, duration, first line."""
    return [Text(local_time(run.started_at, cadence, zone=False)),
            Text(run.status, style=palette.status(run.status)),
            Text(took(run), justify="right"),
            Text(one_line(run.output_summary or run.output, 60))]


def _row(name: str, *parts: str | tuple[str, str] | Content) -> Content:
    return Content.assemble((f"{name:<11}", "bold $text-muted"), *parts, "\n")


def schedule_detail(schedule: ScheduleDefinition, upcoming: list[datetime]) -> Content:
    """The selected schedule: its goal, cadence in words (and as a cron when the words do
    not spell it), status and next fire times."""
    cadence = cadence_of(schedule)
    status_style = {"active": "$success", "paused": "$warning"}.get(schedule.status,
                                                                    "$text-muted")
    if overdue_by(schedule) is not None:
        status_style = "$warning"
    status: list[str | tuple[str, str]] = [
        (status_in_words(schedule, with_next_run=True), f"bold {status_style}")]
    if schedule.status_reason:
        status.append(f" ({schedule.status_reason})")
    if schedule.consecutive_failures:
        count = schedule.consecutive_failures
        status.append((f" · {count} failure{'s' if count > 1 else ''} in a row",
                       "bold $error"))
    if schedule.last_run_at:
        status.append(f" · last run {schedule.last_run_status} at "
                      f"{local_time(schedule.last_run_at, cadence, zone=False)}")
    times = compact_times(upcoming, cadence) or f"none ({schedule.status})"
    return Content.assemble(
        (label(schedule), "bold $accent"),
        (f"  {schedule.schedule_id} · user {schedule.user_id} · notify "
         f"{schedule.notification_policy}\n", "$text-muted"),
        _row("Goal", one_line(schedule.goal, 400)),
        _row("Cadence", in_words(cadence),
             (f"   {technical}" if (technical := technical_form(cadence)) else "",
              "$text-muted")),
        _row("Status", *status),
        _row("If resumed" if schedule.status == "paused" else "Next", times),
    ).rstrip()


def run_detail(run: ScheduleRun, cadence: Cadence) -> Content:
    """One run in full: when, how it went, and everything it printed."""
    status_style = {"ok": "$success", "timeout": "$warning"}.get(run.status, "$error")
    return Content.assemble(
        ("Run ", "bold"), (run.status, f"bold {status_style}"),
        (f"  {run.run_id}\n", "$text-muted"),
        f"Started {local_time(run.started_at, cadence)} · took {took(run)}\n",
        (f"turns {run.turn_count} · cost {run.cost:g} · "
         f"user {'notified' if run.notified else 'not notified'}\n\n", "$text-muted"),
        run.output or ("(no output)", "$text-muted"),
    )


def empty_runs(schedule: ScheduleDefinition) -> Content:
    return Content.assemble((label(schedule), "bold"), f" {NO_RUNS_YET}")

