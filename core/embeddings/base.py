"""What every embedding backend shares: the ``Embedder`` protocol, the placeholder that stands
in while a model loads, and the checks every vector passes.

Backends import these from here, not from the package, whose ``load_embedder`` imports the
backends: that keeps the imports one-way.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from core.errors import EmbeddingError
from core.http_post import short_reason

if TYPE_CHECKING:
    import numpy as np
    import tokenizers

__all__ = ["Embedder", "LoadedEmbedder", "LoadingEmbedder", "embed_checked", "embed_or_leave",
           "l2_normalise", "short_reason"]


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


def embed_or_leave(embedder: Embedder, texts: list[str]) -> np.ndarray | None:
    """:func:`embed_checked`, or None (logged) when embedding fails: an import's chunks are
    then stored unembedded, and the embedding worker retries them and records why."""
    try:
        return embed_checked(embedder, texts)
    except Exception as exc:  # the model's errors, whatever their type
        logging.getLogger("core.bulk").warning(
            "bulk embedding failed, leaving %d chunks to the worker: %s", len(texts), exc)
        return None


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
