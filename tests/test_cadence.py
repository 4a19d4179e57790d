"""Schedule cadences: parsing, validation, fire times, and daylight-saving time done right.

The DST tests pin real transitions in both hemispheres. The properties check fire times
against an oracle written here from the cron fields as plain sets, scanning instants minute
by minute, so they do not lean on croniter or on the module's own wall-clock resolution.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.errors import InvalidCadence, InvalidInput
from core.schedules.cadence import (
    Cadence,
    format_duration,
    format_in_timezone,
    next_run_for_cadence,
    next_runs,
    parse_cadence,
    parse_duration,
    shortest_cron_gap_secs,
    validate_cadence,
)

MINUTE = timedelta(minutes=1)
DAY = timedelta(days=1)


def utc(text: str) -> datetime:
    """``2026-03-29T01:00`` as an aware UTC datetime."""
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def local_times(cadence: Cadence, after: str, count: int) -> list[str]:
    return [format_in_timezone(moment, cadence) for moment in next_runs(cadence, utc(after), count)]


# --- daylight-saving time: pinned on real transitions -------------------------------------------

# Spring forward: the wall clock skips an hour, and 02:30 does not exist that day.
SPRING_FORWARD = [
    # zone, 'after', the first two fires of '30 2 * * *', the first as the local clock shows it
    ("Europe/Paris", "2026-03-28T12:00", ["2026-03-29T01:00", "2026-03-30T00:30"],
     "2026-03-29 03:00 CEST (Europe/Paris)"),
    ("Europe/Berlin", "2026-03-28T12:00", ["2026-03-29T01:00", "2026-03-30T00:30"],
     "2026-03-29 03:00 CEST (Europe/Berlin)"),
    ("America/New_York", "2026-03-07T12:00", ["2026-03-08T07:00", "2026-03-09T06:30"],
     "2026-03-08 03:00 EDT (America/New_York)"),
    ("Australia/Sydney", "2026-10-03T00:00", ["2026-10-03T16:00", "2026-10-04T15:30"],
     "2026-10-04 03:00 AEDT (Australia/Sydney)"),
]


@pytest.mark.parametrize(("zone", "after", "expected", "first_local"), SPRING_FORWARD)
def test_a_cron_in_the_skipped_hour_fires_once_when_the_gap_ends(
        zone: str, after: str, expected: list[str], first_local: str) -> None:
    cadence = parse_cadence("cron", "30 2 * * *", zone)
    runs = next_runs(cadence, utc(after), 2)
    assert runs == [utc(moment) for moment in expected]
    assert format_in_timezone(runs[0], cadence) == first_local
    assert format_in_timezone(runs[1], cadence).startswith(expected_day_after(first_local))


def expected_day_after(first_local: str) -> str:
    """The next day at 02:30, the cron's own time again: '2026-03-30 02:30'."""
    day = datetime.fromisoformat(first_local[:10]) + DAY
    return f"{day:%Y-%m-%d} 02:30 "


# Fall back: the wall clock repeats an hour, and its times happen twice.
FALL_BACK = [
    # zone, cron, 'after', the first two fires: the first occurrence only, then the next day
    ("Europe/Paris", "30 2 * * *", "2026-10-24T12:00", ["2026-10-25T00:30", "2026-10-26T01:30"]),
    ("Europe/Berlin", "30 2 * * *", "2026-10-24T12:00", ["2026-10-25T00:30", "2026-10-26T01:30"]),
    ("America/New_York", "30 1 * * *", "2026-10-31T12:00",
     ["2026-11-01T05:30", "2026-11-02T06:30"]),
    ("Australia/Sydney", "30 2 * * *", "2026-04-04T00:00",
     ["2026-04-04T15:30", "2026-04-05T16:30"]),
]


@pytest.mark.parametrize(("zone", "cron", "after", "expected"), FALL_BACK)
def test_a_cron_in_the_repeated_hour_fires_once_at_the_first_occurrence(
        zone: str, cron: str, after: str, expected: list[str]) -> None:
    cadence = parse_cadence("cron", cron, zone)
    assert next_runs(cadence, utc(after), 2) == [utc(moment) for moment in expected]


def test_after_the_first_occurrence_the_repeated_wall_time_does_not_fire_again() -> None:
    cadence = parse_cadence("cron", "30 1 * * *", "America/New_York")
    # 06:10Z is 01:10 EST, inside the repeated hour; 01:30 EDT (05:30Z) already fired.
    assert next_run_for_cadence(cadence, utc("2026-11-01T06:10")) == utc("2026-11-02T06:30")
    assert next_run_for_cadence(cadence, utc("2026-11-01T05:30")) == utc("2026-11-02T06:30")


@pytest.mark.parametrize(("zone", "cron", "after", "expected"), [
    # Paris, spring: 02:00 does not exist, so the 02:00 fire is the 03:00 one, counted once.
    ("Europe/Paris", "0 * * * *", "2026-03-28T22:30",
     ["2026-03-29 00:00 CET", "2026-03-29 01:00 CET", "2026-03-29 03:00 CEST",
      "2026-03-29 04:00 CEST", "2026-03-29 05:00 CEST"]),
    # Paris, autumn: 02:00 happens twice and fires the first time.
    ("Europe/Paris", "0 * * * *", "2026-10-24T21:30",
     ["2026-10-25 00:00 CEST", "2026-10-25 01:00 CEST", "2026-10-25 02:00 CEST",
      "2026-10-25 03:00 CET", "2026-10-25 04:00 CET"]),
    ("America/New_York", "*/15 * * * *", "2026-03-08T06:40",
     ["2026-03-08 01:45 EST", "2026-03-08 03:00 EDT", "2026-03-08 03:15 EDT",
      "2026-03-08 03:30 EDT"]),
    ("America/New_York", "*/30 * * * *", "2026-11-01T05:10",
     ["2026-11-01 01:30 EDT", "2026-11-01 02:00 EST", "2026-11-01 02:30 EST"]),
    ("Australia/Sydney", "0 * * * *", "2026-10-03T14:30",
     ["2026-10-04 01:00 AEST", "2026-10-04 03:00 AEDT", "2026-10-04 04:00 AEDT"]),
    ("Australia/Sydney", "0 * * * *", "2026-04-04T14:30",
     ["2026-04-05 02:00 AEDT", "2026-04-05 03:00 AEST", "2026-04-05 04:00 AEST"]),
    # Lord Howe moves its clocks by half an hour.
    ("Australia/Lord_Howe", "*/30 * * * *", "2026-10-03T15:00",
     ["2026-10-04 02:30 +11", "2026-10-04 03:00 +11", "2026-10-04 03:30 +11"]),
    # Santiago springs forward at midnight: the day starts at 01:00.
    ("America/Santiago", "0 0 * * *", "2026-09-04T12:00",
     ["2026-09-05 00:00 -04", "2026-09-06 01:00 -03", "2026-09-07 00:00 -03"]),
    # Samoa skipped 30 December 2011 whole: its 09:00 fires once, when the next day starts.
    ("Pacific/Apia", "0 9 * * *", "2011-12-28T20:00",
     ["2011-12-29 09:00 -10", "2011-12-31 00:00 +14", "2011-12-31 09:00 +14"]),
    # With seconds: croniter's sixth field, at the end.
    ("Europe/Paris", "30 2 * * * 15", "2026-03-28T12:00",
     ["2026-03-29 03:00 CEST", "2026-03-30 02:30:15 CEST"]),
])
def test_frequent_crons_across_transitions_neither_repeat_nor_skip(
        zone: str, cron: str, after: str, expected: list[str]) -> None:
    cadence = parse_cadence("cron", cron, zone)
    assert [text.removesuffix(f" ({zone})") for text in local_times(cadence, after,
                                                                    len(expected))] == expected


@pytest.mark.parametrize(("zone", "after", "walls"), [
    ("Europe/Paris", "2026-03-29T00:00", ["03:00 CEST", "04:00 CEST", "05:00 CEST"]),
    ("America/New_York", "2026-11-01T04:30", ["01:30 EDT", "01:30 EST", "02:30 EST"]),
    ("Australia/Sydney", "2026-10-03T15:30", ["03:30 AEDT", "04:30 AEDT", "05:30 AEDT"]),
])
def test_an_interval_is_absolute_time_across_transitions(
        zone: str, after: str, walls: list[str]) -> None:
    cadence = parse_cadence("interval", "1h", zone)
    runs = next_runs(cadence, utc(after), 3)
    gaps = [later - earlier for earlier, later in zip([utc(after), *runs], runs, strict=False)]
    assert gaps == [timedelta(hours=1)] * 3
    shown = [format_in_timezone(run, cadence)[11:].removesuffix(f" ({zone})") for run in runs]
    assert shown == walls


@pytest.mark.parametrize(("zone", "value", "normalised", "instant"), [
    ("Europe/Paris", "2026-03-29T02:30", "2026-03-29T02:30", "2026-03-29T01:00"),  # gap end
    ("Europe/Paris", "2026-10-25T02:30", "2026-10-25T02:30", "2026-10-25T00:30"),  # first of two
    ("Europe/Paris", "2026-10-25T01:30Z", "2026-10-25T02:30+01:00", "2026-10-25T01:30"),  # second
    ("America/New_York", "2026-03-08T02:30", "2026-03-08T02:30", "2026-03-08T07:00"),
    ("America/New_York", "2026-11-01T01:30", "2026-11-01T01:30", "2026-11-01T05:30"),
    ("America/New_York", "2026-11-01T01:30-05:00", "2026-11-01T01:30-05:00", "2026-11-01T06:30"),
    ("America/New_York", "2026-11-01T01:30-04:00", "2026-11-01T01:30", "2026-11-01T05:30"),
    ("Australia/Sydney", "2026-10-04T02:30", "2026-10-04T02:30", "2026-10-03T16:00"),
])
def test_once_resolves_skipped_and_repeated_local_times(
        zone: str, value: str, normalised: str, instant: str) -> None:
    cadence = parse_cadence("once", value, zone)
    assert cadence.value == normalised
    assert next_runs(cadence, utc("2026-01-01T00:00"), 5) == [utc(instant)]
    assert next_run_for_cadence(cadence, utc(instant)) is None


# --- validation ------------------------------------------------------------------------------


@pytest.mark.parametrize(("cron", "gap"), [
    ("*/1 * * * *", 60),
    ("0,1 9 * * *", 60),
    ("*/5 * * * *", 300),
    ("0 9 * * 1-5", 86_400),
    ("0 9 * * 1,3,5", 2 * 86_400),
    ("0 9 * * 1", 7 * 86_400),
    ("0 9 1 * *", 28 * 86_400),  # 1 February to 1 March
    ("0 9 29 2 *", 1461 * 86_400),  # leap days only
    ("0 9 1,L * *", 86_400),  # the last of a month and the first of the next
    ("0 9 * * 5#2", 28 * 86_400),
    ("0,59 0,23 * * *", 60),  # 23:59 to 00:00 the next day
    ("0 22-2 * * *", 3600),
    ("@daily", 86_400),
    ("* * * * * */15", 15),
])
def test_shortest_cron_gap(cron: str, gap: int) -> None:
    assert shortest_cron_gap_secs(cron) == gap


@pytest.mark.parametrize(("cadence", "message"), [
    (Cadence("cron", "*/1 * * * *"), "fires as often as every 60 s; the minimum is 300 s"),
    (Cadence("cron", "0,1 9 * * *"), "every 60 s; the minimum is 300 s"),
    (Cadence("cron", "*/4 * * * *"), "every 240 s; the minimum is 300 s"),
    (Cadence("cron", "0,59 0,23 * * *"), "every 60 s; the minimum is 300 s"),
    (Cadence("interval", "4m59s"), "interval 4m59s fires every 299 s; the minimum is 300 s"),
    (Cadence("interval", "60"), "fires every 60 s; the minimum is 300 s"),
])
def test_too_frequent_cadences_are_refused_with_the_numbers(cadence: Cadence, message: str) -> None:
    with pytest.raises(InvalidCadence, match=message):
        validate_cadence(cadence, 300)


@pytest.mark.parametrize("cadence", [
    Cadence("cron", "*/5 * * * *"),
    Cadence("cron", "0,5 9 * * *"),
    Cadence("interval", "5m"),
    Cadence("interval", "300"),
])
def test_exactly_the_minimum_gap_is_allowed(cadence: Cadence) -> None:
    validate_cadence(cadence, 300)


def test_the_minimum_gap_counts_days_for_a_daily_cron() -> None:
    validate_cadence(Cadence("cron", "0 9 * * 1-5"), 86_400)
    with pytest.raises(InvalidCadence, match="every 86400 s; the minimum is 86401 s"):
        validate_cadence(Cadence("cron", "0 9 * * 1-5"), 86_401)


def test_a_once_in_the_past_is_refused_with_both_times_in_its_zone() -> None:
    now = utc("2026-11-22T19:00")
    cadence = parse_cadence("once", "2024-01-01T09:00", "Europe/Paris")
    with pytest.raises(InvalidCadence) as refused:
        validate_cadence(cadence, 300, now=now)
    assert str(refused.value) == ("once at 2024-01-01 09:00 Europe/Paris is in the past "
                                  "(now 2026-11-22 20:00 Europe/Paris)")


def test_a_once_must_be_strictly_in_the_future() -> None:
    cadence = parse_cadence("once", "2026-11-22T20:00", "Europe/Paris")  # 19:00Z
    with pytest.raises(InvalidCadence, match="is in the past"):
        validate_cadence(cadence, 300, now=utc("2026-11-22T19:00"))
    validate_cadence(cadence, 300, now=utc("2026-11-22T18:59:59"))
    validate_cadence(cadence, 300, now=datetime(2026, 11, 22, 18, 59))  # naive: read as UTC


@pytest.mark.parametrize(("kind", "value", "message"), [
    ("cron", "60 * * * *", r"cron '60 \* \* \* \*' is not valid \(out of range\); write minute"),
    ("cron", "* * * *", "has 4 fields; write minute hour day-of-month month day-of-week"),
    ("cron", "0 0 1 1 * 0 2030", "has 7 fields"),
    ("cron", "0 9 31 2 *", "never fires"),
    ("cron", "H * * * *", r"hashed \(H\) or random \(R\)"),
    ("cron", "R 9 * * *", r"hashed \(H\) or random \(R\)"),
    ("cron", "0 9-9 * * *", "the range '9-9', which croniter reads as the whole field; write '9'"),
    ("cron", "0 9 * * 8", "out of range"),
    ("cron", "a b c d e", "is not valid"),
    ("cron", "", "needs an expression"),
    ("once", "2026-12-01", "has no time of day; write e.g. 2026-12-01T09:00"),
    ("once", "next tuesday", "is not an ISO-8601 date-time"),
    ("once", "2026-12-01T09:00:00.5", "fraction of a second"),
    ("interval", "1.5h", "is not a duration; write e.g. 90s, 15m, 1h30m, 2d, 1w"),
    ("interval", "0", "is not a positive duration"),
    ("interval", "-5m", "is not a duration"),
    ("interval", "30m1h", "is not a duration"),
    ("interval", "1000000w", "longer than the longest interval"),
    ("weekly", "1", "unknown cadence kind 'weekly'; use cron, once or interval"),
])
def test_syntax_errors_are_refused_with_the_accepted_form(kind: str, value: str,
                                                          message: str) -> None:
    with pytest.raises(InvalidCadence, match=message):
        parse_cadence(kind, value)
    with pytest.raises(InvalidCadence, match=message):  # a Cadence built by hand is checked too
        validate_cadence(Cadence(kind, value), 1)


def test_an_unknown_time_zone_is_refused_with_a_suggestion() -> None:
    with pytest.raises(InvalidCadence, match="unknown time zone 'Europe/Pariss' "
                                             r"\(did you mean 'Europe/Paris'\?\)"):
        parse_cadence("cron", "0 9 * * *", "Europe/Pariss")
    for name in ["Mars/Olympus", "", "../etc", "/etc/passwd", "Europe"]:
        with pytest.raises(InvalidCadence, match="unknown time zone"):
            parse_cadence("interval", "1h", name)
    with pytest.raises(InvalidCadence, match="name the zone"):
        parse_cadence("interval", "1h", "localtime")


def test_refusals_are_invalid_input() -> None:
    assert issubclass(InvalidCadence, InvalidInput)


@pytest.mark.parametrize(("text", "seconds"), [
    ("90s", 90), ("15m", 900), ("1h30m", 5400), ("2d", 172_800), ("1w", 604_800),
    ("300", 300), (" 1h 30m ", 5400), ("1H30M", 5400), ("1w2d3h4m5s", 788_645),
])
def test_parse_duration(text: str, seconds: int) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "h", "1.5h", "5 minutes", "1y", "1h-30m", "1e3", "٣٠٠"])
def test_parse_duration_refuses_with_examples(text: str) -> None:
    with pytest.raises(InvalidCadence, match="write e.g. 90s, 15m, 1h30m, 2d, 1w or a number"):
        parse_duration(text)


# --- normalising, JSON, words ----------------------------------------------------------------


@pytest.mark.parametrize(("kind", "value", "timezone", "expected"), [
    ("cron", "  30   2 * * * ", "Europe/Paris", Cadence("cron", "30 2 * * *", "Europe/Paris")),
    (" Cron ", "@daily", " UTC ", Cadence("cron", "@daily", "UTC")),
    ("interval", "90m", "UTC", Cadence("interval", "1h30m", "UTC")),
    ("interval", "5400", "UTC", Cadence("interval", "1h30m", "UTC")),
    ("once", "2026-12-01 09:00:00", "UTC", Cadence("once", "2026-12-01T09:00", "UTC")),
    ("once", "2026-12-01T09:00:30", "UTC", Cadence("once", "2026-12-01T09:00:30", "UTC")),
    ("once", "2026-12-01T08:00:00.000Z", "Europe/Paris",
     Cadence("once", "2026-12-01T09:00", "Europe/Paris")),
])
def test_parse_cadence_normalises(kind: str, value: str, timezone: str,
                                  expected: Cadence) -> None:
    assert parse_cadence(kind, value, timezone) == expected


@pytest.mark.parametrize(("cadence", "words"), [
    (Cadence("cron", "30 2 * * *", "Europe/Paris"), "cron '30 2 * * *' in Europe/Paris"),
    (Cadence("interval", "1h30m"), "every 1h30m"),
    (Cadence("interval", "5400"), "every 1h30m"),
    (Cadence("once", "2026-12-01T09:00", "Europe/Paris"), "once at 2026-12-01 09:00 Europe/Paris"),
    (Cadence("once", "2026-10-25T02:30+01:00", "Europe/Paris"),
     "once at 2026-10-25 02:30+01:00 Europe/Paris"),
])
def test_describe(cadence: Cadence, words: str) -> None:
    assert cadence.describe() == words


def test_to_json_holds_kind_value_and_timezone() -> None:
    cadence = parse_cadence("cron", "30 2 * * *", "Europe/Paris")
    assert json.loads(cadence.to_json()) == {"kind": "cron", "value": "30 2 * * *",
                                             "timezone": "Europe/Paris"}
    assert Cadence.from_json('{"kind": "interval", "value": "90m"}') == Cadence("interval",
                                                                               "1h30m")


@pytest.mark.parametrize(("text", "message"), [
    ("not json", "cadence_json is not JSON"),
    ("[1, 2]", "must be a JSON object with kind, value and timezone, got list"),
    ('{"kind": "cron"}', r"lacks \['value'\]"),
    ('{"kind": "cron", "value": "0 9 * * *", "tz": "UTC"}', r"unknown keys \['tz'\]"),
    ('{"kind": "interval", "value": 300}', "value must be text, got int"),
    ('{"kind": "cron", "value": "0 9 * * *", "timezone": "Nowhere/Town"}', "unknown time zone"),
])
def test_from_json_refuses_what_is_not_a_cadence(text: str, message: str) -> None:
    with pytest.raises(InvalidCadence, match=message):
        Cadence.from_json(text)


@pytest.mark.parametrize(("moment", "zone", "text"), [
    ("2026-03-29T01:30:00.000Z", "Europe/Paris", "2026-03-29 03:30 CEST (Europe/Paris)"),
    ("2026-01-15T08:00:00.000Z", "Europe/Paris", "2026-01-15 09:00 CET (Europe/Paris)"),
    ("2026-07-04T16:00:00.000Z", "America/New_York", "2026-07-04 12:00 EDT (America/New_York)"),
    ("2026-12-25T17:00:00.000Z", "America/New_York", "2026-12-25 12:00 EST (America/New_York)"),
    ("2026-01-01T01:00:00.000Z", "Australia/Sydney", "2026-01-01 12:00 AEDT (Australia/Sydney)"),
    ("2026-01-01T12:00:05.000Z", "UTC", "2026-01-01 12:00:05 UTC"),
])
def test_format_in_timezone_shows_the_local_abbreviation(moment: str, zone: str,
                                                         text: str) -> None:
    cadence = Cadence("interval", "1h", zone)
    assert format_in_timezone(moment, cadence) == text
    assert format_in_timezone(datetime.fromisoformat(moment[:19]), cadence) == text  # naive: UTC


def test_format_in_timezone_refuses_what_is_not_a_timestamp() -> None:
    with pytest.raises(InvalidCadence, match="is not a timestamp"):
        format_in_timezone("yesterday", Cadence("interval", "1h"))


def test_next_runs_counts() -> None:
    cadence = parse_cadence("cron", "0 9 * * *")
    assert next_runs(cadence, utc("2026-01-01T00:00"), 0) == []
    assert len(next_runs(cadence, utc("2026-01-01T00:00"), 3)) == 3
    with pytest.raises(InvalidCadence, match="count must be 0 or more"):
        next_runs(cadence, utc("2026-01-01T00:00"), -1)


def test_nothing_is_left_past_the_year_9999() -> None:
    after = datetime(9999, 12, 31, 23, 0, tzinfo=UTC)
    assert next_run_for_cadence(parse_cadence("interval", "2h"), after) is None
    assert next_run_for_cadence(parse_cadence("cron", "0 0 * * *"), after) is None


# --- properties ------------------------------------------------------------------------------

ZONES = ["UTC", "Europe/Paris", "Europe/Berlin", "Europe/Dublin", "America/New_York",
         "America/St_Johns", "America/Santiago", "Australia/Sydney", "Australia/Lord_Howe",
         "Antarctica/Troll", "Pacific/Apia", "Asia/Kolkata"]

# Real transitions, as UTC instants, the windows of the brute-force property straddle.
TRANSITIONS = [
    ("Europe/Paris", "2026-03-29T01:00"), ("Europe/Paris", "2026-10-25T01:00"),
    ("Europe/Berlin", "2026-03-29T01:00"), ("Europe/Dublin", "2026-10-25T01:00"),
    ("America/New_York", "2026-03-08T07:00"), ("America/New_York", "2026-11-01T06:00"),
    ("Australia/Sydney", "2026-04-04T16:00"), ("Australia/Sydney", "2026-10-03T16:00"),
    ("Australia/Lord_Howe", "2026-04-04T15:00"), ("Australia/Lord_Howe", "2026-10-03T15:30"),
    ("America/Santiago", "2026-04-05T03:00"), ("America/Santiago", "2026-09-06T04:00"),
    ("Antarctica/Troll", "2026-03-29T01:00"), ("Antarctica/Troll", "2026-10-25T01:00"),
    ("Pacific/Apia", "2011-12-30T10:00"),
]


@pytest.mark.parametrize(("zone", "instant"), TRANSITIONS)
def test_the_listed_transitions_are_real(zone: str, instant: str) -> None:
    at = utc(instant)
    assert at.astimezone(ZoneInfo(zone)).utcoffset() != (at - MINUTE).astimezone(
        ZoneInfo(zone)).utcoffset()


@dataclass(frozen=True)
class CronCase:
    """A cron expression and the sets its fields mean, for an oracle independent of croniter."""

    text: str
    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]  # 0 is Sunday
    days_restricted: bool
    weekdays_restricted: bool

    def matches(self, wall: datetime) -> bool:
        """Whether cron fires at this local wall-clock time (Vixie's day rule)."""
        if (wall.second or wall.minute not in self.minutes or wall.hour not in self.hours
                or wall.month not in self.months):
            return False
        day_ok = wall.day in self.days
        weekday_ok = wall.isoweekday() % 7 in self.weekdays
        if self.days_restricted and self.weekdays_restricted:
            return day_ok or weekday_ok
        return day_ok and weekday_ok


CronField = tuple[str, frozenset[int]]


def field(low: int, high: int, *, steps: bool = True,
          top: int | None = None) -> st.SearchStrategy[CronField]:
    """One cron field and its values: ``*``, ``7``, ``1,5``, ``3-9``, ``3-40/7``, ``*/15``.

    Values are drawn from ``low``-``high``; ``*/n`` steps through the whole field, up to
    ``top`` (31 for day-of-month, drawn from 1-28 only).
    """
    value = st.integers(low, high)
    pair = st.tuples(value, value).filter(lambda ends: ends[0] < ends[1])
    forms = [
        st.just(("*", frozenset(range(low, high + 1)))),
        value.map(lambda v: (str(v), frozenset({v}))),
        st.lists(value, min_size=2, max_size=4, unique=True).map(
            lambda vs: (",".join(map(str, vs)), frozenset(vs))),
        pair.map(lambda ends: (f"{ends[0]}-{ends[1]}", frozenset(range(ends[0], ends[1] + 1)))),
    ]
    if steps:
        forms.append(st.tuples(pair, st.integers(1, high - low)).map(
            lambda p: (f"{p[0][0]}-{p[0][1]}/{p[1]}",
                       frozenset(range(p[0][0], p[0][1] + 1, p[1])))))
        forms.append(st.integers(2, high - low).map(
            lambda n: (f"*/{n}", frozenset(range(low, (top or high) + 1, n)))))
    return st.one_of(forms)


# Day-of-month stays within 1-28 so every month has it; day-of-week never names all seven
# days, where croniter and Vixie cron part ways on which day rule applies.
WEEKDAY_FIELD = st.one_of(
    field(0, 6, steps=False).filter(lambda f: f[0] == "*" or len(f[1]) < 7),
    st.sampled_from([("mon-fri", frozenset({1, 2, 3, 4, 5})), ("sat,sun", frozenset({0, 6})),
                     ("7", frozenset({0}))]),
)


@st.composite
def crons(draw: st.DrawFn, *, every_day: bool = False) -> CronCase:
    minute, hour = draw(field(0, 59)), draw(field(0, 23))
    star = ("*", frozenset())
    day = star if every_day else draw(field(1, 28, top=31))
    month = star if every_day else draw(field(1, 12))
    weekday = star if every_day else draw(WEEKDAY_FIELD)
    return CronCase(
        text=" ".join(f[0] for f in (minute, hour, day, month, weekday)),
        minutes=minute[1], hours=hour[1],
        days=frozenset(range(1, 32)) if day[0] == "*" else day[1],
        months=frozenset(range(1, 13)) if month[0] == "*" else month[1],
        weekdays=frozenset(range(7)) if weekday[0] == "*" else weekday[1],
        days_restricted=day[0] != "*", weekdays_restricted=weekday[0] != "*")


MOMENTS = st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2040, 1, 1)).map(
    lambda moment: moment.replace(tzinfo=UTC))


def moved_out_of_a_gap(instant: datetime, zone: ZoneInfo, case: CronCase) -> bool:
    """Whether ``instant`` ends a spring-forward gap holding a wall time the cron matches."""
    jump = instant.astimezone(zone).utcoffset() - (instant - MINUTE).astimezone(zone).utcoffset()
    if jump <= timedelta(0):
        return False
    gap_end = instant.astimezone(zone).replace(tzinfo=None)
    wall = gap_end - jump
    while wall < gap_end:
        if case.matches(wall):
            return True
        wall += MINUTE
    return False


def expected_fires(case: CronCase, zone: ZoneInfo, after: datetime,
                   until: datetime) -> list[datetime]:
    """Every instant in (after, until] the cron should fire at, found minute by minute.

    An instant fires when its wall clock matches and it is that wall time's first
    occurrence, or when it ends a gap that swallowed a matching wall time.
    """
    instant = after.replace(second=0, microsecond=0) + MINUTE
    fires = []
    while instant <= until:
        local = instant.astimezone(zone)
        if ((local.fold == 0 and case.matches(local.replace(tzinfo=None)))
                or moved_out_of_a_gap(instant, zone, case)):
            fires.append(instant)
        instant += MINUTE
    return fires


@settings(max_examples=200, deadline=None)
@given(case=crons(), zone=st.sampled_from(ZONES), after=MOMENTS)
def test_cron_fires_strictly_after_in_order_on_matching_wall_times(
        case: CronCase, zone: str, after: datetime) -> None:
    cadence = parse_cadence("cron", case.text, zone)
    runs = next_runs(cadence, after, 6)
    assert len(runs) == 6
    assert runs[0] > after
    assert all(earlier < later for earlier, later in zip(runs, runs[1:], strict=False))
    assert [next_run_for_cadence(cadence, moment) for moment in [after, *runs[:-1]]] == runs
    for run in runs:
        assert run.tzinfo is UTC
        wall = run.astimezone(ZoneInfo(zone)).replace(tzinfo=None)
        assert case.matches(wall) or moved_out_of_a_gap(run, ZoneInfo(zone), case), wall


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=crons(every_day=True), transition=st.sampled_from(TRANSITIONS),
       offset_minutes=st.integers(-36 * 60, 12 * 60))
def test_cron_around_a_transition_matches_a_minute_by_minute_scan(
        case: CronCase, transition: tuple[str, str], offset_minutes: int) -> None:
    zone, instant = transition
    after = utc(instant) + timedelta(minutes=offset_minutes, seconds=17)
    until = after + timedelta(hours=48)
    expected = expected_fires(case, ZoneInfo(zone), after, until)
    runs = next_runs(parse_cadence("cron", case.text, zone), after, len(expected) + 1)
    assert runs[:-1] == expected
    assert runs[-1] > until


@settings(max_examples=120, deadline=None)
@given(case=crons())
def test_shortest_cron_gap_matches_the_firing_days_of_a_calendar_cycle(case: CronCase) -> None:
    day, firing_days = datetime(2001, 1, 1), []
    while day < datetime(2029, 2, 1):
        if case.matches(day.replace(hour=min(case.hours), minute=min(case.minutes))):
            firing_days.append(day)
        day += DAY
    times = sorted(h * 3600 + m * 60 for h in case.hours for m in case.minutes)
    gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
    gaps += [(b - a).days * 86_400 - (times[-1] - times[0])
             for a, b in zip(firing_days, firing_days[1:], strict=False)]
    assert shortest_cron_gap_secs(case.text) == min(gaps)


@settings(max_examples=300, deadline=None)
@given(seconds=st.integers(1, 10**8), zone=st.sampled_from(ZONES), after=MOMENTS)
def test_interval_next_is_after_plus_the_duration_exactly(
        seconds: int, zone: str, after: datetime) -> None:
    cadence = parse_cadence("interval", str(seconds), zone)
    step = timedelta(seconds=seconds)
    assert next_run_for_cadence(cadence, after) == after + step
    assert next_runs(cadence, after, 4) == [after + step * n for n in range(1, 5)]
    assert parse_duration(cadence.value) == seconds  # the normalised text means the same


@settings(max_examples=300, deadline=None)
@given(wall=st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2040, 1, 1)),
       zone=st.sampled_from(ZONES), after=MOMENTS)
def test_once_fires_at_its_wall_time_once(wall: datetime, zone: str, after: datetime) -> None:
    wall = wall.replace(microsecond=0)
    cadence = parse_cadence("once", wall.isoformat(), zone)
    instant = next_run_for_cadence(cadence, datetime(1999, 1, 1, tzinfo=UTC))
    assert instant is not None
    local = instant.astimezone(ZoneInfo(zone))
    if local.replace(tzinfo=None) == wall:
        assert local.fold == 0  # a repeated wall time fires at its first occurrence
    else:  # a skipped wall time fires when the gap ends, right after it
        assert local.replace(tzinfo=None) > wall
        assert (instant - timedelta(seconds=1)).astimezone(ZoneInfo(zone)).replace(
            tzinfo=None) < wall
    assert next_runs(cadence, after, 3) == ([instant] if instant > after else [])


CADENCES = st.one_of(
    st.builds(lambda case, zone: parse_cadence("cron", case.text, zone), crons(),
              st.sampled_from(ZONES)),
    st.builds(lambda seconds, zone: parse_cadence("interval", str(seconds), zone),
              st.integers(1, 10**8), st.sampled_from(ZONES)),
    st.builds(lambda moment, zone: parse_cadence("once", moment.isoformat(), zone),
              MOMENTS.map(lambda moment: moment.replace(microsecond=0)), st.sampled_from(ZONES)),
)


@settings(max_examples=200, deadline=None)
@given(cadence=CADENCES)
def test_json_round_trip_and_parsing_is_idempotent(cadence: Cadence) -> None:
    assert Cadence.from_json(cadence.to_json()) == cadence
    assert parse_cadence(cadence.kind, cadence.value, cadence.timezone) == cadence
    assert cadence.describe()


@settings(max_examples=300, deadline=None)
@given(seconds=st.integers(1, 10**9))
def test_format_duration_round_trips(seconds: int) -> None:
    assert parse_duration(format_duration(seconds)) == seconds


CRON_PIECE = st.sampled_from([*"0123456789*/-,#?LWHR@ \u00a0", "mon", "jan"])
CRON_JUNK = st.lists(st.lists(CRON_PIECE, min_size=1, max_size=5).map("".join),
                     min_size=1, max_size=7).map(" ".join)


@settings(max_examples=300, deadline=None)
@given(kind=st.sampled_from(["cron", "once", "interval"]), value=st.one_of(CRON_JUNK, st.text()))
def test_any_text_is_a_cadence_or_a_refusal(kind: str, value: str) -> None:
    try:
        cadence = parse_cadence(kind, value)
    except InvalidCadence:
        return
    runs = next_runs(cadence, datetime(2026, 1, 1, tzinfo=UTC), 2)
    assert kind == "once" or len(runs) == 2  # a once may lie in the past
