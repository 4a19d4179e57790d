"""Items of a key-value store (LangGraph's ``BaseStore``) as notes, and back.

An item is (namespace tuple, key, JSON object). It becomes a note of one agent namespace:

- **name**: the tuple's labels and the key joined by ``/`` (``users/123/prefs``), which is
  what the Notes pane lists. A character the note name rule would change or refuse (``/``
  and ``%`` themselves, control and invisible characters, whitespace at either end of a
  part, text NFC would recompose) is written ``%XX`` per UTF-8 byte, so the name is
  readable and still decodes to exactly the tuple and key (:func:`item_name`,
  :func:`parse_item_name`).
- **content**: the value as indented JSON, read back with ``json.loads``; only what JSON
  holds exactly is accepted (:func:`item_content`).
- **source** ``langgraph``: what marks a note as a store item, so a note the agent or a
  person wrote under the same name is never read, overwritten or deleted as one.
- **tags**: the tuple's paths from the root (``users``, ``users/123``), lower-cased, as far
  as the tag limits allow; a search under a prefix filters on its tag in SQL.
- **note id**: ``note-`` and 32 hex digits, a stamp of when the item's tuple got its first
  item followed by a stamp of when the item was created (each 64 bits: milliseconds and
  random low bits, strictly increasing in a process). Sorting ids orders items as an
  in-memory dict does: tuple by tuple, each in insertion order (:func:`item_note_id`).

Pure functions, with no framework import, so importers use them as well as the store.
"""

from __future__ import annotations

import json
import math
import secrets
import threading
import unicodedata
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from core.clock import now
from core.errors import InvalidInput
from core.inputs import MAX_IDENTIFIER_CHARS, shown

if TYPE_CHECKING:
    from core.types import Note

SOURCE = "langgraph"
"""The source of every note that is a store item."""

_ESCAPED = frozenset("%/")
_INVISIBLE = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp", "Co", "Cn"})
_MAX_DEPTH = 100
_STAMP_RANDOM_BITS = 20


def _quote(char: str) -> str:
    return "".join(f"%{byte:02X}" for byte in char.encode("utf-8"))


def _encode_part(text: str, what: str) -> str:
    """One label or key as a name part (see the module docstring)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInput(f"{what} {shown(text)} holds a lone surrogate, which is not valid "
                           "UTF-8 text") from None
    last = len(text) - 1
    out = []
    for index, char in enumerate(text):
        if (char in _ESCAPED or unicodedata.category(char) in _INVISIBLE
                or (char.isspace() and index in (0, last))):
            out.append(_quote(char))
        else:
            out.append(char)
    encoded = "".join(out)
    if unicodedata.normalize("NFC", encoded) != encoded:
        encoded = "".join(_quote(c) if ord(c) > 0x7F else c for c in encoded)
    return encoded


def _decode_part(part: str) -> str:
    """A name part as the label or key it encodes."""
    if "%" not in part:
        return part
    data = bytearray()
    index = 0
    while index < len(part):
        if part[index] == "%" and _is_hex(part[index + 1:index + 3]):
            data.append(int(part[index + 1:index + 3], 16))
            index += 3
        else:
            data.extend(part[index].encode("utf-8"))
            index += 1
    return data.decode("utf-8", errors="replace")


def _is_hex(text: str) -> bool:
    return len(text) == 2 and all(c in "0123456789abcdefABCDEF" for c in text)


def namespace_path(labels: Sequence[str]) -> str:
    """A namespace tuple's path: its encoded labels joined by ``/`` (empty for ``()``)."""
    return "/".join(_encode_part(label, "namespace label") for label in labels)


def item_name(labels: Sequence[str], key: str) -> str:
    """The note name of the item ``key`` of namespace ``labels``; ``InvalidInput`` when it is
    longer than a note name may be."""
    name = f"{namespace_path(labels)}/{_encode_part(key, 'key')}"
    if len(name) > MAX_IDENTIFIER_CHARS:
        raise InvalidInput(
            f"namespace {shown(tuple(labels))} and key {shown(key)} make the note name "
            f"{shown(name)}, {len(name):,} characters; the limit is {MAX_IDENTIFIER_CHARS}: "
            "use shorter labels or keys")
    return name


def parse_item_name(name: str) -> tuple[tuple[str, ...], str] | None:
    """The (namespace tuple, key) a store item's note name encodes; None for a name that
    encodes none (no ``/``: a note renamed by hand)."""
    parts = name.split("/")
    if len(parts) < 2 or not all(parts[:-1]):
        return None
    return tuple(_decode_part(part) for part in parts[:-1]), _decode_part(parts[-1])


def prefix_tags(labels: Sequence[str], max_tags: int, max_chars: int) -> list[str]:
    """The tags of an item in namespace ``labels``: each path from the root, lower-cased,
    while it fits the tag limits (a longer one is left out, and so are all deeper ones)."""
    tags: list[str] = []
    for depth in range(1, min(len(labels), max_tags) + 1):
        tag = namespace_path(labels[:depth]).lower()
        if len(tag) > max_chars or tag != tag.strip():
            break
        tags.append(tag)
    return tags


def search_tag(labels: Sequence[str], max_tags: int, max_chars: int) -> str | None:
    """The tag every item under the prefix ``labels`` carries (its deepest path that is a
    tag), or None when there is none (the root, or a first label too long to be one)."""
    tags = prefix_tags(labels, max_tags, max_chars)
    return tags[-1] if tags else None


def item_content(value: Any, where: str) -> str:
    """A store value as a note's content: indented JSON of a dict with string keys and
    values JSON holds exactly (str, int, finite float, bool, None, list, dict); anything
    else is ``InvalidInput`` naming where in the value it is."""
    if not isinstance(value, Mapping):
        raise InvalidInput(f"the value of {where} must be a dict, got {type(value).__name__}")
    _check_json(value, "value", 0, where)
    return json.dumps(dict(value), ensure_ascii=False, indent=2, allow_nan=False)


def _check_json(value: Any, path: str, depth: int, where: str) -> None:
    if depth > _MAX_DEPTH:
        raise InvalidInput(f"{path} of {where} is nested more than {_MAX_DEPTH} levels deep")
    if value is None or isinstance(value, bool | int):
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidInput(f"{path} of {where} is {value!r}, which JSON cannot hold; "
                               "store a finite number or null")
        return
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidInput(f"{path} of {where} holds a lone surrogate, which is not "
                               "valid UTF-8 text") from None
        return
    if isinstance(value, list | tuple):
        for index, item in enumerate(value):
            _check_json(item, f"{path}[{index}]", depth + 1, where)
        return
    if isinstance(value, Mapping):
        for key, item in value.items():
            if not isinstance(key, str):
                raise InvalidInput(f"{path} of {where} has the key {shown(key)} "
                                   f"({type(key).__name__}); JSON object keys are strings")
            _check_json(item, f"{path}[{key[:40]!r}]", depth + 1, where)
        return
    raise InvalidInput(f"{path} of {where} is a {type(value).__name__}, which is not JSON "
                       "(str, number, bool, None, list or dict); convert it before storing")


def item_value(content: str, name: str) -> dict[str, Any]:
    """A store item's value from its note's content; ``InvalidInput`` when the content is no
    longer a JSON object (edited by hand)."""
    try:
        value = json.loads(content)
    except ValueError:
        value = None
    if not isinstance(value, dict):
        raise InvalidInput(f"note {shown(name)} is a LangGraph store item but its content is "
                           "not a JSON object any more; fix or remove the note")
    return value


class _Stamps:
    """Strictly increasing 64-bit stamps: milliseconds since the epoch and random low bits."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last = 0

    def next(self) -> int:
        moment = int(now().timestamp() * 1000)
        fresh = (moment << _STAMP_RANDOM_BITS) | secrets.randbits(_STAMP_RANDOM_BITS)
        with self._lock:
            self._last = max(self._last + 1, fresh)
            return self._last


_stamps = _Stamps()


def new_stamp() -> int:
    """A stamp later than every earlier one of this process."""
    return _stamps.next()


def item_note_id(namespace_stamp: int, item_stamp: int | None = None) -> str:
    """A store item's note id: its tuple's stamp, then its own (a new one when None)."""
    digits = f"{namespace_stamp:016x}{new_stamp() if item_stamp is None else item_stamp:016x}"
    return (f"note-{digits[:8]}-{digits[8:12]}-{digits[12:16]}-{digits[16:20]}-"
            f"{digits[20:]}")


def namespace_stamp(note_id: str) -> int:
    """The tuple stamp an item's note id starts with."""
    digits = note_id.removeprefix("note-").replace("-", "")
    return int(digits[:16], 16)


def ordered(notes: Sequence[Note]) -> list[tuple[tuple[str, ...], str, Note]]:
    """Store-item notes as (namespace tuple, key, note) in insertion order: tuples by their
    earliest stamp (the tuple's first item, even when two writers stamped it at once), then
    each item by its id. A note whose name encodes no item is left out."""
    first: dict[tuple[str, ...], int] = {}
    parsed = []
    for note in notes:
        found = parse_item_name(note.name)
        if found is None:
            continue
        stamp = namespace_stamp(note.note_id)
        first[found[0]] = min(first.get(found[0], stamp), stamp)
        parsed.append((found[0], found[1], note))
    parsed.sort(key=lambda item: (first[item[0]], item[2].note_id))
    return parsed
