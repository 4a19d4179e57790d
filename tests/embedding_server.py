"""A loopback OpenAI-compatible embeddings server for the http backend's tests.

One ``EmbeddingServer`` holds what the handler answers (the vector function, the default
dimension, a ``mode``, ``fail_after``) and what it was asked (``requests``, under ``lock``);
``serve`` runs it on 127.0.0.1 in a daemon thread for the length of a ``with`` block.
``isolate_hub_cache`` keeps the embedding tests away from a real Hugging Face cache.
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

from tests.loopback import loopback


def isolate_hub_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point the Hugging Face cache at an empty folder under ``tmp_path``; that HF_HOME."""
    home = tmp_path / "hf-home"
    monkeypatch.setenv("HF_HOME", str(home))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.delenv("HUGGINGFACE_HUB_CACHE", raising=False)
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
    return home


VectorFn = Callable[[str, int], list[float]]

# What the server does with a POST to <base>/embeddings:
#   ok        answer the vectors
#   error     HTTP 500 with ``error_body``
#   garbage   HTTP 200 with a body that is not JSON
#   redirect  HTTP 307 back to the same path
#   sleep     wait ``sleep_secs`` (past the client's timeout), then answer the vectors
#   wrongdim  answer vectors of ``wrong_dimension`` whatever was asked for
MODES = frozenset({"ok", "error", "garbage", "redirect", "sleep", "wrongdim"})


class EmbeddingServer:
    """State shared with the handler: what to answer and what was asked."""

    def __init__(self, vector: VectorFn, *, dimension: int = 8, base_path: str = "/v1",
                 api_key: str | None = None, error_body: bytes = b"internal error",
                 shuffle: bool = False) -> None:
        self.vector = vector
        self.dimension = dimension  # when the request names no "dimensions"
        self.base_path = base_path  # the url's path; a trailing "/" is kept as given
        self.api_key = api_key  # when set, any other Authorization than none or it gets a 401
        self.error_body = error_body  # the 500's body ("error" mode and after fail_after)
        self.shuffle = shuffle  # shuffle the data before the reversal (the client orders by index)
        self._mode = "ok"
        self.fail_after: int | None = None  # answer HTTP 500 to every request after this many
        self.sleep_secs = 1.0
        self.wrong_dimension = 4
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

    @property
    def auth_headers(self) -> set[str | None]:
        with self.lock:
            return {request["auth"] for request in self.requests}

    def record(self, path: str, body: Any, auth: str | None) -> int:
        """Note one request; how many there have been, this one included."""
        with self.lock:
            self.requests.append({"path": path, "body": body, "auth": auth})
            return len(self.requests)

    def embeddings(self, payload: dict[str, Any], mode: str) -> bytes:
        dim = self.wrong_dimension if mode == "wrongdim" else payload.get("dimensions",
                                                                          self.dimension)
        data = [{"object": "embedding", "index": i, "embedding": self.vector(text, dim)}
                for i, text in enumerate(payload["input"])]
        if self.shuffle:
            random.Random(len(data)).shuffle(data)
        data.reverse()  # the client must order by "index"
        return json.dumps({"object": "list", "data": data}).encode()


def make_handler(state: EmbeddingServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            """Keep test output quiet."""

        def reply(self, status: int, body: bytes) -> None:
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):
                return  # the client gave up first (a timeout test): nobody to answer

        def do_POST(self) -> None:
            payload = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            auth = self.headers.get("Authorization")
            seen = state.record(self.path, payload, auth)
            if self.path != "/v1/embeddings":
                return self.reply(404, b'{"error": "not found"}')
            if state.api_key is not None and auth not in (None, f"Bearer {state.api_key}"):
                return self.reply(401, b'{"error": "bad key"}')
            mode = state.mode
            if state.fail_after is not None and seen > state.fail_after:
                mode = "error"
            if mode == "error":
                return self.reply(500, state.error_body)
            if mode == "garbage":
                return self.reply(200, b"<html>\n  not json\n</html>")
            if mode == "redirect":
                self.send_response(307)
                self.send_header("Location", "/v1/embeddings")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return None
            if mode == "sleep":
                time.sleep(state.sleep_secs)
            return self.reply(200, state.embeddings(payload, mode))

    return Handler


@contextmanager
def serve(state: EmbeddingServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[EmbeddingServer]:
    """Run ``state`` on 127.0.0.1 (any free port), with proxies out of the way, then stop it."""
    with loopback(make_handler(state), monkeypatch) as root:
        state.url = root + state.base_path
        yield state
