"""Dates in a query and on a message, for the date boost (``retrieval.date_boost``).

A question that names a time ("in June", "on May 23, 2023", "in 2023", "last week") is
mostly answered by what was said in that time. A message's date is the one its metadata
carries (``session_date`` or ``date``), else the day of its own time (``created_at``, the
UTC day, as stored with its chunk; a note's chunk is stamped when it is indexed, which is not
when the note was written, so notes are dated by their metadata only); a query's period
is read from its words, a relative one ("last month", "yesterday", a month without a year)
counted back from the latest message date among the candidates: the conversation's "now".
Only candidates already found are dated, so the boost costs no I/O.
"""

from __future__ import annotations

import calendar
import datetime as dt
import functools
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from core.retrieval.boosts import CACHED_METADATA_CHARS
from core.storage.vocabulary import MEMORY_PREFIX

if TYPE_CHECKING:
    from core.storage.rows import ChunkRow

_MONTHS = {name.lower(): number for number, name in enumerate(calendar.month_name) if name}
_FULL_MONTHS = frozenset(_MONTHS)
_MONTHS.update({name.lower(): number for number, name in enumerate(calendar.month_abbr)
                if name})
_MONTH = "(" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\b\.?"
# "8 May, 2023", "May 8, 2023", "May 2023", "May 8", "June" (day and year optional).
_QUERY_DATE = re.compile(
    rf"\b(?:(\d{{1,2}})(?:st|nd|rd|th)?\s+)?{_MONTH}(?:\s+(\d{{1,2}})(?:st|nd|rd|th)?\b)?"
    r",?(?:\s+(\d{4})\b)?", re.IGNORECASE)
_YEAR = re.compile(r"\b(?:in|during|of)\s+((?:19|20)\d\d)\b", re.IGNORECASE)
_RELATIVE = re.compile(r"\b(yesterday|last\s+(?:week|month|year))\b", re.IGNORECASE)
_ISO = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})")
_SPOKEN = re.compile(rf"\b(\d{{1,2}})\s+{_MONTH},?\s+(\d{{4}})\b", re.IGNORECASE)
_WRITTEN = re.compile(rf"\b{_MONTH}\s+(\d{{1,2}}),?\s+(\d{{4}})\b", re.IGNORECASE)
DATE_KEYS = ("session_date", "date")


@dataclass(frozen=True)
class Period:
    """The days a query names, first and last included, and the words that named them."""

    first: dt.date
    last: dt.date
    words: str

    def holds(self, day: dt.date) -> bool:
        """Whether ``day`` falls in the period."""
        return self.first <= day <= self.last

    def describe(self) -> dict[str, str]:
        """The period as explain shows it."""
        return {"words": self.words, "from": self.first.isoformat(),
                "to": self.last.isoformat()}


def message_date(chunk: ChunkRow) -> dt.date | None:
    """A fetched chunk's message's date: the one its metadata names, if one can be read,
    else the day of its ``created_at``; None when it has neither."""
    raw = chunk.metadata_json
    if raw and any(f'"{key}"' in raw for key in DATE_KEYS):
        day = _cached_date(raw) if len(raw) <= CACHED_METADATA_CHARS else _dated_in(raw)
        if day is not None:
            return day
    if chunk.session_id.startswith(MEMORY_PREFIX):
        return None
    return _stored_day(chunk.created_at)


def _stored_day(created_at: Any) -> dt.date | None:
    """The UTC day of a stored time (``YYYY-MM-DDTHH:MM:SS.mmmZ``, or SQLite's
    ``CURRENT_TIMESTAMP`` in an old file's rows); None for none or another shape."""
    if not isinstance(created_at, str):
        return None
    try:
        return dt.date.fromisoformat(created_at[:10])
    except ValueError:
        return None


def _dated_in(raw: str) -> dt.date | None:
    """The date in a message's metadata JSON, as :func:`message_date` reads it."""
    metadata = json.loads(raw)
    for key in DATE_KEYS:
        value = metadata.get(key)
        if isinstance(value, str) and (day := parse_date(value)) is not None:
            return day
    return None


# The same candidates come back query after query: parsing a few hundred metadata objects
# and their dates again took ~3.6 ms of a query naming a time (boosts.py caches the same way).
_cached_date = functools.lru_cache(maxsize=4096)(_dated_in)


def parse_date(text: str) -> dt.date | None:
    """A calendar date written as ISO ("2023-05-08…"), "8 May, 2023" (LoCoMo's "1:56 pm on
    8 May, 2023") or "May 8, 2023"; None when there is none or it is no real day."""
    try:
        if match := _ISO.search(text):
            return dt.date(int(match[1]), int(match[2]), int(match[3]))
        if match := _SPOKEN.search(text):
            return dt.date(int(match[3]), _MONTHS[match[2].lower()], int(match[1]))
        if match := _WRITTEN.search(text):
            return dt.date(int(match[3]), _MONTHS[match[1].lower()], int(match[2]))
    except ValueError:  # 31 June and the like
        return None
    return None


def names_a_time(query: str) -> bool:
    """Whether the query may name a period (a cheap test before dating any candidate)."""
    return bool(_RELATIVE.search(query) or _YEAR.search(query) or _QUERY_DATE.search(query))


def query_period(query: str, now: dt.date) -> Period | None:
    """The period a query names, relative words counted back from ``now``; None if none."""
    if match := _RELATIVE.search(query):
        words = " ".join(match[1].lower().split())
        if words == "yesterday":
            day = now - dt.timedelta(days=1)
            return Period(day, day, match[0])
        if words == "last week":
            return Period(now - dt.timedelta(days=7), now, match[0])
        if words == "last month":
            return Period(now - dt.timedelta(days=31), now, match[0])
        return Period(now - dt.timedelta(days=365), now, match[0])
    for match in _QUERY_DATE.finditer(query):
        day_text, month_text, after_day, year_text = match.groups()
        month = _MONTHS[month_text.lower()]
        day_number = day_text or after_day
        # "may" and "march" are verbs too and "jan" a name: alone, they name no time.
        alone = not (day_number or year_text)
        if alone and (month_text.lower() in ("may", "march")
                      or month_text.lower() not in _FULL_MONTHS):
            continue
        year = int(year_text) if year_text else now.year if month <= now.month else now.year - 1
        try:
            if day_number:
                day = dt.date(year, month, int(day_number))
                return Period(day, day, match[0].strip())
            return Period(dt.date(year, month, 1),
                          dt.date(year, month, calendar.monthrange(year, month)[1]),
                          match[0].strip())
        except ValueError:
            continue
    if match := _YEAR.search(query):
        year = int(match[1])
        return Period(dt.date(year, 1, 1), dt.date(year, 12, 31), match[0])
    return None


def candidate_dates(chunks: Mapping[str, ChunkRow]) -> dict[str, dt.date]:
    """chunk_id -> its message's date, for the candidates that carry one."""
    dated = {}
    for chunk_id, chunk in chunks.items():
        day = message_date(chunk)
        if day is not None:
            dated[chunk_id] = day
    return dated
