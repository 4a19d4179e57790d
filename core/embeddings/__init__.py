"""Embedding backends: ``load_embedder`` picks the configured one (see :mod:`core.embeddings.base`
for the ``Embedder`` protocol every backend implements).

Backends are imported only when loaded, so importing this package costs nothing; numpy,
model2vec and urllib come in with the backend that needs them.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from core.embeddings.base import (
    Embedder,
    LoadedEmbedder,
    LoadingEmbedder,
    embed_checked,
    embed_or_leave,
    l2_normalise,
    short_reason,
)
from core.errors import DimensionMismatch, EmbeddingError

if TYPE_CHECKING:
    from core.config import EmbeddingConfig

__all__ = ["Embedder", "LoadedEmbedder", "LoadingEmbedder", "embed_checked", "embed_or_leave",
           "l2_normalise",
           "load_embedder", "short_reason"]

log = logging.getLogger(__name__)


def load_embedder(cfg: EmbeddingConfig, *, file_dimension: int | None = None) -> LoadedEmbedder:
    """The configured embedder, or the deterministic one with a warning when it cannot load.

    The fallback is logged as a warning (logger ``core.embeddings``), since an agent using
    the engine reads no ``embedding_warning``; with ``on_missing_model = "refuse"`` it is
    ``EmbeddingError`` instead, giving the reason the model did not load. A model that loads
    but whose size differs from ``cfg.dimensions`` raises ``DimensionMismatch`` instead of
    falling back: that is a configuration mistake (nexo-rs).
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
        if cfg.on_missing_model == "refuse":
            raise EmbeddingError(
                f"embedding model {cfg.model!r} could not be loaded ({reason}); "
                'embedding.on_missing_model = "refuse" keeps the engine from falling back to '
                "the deterministic backend") from None
        warning = (f"Embedding model {cfg.model!r} could not be loaded ({reason}); running on "
                   "the deterministic backend, which matches words, not meaning.")
        # ``fallback_model`` lets a front end say it in its own (shorter) words.
        log.warning("%s", warning, extra={"fallback_model": cfg.model})
        return LoadedEmbedder(DeterministicEmbedder(dimension), warning, True)

    if cfg.dimensions is not None and embedder.dimension != cfg.dimensions:
        embedder.close()
        raise DimensionMismatch(
            f"embedding model {embedder.name!r} produces {embedder.dimension}-dimensional vectors "
            f"but embedding.dimensions is {cfg.dimensions}; set embedding.dimensions = "
            f"{embedder.dimension} or choose a model of size {cfg.dimensions}"
        )
    return LoadedEmbedder(embedder, None, False)
