"""Plain-text helpers every front end shares (the app's panes and the CLI): counts, clipped
lines, stored timestamps. No Textual import, so the CLI can use them."""

from __future__ import annotations


def count(number: int, noun: str) -> str:
    """``1 item``, ``2 items``, ``1,024 items``."""
    return f"{number:,} {noun}{'' if number == 1 else 's'}"


def one_line(text: str, width: int) -> str:
    """``text`` on one line (runs of white space as one space), cut to ``width`` with "…"."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[:width - 1] + "…"


def short_time(timestamp: str | None) -> str:
    """An engine timestamp (``2026-05-04T12:00:00.000Z``) as ``2026-05-04 12:00`` (UTC)."""
    return f"{timestamp[:10]} {timestamp[11:16]}" if timestamp else ""
