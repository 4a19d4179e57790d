"""Agents SDK items as our Message dicts.

An Agents SDK session holds Responses API input items (plain JSON dicts): messages, function
calls and their outputs, reasoning, and other tools' calls. The engine stores, indexes and
shows Message dicts, so each item becomes one: a message keeps its role and the text of its
content parts; a function call is an assistant message with one tool call and its output a
tool message answering it (the Sessions pane folds them as it folds any tool call); reasoning
is an assistant message of its summary's text. Any other item is shown by its type and the
text it holds. The item's type travels in ``metadata`` (``kind``); the item itself is kept
byte for byte elsewhere (``framework_items.raw_json``), so nothing here needs to be lossless.

Pure Python: importing this module does not import the SDK.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

KIND_KEY = "kind"
"""The metadata key holding the item's type (``message``, ``function_call``, ...)."""
ID_KEY = "agents_item_id"
"""The metadata key holding the item's own ``id``, when it has one."""

_ROLES = {"user": "user", "assistant": "assistant", "system": "system",
          "developer": "system"}
_TEXT_CHARS = 4000  # of an unknown item's strings shown as its text


def to_message(item: Mapping[str, Any]) -> dict[str, Any]:
    """The Message dict an Agents SDK item is stored as."""
    kind = str(item.get("type") or "message")
    role = item.get("role")
    message: dict[str, Any]
    if kind == "message" and isinstance(role, str) and role in _ROLES:
        message = {"role": _ROLES[role], "content": content_text(item.get("content"))}
    elif kind in ("function_call", "custom_tool_call"):
        arguments = item.get("arguments", item.get("input"))
        message = {"role": "assistant", "content": None, "tool_calls": [{
            "id": _text(item.get("call_id")), "type": "function",
            "function": {"name": _text(item.get("name")) or "tool",
                         "arguments": _text(arguments)}}]}
    elif kind.endswith("_call_output"):
        message = {"role": "tool", "content": content_text(item.get("output")),
                   "tool_call_id": _text(item.get("call_id"))}
    elif kind == "reasoning":
        message = {"role": "assistant", "content": content_text(item.get("summary"))}
    else:
        message = {"role": "assistant", "content": _other_text(kind, item)}
    metadata: dict[str, Any] = {KIND_KEY: kind}
    if isinstance(item.get("id"), str):
        metadata[ID_KEY] = item["id"]
    message["metadata"] = metadata
    if isinstance(message.get("content"), str):
        message["content"] = _clean(message["content"])
    return message


def content_text(content: Any) -> str:
    """A content's text: a string as is; a list's parts' text (or refusal) joined by
    newlines; an image or file part by what names it."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return "" if content is None else _text(content)
    parts: list[str] = []
    for part in content:
        if isinstance(part, str):
            parts.append(part)
        elif isinstance(part, dict):
            for key in ("text", "refusal"):
                if isinstance(part.get(key), str):
                    parts.append(part[key])
                    break
            else:
                name = part.get("filename") or part.get("file_id") or part.get("type")
                if isinstance(name, str):
                    parts.append(f"[{name}]")
    return "\n".join(parts)


def _other_text(kind: str, item: Mapping[str, Any]) -> str:
    """An item of no known shape as a line of text: its type, then the strings it holds."""
    strings: list[str] = []
    stack: list[Any] = [value for key, value in item.items() if key not in ("type", "id")]
    stack.reverse()
    while stack and sum(len(s) for s in strings) < _TEXT_CHARS:
        value = stack.pop()
        if isinstance(value, str) and value:
            strings.append(value)
        elif isinstance(value, dict):
            stack.extend(reversed(list(value.values())))
        elif isinstance(value, list):
            stack.extend(reversed(value))
    return f"[{kind}] " + " ".join(strings)[:_TEXT_CHARS]


def _text(value: Any) -> str:
    return _clean(value if isinstance(value, str) else "" if value is None else str(value))


def _clean(text: str) -> str:
    """Text our events can hold: no NUL (PostgreSQL text holds none) and no lone surrogate
    (not UTF-8); the item keeps them, byte for byte, in its raw JSON."""
    return text.replace("\x00", "").encode("utf-8", "replace").decode("utf-8")
