"""A loopback OpenAI-compatible chat server for the http summarizer's tests.

One ``ChatServer`` holds what the handler answers (``answer``, a ``mode``) and what it was asked
(``requests``, under ``lock``); ``serve`` runs it on 127.0.0.1 in a daemon thread for the length
of a ``with`` block.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest

from tests.loopback import loopback

# What the server does with a POST to <base>/chat/completions:
#   ok        answer ``answer``
#   error     HTTP 500 with a plain body
#   garbage   HTTP 200 with a body that is not JSON
#   missing   HTTP 200 with JSON that has no "choices"
#   slow      wait ``sleep_secs`` (past the client's timeout), then answer ``answer``
#   redirect  HTTP 307 back to the same path
#   echo_key  HTTP 401 whose body repeats the Authorization header it was sent
#   long      answer ``answer`` repeated ``long_repeats`` times, one copy per line
#   empty     answer an empty message content
MODES = frozenset({"ok", "error", "garbage", "missing", "slow", "redirect", "echo_key", "long",
                   "empty"})

DEFAULT_ANSWER = "- user #1: Alice moved to Lyon in March 2019."


class ChatServer:
    """State shared with the handler: what to answer and what was asked."""

    def __init__(self, *, answer: str = DEFAULT_ANSWER, base_path: str = "/v1") -> None:
        self.answer = answer
        self.base_path = base_path
        self.sleep_secs = 1.0
        self.long_repeats = 200
        self._mode = "ok"
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self.url = ""

    @property
    def mode(self) -> str:
        return self._mode

    @mode.setter
    def mode(self, value: str) -> None:
        if value not in MODES:
            raise ValueError(f"unknown mode {value!r}; one of {sorted(MODES)}")
        self._mode = value

    def record(self, path: str, body: Any, auth: str | None) -> None:
        with self.lock:
            self.requests.append({"path": path, "body": body, "auth": auth})

    def completion(self, content: str | None) -> bytes:
        """A chat completion whose first choice says ``content``."""
        message = {"role": "assistant", "content": content}
        return json.dumps({"id": "chatcmpl-test", "object": "chat.completion",
                           "choices": [{"index": 0, "message": message,
                                        "finish_reason": "stop"}]}).encode()

    def content(self, mode: str) -> str:
        if mode == "long":
            return "\n".join([self.answer] * self.long_repeats)
        return "" if mode == "empty" else self.answer


def make_handler(state: ChatServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            """Keep test output quiet."""

        def reply(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):
                return  # the client gave up first (a timeout test): nobody to answer

        def do_POST(self) -> None:
            payload = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            auth = self.headers.get("Authorization")
            state.record(self.path, payload, auth)
            if self.path != state.base_path.rstrip("/") + "/chat/completions":
                return self.reply(404, b'{"error": "not found"}')
            mode = state.mode
            if mode == "error":
                return self.reply(500, b"internal error")
            if mode == "garbage":
                return self.reply(200, b"<html>\n  not json\n</html>")
            if mode == "missing":
                return self.reply(200, b'{"object": "chat.completion"}')
            if mode == "redirect":
                return self.reply(307, b"", {"Location": self.path})
            if mode == "echo_key":
                return self.reply(401, f'{{"error": "invalid header {auth}"}}'.encode())
            if mode == "slow":
                time.sleep(state.sleep_secs)
            return self.reply(200, state.completion(state.content(mode)))

    return Handler


@contextmanager
def serve(state: ChatServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[ChatServer]:
    """Run ``state`` on 127.0.0.1 (any free port), with proxies out of the way, then stop it."""
    with loopback(make_handler(state), monkeypatch) as root:
        state.url = root + state.base_path
        yield state
