"""Wall-clock times to instants in a time zone, across daylight-saving changes.

croniter walks *naive* wall-clock times, where every day has 24 hours; each one is turned
into an instant here with zoneinfo. A wall time the clocks skip names the end of the gap
(the instant they jump); a wall time that happens twice names its first occurrence.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from croniter import CroniterBadDateError, croniter


def cron_fire_times(expression: str, zone: ZoneInfo, after: datetime) -> Iterator[datetime]:
    """A cron's fire times after ``after``: its matching wall times, each turned into an instant.

    croniter is given naive wall-clock times, on which it never applies daylight-saving
    rules of its own; :func:`instant_of_wall_time` resolves each one. Starting from the
    wall time of ``after`` misses no fire: a wall time at or before it names an instant at
    or before ``after``. The instants never decrease, so skipping those not after the last
    one drops both the repeats (several skipped wall times all landing on the end of the
    gap) and the wall times that already fired, when ``after`` is in a repeated hour.
    """
    wall_times = croniter(expression, after.astimezone(zone).replace(tzinfo=None))
    latest = after
    while True:
        try:
            wall_time = wall_times.get_next(datetime)
        except (CroniterBadDateError, OverflowError):
            return  # no matching date left, or none before the year 9999
        instant = instant_of_wall_time(wall_time, zone)
        if instant > latest:
            latest = instant
            yield instant


def instant_of_wall_time(wall_time: datetime, zone: ZoneInfo) -> datetime:
    """The UTC instant a naive local wall time names in ``zone``.

    A wall time that happens twice names its first occurrence (``fold=0``); one the clocks
    skip names the end of the gap, the instant they jump.
    """
    instant = wall_time.replace(tzinfo=zone, fold=0).astimezone(UTC)
    if instant.astimezone(zone).replace(tzinfo=None) == wall_time:
        return instant
    return _end_of_gap(wall_time, zone)


def _end_of_gap(skipped_wall_time: datetime, zone: ZoneInfo) -> datetime:
    """The instant the clocks jump over ``skipped_wall_time``, to the second.

    Read with the offset after the jump (``fold=1``), the skipped time lands before the
    jump; with the offset before it (``fold=0``), after. The jump lies between, where the
    offset changes, and a bisection on whole seconds finds it (zone rules are in seconds).
    """
    before = int(skipped_wall_time.replace(tzinfo=zone, fold=1).timestamp())
    after = int(skipped_wall_time.replace(tzinfo=zone, fold=0).timestamp())
    offset_after_jump = datetime.fromtimestamp(after, zone).utcoffset()
    while after - before > 1:
        middle = (before + after) // 2
        if datetime.fromtimestamp(middle, zone).utcoffset() == offset_after_jump:
            after = middle
        else:
            before = middle
    return datetime.fromtimestamp(after, UTC)
