"""One JSON POST to an endpoint that holds a secret: the embeddings' http backend, the http
summarizer and the schedule webhook all go through it, via urllib only.

The secret is sent in the Authorization header and nowhere else. Redirects are refused
(urllib would resend the header to the new host), and every message built here is redacted
before it is cut, so a server echoing the secret back cannot leak it, not even in part (any
12 of its characters in a row are taken out); a successful answer has the secret taken out
as it is read, so nothing parsed from it holds the key either.
Failures raise :class:`PostFailed` with a one-line reason; callers wrap it in their own error
("POST <url>: <reason>") so nothing from the request reaches a traceback unredacted.
"""

from __future__ import annotations

import http.client
import json
import re
import urllib.error
import urllib.request
from typing import Any

EXCERPT_CHARS = 200
PIECE_CHARS = 12


def short_reason(exc: BaseException | str, limit: int = 160) -> str:
    """The first line of an exception's message (or of a reason given as text), shortened,
    for one-line warnings."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    text = lines[0] if lines else type(exc).__name__
    return text if len(text) <= limit else text[: limit - 1] + "…"



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
        # Any 12 characters of the secret in a row count as the secret: a server that
        # quotes the key cut short, or from its 4th character on, leaks it nearly whole.
        windows = {secret[i:i + PIECE_CHARS] for i in range(len(secret) - PIECE_CHARS + 1)}
        self._pieces = (re.compile("(?=(" + "|".join(map(re.escape, sorted(windows))) + "))")
                        if windows else None)

    def __repr__(self) -> str:
        return f"SecretPost(url={self.redact(self.url)!r})"

    def redact(self, text: str) -> str:
        """``text`` with the secret, and any run of 12 of its characters, replaced by ``***``."""
        if not self._secret:
            return text
        text = text.replace(self._secret, "***")
        if self._pieces is None:
            return text
        spans: list[list[int]] = []
        for match in self._pieces.finditer(text):
            start = match.start()
            if spans and start <= spans[-1][1]:
                spans[-1][1] = start + PIECE_CHARS
            else:
                spans.append([start, start + PIECE_CHARS])
        if not spans:
            return text
        kept, last = [], 0
        for start, end in spans:
            kept += [text[last:start], "***"]
            last = end
        return "".join(kept) + text[last:]

    def one_line(self, text: str) -> str:
        """Redacted, whitespace collapsed, cut to :data:`EXCERPT_CHARS` (redacted first, so a
        cut can never leave part of the secret behind)."""
        return " ".join(self.redact(text).split())[:EXCERPT_CHARS]

    def post(self, body: Any, *, max_bytes: int = -1) -> tuple[int, bytes]:
        """(status, body) of a 2xx answer, read up to ``max_bytes`` (+1, so a caller can tell
        it was cut) with the secret taken out of it; ``PostFailed`` for anything else.

        ``PostFailed`` is raised outside any ``except`` block and from a frame that holds no
        headers: it carries no context (an ``HTTPError`` keeps the server's headers and
        body) and no local, so a crash report that walks exception chains or prints each
        frame's variables (Textual's does) finds nothing of the secret either.
        """
        answer = self._exchange(body, max_bytes)
        if isinstance(answer, PostFailed):
            raise answer
        return answer

    def _exchange(self, body: Any, max_bytes: int) -> tuple[int, bytes] | PostFailed:
        headers = {"Content-Type": "application/json", "Accept": "application/json",
                   "User-Agent": "memory-workbench"}
        if self._secret:
            headers["Authorization"] = f"Bearer {self._secret}"
        timed_out = f"timed out after {self.timeout:g} s"
        try:
            request = urllib.request.Request(self.url, data=json.dumps(body).encode("utf-8"),
                                             headers=headers, method="POST")
            with self._opener.open(request, timeout=self.timeout) as response:
                raw = response.read(max_bytes if max_bytes < 0 else max_bytes + 1)
                return response.status, self._redact_bytes(raw)
        except urllib.error.HTTPError as exc:
            moved = " (redirects are not followed)" if 300 <= exc.code < 400 else ""
            reason = f"HTTP {exc.code} {exc.reason}{moved}: {self._excerpt(exc)}"
            exc.close()
            return PostFailed(self.redact(reason))
        except urllib.error.URLError as exc:
            if isinstance(exc.reason, TimeoutError):
                return PostFailed(timed_out, timed_out=True)
            return PostFailed(self.redact(short_reason(exc.reason or exc)))
        except TimeoutError:
            return PostFailed(timed_out, timed_out=True)
        except (OSError, http.client.HTTPException, ValueError) as exc:
            return PostFailed(self.redact(short_reason(exc)))

    def _redact_bytes(self, raw: bytes) -> bytes:
        """An answer's body without the secret (exactly; pieces are for messages, which are
        short, where this may be megabytes of vectors)."""
        secret = self._secret.encode("utf-8")
        return raw.replace(secret, b"***") if secret and secret in raw else raw

    def _excerpt(self, exc: urllib.error.HTTPError) -> str:
        """The start of an error answer's body, on one line."""
        try:
            text = exc.read(64 * 1024).decode("utf-8", "replace")
        except (OSError, http.client.HTTPException):
            return "(body unreadable)"
        return self.one_line(text) or "(empty body)"
