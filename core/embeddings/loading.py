"""Loading the embedding model, now or in the background, and what follows from it.

The model is checked against the file's vectors: a model of another size is refused (seed
003) unless the engine opened to reindex; one of the same size but another name leaves the
vector leg off, with a warning that says how to fix it. Then the embedding worker starts,
with the other background work. ``reindex`` moves a file's vectors to the running model.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from core.embeddings import load_embedder
from core.embeddings.identity import identify, parse_identity, vectors_off
from core.embeddings.worker import EmbeddingWorker
from core.errors import EmbeddingError
from core.tasks import cancel_and_wait
from core.types import EmbeddingStatus, Pulse

if TYPE_CHECKING:
    from core.config import EmbeddingConfig
    from core.embeddings.current_model import CurrentModel
    from core.storage.backend import Backend

_Method = TypeVar("_Method", bound=Callable[..., Any])


def needs_model(method: _Method) -> _Method:
    """Make an engine method wait for a deferred model load (and raise what it failed with)."""

    @functools.wraps(method)
    async def waiting(self: Any, *args: Any, **kwargs: Any) -> Any:
        await self.model_ready()
        return await method(self, *args, **kwargs)

    return waiting  # type: ignore[return-value]


class ModelLoader:
    """Loads the model into a :class:`CurrentModel` and runs its embedding worker."""

    def __init__(self, backend: Backend, config: EmbeddingConfig,
                 model: CurrentModel) -> None:
        self._backend = backend
        self._config = config
        self._model = model
        self._task: asyncio.Task[None] | None = None
        self._closed = False

    async def start(self, *, deferred: bool, start_worker: bool, reindex: bool,
                    also_start: Callable[[], None] | None = None) -> None:
        """:meth:`load` now, or (``deferred``) as a task that :meth:`ready` waits for."""
        if deferred:
            self._task = asyncio.create_task(self.load(start_worker=start_worker,
                                                       also_start=also_start))
        else:
            await self.load(start_worker=start_worker, reindex=reindex, also_start=also_start)

    async def load(self, *, start_worker: bool, reindex: bool = False,
                   also_start: Callable[[], None] | None = None) -> None:
        """Load the embedder, check it against the file's vectors, start the background work
        (the worker, then ``also_start``) unless ``start_worker`` is False."""
        backend, model = self._backend, self._model
        file_dimension, file_model = await backend.vector_meta()
        recorded = parse_identity(await backend.vector_identity())
        loaded = await asyncio.to_thread(
            load_embedder, self._config, file_dimension=None if reindex else file_dimension)
        model.use(loaded)
        model.identity = await asyncio.to_thread(identify, model.embedder, self._source())
        name, dimension = model.embedder.name, model.embedder.dimension
        if not reindex:  # a reindexing engine has no usable vectors until reindex() runs
            await backend.ensure_vector_table(dimension, name, self._identity_text())
            off = None if file_dimension is None else vectors_off(
                file_model or name, recorded, model.identity, running_name=name,
                running_source=self._source(),
                failed_model=self._config.model if model.fell_back else None)
            model.vectors_usable, model.vectors_off = off is None, off
            if off is not None:
                model.warning = off.message
                model.warnings.append(off.message)
        if self._closed:
            return
        if start_worker and model.vectors_usable and not backend.read_only and not reindex:
            self.start_worker()
        if start_worker and not reindex and also_start is not None:
            also_start()

    def _source(self) -> str:
        """What ``--model`` names the running model by: a folder as an absolute path (so it
        reopens from any folder), a hub id or an endpoint's model as configured."""
        config = self._config
        if config.backend == "deterministic" or self._model.fell_back:
            return "deterministic"
        folder = Path(config.model).expanduser()
        return str(folder.resolve()) if config.backend == "model2vec" and folder.is_dir() \
            else config.model

    def _identity_text(self) -> str | None:
        identity = self._model.identity
        return None if identity is None else identity.to_text()

    @property
    def error(self) -> str | None:
        """Why a background load failed (a refused model, a file that refuses it), else None."""
        task = self._task
        if task is None or not task.done() or task.cancelled() or task.exception() is None:
            return None
        return " ".join(str(task.exception()).split())

    @property
    def loaded(self) -> bool:
        """False while a background load is still running (or failed)."""
        task = self._task
        return task is None or (task.done() and not task.cancelled()
                                and task.exception() is None)

    async def ready(self) -> None:
        """Wait for a background load; raises what it failed with."""
        if self._task is not None:
            await asyncio.shield(self._task)

    def start_worker(self) -> None:
        """Start the embedding worker on the current embedder."""
        model = self._model
        model.worker = EmbeddingWorker(self._backend, model.embedder,
                                       batch_size=self._config.batch_size,
                                       max_attempts=self._config.max_attempts)
        model.worker.start()

    async def cancel(self) -> None:
        """Stop a background load still running; nothing starts after this."""
        self._closed = True
        if self._task is not None and not self._task.done():
            await cancel_and_wait(self._task)

    async def stop_worker(self) -> None:
        """Stop the worker after the batch in hand."""
        if self._model.worker is not None:
            await self._model.worker.stop()

    async def reindex(self, progress: Any = None) -> int:
        """Re-embed every chunk with the running model; returns the number of chunks.

        ``progress(done, total)`` is called as batches are saved. Open the engine with
        ``reindex=True`` to reindex a file whose vectors have another dimension. A fallback
        model is refused: its vectors would replace real ones with word matches.
        """
        model = self._model
        if model.fell_back:
            raise EmbeddingError(f"reindex refused, nothing was changed: "
                                 f"{model.fallback_warning}")
        total = await self._backend.reset_vectors(model.embedder.dimension,
                                                  model.embedder.name, self._identity_text())
        model.vectors_usable, model.vectors_off = True, None
        if model.warning != model.fallback_warning and model.warning is not None:
            model.warnings.remove(model.warning)
            model.warning = model.fallback_warning
        if model.worker is None:
            self.start_worker()
        worker = model.worker
        assert worker is not None
        worker.embedded = 0
        if progress is not None:
            worker.on_progress = lambda done, _left: progress(done, total)
        try:
            await worker.drain()
        finally:
            worker.on_progress = None
        return total

    async def status(self) -> EmbeddingStatus:
        """The model, its size, the backlog and failures, vectors of other models."""
        model = self._model
        counts = await self._backend.embedding_counts()
        others = {m: n for m, n in counts.models.items() if m != model.embedder.name}
        return EmbeddingStatus(
            model=model.embedder.name, dimension=model.embedder.dimension,
            backlog=counts.pending, failed=counts.failed, embedded=counts.done,
            other_models=others, fell_back=model.fell_back, warning=model.warning)

    async def pulse(self) -> Pulse:
        """What a watching front end polls, cheaply: the file's change counter (``PRAGMA
        data_version``, which moves when any connection or process commits), the embedding
        backlog and failures, and whether the model has loaded."""
        model = self._model
        version, backlog, failed = await self._backend.pulse()
        refused = model.worker.storage_error if model.worker is not None else None
        return Pulse(data_version=version, backlog=backlog, failed=failed,
                     model=model.embedder.name, model_loaded=self.loaded,
                     fell_back=model.fell_back, warning=model.warning,
                     storage_error=None if refused is None else str(refused),
                     model_error=self.error,
                     vectors_off=None if model.vectors_off is None else model.vectors_off.short)
