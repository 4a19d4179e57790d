"""Schedule cadences (oxydra, "Cadence Evaluation"): parse, validate, and find fire times.

A cadence is one of three kinds, always read in an IANA time zone:

- ``cron``: croniter syntax, matched against the *local wall clock* of the zone. Five
  fields (minute hour day-of-month month day-of-week), or six with seconds as the **last**
  field, which is croniter's convention (Quartz puts seconds first; croniter does not).
  The ``@daily``-style aliases are accepted, and so is croniter's wrap-around range
  (``22-2`` in the hour field). Refused: hashed (``H``) and random (``R``) values, which
  change meaning with a hash id or from one evaluation to the next, and a range whose ends
  are equal (``9-9``), which croniter reads as the whole field. When day-of-month and
  day-of-week are both restricted, a day matching either fires (Vixie cron's rule).
- ``once``: an ISO-8601 local date-time such as ``2026-12-01T09:00``.
- ``interval``: a duration of absolute time (``90s``, ``15m``, ``1h30m``, ``2d``, ``1w`` or
  a number of seconds); daylight-saving changes do not stretch or shrink it.

Every value is text of at most :data:`MAX_CADENCE_CHARS` characters and a zone name at most
:data:`MAX_ZONE_CHARS`: croniter's work grows with a cron's length, and a zone name is looked
up as a path, one import level per ``/``-separated part.

Daylight-saving time: croniter walks *naive* wall-clock times, where every day has 24
hours, and each wall time is then turned into an instant here with zoneinfo. A wall time
the clocks skip (02:30 when 02:00 jumps to 03:00) fires at the end of the gap, the instant
the clocks jump; a wall time that happens twice (01:30 when 02:00 falls back to 01:00)
fires at its first occurrence only. Fire times that land on the same instant count once,
so a cadence fires at most once per wall-clock time and its fire times strictly increase.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cache
from itertools import islice, pairwise
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from croniter import CroniterBadDateError, CroniterError, croniter

from core import clock
from core.errors import InvalidCadence
from core.inputs import one_line
from core.schedules.wall_clock import cron_fire_times, instant_of_wall_time

CADENCE_KINDS = ("cron", "once", "interval")
SECONDS_PER_DAY = 86_400
# Long enough for any real schedule, short enough that adding it never leaves datetime's range
# in practice (the year 9999).
LONGEST_INTERVAL_SECS = 100 * 366 * SECONDS_PER_DAY

MAX_CADENCE_CHARS = 256
"""Longest cadence value: a cron listing every second of a minute in its sixth field fits."""
MAX_ZONE_CHARS = 64
"""Longest time zone name; the longest IANA name has 32 characters."""
MAX_CADENCE_JSON_CHARS = 1024
"""Longest ``cadence_json`` read: a value and a zone at their limits, escaped, fit."""

_CRON_FORM = (
    "write minute hour day-of-month month day-of-week, e.g. '30 2 * * 1-5', "
    "optionally with seconds as a sixth field at the end"
)
_DURATION_FORM = "write e.g. 90s, 15m, 1h30m, 2d, 1w or a number of seconds"
_CRON_ALIASES = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
_CRON_FIELD = re.compile(r"\S+", re.ASCII)
_HASHED_OR_RANDOM = re.compile(r"(?:^|,)[hr](?:$|[(/,])", re.IGNORECASE)
# croniter reads a range whose two ends are equal ("9-9", "jan-jan") as the whole field.
_EQUAL_ENDS_RANGE = re.compile(r"(?:^|,)(\w+)-(\w+)(?:/\d+)?(?=$|,)", re.ASCII)
_CRONITER_PREFIX = re.compile(r"^\[[^\]]*\]\s*(?:is not acceptable[.,]?\s*)?")
_DURATION_UNITS = (("w", 7 * SECONDS_PER_DAY), ("d", SECONDS_PER_DAY), ("h", 3600), ("m", 60),
                   ("s", 1))
_DURATION = re.compile(
    r"(?:(\d{1,9})w)?\s*(?:(\d{1,9})d)?\s*(?:(\d{1,9})h)?\s*(?:(\d{1,9})m)?\s*(?:(\d{1,9})s)?",
    re.ASCII | re.IGNORECASE,
)
_BARE_SECONDS = re.compile(r"\d{1,12}", re.ASCII)
# Where the search for a cron's shortest day-to-day gap starts and stops: the 28 years
# 2001-2028 hold every pair of consecutive calendar years (weekday of 1 January, leap or
# not) that the Gregorian calendar ever produces, 2100's skipped leap day included.
_CALENDAR_CYCLE_START = datetime(2001, 1, 1)
_CALENDAR_CYCLE_END = datetime(2029, 1, 1)
# A fixed start for "does this cron ever fire": a leap year, so 29 February is found.
_FIRST_FIRE_SEARCH_START = datetime(2000, 1, 1)
_EARLIEST_ONCE, _LATEST_ONCE = datetime(1, 1, 2), datetime(9999, 12, 30)


@dataclass(frozen=True)
class Cadence:
    """When a schedule fires: a cron expression, a single date-time, or a fixed interval.

    Build one with :func:`parse_cadence`, which normalises the value and checks its syntax;
    the functions of this module re-check a cadence built directly.
    """

    kind: str
    """``"cron"``, ``"once"`` or ``"interval"``."""
    value: str
    """The cron expression, the local ISO-8601 date-time, or the duration."""
    timezone: str = "UTC"
    """IANA name of the zone the cron fields and the ``once`` date-time are read in."""

    def to_json(self) -> str:
        """The ``cadence_json`` stored in the schedules table."""
        return json.dumps({"kind": self.kind, "value": self.value, "timezone": self.timezone},
                          ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str) -> Cadence:
        """A cadence read back from ``cadence_json``; InvalidCadence if it is not one."""
        if isinstance(text, str) and len(text) > MAX_CADENCE_JSON_CHARS:
            raise InvalidCadence(f"cadence_json is {len(text):,} characters; the limit is "
                                 f"{MAX_CADENCE_JSON_CHARS:,}")
        try:
            data = json.loads(text)
        except (TypeError, ValueError) as error:
            raise InvalidCadence(f"cadence_json is not JSON: {one_line(str(error), 100)}"
                                 ) from error
        if not isinstance(data, dict):
            raise InvalidCadence("cadence_json must be a JSON object with kind, value and "
                                 f"timezone, got {type(data).__name__}")
        unknown = sorted(set(data) - {"kind", "value", "timezone"})
        if unknown:
            raise InvalidCadence(f"cadence_json has unknown keys {unknown}; it holds kind, value "
                                 "and timezone")
        missing = [key for key in ("kind", "value") if key not in data]
        if missing:
            raise InvalidCadence(f"cadence_json lacks {missing}; it holds kind, value and timezone")
        return parse_cadence(data["kind"], data["value"], data.get("timezone", "UTC"))

    def describe(self) -> str:
        """One line for people: ``cron '30 2 * * *' in Europe/Paris``, ``every 1h30m``."""
        kind = _kind(self.kind)
        if kind == "interval":
            return f"every {format_duration(parse_duration(self.value))}"
        if kind == "once":
            return f"once at {_once_text(self.value)} {self.timezone}"
        return f"cron '{self.value}' in {self.timezone}"


def parse_cadence(kind: str, value: str, timezone: str = "UTC") -> Cadence:
    """A cadence with its value normalised and its syntax checked.

    Whether it fires too often or lies in the past is :func:`validate_cadence`'s question,
    since the answer depends on the configuration and on the clock.
    """
    kind = _kind(kind)
    value = _text("value", value)
    timezone = _text("time zone", timezone, MAX_ZONE_CHARS).strip()
    zone = zone_named(timezone)
    if kind == "cron":
        normalised = " ".join(_CRON_FIELD.findall(value))
        expression = _cron_expression(normalised)
        try:
            croniter(expression, _FIRST_FIRE_SEARCH_START).get_next(datetime)
        except CroniterBadDateError as error:
            raise InvalidCadence(f"cron {_quoted(normalised)} never fires: no date matches its "
                                 "day-of-month, month and day-of-week fields") from error
        return Cadence("cron", normalised, timezone)
    if kind == "once":
        return Cadence("once", _normalised_once(value, zone), timezone)
    return Cadence("interval", format_duration(parse_duration(value)), timezone)


def validate_cadence(cadence: Cadence, min_interval_secs: int, now: datetime | None = None) -> None:
    """Refuse, with InvalidCadence, a cadence that cannot be scheduled now.

    A ``once`` must lie strictly after ``now``; an interval must be at least
    ``min_interval_secs``; so must the shortest gap between two consecutive fires of a cron
    (:func:`shortest_cron_gap_secs`), measured on the wall clock. The one exception the
    wall clock hides is the spring-forward day, when a fire moved to the end of the gap can
    come closer to the next one; it happens once a year and is allowed.
    """
    checked = parse_cadence(cadence.kind, cadence.value, cadence.timezone)
    if checked.kind == "once":
        zone = zone_named(checked.timezone)
        now_utc = clock.now() if now is None else _as_utc(now)
        if _once_instant(checked.value, zone) <= now_utc:
            raise InvalidCadence(f"{checked.describe()} is in the past (now "
                                 f"{_wall_text(now_utc.astimezone(zone))} {checked.timezone})")
    elif checked.kind == "interval":
        seconds = parse_duration(checked.value)
        if seconds < min_interval_secs:
            raise InvalidCadence(f"interval {checked.value} fires every {seconds} s; the minimum "
                                 f"is {min_interval_secs} s")
    else:
        gap = shortest_cron_gap_secs(checked.value)
        if gap < min_interval_secs:
            raise InvalidCadence(f"cron {_quoted(checked.value)} fires as often as every {gap} s; "
                                 f"the minimum is {min_interval_secs} s")


def next_run_for_cadence(cadence: Cadence, after: datetime) -> datetime | None:
    """The first fire time strictly after ``after``, in UTC, or None when none is left.

    A naive ``after`` is read as UTC. An interval adds its duration to ``after``: the runner
    passes the previous scheduled time, so the schedule does not drift.
    """
    return next(_fire_times(cadence, _as_utc(after)), None)


def next_runs(cadence: Cadence, after: datetime, count: int) -> list[datetime]:
    """The next ``count`` fire times after ``after``, in UTC (fewer for a ``once``)."""
    if count < 0:
        raise InvalidCadence(f"count must be 0 or more, got {count}")
    return list(islice(_fire_times(cadence, _as_utc(after)), count))


def format_in_timezone(utc_timestamp: str | datetime, cadence: Cadence) -> str:
    """A UTC moment on the cadence's local clock: ``2026-03-29 03:30 CEST (Europe/Paris)``.

    Accepts the engine's timestamp text (``YYYY-MM-DDTHH:MM:SS.mmmZ``) or a datetime.
    """
    if isinstance(utc_timestamp, str):
        try:
            moment = datetime.fromisoformat(utc_timestamp.strip())
        except ValueError as error:
            raise InvalidCadence(f"{_quoted(utc_timestamp)} is not a timestamp; write e.g. "
                                 "2026-03-29T01:30:00.000Z") from error
    else:
        moment = utc_timestamp
    zone = zone_named(_text("time zone", cadence.timezone, MAX_ZONE_CHARS).strip())
    local = _as_utc(moment).astimezone(zone)
    abbreviation = local.tzname()
    text = f"{_wall_text(local)} {abbreviation}"
    return text if abbreviation == zone.key else f"{text} ({zone.key})"


def local_time(moment: str | datetime | None, cadence: Cadence, *, zone: bool = True,
               missing: str = "—") -> str:
    """:func:`format_in_timezone`, ``missing`` for no moment; without ``zone``, only the
    abbreviation (``CEST``)."""
    if moment is None:
        return missing
    text = format_in_timezone(moment, cadence)
    return text if zone else text.split(" (", 1)[0]


def parse_duration(text: str) -> int:
    """The seconds in a duration such as ``90s``, ``15m``, ``1h30m``, ``2d``, ``1w`` or ``300``."""
    stripped = _text("duration", text).strip()
    if _BARE_SECONDS.fullmatch(stripped):
        seconds = int(stripped)
    else:
        match = _DURATION.fullmatch(stripped)
        if not stripped or match is None:
            raise InvalidCadence(f"{_quoted(text)} is not a duration; {_DURATION_FORM}")
        amounts = zip(match.groups(), _DURATION_UNITS, strict=True)
        seconds = sum(int(amount) * unit_secs for amount, (_, unit_secs) in amounts if amount)
    if seconds <= 0:
        raise InvalidCadence(f"{_quoted(text)} is not a positive duration; {_DURATION_FORM}")
    if seconds > LONGEST_INTERVAL_SECS:
        raise InvalidCadence(f"{_quoted(text)} is longer than the longest interval, "
                             f"{LONGEST_INTERVAL_SECS // SECONDS_PER_DAY} days")
    return seconds


def format_duration(seconds: int) -> str:
    """Seconds as the shortest duration text: 5400 -> ``1h30m``, 90 -> ``1m30s``."""
    parts = []
    for unit, unit_secs in _DURATION_UNITS:
        amount, seconds = divmod(seconds, unit_secs)
        if amount:
            parts.append(f"{amount}{unit}")
    return "".join(parts) or "0s"


def shortest_cron_gap_secs(expression: str) -> int:
    """The shortest wall-clock gap, in seconds, between two consecutive fires of a cron.

    Cron's hour, minute and second fields give every firing day the same times of day, so
    the gaps are those between times within a day, and the gap from the last time of one
    firing day to the first time of the next one. The second is shortest for the two
    closest firing days, found from the fields when they are simple and otherwise by
    walking the firing days of a whole 28-year calendar cycle.
    """
    fields = cron_fields(_cron_expression(expression))
    times_of_day = _times_of_day(fields)
    day_span = times_of_day[-1] - times_of_day[0]
    within_a_day = min((later - earlier for earlier, later in pairwise(times_of_day)),
                       default=None)
    if within_a_day is not None and within_a_day <= SECONDS_PER_DAY - day_span:
        return within_a_day  # no gap between two days can be shorter, so no need to find them
    across_days = _shortest_day_gap(fields) * SECONDS_PER_DAY - day_span
    return across_days if within_a_day is None else min(within_a_day, across_days)


def _fire_times(cadence: Cadence, after: datetime) -> Iterator[datetime]:
    """The cadence's fire times strictly after ``after`` (aware UTC), in increasing order."""
    kind = _kind(cadence.kind)
    zone = zone_named(_text("time zone", cadence.timezone, MAX_ZONE_CHARS).strip())
    if kind == "once":
        instant = _once_instant(cadence.value, zone)
        if instant > after:
            yield instant
    elif kind == "interval":
        step = timedelta(seconds=parse_duration(cadence.value))
        moment = after
        while True:
            try:
                moment += step
            except OverflowError:
                return  # past the year 9999: nothing is left that a datetime can hold
            yield moment
    else:
        yield from cron_fire_times(_cron_expression(cadence.value), zone, after)


def _times_of_day(fields: list[str]) -> list[int]:
    """The seconds after midnight at which a cron fires on each of its days, sorted."""
    expanded, _ = croniter.expand(" ".join(fields))
    minutes = _field_values(expanded[0], 60)
    hours = _field_values(expanded[1], 24)
    seconds = _field_values(expanded[5], 60) if len(fields) == 6 else [0]
    return sorted(hour * 3600 + minute * 60 + second
                  for hour in hours for minute in minutes for second in seconds)


def _field_values(expanded_field: list[int | str], size: int) -> list[int]:
    """The values of an expanded time field: croniter writes a full field as ``['*']``."""
    if expanded_field == ["*"]:
        return list(range(size))
    return [value for value in expanded_field if isinstance(value, int)]


def _shortest_day_gap(fields: list[str]) -> int:
    """The fewest days between two consecutive days on which a cron fires."""
    expanded, nth_weekday_of_month = croniter.expand(" ".join(fields))
    days_of_month, months, weekdays = expanded[2], expanded[3], expanded[4]
    if days_of_month == ["*"] and weekdays == ["*"]:
        return 1  # every day of the months it names
    plain_weekdays = [day for day in weekdays if isinstance(day, int)]
    if (days_of_month == ["*"] and months == ["*"] and not nth_weekday_of_month
            and len(plain_weekdays) == len(weekdays)):
        ordered = sorted(set(plain_weekdays))
        return min((later - earlier) % 7 or 7
                   for earlier, later in zip(ordered, ordered[1:] + ordered[:1], strict=True))
    firing_days = croniter(f"0 0 {fields[2]} {fields[3]} {fields[4]}",
                           _CALENDAR_CYCLE_START - timedelta(minutes=1))
    firing_day = firing_days.get_next(datetime)
    # A cron that fires at all fires within every cycle, so no gap is longer than one.
    shortest = (_CALENDAR_CYCLE_END - _CALENDAR_CYCLE_START).days
    while firing_day < _CALENDAR_CYCLE_END and shortest > 1:
        next_firing_day = firing_days.get_next(datetime)
        shortest = min(shortest, (next_firing_day - firing_day).days)
        firing_day = next_firing_day
    return shortest


def _cron_expression(value: str) -> str:
    """The five or six croniter fields of a cron value, aliases expanded, syntax checked."""
    value = _text("cron expression", value)
    fields = cron_fields(value)
    if not fields:
        raise InvalidCadence(f"a cron cadence needs an expression; {_CRON_FORM}")
    if len(fields) not in (5, 6):
        raise InvalidCadence(f"cron {_quoted(value)} has {len(fields)} fields; {_CRON_FORM}")
    if any(_HASHED_OR_RANDOM.search(field) for field in fields):
        raise InvalidCadence(f"cron {_quoted(value)} uses a hashed (H) or random (R) value; "
                             "give the values themselves, e.g. '17 * * * *'")
    for field in fields:
        for start, end in _EQUAL_ENDS_RANGE.findall(field):
            if start.lower() == end.lower() or (start.isdigit() and end.isdigit()
                                                and int(start) == int(end)):
                raise InvalidCadence(f"cron {_quoted(value)} has the range '{start}-{end}', which "
                                     f"croniter reads as the whole field; write '{start}'")
    expression = " ".join(fields)
    try:
        croniter.expand(expression)
    except CroniterError as error:
        reason = _CRONITER_PREFIX.sub("", str(error).strip().splitlines()[-1]) or "bad value"
        reason = one_line(reason, 100)
        raise InvalidCadence(f"cron {_quoted(value)} is not valid ({reason}); "
                             f"{_CRON_FORM}") from error
    return expression


def cron_fields(value: str) -> list[str]:
    """The fields of a cron value, with an ``@daily``-style alias written out."""
    stripped = value.strip()
    return _CRON_FIELD.findall(_CRON_ALIASES.get(stripped.lower(), stripped))


def _normalised_once(value: str, zone: ZoneInfo) -> str:
    """A ``once`` value as a local ISO date-time, seconds only when not zero.

    A value with an offset or ``Z`` is converted to the zone's local time. The offset is
    kept only when that local time happens twice and the value names the second one, the
    one a bare local time would not.
    """
    moment = _once_moment(value)
    if moment.tzinfo is None:
        return _iso_text(moment)
    instant = moment.astimezone(UTC)
    local = instant.astimezone(zone)
    wall_time = local.replace(tzinfo=None)
    if instant_of_wall_time(wall_time, zone) == instant:
        return _iso_text(wall_time)
    return _iso_text(local)


def _once_instant(value: str, zone: ZoneInfo) -> datetime:
    """The UTC instant a ``once`` value names in ``zone``."""
    moment = _once_moment(value)
    if moment.tzinfo is not None:
        return moment.astimezone(UTC)
    return instant_of_wall_time(moment, zone)


def _once_moment(value: str) -> datetime:
    """A ``once`` value parsed: naive for a local time, aware when it carries an offset."""
    text = _text("once date-time", value).strip()
    example = "write e.g. 2026-12-01T09:00 (local time in the cadence's zone)"
    if not any(separator in text for separator in "Tt "):
        raise InvalidCadence(f"once {_quoted(value)} has no time of day; {example}")
    try:
        moment = datetime.fromisoformat(text)
    except ValueError as error:
        raise InvalidCadence(f"once {_quoted(value)} is not an ISO-8601 date-time; "
                             f"{example}") from error
    if moment.microsecond:
        raise InvalidCadence(f"once {_quoted(value)} has a fraction of a second; give the time "
                             "to the second at most")
    # Any zone's offset is under a day, so a day's margin keeps every conversion in range.
    if not _EARLIEST_ONCE <= moment.replace(tzinfo=None) <= _LATEST_ONCE:
        raise InvalidCadence(f"once {_quoted(value)} lies outside 0001-01-02 to 9999-12-30, "
                             "the dates a fire time can be reckoned in")
    return moment


def _once_text(value: str) -> str:
    """A ``once`` value for people: ``2026-12-01 09:00``, with its offset if it has one."""
    moment = _once_moment(value)
    offset = moment.isoformat()[19:] if moment.tzinfo is not None else ""
    return _wall_text(moment) + offset


def _iso_text(moment: datetime) -> str:
    return moment.isoformat(timespec="seconds" if moment.second else "minutes")


def _wall_text(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%d %H:%M:%S" if moment.second else "%Y-%m-%d %H:%M")


def _as_utc(moment: datetime) -> datetime:
    """An aware UTC datetime; a naive one is read as UTC."""
    if not isinstance(moment, datetime):
        raise InvalidCadence(f"expected a datetime, got {type(moment).__name__}")
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


def _kind(kind: str) -> str:
    normalised = _text("kind", kind).strip().lower()
    if normalised not in CADENCE_KINDS:
        raise InvalidCadence(f"unknown cadence kind {_quoted(kind)}; use cron, once or interval")
    return normalised


def _quoted(value: str) -> str:
    """A value a person gave, for a message: quoted, on one line, cut when long."""
    return f"'{one_line(value, 60)}'"


def _text(what: str, value: object, limit: int = MAX_CADENCE_CHARS) -> str:
    """``value`` when it is text within ``limit`` characters, else InvalidCadence."""
    if not isinstance(value, str):
        raise InvalidCadence(f"a cadence's {what} must be text, got {type(value).__name__}")
    if len(value) > limit:
        raise InvalidCadence(f"a cadence's {what} {_quoted(value)} is {len(value):,} "
                             f"characters; the limit is {limit}")
    return value


def zone_named(name: str) -> ZoneInfo:
    """The zone named ``name``, or InvalidCadence suggesting the closest real name."""
    if name == "localtime":
        raise InvalidCadence("time zone 'localtime' means whatever this machine is set to; "
                             "name the zone, e.g. 'Europe/Paris'")
    _text("time zone", name, MAX_ZONE_CHARS)
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError) as error:
        close = difflib.get_close_matches(name, zone_names(), n=1)
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        raise InvalidCadence(f"unknown time zone {_quoted(name)}{hint}; use an IANA name such as "
                             "'Europe/Paris' or 'UTC'") from error


@cache
def zone_names() -> list[str]:
    """Every IANA zone name this machine knows, sorted."""
    return sorted(available_timezones())
