"""Timestamps as the engine writes them: RFC 3339, UTC, millisecond precision.

One format everywhere keeps ``ORDER BY updated_at`` correct as plain text comparison.
Every "now" of the engine comes from :func:`now`, so a demo can write a week of history
and a snapshot test can render the same times on every run (:func:`frozen`).
"""

from __future__ import annotations

import contextlib
import re
import threading
from collections.abc import Iterator
from datetime import UTC, datetime

_lock = threading.Lock()
_fixed: datetime | None = None


def now() -> datetime:
    """The engine's current time, timezone-aware UTC (the real clock unless frozen)."""
    fixed = _fixed
    return datetime.now(UTC) if fixed is None else fixed


def utc_now() -> str:
    """The current time as ``YYYY-MM-DDTHH:MM:SS.mmmZ``."""
    return format_utc(now())


def format_utc(moment: datetime) -> str:
    """A datetime as the engine's timestamp text (naive datetimes are taken as UTC)."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


# What normalise_timestamp reads: a date, ``T`` (or a space, as SQLite writes), a time to the
# second with an optional fraction, and an optional ``Z`` or offset. fromisoformat alone
# would also take dates without a time, week dates and any separator character.
_TIMESTAMP = re.compile(
    r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:[Zz]|[+-]\d{2}:?\d{2})?")


def normalise_timestamp(text: object) -> str:
    """A timestamp from elsewhere as the engine's text (``YYYY-MM-DDTHH:MM:SS.mmmZ``).

    Reads RFC 3339 / ISO 8601 date-times with ``Z`` or an offset
    (``2024-05-01T14:00:00.5+02:00``) and SQLite's ``CURRENT_TIMESTAMP`` form
    (``2024-05-01 12:00:00``); one without a zone is taken as UTC, as SQLite's are.
    Fractions past milliseconds are truncated, as :func:`format_utc` does. ``ValueError``
    naming the value when it is anything else (not a string, a date alone, a leap second).
    """
    stripped = text.strip() if isinstance(text, str) else ""
    try:
        if not _TIMESTAMP.fullmatch(stripped):
            raise ValueError("not this shape")
        if stripped[-1] in "Zz":
            stripped = stripped[:-1] + "+00:00"
        moment = datetime.fromisoformat(stripped)
        if moment.tzinfo is not None:
            moment = moment.astimezone(UTC).replace(tzinfo=None)
    except (ValueError, OverflowError):
        raise ValueError(f"{text!r:.80} is not a timestamp: give RFC 3339 "
                         "(2024-05-01T12:00:00Z, or with an offset) or YYYY-MM-DD HH:MM:SS "
                         "(UTC)") from None
    # isoformat, not strftime: it keeps four year digits before the year 1000.
    return moment.isoformat(timespec="milliseconds") + "Z"


def set_time(moment: datetime | None) -> None:
    """Freeze the engine's clock at ``moment`` (naive is UTC); None lets it run again."""
    global _fixed
    if moment is not None and moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    with _lock:
        _fixed = None if moment is None else moment.astimezone(UTC)


@contextlib.contextmanager
def frozen(moment: datetime) -> Iterator[None]:
    """Run a block with the engine's clock stopped at ``moment``, then restore it."""
    previous = _fixed
    set_time(moment)
    try:
        yield
    finally:
        set_time(previous)
