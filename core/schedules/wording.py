"""A cadence in plain words, for people scanning a list: ``every day at 08:00 Europe/Rome``.

:meth:`Cadence.describe` names the cron itself (``cron '0 8 * * *' in Europe/Rome``), which
is exact but has to be decoded. :func:`in_words` reads the common shapes of a cron aloud — a
time of day on every day, on some days of the week or of the month, every N minutes or
hours — and falls back to ``describe()`` for any other shape, so its words are never wrong,
only sometimes technical. Intervals and single times are already plain in ``describe()``.

:func:`status_in_words` says what a schedule's state means now: an active schedule whose
next run is long past is *overdue* (no runner fired it), which "active" would hide.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta

from core import clock
from core.schedules.cadence import Cadence, cron_fields, local_time
from core.schedules.store import parse_when
from core.types import ScheduleDefinition

_DAYS = ("Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday")
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August",
           "September", "October", "November", "December")
_DAY_NUMBERS = {name[:3].lower(): number for number, name in enumerate(_DAYS)}
_MONTH_NUMBERS = {name[:3].lower(): number for number, name in enumerate(_MONTHS, start=1)}
_PART = re.compile(r"(\*|\w+)(?:-(\w+))?(?:/(\d+))?", re.ASCII)
# Beyond this many times of day a list stops being read and starts being counted.
_MOST_TIMES_LISTED = 4
OVERDUE_AFTER = timedelta(minutes=10)
"""How far past its next run an active schedule must be to read as overdue. A runner
polls every 30 s by default and a run may take up to 5 minutes before the schedule moves
on, so a shorter lag is a run under way, not a missed one."""
_AGE_UNITS = (("day", 86400), ("hour", 3600), ("minute", 60))


def in_words(cadence: Cadence) -> str:
    """The cadence for people; the cron's own ``describe()`` when its shape is unusual.

    The cadence is trusted as given, not parsed again: one from the store or from
    :func:`~core.schedules.cadence.parse_cadence` is already normalised and checked.
    """
    if cadence.kind != "cron":
        return cadence.describe()
    fields = cron_fields(cadence.value)
    words = _cron_words(fields, cadence.timezone) if len(fields) == 5 else None
    return cadence.describe() if words is None else words


def technical_form(cadence: Cadence) -> str | None:
    """The cadence as ``describe()`` says it, when that says more than :func:`in_words`;
    None when both read the same (intervals, single times, unusual crons), so a cadence
    shown both ways is never shown twice."""
    described = cadence.describe()
    return None if in_words(cadence) == described else described


def overdue_by(schedule: ScheduleDefinition, now: datetime | None = None) -> timedelta | None:
    """How long past its next run an active schedule is, when that is more than
    :data:`OVERDUE_AFTER`; None for one on time, paused, completed or with no next run."""
    if schedule.status != "active" or not schedule.next_run_at:
        return None
    late = (clock.now() if now is None else now) - parse_when(schedule.next_run_at)
    return late if late > OVERDUE_AFTER else None


def status_in_words(schedule: ScheduleDefinition, now: datetime | None = None, *,
                    with_next_run: bool = False) -> str:
    """``active``, ``paused``, ``completed``, or ``overdue by 3 days`` for an active
    schedule whose next run is long past; ``with_next_run`` adds when that was, on the
    schedule's clock: ``overdue by 3 days (next run 2026-11-25 09:00 CET, Europe/Paris)``."""
    late = overdue_by(schedule, now)
    if late is None:
        return schedule.status
    words = f"overdue by {_age(late)}"
    if not with_next_run:
        return words
    cadence = schedule.cadence
    zone = cadence.get("timezone") or "UTC"
    when = local_time(schedule.next_run_at, Cadence(cadence["kind"], cadence["value"], zone),
                      zone=False)
    return f"{words} (next run {when}, {zone})"


def _age(late: timedelta) -> str:
    """``3 days``, ``1 hour``, ``12 minutes``: the largest whole unit, rounded down."""
    seconds = int(late.total_seconds())
    unit, size = next(((unit, size) for unit, size in _AGE_UNITS if seconds >= size),
                      _AGE_UNITS[-1])
    amount = seconds // size
    return f"{amount} {unit}{'' if amount == 1 else 's'}"


def _cron_words(fields: list[str], zone: str) -> str | None:
    minute_field, hour_field, day_field, month_field, weekday_field = fields
    minutes = _values(minute_field, 0, 59)
    hours = _values(hour_field, 0, 23)
    days = _days_words(day_field, month_field, weekday_field)
    if minutes is None or hours is None or days is None:
        return None
    every_day, on_days = days
    if len(minutes) * len(hours) <= _MOST_TIMES_LISTED:
        times = [f"{hour:02d}:{minute:02d}" for hour in hours for minute in minutes]
        return f"{every_day} at {_listed(times)} {zone}"
    if len(hours) == 24:
        if len(minutes) == 60:
            frequency = "every minute"
        elif (step := _even_step(minutes, 60)) is not None:
            frequency = f"every {step} minutes"
        else:
            at = _listed([f"{minute:02d}" for minute in minutes])
            return f"every hour at minute{'s' if len(minutes) > 1 else ''} {at}{on_days} ({zone})"
        return f"{frequency}{on_days} ({zone})" if on_days else frequency
    if len(minutes) == 1 and (step := _even_step(hours, 24)) is not None:
        return f"every {step} hours from 00:{minutes[0]:02d}{on_days} {zone}"
    if len(minutes) == 1 and hours == list(range(hours[0], hours[-1] + 1)):
        first, last = (f"{hour:02d}:{minutes[0]:02d}" for hour in (hours[0], hours[-1]))
        return f"every hour from {first} to {last}{on_days} {zone}"
    return None


def _days_words(day_field: str, month_field: str,
                weekday_field: str) -> tuple[str, str] | None:
    """How the day fields read before a time (``every Monday``) and after a frequency
    (`` on Monday``); None for a shape not put in words."""
    if (day_field, month_field) == ("*", "*"):
        if weekday_field == "*":
            return "every day", ""
        weekdays = _values(weekday_field, 0, 7, _DAY_NUMBERS)
        if weekdays is None:
            return None
        names = sorted({weekday % 7 for weekday in weekdays}, key=lambda day: (day + 6) % 7)
        if len(names) == 7:
            return "every day", ""
        if len(names) > 2 and names == list(range(names[0], names[-1] + 1)):
            span = f"{_DAYS[names[0]]} to {_DAYS[names[-1]]}"
        else:
            span = _listed([_DAYS[day] for day in names])
        return f"every {span}", f" on {span}"
    if weekday_field != "*":
        return None
    days = _values(day_field, 1, 31)
    if days is None or len(days) > _MOST_TIMES_LISTED:
        return None
    if month_field == "*":
        span = f"day{'s' if len(days) > 1 else ''} {_listed([str(day) for day in days])}"
        return f"on {span} of every month", f" on {span} of every month"
    months = _values(month_field, 1, 12, _MONTH_NUMBERS)
    if months is None or len(days) != 1 or len(months) != 1:
        return None
    date = f"{days[0]} {_MONTHS[months[0] - 1]}"
    return f"every year on {date}", f" on {date} every year"


def _values(field: str, lowest: int, highest: int,
            names: dict[str, int] | None = None) -> list[int] | None:
    """The sorted values a cron field names (numbers, names, ranges, steps); None for
    anything else (``L``, ``#``, ``?``, wrap-around ranges)."""
    found: set[int] = set()
    start: int | None
    end: int | None
    for part in field.split(","):
        match = _PART.fullmatch(part)
        if match is None:
            return None
        start_text, end_text, step_text = match.groups()
        if start_text == "*":
            if end_text is not None:
                return None
            start, end = lowest, highest
        else:
            start = _number(start_text, names)
            end = start if end_text is None else _number(end_text, names)
            if start is None or end is None or end < start:
                return None
            if step_text is not None and end_text is None:
                end = highest  # croniter reads "5/15" as "5-59/15"
        step = int(step_text) if step_text is not None else 1
        if step < 1 or start < lowest or end > highest:
            return None
        found.update(range(start, end + 1, step))
    return sorted(found)


def _number(text: str, names: dict[str, int] | None) -> int | None:
    if text.isdigit():
        return int(text)
    return None if names is None else names.get(text.lower())


def _even_step(values: list[int], size: int) -> int | None:
    """N when ``values`` are 0, N, 2N, … filling a field of ``size`` evenly; else None."""
    if len(values) < 2:
        return None
    step = values[1] - values[0]
    return step if size % step == 0 and values == list(range(0, size, step)) else None


def _listed(items: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"
