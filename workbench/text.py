"""Plain-text helpers every front end shares (the app's panes, the CLI, the benches): counts,
clipped lines, stored timestamps, JSON. No Textual import, so the CLI can use them."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from typing import Any


def count(number: int, noun: str) -> str:
    """``1 item``, ``2 items``, ``1,024 items``."""
    return f"{number:,} {noun}{'' if number == 1 else 's'}"


def one_line(text: str, width: int) -> str:
    """``text`` on one line (runs of white space as one space), cut to ``width`` with "…"."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[:width - 1] + "…"


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """``header`` and ``rows`` as lines of left-aligned columns two spaces apart."""
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    return ["  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
            for row in [header, *rows]]


def short_time(timestamp: str | None) -> str:
    """An engine timestamp (``2026-05-04T12:00:00.000Z``) as ``2026-05-04 12:00`` (UTC)."""
    return f"{timestamp[:10]} {timestamp[11:16]}" if timestamp else ""


def call_signature(function: dict[str, Any]) -> str:
    """``name(key=value, …)`` of a tool call's function, its arguments as JSON values."""
    name = str(function.get("name") or "?")
    arguments = function.get("arguments")
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except (ValueError, RecursionError):
            return f"{name}({arguments})"
    if isinstance(arguments, dict):
        shown = ", ".join(f"{key}={json.dumps(value, ensure_ascii=False)}"
                          for key, value in arguments.items())
    else:
        shown = "" if arguments is None else json.dumps(arguments, ensure_ascii=False)
    return f"{name}({shown})"


def text_content(payload: dict[str, Any]) -> str:
    """A message's text: its string content, or its text parts with other parts named."""
    content = payload.get("content")
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    pieces = []
    for part in content:
        if isinstance(part, dict) and part.get("type") == "text":
            pieces.append(str(part.get("text") or ""))
        else:
            kind = part.get("type") if isinstance(part, dict) else type(part).__name__
            pieces.append(f"[{kind}]")
    return "\n".join(pieces)


def tool_names(records: Sequence[Any]) -> dict[str, str]:
    """Tool call id -> the function it called, so a tool result can name its tool."""
    names = {}
    for record in records:
        for call in record.payload.get("tool_calls") or ():
            function = call.get("function") if isinstance(call, dict) else None
            if isinstance(function, dict) and call.get("id"):
                names[str(call["id"])] = str(function.get("name") or "?")
    return names


def to_json(value: Any) -> str:
    """``value`` (a dataclass, a dict, a list) as indented JSON text."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = dataclasses.asdict(value)
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)
