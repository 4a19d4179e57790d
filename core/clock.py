"""Timestamps as the engine writes them: RFC 3339, UTC, millisecond precision.

One format everywhere keeps ``ORDER BY updated_at`` correct as plain text comparison.
Every "now" of the engine comes from :func:`now`, so a demo can write a week of history
and a snapshot test can render the same times on every run (:func:`frozen`).
"""

from __future__ import annotations

import contextlib
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
