"""The demo's vocabulary: its "now", its three agents, and the steps a session's script is
made of (messages, tool calls, pauses, scratchpad writes, compactions, summaries, recalls).

Every time is fixed relative to :data:`ANCHOR`, so the file is the same on every run. The
sessions written with it are in :mod:`workbench.demo.support`, :mod:`workbench.demo.research`
and :mod:`workbench.demo.ops`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

ANCHOR = datetime(2026, 11, 20, 17, 0, tzinfo=UTC)
"""The demo's "now": a Friday afternoon; everything happened in the days before."""

SUPPORT = "support-bot"
RESEARCH = "research-assistant"
OPS = "ops-agent"
AGENTS = (SUPPORT, RESEARCH, OPS)

SALIENT = 0.9
"""Importance of the facts an agent must never lose (an allergy, a deploy rule)."""


def at(day: int, hour: int, minute: int = 0) -> datetime:
    """A moment in November 2026, UTC (the demo's month)."""
    return datetime(2026, 11, day, hour, minute, tzinfo=UTC)


# -- the steps of a session's script -------------------------------------------------------


@dataclass(frozen=True)
class ToolCall:
    """One function call of an assistant turn and the result its tool returned."""

    name: str
    arguments: dict[str, Any]
    result: Any  # JSON-able; stored as the tool message's JSON text


@dataclass(frozen=True)
class ToolStep:
    """An assistant turn that calls tools, followed by one tool message per call."""

    calls: tuple[ToolCall, ...]
    text: str | None = None  # what the assistant says beside the calls, if anything


@dataclass(frozen=True)
class Pause:
    """Time passing in a session with nothing said (the user went away and came back)."""

    minutes: float


@dataclass(frozen=True)
class Scratchpad:
    """The agent rewrites the session's scratchpad at this point."""

    items: tuple[str, ...]


@dataclass(frozen=True)
class Compact:
    """The session is compacted here: its history so far becomes an archive note."""


@dataclass(frozen=True)
class Summarize:
    """A rolling summary is taken here, against a context window of ``token_budget``."""

    token_budget: int


@dataclass(frozen=True)
class Recall:
    """The agent searches its memory; ``judged`` grades results whose text contains a phrase.

    ``scope`` is "session" (this conversation) or "namespace" (everything the agent has).
    """

    query: str
    scope: str = "session"
    judged: tuple[tuple[str, int], ...] = ()


Step = dict[str, Any] | ToolStep | Pause | Scratchpad | Compact | Summarize | Recall


@dataclass(frozen=True)
class Session:
    """One conversation of one agent, as a script that starts at ``start``."""

    session_id: str
    agent: str
    start: datetime
    script: tuple[Step, ...]


def _message(role: str, text: str, importance: float | None,
             tags: tuple[str, ...], name: str | None) -> dict[str, Any]:
    message: dict[str, Any] = {"role": role, "content": text}
    if name:
        message["name"] = name
    if importance is not None:
        message["importance"] = importance
    if tags:
        message["metadata"] = {"tags": list(tags)}
    return message


def user(text: str, *, importance: float | None = None, tags: tuple[str, ...] = (),
         name: str | None = None) -> dict[str, Any]:
    """A user turn."""
    return _message("user", text, importance, tags, name)


def assistant(text: str, *, importance: float | None = None,
              tags: tuple[str, ...] = ()) -> dict[str, Any]:
    """An assistant turn in words."""
    return _message("assistant", text, importance, tags, None)


def system(text: str, *, importance: float | None = None) -> dict[str, Any]:
    """A system message (the agent's instructions, or an event it is told of)."""
    return _message("system", text, importance, (), None)


def tool(name: str, arguments: dict[str, Any], result: Any, *,
         text: str | None = None) -> ToolStep:
    """An assistant turn calling one tool, with the tool's result."""
    return ToolStep((ToolCall(name, arguments, result),), text)


def tools(*calls: ToolCall, text: str | None = None) -> ToolStep:
    """An assistant turn calling several tools at once (parallel tool calls)."""
    return ToolStep(calls, text)
