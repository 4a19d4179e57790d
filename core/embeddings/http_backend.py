"""The http backend: any OpenAI-compatible ``POST …/embeddings`` endpoint, via urllib only.

The API key is sent in the Authorization header and nowhere else: every message this module
builds (errors, warnings, repr) passes through ``_redact`` so a server echoing the key back
cannot leak it into logs.
"""

from __future__ import annotations

import http.client
import json
import urllib.error
import urllib.request
from typing import TYPE_CHECKING, Any

from core.embeddings import l2_normalise, short_reason
from core.errors import DimensionMismatch, EmbeddingError

if TYPE_CHECKING:
    import numpy as np

    from core.config import EmbeddingConfig

PROBE_TEXT = "dimension probe"
_EXCERPT_CHARS = 200


class EmbeddingDimensionMismatch(DimensionMismatch, EmbeddingError):
    """The server returned vectors of another size than configured.

    Both a ``DimensionMismatch`` (what went wrong) and an ``EmbeddingError`` (what ``embed``
    promises to raise), so the worker's error handling and a caller checking sizes both see it.
    """


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Refuses redirects: urllib would resend the Authorization header to the new host."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


class HttpEmbedder:
    """Embeds by calling an OpenAI-compatible embeddings endpoint."""

    tokenizer = None
    quick = False  # a network round trip: never on the event loop

    def __init__(self, *, base_url: str, model: str, api_key: str, timeout: float,
                 dimensions: int | None) -> None:
        self.url = base_url.rstrip("/") + "/embeddings"
        self.name = "http:" + model
        self.dimension = dimensions or 0
        self._model = model
        self._api_key = api_key
        self._timeout = timeout
        self._dimensions = dimensions
        self._opener = urllib.request.build_opener(_NoRedirect())

    def __repr__(self) -> str:
        return self._redact(f"HttpEmbedder(name={self.name!r}, url={self.url!r}, "
                            f"dimension={self.dimension})")

    def embed(self, texts: list[str]) -> np.ndarray:
        """One unit-length row per text, in the order given; raises ``EmbeddingError``."""
        import numpy as np

        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        vectors = self.request(list(texts))
        if vectors.shape[1] != self.dimension:
            raise EmbeddingDimensionMismatch(
                f"{self.url} returned {vectors.shape[1]}-dimensional vectors for model "
                f"{self._model!r}, expected {self.dimension}")
        return l2_normalise(vectors)

    def request(self, texts: list[str]) -> np.ndarray:
        """The raw vectors the endpoint returns for ``texts``, ordered by their ``index``."""
        body: dict[str, Any] = {"model": self._model, "input": texts}
        if self._dimensions:
            body["dimensions"] = self._dimensions
        headers = {"Content-Type": "application/json", "Accept": "application/json",
                   "User-Agent": "memory-workbench"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        # Chained exceptions are dropped (``from None``): the message already carries the
        # reason, and nothing from the request may reach a traceback unredacted.
        try:
            request = urllib.request.Request(self.url, data=json.dumps(body).encode("utf-8"),
                                             headers=headers, method="POST")
            with self._opener.open(request, timeout=self._timeout) as response:
                raw = response.read()
        except urllib.error.HTTPError as exc:
            raise self._error(f"HTTP {exc.code} {exc.reason}: {self._excerpt(exc)}") from None
        except urllib.error.URLError as exc:
            if isinstance(exc.reason, TimeoutError):
                raise self._error(f"timed out after {self._timeout:g} s") from None
            raise self._error(short_reason(exc.reason if exc.reason else exc)) from None
        except TimeoutError:
            raise self._error(f"timed out after {self._timeout:g} s") from None
        except (OSError, http.client.HTTPException, ValueError) as exc:
            raise self._error(short_reason(exc)) from None
        return self._parse(raw, len(texts))

    def close(self) -> None:
        """Nothing held between requests: each one opens its own connection."""

    def _parse(self, raw: bytes, expected: int) -> np.ndarray:
        """Vectors from the response body, checked for count and shape."""
        import numpy as np

        try:
            items = json.loads(raw)["data"]
            # Servers that omit "index" are taken to answer in input order.
            order = sorted(range(len(items)), key=lambda i: items[i].get("index", i))
            vectors = np.asarray([items[i]["embedding"] for i in order], dtype=np.float32)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            excerpt = self._one_line(raw.decode("utf-8", "replace"))
            raise self._error(f"unexpected response ({short_reason(exc)}): {excerpt}") from None
        if vectors.ndim != 2 or len(vectors) != expected or vectors.shape[1] == 0:
            raise self._error(f"expected {expected} vectors, got an array of shape "
                              f"{vectors.shape}")
        return vectors

    def _error(self, detail: str) -> EmbeddingError:
        return EmbeddingError(self._redact(f"POST {self.url}: {detail}"))

    def _excerpt(self, exc: urllib.error.HTTPError) -> str:
        """The start of an error response's body, on one line."""
        try:
            text = exc.read().decode("utf-8", "replace")
        except (OSError, http.client.HTTPException):
            return "(body unreadable)"
        return self._one_line(text) or "(empty body)"

    def _one_line(self, text: str) -> str:
        """Redacted, whitespace collapsed and cut to the excerpt length (redacted first, so a
        cut can never leave part of the key behind)."""
        return " ".join(self._redact(text).split())[:_EXCERPT_CHARS]

    def _redact(self, text: str) -> str:
        return text.replace(self._api_key, "***") if self._api_key else text


def load_http(cfg: EmbeddingConfig) -> HttpEmbedder:
    """An ``HttpEmbedder``, its size probed once when ``cfg.dimensions`` is not set."""
    if not cfg.base_url:
        raise EmbeddingError("embedding.base_url is not set")
    embedder = HttpEmbedder(base_url=cfg.base_url, model=cfg.model, api_key=cfg.api_key,
                            timeout=cfg.timeout_secs, dimensions=cfg.dimensions)
    if cfg.dimensions is None:
        try:
            embedder.dimension = int(embedder.request([PROBE_TEXT]).shape[1])
        except EmbeddingError as exc:
            raise EmbeddingError(f"dimension probe failed: {exc}") from None
    return embedder
