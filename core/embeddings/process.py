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

Protocol, one request at a time: the parent writes a JSON line ``{"texts": [...]}``; the
child answers a JSON line ``{"n": N, "dim": D}`` followed by N*D little-endian float32
values, or ``{"error": "..."}``. The child's first line is ``{"name": ..., "dim": ...}``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import sys
from pathlib import Path
from typing import Any

import numpy as np

from core.config import EmbeddingConfig

log = logging.getLogger(__name__)

_PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])  # the folder holding core/

# Seconds a batch waits for a starting helper rather than embedding in this process. The
# helper is ready in well under a second here (0.6 s with a 256-dimension model): past this,
# something is wrong with it, and batches embed here until it answers.
STARTUP_WAIT = 5.0


def worth_a_process(config: EmbeddingConfig) -> bool:
    """Whether a helper process would help: a local model and a second core to run it on."""
    return config.backend != "http" and (os.cpu_count() or 1) > 1


class EmbeddingProcess:
    """One helper process holding the model; ``embed`` sends it texts, gets vectors back."""

    def __init__(self, config: EmbeddingConfig, expected_name: str, dimension: int) -> None:
        self._config = config.model_dump()
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
    """The helper's loop: load the model named by the first line, then embed on request."""
    from core.embeddings import embed_checked, load_embedder

    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    embedder = load_embedder(EmbeddingConfig(**json.loads(stdin.readline()))).embedder
    stdout.write(json.dumps({"name": embedder.name, "dim": embedder.dimension}).encode() + b"\n")
    stdout.flush()
    for line in stdin:
        try:
            texts: list[str] = json.loads(line)["texts"]
            matrix = embed_checked(embedder, texts)
            reply: dict[str, Any] = {"n": matrix.shape[0], "dim": matrix.shape[1]}
        except Exception as exc:  # reported to the parent, which falls back in-process
            stdout.write(json.dumps({"error": f"{type(exc).__name__}: {exc}"}).encode() + b"\n")
            stdout.flush()
            continue
        stdout.write(json.dumps(reply).encode() + b"\n")
        stdout.write(matrix.tobytes())
        stdout.flush()


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt, BrokenPipeError):
        _serve()
