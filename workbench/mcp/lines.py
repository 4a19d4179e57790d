"""What the MCP server makes of one line read from stdin: a message for the protocol, the
JSON-RPC errors that answer it, or nothing (a notification it cannot use, logged).

The ``mcp`` library's stdio transport decodes stdin with ``errors="replace"`` (invalid UTF-8
became U+FFFD and was stored so) and hands a line it cannot validate to the session as an
exception nobody answers: a request holding a lone surrogate, nested deeper than its
parser's limit, malformed, or of a shape it reads as a notification (an id of ``null``,
``1.5`` or ``true``) left the agent waiting forever. Here every line is checked before the
library sees it, and a refused request is answered: -32700 (not JSON, not UTF-8), -32600 (not
a request) or -32602 (its params), with the request's id wherever the line lets it be found,
so an agent always gets its answer. What the library is handed is what it would have
accepted itself; it still answers unknown methods and its own parameter checks.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602

MAX_DEPTH = 64
"""Deepest nesting of arrays and objects a message may have; MCP's own are under 10."""

QUOTE_CHARS = 100
"""At most this many characters of an input are quoted back in a refusal."""

RequestId = int | str


def clip(text: str, limit: int = QUOTE_CHARS) -> str:
    """``text`` as a quoted excerpt of at most ``limit`` characters, saying how long it was."""
    if len(text) <= limit:
        return repr(text)
    return f"{repr(text[:limit])}… ({len(text):,} characters)"


@dataclass(frozen=True)
class Checked:
    """One line's fate: ``message`` goes to the library, ``answers`` back to the agent;
    ``ignored`` says why a line got neither (for stderr)."""

    message: Any = None
    answers: tuple[dict[str, Any], ...] = ()
    ignored: str | None = None


def error_answer(request_id: RequestId | None, code: int, message: str) -> dict[str, Any]:
    """A JSON-RPC error response; ``None`` is the ``null`` id of a request not identified."""
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def _refuse(request_id: RequestId | None, code: int, message: str) -> Checked:
    return Checked(answers=(error_answer(request_id, code, message),))


def valid_id(value: Any) -> RequestId | None:
    """``value`` when it can be a request's id (an integer, or a string that is text)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and _is_text(value):
        return value
    return None


def _is_text(value: str) -> bool:
    """Whether ``value`` is Unicode text: no lone UTF-16 surrogate, which UTF-8 cannot carry."""
    if value.isascii():
        return True
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"'  # a string
                    r"|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?"  # a number
                    r'|[{}\[\]:,]|[^\s"{}\[\]:,]+|"')  # punctuation, a bare word, a lone quote
_INTEGER = re.compile(r"-?\d+")


def recover_id(text: str) -> RequestId | None:
    """The id of the JSON object ``text`` starts, read from its tokens alone, so a line that
    does not parse (truncated, too deep, not UTF-8) can still be answered under its id."""
    tokens = _TOKEN.finditer(text)
    first = next(tokens, None)
    if first is None or first.group() != "{":
        return None
    depth, previous = 1, "{"
    for match in tokens:
        token = match.group()
        if token in "{[":
            depth += 1
        elif token in "}]":
            depth -= 1
            if depth == 0:
                return None
        elif depth == 1 and previous in "{," and token == '"id"':
            colon, value = next(tokens, None), next(tokens, None)
            if colon is None or colon.group() != ":" or value is None:
                return None
            return _id_token(value.group())
        previous = token
    return None


def _id_token(token: str) -> RequestId | None:
    if _INTEGER.fullmatch(token):
        return int(token)
    if token.startswith('"') and token.endswith('"') and len(token) > 1:
        try:
            return valid_id(json.loads(token))
        except ValueError:
            return None
    return None


@dataclass(frozen=True)
class _Fault:
    text: str
    in_params: bool


def _fault(message: dict[str, Any], max_depth: int) -> _Fault | None:
    """What makes a parsed message unusable however it is shaped: nesting beyond
    ``max_depth`` or a string (or key) that is not text; walked without recursion."""
    stack: list[tuple[Any, int, bool]] = [(message, 1, False)]
    while stack:
        value, depth, in_params = stack.pop()
        if isinstance(value, str):
            if not _is_text(value):
                return _Fault(f"a string holds a lone UTF-16 surrogate ({_surrogate(value)}), "
                              "which is not text; send valid Unicode", in_params)
            continue
        if not isinstance(value, dict | list):
            continue
        if depth > max_depth:
            return _Fault(f"the message is nested more than {max_depth} levels deep; MCP "
                          "messages are flat", in_params)
        if isinstance(value, dict):
            for key, item in value.items():
                if not _is_text(key):
                    return _Fault(f"a key holds a lone UTF-16 surrogate ({_surrogate(key)}), "
                                  "which is not text; send valid Unicode",
                                  in_params or (depth == 1 and key == "params"))
                stack.append((item, depth + 1, in_params or (depth == 1 and key == "params")))
        else:
            stack.extend((item, depth + 1, in_params) for item in value)
    return None


def _surrogate(value: str) -> str:
    """The first lone surrogate of ``value``, written as its JSON escape."""
    for char in value:
        if 0xD800 <= ord(char) <= 0xDFFF:
            return f"\\u{ord(char):04x}"
    return "?"


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def check_line(raw: bytes, max_depth: int = MAX_DEPTH) -> Checked:
    """Check one line of stdin (without its newline): parse it strictly and decide."""
    if not raw.strip():
        return Checked(ignored="a blank line")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        return _refuse(recover_id(raw.decode("utf-8", errors="replace")), PARSE_ERROR,
                       f"parse error: the line is not valid UTF-8 (byte 0x{raw[error.start]:02x} "
                       f"at offset {error.start:,}); send the message as UTF-8 JSON")
    try:
        parsed = json.loads(text, parse_constant=_no_constants)
    except RecursionError:
        return _refuse(recover_id(text), INVALID_REQUEST,
                       f"the message is nested more than {max_depth} levels deep; MCP "
                       "messages are flat")
    except ValueError as error:
        return _refuse(recover_id(text), PARSE_ERROR,
                       f"parse error: the line is not JSON ({error}); "
                       "send one JSON-RPC message per line")
    if isinstance(parsed, list):
        return _batch(parsed)
    if not isinstance(parsed, dict):
        return _refuse(None, INVALID_REQUEST, "invalid request: a message is a JSON object, "
                       f"not {clip(text, 40)}")
    return _message(parsed, text, max_depth)


def _batch(items: list[Any]) -> Checked:
    """JSON-RPC batches are not part of MCP: each request in one is refused by its id."""
    refusal = ("invalid request: MCP does not take batches (a JSON array); send each "
               "message on its own line")
    answers = tuple(error_answer(request_id, INVALID_REQUEST, refusal) for item in items
                    if isinstance(item, dict) and "method" in item
                    and (request_id := valid_id(item.get("id"))) is not None)
    return Checked(answers=answers or (error_answer(None, INVALID_REQUEST, refusal),))


def _message(message: dict[str, Any], text: str, max_depth: int) -> Checked:
    from mcp_types import (
        JSONRPCError,
        JSONRPCNotification,
        JSONRPCRequest,
        JSONRPCResponse,
        jsonrpc_message_adapter,
    )
    from pydantic import ValidationError

    method = message.get("method")
    is_request = "method" in message and "id" in message
    request_id = valid_id(message.get("id"))
    what = f"notification {clip(method) if isinstance(method, str) else '(no method)'}"
    fault = _fault(message, max_depth)
    if fault is not None:
        if "method" in message and not is_request:
            return Checked(ignored=f"{what}: {fault.text}")
        code = INVALID_PARAMS if fault.in_params and is_request else INVALID_REQUEST
        prefix = "invalid params" if code == INVALID_PARAMS else "invalid request"
        return _refuse(request_id, code, f"{prefix}: {fault.text}")
    try:
        parsed = jsonrpc_message_adapter.validate_json(text, by_name=False)
    except ValidationError:
        parsed = None
    if is_request:
        if request_id is None:
            return _refuse(None, INVALID_REQUEST, "invalid request: 'id' must be a string or "
                           f"an integer, not {clip(json.dumps(message['id']), 40)}")
        if isinstance(parsed, JSONRPCRequest):
            return Checked(message=parsed)
        return _shape_refusal(message, request_id)
    if "method" in message:
        if isinstance(parsed, JSONRPCNotification):
            return Checked(message=parsed)
        return Checked(ignored=f"{what}: not a valid JSON-RPC notification")
    if isinstance(parsed, JSONRPCResponse | JSONRPCError):
        return Checked(message=parsed)
    return _refuse(request_id, INVALID_REQUEST, "invalid request: a message needs a 'method' "
                   "(a request or notification) or a 'result' or 'error' (a response)")


def _shape_refusal(message: dict[str, Any], request_id: RequestId) -> Checked:
    """The refusal of a request the library would not take, naming its faulty member."""
    if message.get("jsonrpc") != "2.0":
        return _refuse(request_id, INVALID_REQUEST, "invalid request: 'jsonrpc' must be "
                       f"\"2.0\", not {clip(json.dumps(message.get('jsonrpc')), 40)}")
    if not isinstance(message.get("method"), str):
        return _refuse(request_id, INVALID_REQUEST, "invalid request: 'method' must be a string")
    return _refuse(request_id, INVALID_PARAMS, "invalid params: 'params' must be a JSON object")
