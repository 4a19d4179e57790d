"""A loopback HTTP server for tests: any handler class on 127.0.0.1, proxies out of the way."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest


@contextmanager
def loopback(handler: type[BaseHTTPRequestHandler],
             monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Serve ``handler`` on 127.0.0.1 (any free port) in a daemon thread; yields the root URL
    ("http://127.0.0.1:PORT") and stops the server on exit."""
    for name in ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05},
                              daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(5)
