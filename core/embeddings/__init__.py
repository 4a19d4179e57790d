"""Embedding backends: the ``Embedder`` protocol and ``load_embedder``, which picks one.

Backends are imported only when loaded, so importing this package costs nothing; numpy,
model2vec and urllib come in with the backend that needs them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from core.errors import DimensionMismatch, EmbeddingError

if TYPE_CHECKING:
    import numpy as np
    import tokenizers

    from core.config import EmbeddingConfig

__all__ = ["Embedder", "LoadedEmbedder", "LoadingEmbedder", "l2_normalise", "load_embedder",
           "short_reason"]


class Embedder(Protocol):
    """Turns texts into unit-length float32 vectors; synchronous, run via ``asyncio.to_thread``."""

    name: str
    """Stable model identifier stored with every vector."""
    dimension: int
    quick: bool
    """True when one short text embeds in well under a millisecond in this process (a
    static model, hashing): a query's text is then embedded on the event loop, since a
    thread hand-off would cost more than the work."""

    # A read-only member, so an embedder without one may declare ``tokenizer = None``.
    @property
    def tokenizer(self) -> tokenizers.Tokenizer | None:
        """The model's tokenizer where there is one (for token counting), else None."""

    def embed(self, texts: list[str]) -> np.ndarray:
        """A float32 array of shape (len(texts), dimension); raises ``EmbeddingError``."""
        ...

    def close(self) -> None:
        """Release whatever the backend holds."""
        ...


@dataclass
class LoadedEmbedder:
    """The embedder start-up got, and why it is not the configured one if it fell back."""

    embedder: Embedder
    warning: str | None
    fell_back: bool


class LoadingEmbedder:
    """Stands in for the model while ``Engine.open(..., defer_model=True)`` loads it: it has
    no vectors to give, and says so."""

    quick = False
    tokenizer: tokenizers.Tokenizer | None = None
    dimension = 0

    def __init__(self, configured: str) -> None:
        self.name = f"{configured} (loading)"

    def embed(self, texts: list[str]) -> np.ndarray:
        raise EmbeddingError("the embedding model is still loading")

    def close(self) -> None:
        pass


def embed_checked(embedder: Embedder, texts: list[str]) -> np.ndarray:
    """The embedder's vectors as one contiguous float32 matrix, one row per text.

    Every caller that stores vectors goes through here: a backend that answers with the
    wrong number of rows or the wrong width raises ``EmbeddingError`` instead of having its
    vectors written against the wrong chunks.
    """
    import numpy as np

    matrix = np.ascontiguousarray(embedder.embed(texts), dtype=np.float32)
    if matrix.shape != (len(texts), embedder.dimension):
        raise EmbeddingError(f"{embedder.name} returned vectors of shape {matrix.shape} for "
                             f"{len(texts)} texts of dimension {embedder.dimension}")
    return matrix


def l2_normalise(matrix: object) -> np.ndarray:
    """``matrix`` as float32 with unit-length rows; all-zero rows stay zero."""
    import numpy as np

    out = np.asarray(matrix, dtype=np.float32)
    if out.ndim != 2:
        raise EmbeddingError(f"expected a 2-D array of vectors, got shape {out.shape}")
    if not np.isfinite(out).all():
        raise EmbeddingError("the model returned non-finite values (NaN or infinity)")
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    return np.divide(out, norms, out=np.zeros_like(out), where=norms > 0)


def short_reason(exc: BaseException | str, limit: int = 160) -> str:
    """The first line of an exception's message (or of a reason given as text), shortened,
    for one-line warnings."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    text = lines[0] if lines else type(exc).__name__
    return text if len(text) <= limit else text[: limit - 1] + "…"


def load_embedder(cfg: EmbeddingConfig, *, file_dimension: int | None = None) -> LoadedEmbedder:
    """The configured embedder, or the deterministic one with a warning when it cannot load.

    A model that loads but whose size differs from ``cfg.dimensions`` raises
    ``DimensionMismatch`` instead of falling back: that is a configuration mistake (seed 003).
    """
    from core.embeddings.deterministic import DeterministicEmbedder

    if cfg.backend == "deterministic":
        dimension = cfg.dimensions or file_dimension or cfg.fallback_dimensions
        return LoadedEmbedder(DeterministicEmbedder(dimension), None, False)

    embedder: Embedder
    try:
        if cfg.backend == "model2vec":
            from core.embeddings.model2vec_backend import load_model2vec

            embedder = load_model2vec(cfg)
        elif cfg.backend == "http":
            from core.embeddings.http_backend import load_http

            embedder = load_http(cfg)
        else:
            raise EmbeddingError(f"unknown embedding backend {cfg.backend!r}")
    except EmbeddingError as exc:
        dimension = file_dimension or cfg.dimensions or cfg.fallback_dimensions
        reason = " ".join(str(exc).split())  # the warning is shown as one line
        warning = (f"Embedding model {cfg.model!r} could not be loaded ({reason}); running on "
                   "the deterministic backend, which matches words, not meaning.")
        return LoadedEmbedder(DeterministicEmbedder(dimension), warning, True)

    if cfg.dimensions is not None and embedder.dimension != cfg.dimensions:
        embedder.close()
        raise DimensionMismatch(
            f"embedding model {embedder.name!r} produces {embedder.dimension}-dimensional vectors "
            f"but embedding.dimensions is {cfg.dimensions}; set embedding.dimensions = "
            f"{embedder.dimension} or choose a model of size {cfg.dimensions}"
        )
    return LoadedEmbedder(embedder, None, False)
