"""The http backend: any OpenAI-compatible ``POST …/embeddings`` endpoint.

The request goes through :class:`core.http_post.SecretPost`: the API key is sent in the
Authorization header and nowhere else, and every message this module builds (errors,
warnings, repr) is redacted, so a server echoing the key back cannot leak it into logs.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from core.embeddings.base import l2_normalise, short_reason
from core.errors import DimensionMismatch, EmbeddingError
from core.http_post import PostFailed, SecretPost

if TYPE_CHECKING:
    import numpy as np

    from core.config import EmbeddingConfig

PROBE_TEXT = "dimension probe"
# The most an answer may hold: a vector of 8,192 floats written as JSON takes ~200 KB, so
# a larger answer is a broken or hostile endpoint, read no further than this.
ANSWER_BYTES_BASE = 1024 * 1024
ANSWER_BYTES_PER_TEXT = 256 * 1024


class EmbeddingDimensionMismatch(DimensionMismatch, EmbeddingError):
    """The server returned vectors of another size than configured.

    Both a ``DimensionMismatch`` (what went wrong) and an ``EmbeddingError`` (what ``embed``
    promises to raise), so the worker's error handling and a caller checking sizes both see it.
    """


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
        self._dimensions = dimensions
        self._http = SecretPost(self.url, api_key, timeout)

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
        most = ANSWER_BYTES_BASE + ANSWER_BYTES_PER_TEXT * len(texts)
        try:
            _, raw = self._http.post(body, max_bytes=most)
        except PostFailed as exc:
            raise self._error(str(exc)) from None
        if len(raw) > most:
            raise self._error(f"answered more than {most:,} bytes for {len(texts):,} "
                              f"text{'s' if len(texts) != 1 else ''}; nothing was read past it")
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

    def _one_line(self, text: str) -> str:
        return self._http.one_line(text)

    def _redact(self, text: str) -> str:
        return self._http.redact(text)


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
