"""Embedding in a helper process, so bulk ingest uses a second core.

Preparing and writing a batch and embedding it all hold the GIL most of the time, so
threads in one process cannot run them side by side: a bulk import ran at the serial sum
of its stages. In a helper process the model runs on its own core while this process
prepares and writes.

The helper is ``python -m core.embeddings.process`` talking over its pipes, not
``multiprocessing``: spawning re-imports the caller's main module, which would run an
agent's unguarded script a second time. It loads the model from the same config and
reports the model's name; the engine only uses it when that name and size match its own
embedder's, so vectors never come from another model than the one the file records.

Given the engine's configuration, the helper also prepares an import's batches (validation,
chunking, hashing: :func:`core.prepare.prepare_batch`) before embedding them, and puts them
in their conversational context (:mod:`core.embeddings.import_contexts`), so this process
only writes. Once embedding was 3x cheaper (:mod:`core.embeddings.word_cache`), moving that
work here took 3 to 6 s off a 100k import's 22 in the writer's process, whose threads share
one GIL.

Protocol, one request at a time. The parent's first line is ``{"embedding": {...},
"config": {...} or null}``; the child answers ``{"name": ..., "dim": ...}``. Then:

- ``{"texts": [...]}``: the child answers ``{"n": N, "dim": D}`` followed by N*D
  little-endian float32 values, or ``{"error": "..."}``;
- ``{"prepare": B}`` followed by B bytes, the pickled ``(items, agent, batch_time,
  import_key, handed)`` of a batch (:meth:`EmbeddingProcess.prepare`): the child answers
  ``{"prepared": P, "n": N, "dim": D}`` followed by P bytes, the pickled ``(batch,
  refused)`` in context, and the N*D float32 values of its chunks' blended vectors (N is -1
  when it has none, or embedding them failed: they are stored unembedded, for the worker),
  or ``{"error": "..."}``.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import logging
import os
import pickle
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from core.config import EmbeddingConfig

if TYPE_CHECKING:
    from core.config import Config
    from core.embeddings.import_contexts import ImportContexts, Part
    from core.prepare import IndexedItem
    from core.storage.messages import PreparedMessage
    from core.types import Rejected

    # What :meth:`EmbeddingProcess.prepare` hands back: the batch, its refusals, its vectors.
    Prepared = tuple[list[tuple[int, PreparedMessage]], list[Rejected], np.ndarray | None]

log = logging.getLogger(__name__)

_PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])  # the folder holding core/

# Imports whose context parts the helper keeps at once (two engines' imports may interleave).
_IMPORTS_KEPT = 4

# Seconds a batch waits for a starting helper rather than embedding in this process. The
# helper is ready in well under a second here (0.6 s with a 256-dimension model): past this,
# something is wrong with it, and batches embed here until it answers.
STARTUP_WAIT = 5.0


def worth_a_process(config: EmbeddingConfig) -> bool:
    """Whether a helper process would help: a local model and a second core to run it on."""
    return config.backend != "http" and (os.cpu_count() or 1) > 1


class EmbeddingProcess:
    """One helper process holding the model; ``embed`` sends it texts, gets vectors back."""

    def __init__(self, config: EmbeddingConfig, expected_name: str, dimension: int,
                 prepare_with: Config | None = None) -> None:
        self._config = {"embedding": config.model_dump(),
                        "config": None if prepare_with is None
                        else prepare_with.model_dump(mode="json")}
        self._expected_name = expected_name
        self._dimension = dimension
        self._process: asyncio.subprocess.Process | None = None
        self._lock = asyncio.Lock()
        self._starting: asyncio.Task[None] | None = None
        self._ready_by = 0.0
        self.usable = True

    def start(self) -> None:
        """Start the helper in the background; ``embed`` declines until it is ready."""
        if self._starting is None:
            self._starting = asyncio.create_task(self._start_guarded())
            self._ready_by = asyncio.get_running_loop().time() + STARTUP_WAIT

    async def started(self) -> None:
        """Wait until the helper has started (or failed to), but no later than
        :data:`STARTUP_WAIT` after it was started; at once when it was never started.

        A helper slow to start (or stuck) then leaves callers to embed in-process, as before
        it is ready. Shielded: a caller cancelled while waiting leaves the start-up running.
        """
        if self._starting is None or self._starting.done():
            return
        remaining = self._ready_by - asyncio.get_running_loop().time()
        if remaining > 0:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(self._starting), remaining)

    async def _start_guarded(self) -> None:
        async with self._lock:
            try:
                self._process = await self._start()
            except Exception as exc:  # no helper: every batch embeds in-process
                log.warning("embedding process did not start: %s", exc)
                self.usable = False

    async def _start(self) -> asyncio.subprocess.Process:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (_PACKAGE_ROOT, env.get("PYTHONPATH")) if p)
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "core.embeddings.process",
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL, env=env, limit=2**26)
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(json.dumps(self._config).encode() + b"\n")
        await process.stdin.drain()
        hello = json.loads(await process.stdout.readline() or b"{}")
        if hello.get("name") != self._expected_name or hello.get("dim") != self._dimension:
            process.kill()
            await process.wait()
            raise RuntimeError(f"helper loaded {hello.get('name')} ({hello.get('dim')} dims), "
                               f"not {self._expected_name}")
        return process

    async def embed(self, texts: list[str]) -> np.ndarray | None:
        """Vectors for ``texts`` from the helper, or None while it starts or once it broke.

        None means "embed these yourself". Once the helper runs it takes every batch, in
        turn: embedding here as well would contend for this process's GIL with the writes.
        """
        if not self.usable or self._process is None:
            return None
        async with self._lock:
            try:
                assert self._process is not None
                stdin, stdout = self._process.stdin, self._process.stdout
                assert stdin is not None and stdout is not None
                stdin.write(json.dumps({"texts": texts}).encode() + b"\n")
                await stdin.drain()
                header = json.loads(await stdout.readline() or b'{"error": "helper exited"}')
                if "error" in header:
                    raise RuntimeError(header["error"])
                blob = await stdout.readexactly(header["n"] * header["dim"] * 4)
            except Exception as exc:  # a dead helper or a model error: embed in-process instead
                log.warning("embedding process failed, embedding in-process: %s", exc)
                self.usable = False
                await self._stop()
                return None
        return np.frombuffer(blob, dtype=np.float32).reshape(header["n"], header["dim"])

    @property
    def running(self) -> bool:
        """Whether the helper has started and answers."""
        return self.usable and self._process is not None

    async def prepare(self, items: list[IndexedItem], agent: str | None, batch_time: str,
                      import_key: str, handed: dict[str, list[Part]]) -> Prepared | None:
        """A batch prepared, embedded and put in context by the helper: its messages with
        their contexts, its refusals, and its chunks' blended vectors (None: embedding them
        failed, as :meth:`embed` reports).

        The helper keeps each import's context parts (``import_key``) from batch to batch;
        ``handed`` are those of the batch's sessions it does not hold yet (see
        :mod:`core.embeddings.import_contexts`). None while the helper starts, once it broke,
        or when it was not given the configuration: prepare it yourself.
        """
        if not self.running or self._config["config"] is None:
            return None
        request = pickle.dumps((items, agent, batch_time, import_key, handed),
                               protocol=pickle.HIGHEST_PROTOCOL)
        async with self._lock:
            try:
                assert self._process is not None
                stdin, stdout = self._process.stdin, self._process.stdout
                assert stdin is not None and stdout is not None
                stdin.write(json.dumps({"prepare": len(request)}).encode() + b"\n")
                stdin.write(request)
                await stdin.drain()
                header = json.loads(await stdout.readline() or b'{"error": "helper exited"}')
                if "error" in header:
                    raise RuntimeError(header["error"])
                batch, refused = pickle.loads(await stdout.readexactly(header["prepared"]))
                rows, dim = header["n"], header["dim"]
                blob = await stdout.readexactly(rows * dim * 4) if rows >= 0 else None
            except Exception as exc:  # a dead helper: this process prepares and embeds
                log.warning("embedding process failed, preparing in-process: %s", exc)
                self.usable = False
                await self._stop()
                return None
        matrix = None if blob is None else np.frombuffer(blob, dtype=np.float32).reshape(rows, dim)
        return batch, refused, matrix

    async def _stop(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        if process.stdin is not None:
            process.stdin.close()
        try:
            await asyncio.wait_for(process.wait(), 5)
        except TimeoutError:
            process.kill()
            await process.wait()

    async def close(self) -> None:
        """Stop the helper process (waiting for it to finish starting, if it is)."""
        if self._starting is not None:
            await self._starting
        async with self._lock:
            await self._stop()


def _serve() -> None:
    """The helper's loop: load the model named by the first line, then embed (and prepare)
    on request."""
    from core.config import Config
    from core.embeddings import embed_checked, load_embedder

    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    first = json.loads(stdin.readline())
    embedder = load_embedder(EmbeddingConfig(**first["embedding"])).embedder
    config = None if first.get("config") is None else Config.model_validate(first["config"])
    stdout.write(json.dumps({"name": embedder.name, "dim": embedder.dimension}).encode() + b"\n")
    stdout.flush()
    # What the helper loaded (modules, the model) stays: out of the collector's full passes,
    # which the batches' objects set off (0.7 s of a 100k import's 9.6 s here).
    gc.freeze()
    imports: dict[str, ImportContexts] = {}  # each import's context parts, newest last
    for line in stdin:
        try:
            request = json.loads(line)
            if "prepare" in request:
                assert config is not None, "asked to prepare without a configuration"
                reply, tail = _prepared(config, embedder, imports,
                                        stdin.read(request["prepare"]))
            else:
                matrix = embed_checked(embedder, request["texts"])
                reply, tail = {"n": matrix.shape[0], "dim": matrix.shape[1]}, [matrix.tobytes()]
        except Exception as exc:  # reported to the parent, which falls back in-process
            stdout.write(json.dumps({"error": f"{type(exc).__name__}: {exc}"}).encode() + b"\n")
            stdout.flush()
            continue
        stdout.write(json.dumps(reply).encode() + b"\n")
        for part in tail:
            stdout.write(part)
        stdout.flush()


def _prepared(config: Config, embedder: Any, imports: dict[str, ImportContexts],
              request: bytes) -> tuple[dict[str, Any], list[bytes]]:
    """A prepare request's answer: its header, then the pickled batch and the vectors."""
    from core.embeddings import embed_or_leave
    from core.embeddings.import_contexts import ImportContexts
    from core.prepare import prepare_batch, texts_to_embed

    def embedded(texts: list[str]) -> np.ndarray | None:
        return embed_or_leave(embedder, texts) if texts else None

    items, agent, batch_time, import_key, handed = pickle.loads(request)
    chunking = config.chunking
    if import_key not in imports:
        imports[import_key] = ImportContexts(chunking.context_messages, chunking.context_chars)
        while len(imports) > _IMPORTS_KEPT:
            del imports[next(iter(imports))]
    contexts = imports[import_key]
    contexts.take(handed)
    batch, refused = prepare_batch(config, items, agent, batch_time)
    matrix = embedded(texts_to_embed(batch, chunking.context_messages, chunking.context_chars))
    if chunking.context_messages > 0:
        sessions = list(dict.fromkeys(prepared.session_id for _, prepared in batch))
        missing = contexts.without_vectors(sessions)
        if matrix is not None and missing:
            vectors = embedded(missing)
            if vectors is None:
                matrix = None
            else:
                contexts.give_vectors(sessions, missing, vectors)
        batch, matrix = contexts.apply(batch, matrix)
    prepared = pickle.dumps((batch, refused), protocol=pickle.HIGHEST_PROTOCOL)
    if matrix is None:
        return {"prepared": len(prepared), "n": -1, "dim": embedder.dimension}, [prepared]
    return ({"prepared": len(prepared), "n": matrix.shape[0], "dim": matrix.shape[1]},
            [prepared, matrix.astype(np.float32, copy=False).tobytes()])


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt, BrokenPipeError):
        _serve()
