"""Checks for values callers hand the engine, shared by the modules where they enter.

SQLite stores text as UTF-8 and integers in 64 bits, so a lone surrogate (``"\\ud800"``, as
broken JSON decoders produce) or a 70-bit integer fails deep in the driver, as a
``UnicodeEncodeError`` or ``OverflowError`` naming nothing the caller gave. These checks
refuse such a value where it enters, as ``InvalidInput`` naming the field, before anything
is written. :func:`shown` puts any value into a message on one printable line, cut, so a
refusal never echoes a megabyte back.

Identifiers (note names, tags, session ids, namespaces, schedule names) are held to one
rule, :func:`visible_text`: no control or invisible character. A tab, a newline or a NUL in
a name is a bug in whatever produced it, and a zero-width space or a bidi override makes two
different names look alike. Text that reaches a parser or a loop (a query, a cadence) has a
length limit, so no input costs more than the limit's worth of work.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

from core.errors import InvalidInput

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
MAX_SESSION_ID_CHARS = 1000
"""A session id is an identifier, stored with every event and chunk of its session."""
MAX_QUERY_CHARS = 10_000
"""Longest query text. Its LIKE pattern is then at most 40,002 bytes (a character is at most
four bytes of UTF-8, an escaped wildcard two), under SQLite's 50,000-byte limit on a LIKE
pattern; a query's words beyond the first few thousand add nothing to a ranking anyway."""

# Control (Cc), format (Cf: zero-width space and joiners, BOM, bidi overrides), surrogate
# (Cs) and the line and paragraph separators (Zl, Zp: U+2028, U+2029).
_INVISIBLE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})


def shown(value: Any, limit: int = 60) -> str:
    """``repr(value)`` cut to ``limit`` characters: one line, control characters escaped."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def utf8_text(value: Any, what: str) -> str:
    """``value`` when it is a string SQLite can store, else ``InvalidInput`` naming ``what``."""
    if not isinstance(value, str):
        raise InvalidInput(f"{what} must be a string, got {type(value).__name__}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInput(f"{what} {shown(value)} contains a lone surrogate at index "
                           f"{exc.start}, which is not valid UTF-8 text") from None
    return value


def visible_text(value: Any, what: str) -> str:
    """``value`` when it is a string holding no control or invisible character, else
    ``InvalidInput`` naming ``what``, the character and where it is: the identifier rule."""
    if not isinstance(value, str):
        raise InvalidInput(f"{what} must be a string, got {type(value).__name__}")
    for index, char in enumerate(value):
        category = unicodedata.category(char)
        if category in _INVISIBLE_CATEGORIES:
            if category == "Cs":
                raise InvalidInput(f"{what} {shown(value)} holds a lone surrogate at index "
                                   f"{index}, which is not valid UTF-8 text")
            kind = "control" if category == "Cc" else "invisible"
            raise InvalidInput(f"{what} {shown(value)} holds the {kind} character "
                               f"U+{ord(char):04X} at index {index}; {what} must be visible "
                               "text, without control or invisible characters")
    return value


MAX_IDENTIFIER_CHARS = 200
"""Longest note name, alias, fact category or key, or namespace, in characters."""


def clean_namespace(value: Any) -> str:
    """A namespace as given (it is an agent identity: exact, never trimmed or normalised),
    held to the identifier rule (:func:`identifier`). Every layer that takes a namespace
    (storage's roles, retrieval, conversations, the framework adapters, notes) checks it
    here."""
    return identifier(value, "namespace", MAX_IDENTIFIER_CHARS)


def identifier(value: Any, what: str, limit: int) -> str:
    """``value`` exactly as given when it is an identifier: visible text (:func:`visible_text`),
    not blank, at most ``limit`` characters; else ``InvalidInput`` naming ``what``."""
    if isinstance(value, str) and len(value) > limit:  # before the scan: a limit bounds it
        raise InvalidInput(f"{what} {shown(value)} is {len(value):,} characters; the limit is "
                           f"{limit}")
    if not visible_text(value, what).strip():
        raise InvalidInput(f"{what} must not be empty or blank; got {shown(value)}")
    return value


def session_id(value: Any) -> str:
    """A session id, as a new one is held to: an :func:`identifier` of at most
    :data:`MAX_SESSION_ID_CHARS` characters."""
    return identifier(value, "session_id", MAX_SESSION_ID_CHARS)


def query_text(value: Any, what: str = "query") -> str:
    """Text to search for: valid UTF-8, at most :data:`MAX_QUERY_CHARS` characters."""
    text = utf8_text(value, what)
    if len(text) > MAX_QUERY_CHARS:
        raise InvalidInput(f"{what} is {len(text):,} characters; the limit is "
                           f"{MAX_QUERY_CHARS:,}: search for its key words instead")
    return text


def int64(value: Any, what: str) -> int:
    """An integer SQLite can store (signed 64-bit); bools are not integers here."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInput(f"{what} must be an integer, got {type(value).__name__}")
    if not INT64_MIN <= value <= INT64_MAX:
        raise InvalidInput(f"{what} {shown(value, 30)} is outside the signed 64-bit range")
    return value


def within_size(text: str, what: str, limit_kb: int) -> str:
    """``text`` when its UTF-8 form is at most ``limit_kb`` KiB, else ``InvalidInput`` giving
    the size and the limit in one line (``storage.max_content_kb``: what an agent gives is
    indexed, embedded or matched, so an unbounded one stalls every writer behind it)."""
    limit = limit_kb * 1024
    if len(text) * 4 <= limit:  # no UTF-8 character is longer than 4 bytes
        return text
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > limit:
        raise InvalidInput(f"{what} is {size:,} bytes, over the limit of {limit_kb:,} KB "
                           f"({limit:,} bytes, storage.max_content_kb)")
    return text


_UNPRINTABLE = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")


def one_line(text: str, limit: int = 300) -> str:
    """Text for a message (e.g. a driver's, quoting what was typed) on one printable line:
    line breaks, control characters and lone surrogates escaped, cut to ``limit``."""
    escaped = _UNPRINTABLE.sub(lambda match: ascii(match.group())[1:-1], text)
    return escaped if len(escaped) <= limit else escaped[: limit - 1] + "…"


_UTC_OFFSET = re.compile(r"(?:[Zz]|[+-]\d{2}:?\d{2})$")
_TIME_EXAMPLE = "2024-05-01T12:00:00Z or 2024-05-01T14:00:00+02:00"


def message_time(value: Any, what: str = "created_at") -> str | None:
    """A message's own time as the engine writes times (``YYYY-MM-DDTHH:MM:SS.mmmZ``, UTC);
    None for None (the caller stamps it now).

    Takes ISO-8601 text with ``Z`` or an offset, or a timezone-aware ``datetime``. A time
    without a zone is refused rather than guessed: read as the server's zone or as UTC, it
    would shift every date the date boost reads by the writer's offset. ``InvalidInput``
    names the field and quotes the value (at most ~100 characters).
    """
    import datetime

    from core.clock import normalise_timestamp

    if value is None:
        return None
    if isinstance(value, datetime.datetime):
        if value.utcoffset() is None:
            raise InvalidInput(f"{what} {shown(value, 100)} has no UTC offset; give a "
                               "timezone-aware datetime (tzinfo=datetime.UTC, or the writer's "
                               "zone)")
        try:
            value = value.astimezone(datetime.UTC).isoformat()
        except OverflowError:
            raise InvalidInput(f"{what} {shown(value, 100)} is outside the years 1-9999 "
                               "in UTC") from None
    if not isinstance(value, str):
        raise InvalidInput(f"{what} {shown(value, 100)} is a {type(value).__name__}, not a "
                           f"time: give ISO-8601 text with a UTC offset ({_TIME_EXAMPLE}) "
                           "or a timezone-aware datetime")
    try:
        stored = normalise_timestamp(value)
    except ValueError:
        raise InvalidInput(f"{what} {shown(value, 100)} is not an ISO-8601 date and time; "
                           f"give one with a UTC offset, e.g. {_TIME_EXAMPLE}") from None
    if not _UTC_OFFSET.search(value.strip()):
        raise InvalidInput(f"{what} {shown(value, 100)} has no UTC offset; add the zone it "
                           f"was written in, e.g. {_TIME_EXAMPLE}")
    return stored
