"""Timestamps as the engine writes them: RFC 3339, UTC, millisecond precision.

One format everywhere keeps ``ORDER BY updated_at`` correct as plain text comparison.
"""

from __future__ import annotations

from datetime import UTC, datetime


def utc_now() -> str:
    """The current time as ``YYYY-MM-DDTHH:MM:SS.mmmZ``."""
    return format_utc(datetime.now(UTC))


def format_utc(moment: datetime) -> str:
    """A datetime as the engine's timestamp text (naive datetimes are taken as UTC)."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
