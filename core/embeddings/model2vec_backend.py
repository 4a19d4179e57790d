"""The model2vec backend: a static embedding model from a local folder or the Hugging Face hub.

Hub ids are resolved offline first. model2vec 0.10's ``StaticModel.from_pretrained`` defaults
to ``force_download=True`` and so contacts the hub on every start, even for a cached model;
we therefore resolve the folder ourselves (cache, then a bounded download) and hand
``from_pretrained`` a local folder only.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.embeddings.base import l2_normalise, short_reason
from core.errors import EmbeddingError

if TYPE_CHECKING:
    import numpy as np
    from model2vec import StaticModel

    from core.config import EmbeddingConfig

# The files of every folder layout model2vec reads (its own and sentence-transformers'), so a
# download never fetches ONNX or PyTorch weights the model does not need.
_MODEL_FILES = [
    "config.json", "model.safetensors", "tokenizer.json", "modules.json", "README.md",
    "config_sentence_transformers.json", "0_StaticEmbedding/*",
]


class Model2VecEmbedder:
    """Embeds with a loaded ``StaticModel``; rows come back float32 and L2-normalised."""

    quick = True  # a static model: a short query is a token lookup and a mean (~0.1 ms)

    def __init__(self, model: StaticModel, name: str) -> None:
        import copy

        from core.embeddings.word_cache import WordCache

        self._model = model
        self.name = name
        self.dimension = int(model.dim)
        # A private copy without truncation: model2vec toggles truncation on its own tokenizer
        # during encode, and token counts must not stop at the model's max_length.
        self.tokenizer = copy.deepcopy(model.tokenizer)
        self.tokenizer.no_truncation()
        self.tokenizer.no_padding()
        # The tokenizer's work remembered per word, where that gives encode's own vectors.
        self._words = WordCache.for_model(model)

    def __repr__(self) -> str:
        return f"Model2VecEmbedder(name={self.name!r}, dimension={self.dimension})"

    def embed(self, texts: list[str]) -> np.ndarray:
        """One unit-length row per text; a text with no known token gives an all-zero row."""
        import numpy as np

        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        try:
            words = self._words
            vectors = words.encode(texts) if words is not None else self._encode(texts)
        except Exception as exc:  # model2vec and tokenizers raise assorted types
            raise EmbeddingError(f"model {self.name!r} failed to embed {len(texts)} texts: "
                                 f"{short_reason(exc)}") from exc
        return l2_normalise(vectors)

    def embed_as_shipped(self, texts: list[str]) -> np.ndarray:
        """:meth:`embed` through model2vec's own ``encode``, without the word cache: the
        same vectors at the cost another store's users pay (``bench peers`` times it)."""
        return l2_normalise(self._encode(texts))

    def _encode(self, texts: list[str]) -> np.ndarray:
        # No multiprocessing: the engine already runs this in a worker thread, and
        # model2vec's pool would set os.environ from that thread.
        return self._model.encode(list(texts), show_progress_bar=False,
                                  use_multiprocessing=False)

    def close(self) -> None:
        """Drop the model so its matrix can be freed."""
        self._model = None  # type: ignore[assignment]
        self._words = None


def load_model2vec(cfg: EmbeddingConfig) -> Model2VecEmbedder:
    """The model named by ``cfg.model`` (folder or hub id); ``EmbeddingError`` says why not."""
    folder = Path(cfg.model).expanduser()
    if folder.is_dir():
        return _from_folder(folder, "model2vec:" + folder.resolve().name)
    if cfg.model.startswith(("/", ".", "~")) or cfg.model.count("/") != 1:
        raise EmbeddingError(f"there is no folder {cfg.model!r} and it is not a hub id")

    cached = _cached_snapshot(cfg.model)
    if cached is not None:
        try:
            return _from_folder(cached, cfg.model)
        except EmbeddingError:
            # An interrupted download leaves a partial snapshot; a fresh download repairs it.
            if not cfg.allow_download:
                raise
    elif not cfg.allow_download:
        raise EmbeddingError("not in the local cache and embedding.allow_download is false")
    try:
        downloaded = _download(cfg.model, cfg.download_timeout_secs)
    except Exception as exc:  # network, hub and file-system errors all mean "no model"
        # huggingface_hub prefixes the underlying error with "Got: "; the rest is the reason.
        reason = short_reason(exc).removeprefix("Got: ")
        raise EmbeddingError(f"not in the local cache and the download failed: {reason}") from exc
    return _from_folder(downloaded, cfg.model)


def _from_folder(folder: Path, name: str) -> Model2VecEmbedder:
    """Load a model folder, turning any failure into a one-line ``EmbeddingError``."""
    try:
        from model2vec import StaticModel

        model = StaticModel.from_pretrained(folder)  # an existing folder is read, never fetched
    except Exception as exc:  # bad files surface as ValueError, OSError, JSON or safetensors errors
        raise EmbeddingError(f"{str(folder)!r} is not a loadable model2vec model: "
                             f"{short_reason(exc)}") from exc
    return Model2VecEmbedder(model, name)


def _hub_cache_dir() -> Path:
    """The hub cache, read from the environment now rather than at huggingface_hub's import.

    Mirrors huggingface_hub's own rule (HF_HUB_CACHE, else HF_HOME/hub, else
    XDG_CACHE_HOME/huggingface/hub), so a changed HF_HOME takes effect without a restart.
    """
    explicit = os.environ.get("HF_HUB_CACHE") or os.environ.get("HUGGINGFACE_HUB_CACHE")
    if explicit:
        return Path(explicit).expanduser()
    home = os.environ.get("HF_HOME") or os.path.join(
        os.environ.get("XDG_CACHE_HOME", "~/.cache"), "huggingface")
    return Path(home).expanduser() / "hub"


def _cached_snapshot(model_id: str) -> Path | None:
    """The cached snapshot folder of ``model_id``, or None; never touches the network."""
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import LocalEntryNotFoundError

    try:
        return Path(snapshot_download(model_id, cache_dir=_hub_cache_dir(), local_files_only=True))
    except LocalEntryNotFoundError:
        return None
    except (ValueError, OSError) as exc:  # an invalid repo id, an unreadable cache folder
        raise EmbeddingError(f"cannot look it up in the local cache: {short_reason(exc)}") from exc


def _download(model_id: str, timeout: float) -> Path:
    """Download ``model_id`` in a daemon thread, giving up (not waiting) after ``timeout`` s.

    huggingface_hub has no overall deadline, only per-request timeouts, so a slow or stalled
    transfer could hold start-up indefinitely; the thread is abandoned instead.
    """
    from huggingface_hub import snapshot_download
    from tqdm.auto import tqdm

    class _Silent(tqdm):  # type: ignore[misc]
        """A disabled progress bar: the terminal belongs to the TUI."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            kwargs["disable"] = True
            super().__init__(*args, **kwargs)

    outcome: dict[str, Any] = {}

    def work() -> None:
        try:
            outcome["path"] = snapshot_download(
                model_id, cache_dir=_hub_cache_dir(), allow_patterns=_MODEL_FILES,
                etag_timeout=max(1.0, min(timeout, 10.0)), tqdm_class=_Silent)
        except Exception as exc:  # handed to the waiting thread, which reports it
            outcome["error"] = exc

    thread = threading.Thread(target=work, name=f"model-download:{model_id}", daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        raise TimeoutError(f"no complete download within {timeout:g} s")
    if "error" in outcome:
        raise outcome["error"]
    return Path(outcome["path"])
