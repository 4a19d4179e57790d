"""LangChain messages as our Message dicts, and back.

A LangGraph agent keeps its conversation as LangChain messages in the ``messages`` channel
of its state; the engine stores, indexes and shows Message dicts (``role``, ``content``,
``tool_calls``, ``tool_call_id``, ``tool_name``). The message's own id and LangChain type
travel in ``metadata`` (``langgraph_id``, ``langgraph_type``), so the app and retrieval can
name them and :func:`to_langchain` can give the same message back.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from typing import Any

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    convert_to_messages,
)

ID_KEY = "langgraph_id"
"""The metadata key holding the LangChain message's id."""
TYPE_KEY = "langgraph_type"
"""The metadata key holding the LangChain message's type (``human``, ``ai``, ``tool``...)."""

# LangChain's message types by the role we store them under; a type not named here (a
# custom ChatMessage role) is stored as what its own role says, else as a user message.
_ROLE_OF_TYPE = {"human": "user", "ai": "assistant", "tool": "tool", "system": "system",
                 "function": "tool", "developer": "system"}


def content_text(content: Any) -> str:
    """A message's content as text: a string as is, a list's text parts joined by newlines
    (images and other parts carry no text to index)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts: list[str] = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append(part["text"])
        return "\n".join(parts)
    return "" if content is None else str(content)


def message_key(message: BaseMessage) -> str:
    """What identifies a message across checkpoints: its id, or for a message without one a
    digest of its type and content (the same message repeated stays one message)."""
    if message.id:
        return str(message.id)
    body = json.dumps([message.type, message.content], sort_keys=True, default=str)
    return "sha256:" + hashlib.sha256(body.encode("utf-8", "surrogatepass")).hexdigest()


def as_messages(value: object) -> list[BaseMessage] | None:
    """The messages a ``messages`` channel holds (LangChain messages, or what
    ``convert_to_messages`` takes: dicts, (role, text) pairs, strings); None for anything
    else, so a state whose ``messages`` is not a conversation (or a channel's stand-in
    value) is neither stored nor read as one that lost every message."""
    if not isinstance(value, list | tuple):
        return None
    if all(isinstance(item, BaseMessage) for item in value):
        return list(value)
    try:
        return list(convert_to_messages(value))  # type: ignore[arg-type]
    except (ValueError, TypeError, NotImplementedError):
        return None


def to_message(message: BaseMessage) -> dict[str, Any]:
    """The Message dict a LangChain message is stored as."""
    role = _ROLE_OF_TYPE.get(message.type)
    if role is None:
        own = getattr(message, "role", "")
        role = own if own in ("user", "assistant", "tool", "system") else "user"
    stored: dict[str, Any] = {"role": role, "content": content_text(message.content)}
    if isinstance(message, AIMessage) and message.tool_calls:
        stored["tool_calls"] = [
            {"id": call.get("id") or "", "type": "function",
             "function": {"name": call["name"] or "tool",
                          "arguments": json.dumps(call.get("args") or {}, ensure_ascii=False,
                                                  default=str)}}
            for call in message.tool_calls]
    if isinstance(message, ToolMessage):
        stored["tool_call_id"] = message.tool_call_id
    if role == "tool" and message.name:
        stored["tool_name"] = message.name
    elif message.name:
        stored["name"] = message.name
    stored["metadata"] = {ID_KEY: message_key(message), TYPE_KEY: message.type}
    return stored


def to_langchain(stored: dict[str, Any]) -> BaseMessage:
    """The LangChain message a stored Message dict stands for (its id and type from
    ``metadata`` when it came from LangGraph)."""
    metadata = stored.get("metadata") or {}
    message_id = metadata.get(ID_KEY)
    content = stored.get("content") or ""
    role = stored.get("role")
    if role == "assistant":
        calls = [{"id": call.get("id") or None, "name": call["function"]["name"],
                  "args": _arguments(call["function"].get("arguments")), "type": "tool_call"}
                 for call in stored.get("tool_calls") or []]
        return AIMessage(content=content, tool_calls=calls, id=message_id,
                         name=stored.get("name"))
    if role == "tool":
        return ToolMessage(content=content, tool_call_id=stored.get("tool_call_id") or "",
                           name=stored.get("tool_name"), id=message_id)
    if role == "system":
        return SystemMessage(content=content, id=message_id, name=stored.get("name"))
    return HumanMessage(content=content, id=message_id, name=stored.get("name"))


def _arguments(arguments: object) -> dict[str, Any]:
    """A tool call's arguments as the dict LangChain keeps (text that is not a JSON object
    is kept under ``"input"``)."""
    if isinstance(arguments, dict):
        return arguments
    if isinstance(arguments, str):
        try:
            parsed = json.loads(arguments)
        except ValueError:
            return {"input": arguments}
        return parsed if isinstance(parsed, dict) else {"input": parsed}
    return {}


def keys_of(messages: Iterable[BaseMessage]) -> list[str]:
    """Each message's key, in order."""
    return [message_key(message) for message in messages]
