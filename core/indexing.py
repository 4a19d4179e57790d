"""Pure functions of the message storage pipeline (oxydra "Message Storage Pipeline").

Nothing here does I/O: the storage layer validates a payload with :func:`validate_message`,
pulls its searchable text with :func:`extract_indexable_text`, cleans it with
:func:`normalize_text`, cuts it with :func:`chunk_text` and keys each chunk by
:func:`content_hash` for deduplication. Notes use :func:`normalize_tags` (oxydra "Note
Metadata"), and :func:`default_importance` gives aidaemon's per-role scores.

NUL characters: a payload may contain ``"\\x00"`` in any string. ``json.dumps`` escapes it as
``\\u0000`` so the stored ``payload_json`` text holds no raw NUL and the message is restored
byte for byte; :func:`normalize_text` removes it (with every other control character except
newline and tab) so it never reaches a chunk, the FTS index or an embedding model.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import unicodedata
from collections.abc import Iterable
from typing import Any

from core import inputs
from core.config import ImportanceConfig
from core.errors import InvalidInput, InvalidMessage

ROLES = ("user", "assistant", "tool", "system")

MAX_DEPTH = 64
"""Deepest nesting of lists and dicts a payload may have; the message dict itself is level 1."""

# SQLite's JSON functions read integers outside 64 bits as lossy REALs, and Python refuses to
# print ints of more than 4300 digits, so such a number could not round-trip: refuse it.
_INT_MIN, _INT_MAX = -(2**63), 2**63 - 1

_OPTIONAL_STRINGS = ("tool_call_id", "tool_name", "name")


# --------------------------------------------------------------------------------------------
# validation


def _short(value: Any, limit: int = 40) -> str:
    """A repr short enough for an error message."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _child(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if key.isidentifier() else f"{path}[{key!r}]"


def _check_utf8(text: str, path: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        bad = text[exc.start]
        raise InvalidMessage(
            f"{path} contains a lone surrogate {bad!r} at index {exc.start}, which cannot be "
            "encoded as UTF-8"
        ) from None


def _copy_json(value: Any, path: str, depth: int) -> Any:
    """A plain-JSON deep copy of ``value``, refusing what ``json.dumps`` would not round-trip."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str):
        _check_utf8(value, path)
        return value
    if isinstance(value, int):
        if not _INT_MIN <= value <= _INT_MAX:
            raise InvalidMessage(f"{path} is an integer outside the signed 64-bit range")
        return int(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidMessage(f"{path} is {value!r}; JSON has no NaN or Infinity")
        return float(value)
    if isinstance(value, dict | list | tuple):
        if depth > MAX_DEPTH:
            shown = path if len(path) <= 80 else path[:79] + "…"
            raise InvalidMessage(
                f"message is nested deeper than {MAX_DEPTH} levels (at {shown}); "
                "a cycle also ends here"
            )
        if isinstance(value, dict):
            copy: dict[str, Any] = {}
            for key, item in value.items():
                if not isinstance(key, str):
                    raise InvalidMessage(
                        f"{path} has a key of type {type(key).__name__} ({_short(key)}); "
                        "keys must be strings"
                    )
                _check_utf8(key, f"a key of {path}")
                copy[key] = _copy_json(item, _child(path, key), depth + 1)
            return copy
        return [_copy_json(item, _child(path, i), depth + 1) for i, item in enumerate(value)]
    raise InvalidMessage(
        f"{path} is a {type(value).__name__}; only JSON values (str, int, float, bool, None, "
        "list, dict) are allowed"
    )


def _type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _check_content(message: dict[str, Any]) -> None:
    content = message.get("content")
    if content is None or isinstance(content, str):
        return
    if not isinstance(content, list):
        raise InvalidMessage(
            "message.content must be a string, null or a list of parts; "
            f"got {_type_name(content)}"
        )
    for i, part in enumerate(content):
        where = f"message.content[{i}]"
        if not isinstance(part, dict):
            raise InvalidMessage(
                f'{where} must be a dict like {{"type": "text", "text": "…"}}; '
                f"got {_type_name(part)}"
            )
        if not isinstance(part.get("type"), str):
            raise InvalidMessage(f"{where}.type must be a string; got {_short(part.get('type'))}")
        if part["type"] == "text" and not isinstance(part.get("text"), str):
            got = _type_name(part.get("text"))
            raise InvalidMessage(f'{where}.text must be a string in a "text" part; got {got}')


def _check_tool_calls(message: dict[str, Any]) -> None:
    calls = message.get("tool_calls")
    if calls is None:
        return
    if not isinstance(calls, list):
        raise InvalidMessage(f"message.tool_calls must be a list; got {_type_name(calls)}")
    for i, call in enumerate(calls):
        where = f"message.tool_calls[{i}]"
        if not isinstance(call, dict):
            raise InvalidMessage(f"{where} must be a dict; got {_type_name(call)}")
        if not isinstance(call.get("id"), str):
            raise InvalidMessage(f"{where}.id must be a string; got {_short(call.get('id'))}")
        # OpenAI has only ever defined "function"; a missing type means that one.
        call.setdefault("type", "function")
        if call["type"] != "function":
            raise InvalidMessage(f'{where}.type must be "function"; got {_short(call["type"])}')
        function = call.get("function")
        if not isinstance(function, dict):
            raise InvalidMessage(f"{where}.function must be a dict; got {_type_name(function)}")
        name = function.get("name")
        if not isinstance(name, str) or not name:
            raise InvalidMessage(
                f"{where}.function.name must be a non-empty string; got {_short(name)}"
            )
        # Invalid JSON text is kept as is: the call happened, and its raw text is still indexed.
        if "arguments" in function and not isinstance(function["arguments"], str | dict):
            raise InvalidMessage(
                f"{where}.function.arguments must be a JSON string or a dict; "
                f"got {_type_name(function['arguments'])}"
            )


_LONG_DIGITS = re.compile(rb"[0-9]{19}")


def _fast_copy(payload: dict[str, Any]) -> dict[str, Any] | None:
    """A deep copy through the C JSON codec when it provably equals the checking walk's copy.

    None whenever the fast path cannot vouch for the payload (non-string keys, tuples, deep
    or bracket-heavy text, long integers, surrogates, NaN, cycles): the walk then runs and
    names the exact problem. Typical messages take this path at a fraction of the cost.
    """
    try:
        text = json.dumps(payload, ensure_ascii=False, allow_nan=False)
        encoded = text.encode("utf-8")
    except (TypeError, ValueError, RecursionError, UnicodeEncodeError):
        return None
    # Every level of nesting needs a bracket, so this many brackets bounds the depth.
    if text.count("{") + text.count("[") > MAX_DEPTH or _LONG_DIGITS.search(encoded):
        return None
    copy = json.loads(text)
    # Equality fails for int keys coerced to strings and tuples turned to lists.
    return copy if copy == payload else None


def validate_message(payload: object) -> dict[str, Any]:
    """A normalised deep copy of a Message dict, or InvalidMessage saying exactly what is wrong.

    The copy is plain JSON (tuples become lists, int/float subclasses plain numbers), always
    has a ``content`` key (``None`` when absent), has ``"type": "function"`` on every tool call,
    and a float ``importance`` when one is given. Optional keys set to ``None`` count as absent;
    unknown keys are kept.
    """
    if not isinstance(payload, dict):
        raise InvalidMessage(
            f"a message must be a dict with at least a 'role' key, got {type(payload).__name__}"
        )
    message = _fast_copy(payload)
    if message is None:
        message = _copy_json(payload, "message", 1)

    role = message.get("role")
    if role not in ROLES:
        got = "it is missing" if "role" not in message else f"got {_short(role)}"
        raise InvalidMessage(f"message.role must be one of {', '.join(ROLES)}; {got}")
    message.setdefault("content", None)
    _check_content(message)
    _check_tool_calls(message)
    for key in _OPTIONAL_STRINGS:
        value = message.get(key)
        if value is not None and not isinstance(value, str):
            raise InvalidMessage(f"message.{key} must be a string; got {_type_name(value)}")
    importance = message.get("importance")
    if importance is not None:
        if isinstance(importance, bool) or not isinstance(importance, int | float):
            raise InvalidMessage(
                f"message.importance must be a number from 0 to 1; got {_short(importance)}"
            )
        if not 0 <= importance <= 1:
            raise InvalidMessage(
                f"message.importance must be from 0 to 1; got {importance!r}"
            )
        message["importance"] = float(importance)
    metadata = message.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        raise InvalidMessage(f"message.metadata must be a dict; got {_type_name(metadata)}")
    return message


# --------------------------------------------------------------------------------------------
# text extraction and normalisation


def _string_values(value: Any) -> list[str]:
    """Every string inside a JSON value, depth first in document order, keys excluded."""
    found: list[str] = []
    # An explicit stack, since parsed tool arguments are not depth-checked like payloads.
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            found.append(item)
        elif isinstance(item, dict):
            stack.extend(reversed(list(item.values())))
        elif isinstance(item, list):
            stack.extend(reversed(item))
    return found


def extract_indexable_text(message: dict[str, Any]) -> str:
    """The searchable text of a message: its text content, then each tool call's name and
    argument string values, joined by newlines (oxydra ``extract_indexable_payload``).

    Non-text content parts add nothing; tool arguments that are not valid JSON are indexed as
    their raw text. Malformed pieces are skipped rather than refused, so stored payloads written
    by older versions can still be indexed.
    """
    pieces: list[str] = []
    # The participant's name (OpenAI's ``name``) is part of what was said: "what did Ann
    # say about X" must find Ann's turns, not the turns that mention her.
    name = message.get("name")
    speaker = (name.strip() if isinstance(name, str) and message.get("role") in
               ("user", "assistant") else "")
    content = message.get("content")
    if isinstance(content, str):
        pieces.append(content)
    elif isinstance(content, list):
        for part in content:
            if isinstance(part, dict) and part.get("type") == "text":
                text = part.get("text")
                if isinstance(text, str):
                    pieces.append(text)
    calls = message.get("tool_calls")
    for call in calls if isinstance(calls, list) else ():
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict):
            continue
        if isinstance(function.get("name"), str):
            pieces.append(function["name"])
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except (ValueError, RecursionError):
                pieces.append(arguments)
                continue
        pieces.extend(_string_values(arguments))
    text = "\n".join(piece for piece in pieces if piece.strip())
    return f"{speaker}: {text}" if speaker and text else text


# Line separators other than \n become \n, so removing controls never glues two lines together.
_LINE_BREAKS = re.compile(r"\r\n|[\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
# The remaining C0/C1 controls (tab and newline excepted) and lone surrogates, which no UTF-8
# consumer (SQLite, FTS5, the tokenizer) accepts.
_CONTROLS = re.compile(r"[\x00-\x08\x0e-\x1f\x7f-\x84\x86-\x9f\ud800-\udfff]")
# Only what changes is matched (a lone space is left alone), which keeps typical text fast.
_BLANKS = re.compile(r"[ \t]{2,}|\t")
_EDGE_BLANKS = re.compile(r" \n ?|\n ")
_MANY_NEWLINES = re.compile(r"\n{3,}")


# Printable ASCII with single spaces and at most one blank line needs nothing but a strip.
_NEEDS_WORK = re.compile(r"[^\x20-\x7e\n]|  | \n|\n |\n\n\n")


def normalize_text(text: str) -> str:
    """Text ready for chunking: NFKC, no control characters but newline and tab, runs of
    spaces and tabs as one space, at most one blank line in a row, stripped.
    """
    if not _NEEDS_WORK.search(text):
        return text.strip()
    if not text.isascii():  # ASCII text is already in NFKC
        text = unicodedata.normalize("NFKC", text)
    text = _LINE_BREAKS.sub("\n", text)
    text = _CONTROLS.sub("", text)
    text = _BLANKS.sub(" ", text)
    text = _EDGE_BLANKS.sub("\n", text)
    text = _MANY_NEWLINES.sub("\n\n", text)
    return text.strip()


# --------------------------------------------------------------------------------------------
# chunking

# A sentence ends at . ! ? … (plus closing quotes/brackets) before whitespace, or at a CJK full
# stop, which needs no space after it.
_SENTENCE_END = re.compile(r"[.!?…][\"'”’)\]]*(?=\s)|[。！？][」』”’)）]*")
_WORD_START = re.compile(r"\s(?=\S)")


def _is_boundary(text: str, cut: int) -> bool:
    """Whether cutting before ``text[cut]`` separates two words."""
    return text[cut].isspace() or text[cut - 1].isspace()


def _find_cut(text: str, start: int, first_new: int, max_chars: int) -> tuple[int, bool] | None:
    """Where the chunk beginning at ``start`` ends, and whether that cut splits a word.

    The chunk must take in ``text[first_new]``, the first character no earlier chunk covered.
    In the back half of the window a paragraph break beats a sentence end, which beats a line
    break, which beats a space; failing those, the last word boundary anywhere. None when the
    only way to take in ``first_new`` is to split a word that would fit a chunk of its own.
    """
    limit = start + max_chars  # text[limit] exists: the caller only cuts when text is longer
    low = max(start + max_chars // 2, first_new + 1)
    if low <= limit:
        paragraph = text.rfind("\n\n", low, limit + 2)
        if paragraph != -1:
            return paragraph, False
        sentence = -1
        for match in _SENTENCE_END.finditer(text, max(start, low - 8), limit + 1):
            if low <= match.end() <= limit:
                sentence = match.end()
        if sentence != -1:
            return sentence, False
        line = text.rfind("\n", low, limit + 1)
        if line != -1:
            return line, False
    for cut in range(limit, first_new, -1):
        if _is_boundary(text, cut):
            return cut, False
    if any(ch.isspace() for ch in text[start : limit + 1]):
        return None
    # The window lies inside one word longer than max_chars: the only case a word is split.
    return limit, True


def chunk_spans(text: str, max_chars: int = 640, overlap: int = 96) -> list[tuple[int, int]]:
    """The ``(start, end)`` offsets into ``text`` of the chunks :func:`chunk_text` returns.

    Chunks never begin or end with whitespace, neighbours share up to ``overlap`` characters
    starting at a word boundary, and every non-whitespace character lies in some chunk.
    """
    if max_chars < 1 or not 0 <= overlap < max_chars:
        raise ValueError(f"need max_chars >= 1 and 0 <= overlap < max_chars; "
                         f"got max_chars={max_chars}, overlap={overlap}")
    stripped = text.lstrip()
    start = len(text) - len(stripped)
    stop = len(text.rstrip())
    if start >= stop:
        return []
    spans: list[tuple[int, int]] = []
    first_new = start  # first character not yet in any chunk
    while stop - start > max_chars:
        found = _find_cut(text, start, first_new, max_chars)
        if found is None:
            # The overlap would force a split word; start this chunk without overlap instead.
            start = first_new
            continue
        end, split_word = found
        while text[end - 1].isspace():
            end -= 1
        spans.append((start, end))
        if split_word:
            # Already inside an over-long word: overlap there by exactly `overlap` characters.
            first_new, start = end, end - overlap
            continue
        first_new = end
        while text[first_new].isspace():
            first_new += 1
        start = first_new
        if overlap:
            match = _WORD_START.search(text, max(end - overlap, spans[-1][0] + 1) - 1, end)
            if match is not None:
                start = match.end()
    spans.append((start, stop))
    return spans


def chunk_text(text: str, max_chars: int = 640, overlap: int = 96) -> list[str]:
    """Cut text into chunks of at most ``max_chars`` sharing ``overlap`` characters with their
    neighbours (oxydra step 6), preferring paragraph, sentence, line and word boundaries.

    Surrounding whitespace is ignored: blank text gives ``[]`` and text that fits gives
    ``[text.strip()]`` (normalised text is already stripped). A word is split only when it is
    longer than ``max_chars``. The result depends on nothing but the arguments.
    """
    return [text[start:end] for start, end in chunk_spans(text, max_chars, overlap)]


# Between the earlier messages' texts in a chunk's stored context: a control character, which
# normalize_text removes from every text, so a context splits back into its parts exactly.
CONTEXT_SEPARATOR = "\x1e"


def content_hash(text: str) -> str:
    """The sha256 hex digest of the UTF-8 text, the key chunks are deduplicated by."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# --------------------------------------------------------------------------------------------
# notes and importance


def normalize_tags(tags: Iterable[str] | None, max_tags: int = 16,
                   max_chars: int = 64) -> list[str]:
    """Note tags trimmed, lower-cased, without blanks or duplicates, in first-seen order.

    Over-long tags, too many tags and tags holding a control or invisible character once
    trimmed (the identifier rule, :func:`core.inputs.visible_text`) are refused with
    InvalidInput rather than silently cut, so the caller learns its tag was not stored as
    given (oxydra "Note Metadata"). A blank tag is dropped, as a repeat is: it carries
    nothing to store.
    """
    if tags is None:
        return []
    if isinstance(tags, str | bytes):
        raise InvalidInput(f"tags must be a list of strings, got a single {type(tags).__name__}")
    try:
        items = list(tags)
    except TypeError:
        raise InvalidInput(f"tags must be a list of strings, got {type(tags).__name__}") from None
    result: list[str] = []
    seen: set[str] = set()
    for index, item in enumerate(items, 1):  # numbered as a person counts them
        if not isinstance(item, str):
            raise InvalidInput(f"tag {index} is a {type(item).__name__}; tags must be strings")
        try:
            item.encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidInput(f"tag {_short(item)} is not valid UTF-8 text") from None
        tag = item.strip().lower()
        if not tag or tag in seen:
            continue
        if len(tag) > max_chars:
            shown = tag if len(tag) <= 24 else tag[:23] + "…"
            raise InvalidInput(f"tag {shown!r} is {len(tag)} characters; the limit is "
                               f"{max_chars}")
        inputs.visible_text(tag, f"tag {index}")
        seen.add(tag)
        result.append(tag)
    if len(result) > max_tags:
        raise InvalidInput(f"{len(result)} tags given; the limit is {max_tags}")
    return result


def default_importance(role: str, defaults: ImportanceConfig) -> float:
    """aidaemon's importance of a message by its role, for payloads that set none."""
    if role not in ROLES:
        raise InvalidMessage(f"message.role must be one of {', '.join(ROLES)}; got {_short(role)}")
    return float(getattr(defaults, role))
