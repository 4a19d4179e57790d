"""What a note's fields may hold, checked before anything reaches storage.

Pure functions: each takes what a caller gave and returns the value to store, or raises
``InvalidInput`` naming the field, the limit and what was given. Names, aliases, fact keys
and namespaces are identifiers people read and agents type, so they are held to one rule
(:func:`clean_identifier`).
"""

from __future__ import annotations

import math
import re
import unicodedata
import uuid
from typing import Any

from core.errors import InvalidInput
from core.inputs import MAX_IDENTIFIER_CHARS, shown, visible_text

KINDS = ("Note", "Archive")
CATEGORIES = ("core", "daily", "conversation")
NOTE_SCHEMA_VERSION = 1
"""oxydra's ``schema_version`` of note metadata: a constant, for future migrations."""

DEFAULT_IMPORTANCE = 0.5

_NOTE_ID = re.compile(r"note-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def new_note_id() -> str:
    """A fresh ``note-{uuid}`` (oxydra)."""
    return f"note-{uuid.uuid4()}"


def is_note_id(text: str) -> bool:
    """Whether ``text`` has the shape of a note id (names never do, see :func:`clean_name`)."""
    return _NOTE_ID.fullmatch(text) is not None


def _require_text(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise InvalidInput(f"{what} must be a string, got {type(value).__name__}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInput(f"{what} {shown(value)} is not valid UTF-8 text") from None
    return value


def clean_identifier(value: Any, what: str) -> str:
    """An identifier as stored: NFC, surrounding whitespace removed, non-empty, at most
    :data:`MAX_IDENTIFIER_CHARS`, and held to the identifier rule (no control or invisible
    character, :func:`core.inputs.visible_text`).

    NFC makes the two spellings of "é" one name; look-alikes from other scripts (Cyrillic
    "а", fullwidth "ａ") stay distinct names, as they are distinct text.
    """
    text = unicodedata.normalize("NFC", _require_text(value, what)).strip()
    if not text:
        raise InvalidInput(f"{what} must not be empty")
    if len(text) > MAX_IDENTIFIER_CHARS:
        raise InvalidInput(f"{what} {shown(text)} is {len(text):,} characters; the limit is "
                           f"{MAX_IDENTIFIER_CHARS}")
    return visible_text(text, what)


def clean_name(value: Any, what: str = "name") -> str:
    """A note name or alias; one shaped like a note id is refused, so a reference that looks
    like an id is always an id and never a name."""
    name = clean_identifier(value, what)
    if is_note_id(name):
        raise InvalidInput(f"{what} {shown(name)} has the shape of a note id; choose another")
    return name


def clean_reference(value: Any) -> str:
    """A note id, name or alias, as a lookup key (normalised as names are). It is not held
    to the identifier rule, so a name stored before the rule can still be reached; one
    longer than any name is refused, since it names nothing."""
    text = _require_text(value, "note reference")
    if len(text) > 4 * MAX_IDENTIFIER_CHARS:  # NFC and trimming never shorten more than that
        raise InvalidInput(f"note reference {shown(text)} is {len(text):,} characters; no "
                           f"name is longer than {MAX_IDENTIFIER_CHARS}")
    return unicodedata.normalize("NFC", text).strip()


def clean_content(value: Any) -> str:
    """A note's content, kept exactly as written; blank content is refused, since every note
    must be indexed by at least one chunk to be found by its name and words."""
    text = _require_text(value, "content")
    if not text.strip():
        raise InvalidInput("content must not be blank")
    return text


def clean_kind(value: Any) -> str:
    """"Note" or "Archive" (crabtalk), in any letter case."""
    if isinstance(value, str):
        for kind in KINDS:
            if value.strip().lower() == kind.lower():
                return kind
    raise InvalidInput(f"kind must be one of {', '.join(KINDS)}; got {shown(value)}")


def clean_category(value: Any) -> str:
    """"core", "daily" or "conversation" (pynchy)."""
    if isinstance(value, str) and value.strip().lower() in CATEGORIES:
        return value.strip().lower()
    raise InvalidInput(f"category must be one of {', '.join(CATEGORIES)}; got {shown(value)}")


def clean_importance(value: Any) -> float:
    """A number from 0 to 1 (aidaemon's scale)."""
    if isinstance(value, float) and math.isnan(value):
        raise InvalidInput("importance is NaN, which is not a number; give a number from 0 "
                           "to 1")
    if isinstance(value, bool) or not isinstance(value, int | float) or \
            not math.isfinite(value) or not 0 <= value <= 1:
        raise InvalidInput(f"importance must be a number from 0 to 1; got {shown(value)}")
    return float(value)


def clean_source(value: Any) -> str:
    """Who or what wrote the note (oxydra: the tool's name), at most an identifier long."""
    text = _require_text(value, "source").strip()
    if len(text) > MAX_IDENTIFIER_CHARS:
        raise InvalidInput(f"source is {len(text)} characters; the limit is "
                           f"{MAX_IDENTIFIER_CHARS}")
    return text


def clean_aliases(values: Any, name: str) -> tuple[str, ...]:
    """Aliases cleaned, in first-seen order, without repeats or the note's own name."""
    if values is None:
        return ()
    if isinstance(values, str | bytes):
        raise InvalidInput("aliases must be a list of strings, not a single string")
    try:
        items = list(values)
    except TypeError:
        raise InvalidInput(f"aliases must be a list of strings, got {type(values).__name__}"
                           ) from None
    found: dict[str, None] = {}
    for item in items:
        alias = clean_name(item, "alias")
        if alias != name:
            found.setdefault(alias, None)
    return tuple(found)


def generated_name(content: str, note_id: str, words: int = 6, chars: int = 48) -> str:
    """A readable, unique name for a note saved without one: its first words (at most
    ``words`` and ``chars``) and the first eight hex digits of its id."""
    head = " ".join(content.split()[:words])
    if len(head) > chars:
        head = head[:chars].rsplit(" ", 1)[0] if " " in head[:chars] else head[:chars]
    head = "".join(c for c in head if c.isprintable())
    suffix = note_id.removeprefix("note-")[:8]
    return f"{head} ({suffix})" if head else f"note {suffix}"
