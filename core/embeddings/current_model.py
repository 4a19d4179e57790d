"""The embedding model an engine runs at this moment, as its services read it.

``Engine.open(..., defer_model=True)`` opens the file with a placeholder model and swaps
the real one in once it has loaded (:mod:`core.embeddings.loading`): the embedder, the token
counter and whether the file's vectors are usable all change then. Services are given this
one object rather than the embedder itself, so none of them keeps the placeholder.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from core.embeddings import Embedder, LoadedEmbedder, embed_checked
from core.tokens import TokenCounter

if TYPE_CHECKING:
    import numpy as np

    from core.embeddings.identity import ModelIdentity, VectorsOff
    from core.embeddings.worker import EmbeddingWorker

# A query this short embeds on the event loop with a quick embedder (a static model takes
# ~0.1 ms for it, less than handing it to a thread); a longer text goes to a thread.
QUICK_QUERY_CHARS = 2000


class CurrentModel:
    """The loaded embedder with its token counter, warnings, vector state and worker."""

    def __init__(self, loaded: LoadedEmbedder, warnings: list[str]) -> None:
        self.warnings = warnings
        """Everything start-up warns about (the engine's list: the file's warnings first)."""
        self.vectors_usable = False
        """Whether the file's vectors come from this model (else the vector leg is off)."""
        self.vectors_off: VectorsOff | None = None
        """Why the file's vectors are not this model's, while they are not."""
        self.identity: ModelIdentity | None = None
        """The running model's name, size and fingerprint, once it has loaded."""
        self.worker: EmbeddingWorker | None = None
        """The background embedding worker, when one runs."""
        self.use(loaded)

    def use(self, loaded: LoadedEmbedder) -> None:
        """Run ``loaded`` from now on: its embedder, its tokenizer's counter, its warning."""
        self.embedder: Embedder = loaded.embedder
        self.fell_back = loaded.fell_back
        """True when the configured model could not load and a fallback runs instead."""
        self.warning = loaded.warning
        """What the user should know about the model (a fallback, unusable vectors)."""
        self.fallback_warning = loaded.warning
        if loaded.warning:
            self.warnings.append(loaded.warning)
        self.tokens = TokenCounter(getattr(self.embedder, "tokenizer", None))

    def wake(self) -> None:
        """Tell the embedding worker that new chunks wait (nothing when none runs)."""
        if self.worker is not None:
            self.worker.wake()

    async def embed_query(self, text: str) -> np.ndarray:
        """The query's vector (on the event loop when that is quicker than a thread)."""
        if getattr(self.embedder, "quick", False) and len(text) <= QUICK_QUERY_CHARS:
            return embed_checked(self.embedder, [text])[0]
        return (await asyncio.to_thread(embed_checked, self.embedder, [text]))[0]
