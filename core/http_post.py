"""One JSON POST to an endpoint that holds a secret: the embeddings' http backend, the http
summarizer and the schedule webhook all go through it, via urllib only.

The secret is sent in the Authorization header and nowhere else. Redirects are refused
(urllib would resend the header to the new host), and every message built here is redacted
before it is cut, so a server echoing the secret back cannot leak it, not even in part.
Failures raise :class:`PostFailed` with a one-line reason; callers wrap it in their own error
("POST <url>: <reason>") so nothing from the request reaches a traceback unredacted.
"""

from __future__ import annotations

import http.client
import json
import urllib.error
import urllib.request
from typing import Any

from core.embeddings import short_reason

EXCERPT_CHARS = 200


class PostFailed(Exception):
    """The POST got no usable answer; ``str()`` is the redacted reason."""

    def __init__(self, reason: str, *, timed_out: bool = False) -> None:
        super().__init__(reason)
        self.timed_out = timed_out


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Refuses redirects: urllib would resend the Authorization header to the new host."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


class SecretPost:
    """POSTs JSON to ``url`` with ``secret`` as a Bearer token (none when empty)."""

    def __init__(self, url: str, secret: str, timeout: float) -> None:
        self.url = url
        self.timeout = timeout
        self._secret = secret
        self._opener = urllib.request.build_opener(_NoRedirect())

    def redact(self, text: str) -> str:
        """``text`` with the secret replaced by ``***``."""
        return text.replace(self._secret, "***") if self._secret else text

    def one_line(self, text: str) -> str:
        """Redacted, whitespace collapsed, cut to :data:`EXCERPT_CHARS` (redacted first, so a
        cut can never leave part of the secret behind)."""
        return " ".join(self.redact(text).split())[:EXCERPT_CHARS]

    def post(self, body: Any, *, max_bytes: int = -1) -> tuple[int, bytes]:
        """(status, body) of a 2xx answer, read up to ``max_bytes`` (+1, so a caller can tell
        it was cut); ``PostFailed`` for anything else."""
        headers = {"Content-Type": "application/json", "Accept": "application/json",
                   "User-Agent": "memory-workbench"}
        if self._secret:
            headers["Authorization"] = f"Bearer {self._secret}"
        timed_out = f"timed out after {self.timeout:g} s"
        # Chained exceptions are dropped (``from None``): the reason is in the message.
        try:
            request = urllib.request.Request(self.url, data=json.dumps(body).encode("utf-8"),
                                             headers=headers, method="POST")
            with self._opener.open(request, timeout=self.timeout) as response:
                return response.status, response.read(max_bytes if max_bytes < 0
                                                      else max_bytes + 1)
        except urllib.error.HTTPError as exc:
            moved = " (redirects are not followed)" if 300 <= exc.code < 400 else ""
            raise PostFailed(self.redact(
                f"HTTP {exc.code} {exc.reason}{moved}: {self._excerpt(exc)}")) from None
        except urllib.error.URLError as exc:
            if isinstance(exc.reason, TimeoutError):
                raise PostFailed(timed_out, timed_out=True) from None
            raise PostFailed(self.redact(short_reason(exc.reason or exc))) from None
        except TimeoutError:
            raise PostFailed(timed_out, timed_out=True) from None
        except (OSError, http.client.HTTPException, ValueError) as exc:
            raise PostFailed(self.redact(short_reason(exc))) from None

    def _excerpt(self, exc: urllib.error.HTTPError) -> str:
        """The start of an error answer's body, on one line."""
        try:
            text = exc.read(64 * 1024).decode("utf-8", "replace")
        except (OSError, http.client.HTTPException):
            return "(body unreadable)"
        return self.one_line(text) or "(empty body)"
