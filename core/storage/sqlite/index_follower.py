"""An import's derived indexes, kept in step in a helper process and saved at its end.

A file's derived indexes (:mod:`core.storage.derived`) are built from the whole file by the
first namespace query after an import: at 100k chunks 7 s after the import's own 19 s, on
the importing process's cores. Followed in the importing process, batch by batch, they took
its GIL from the writes for longer than the build takes. Here a helper process follows the
import instead: it opens the file read-only, loads the saved indexes (or builds them), and
applies each batch from the change log once it is committed, on the core the writes leave
free. At the import's end it catches up to the last commit and saves both indexes beside
the file (:mod:`core.storage.derived.persisted`); the importing process then loads them as
any new process would, instead of building them.

It is ``python -m core.storage.sqlite.index_follower PATH``, talking over its pipes as the
embedding helper does (:mod:`core.embeddings.process`). The child writes one JSON line once
its indexes are loaded or built (``{"ready": {...}}``); a line ``finish`` on its input (or
its input closing) makes it catch up, save, answer one JSON line ``{"saved": {name:
position}}`` and exit. Nothing depends on it: if it fails or is slow, the indexes are built
from the file by the next query, as without it.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import logging
import os
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from core.storage.derived.holder import DerivedIndexes

log = logging.getLogger(__name__)

_PACKAGE_ROOT = str(Path(__file__).resolve().parents[3])  # the folder holding core/
# How often the child looks for new commits in the change log (one index lookup).
POLL_S = 0.05
# Seconds the importing process waits, at the import's end, for the child's last catch-up
# and its saves; past it the next query builds the indexes (1M chunks save in about 3 s).
FINISH_WAIT_S = 120.0
# Seconds the import's end waits for a child still loading or building its indexes: none, for
# an import that ended before the child was ready was short, and the next query builds its
# indexes about as soon (tests that want the child's saves wait for it).
READY_WAIT_S = 0.0


def follow_imports() -> bool:
    """Whether an import's indexes are worth a helper: a second core to run it on."""
    return (os.cpu_count() or 1) > 1


class IndexFollower:
    """The importing process's side: start the child, tell it the import ended."""

    def __init__(self, path: Path, busy_timeout_ms: int) -> None:
        self._path = path
        self._busy_timeout_ms = busy_timeout_ms
        self._process: asyncio.subprocess.Process | None = None
        self._ready: asyncio.Task[dict[str, Any]] | None = None

    async def start(self) -> None:
        """Start the child; it follows from the file's next commit on."""
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (_PACKAGE_ROOT, env.get("PYTHONPATH")) if p)
        self._process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", __name__, str(self._path), str(self._busy_timeout_ms),
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL, env=env)
        self._ready = asyncio.create_task(self._read_line())

    async def finish(self) -> dict[str, int]:
        """Have the child catch up to the last commit and save: the indexes it saved, with
        the change-log position of each. {} when it failed, or was not ready yet (an import
        shorter than the child's start, whose indexes the next query builds at once)."""
        process, ready = self._process, self._ready
        if process is None or ready is None:
            return {}
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(ready), READY_WAIT_S)
        if not ready.done() or "ready" not in ready.result():
            await self.stop()
            return {}
        assert process.stdin is not None
        self._process = self._ready = None
        answer: dict[str, Any] = {}
        try:
            process.stdin.write(b"finish\n")
            await process.stdin.drain()
            process.stdin.close()
            async with asyncio.timeout(FINISH_WAIT_S):
                answer = await self._read_line(process)
                await process.wait()
        except (TimeoutError, ConnectionError) as exc:
            log.warning("the import's index follower did not finish (%s): the next query "
                        "builds the indexes", exc or "timed out")
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()
        if "error" in answer:
            log.warning("the import's index follower failed: %s", answer["error"])
        elif "seconds" in answer:
            log.info("the import's index follower caught up and saved: %s", answer["seconds"])
        return {str(name): int(at) for name, at in answer.get("saved", {}).items()}

    async def stop(self) -> None:
        """Stop the child without saving (the import failed, or ended before it was ready)."""
        process, ready, self._process, self._ready = self._process, self._ready, None, None
        if ready is not None:
            ready.cancel()
        if process is not None and process.returncode is None:
            process.kill()
            await process.wait()

    async def _read_line(self, process: asyncio.subprocess.Process | None = None,
                         ) -> dict[str, Any]:
        """The child's next JSON line ({} at its end, or for a line it did not mean)."""
        process = process or self._process
        assert process is not None and process.stdout is not None
        line = await process.stdout.readline()
        try:
            answer = json.loads(line) if line else {}
        except ValueError:
            return {}
        return answer if isinstance(answer, dict) else {}


def follow(path: Path, busy_timeout_ms: int, lines: Any, out: Any) -> None:
    """The child: load or build the file's derived indexes, follow its commits until
    ``lines`` says ``finish`` (or ends), then catch up, save, report."""
    from core.storage.derived.fulltext import FullTextIndex
    from core.storage.derived.holder import DerivedIndexes
    from core.storage.derived.saving import sqlite_saving
    from core.storage.derived.vector_matrix import NamespaceVectors
    from core.storage.sqlite.connection import open_connection

    gc.freeze()  # the modules loaded: out of the full passes the indexes' growth sets off

    def connect() -> Any:
        return open_connection(path, read_only=True, busy_timeout_ms=busy_timeout_ms)

    def say(message: dict[str, Any]) -> None:
        out.write(json.dumps(message).encode() + b"\n")
        out.flush()

    conn = connect()
    try:
        derived = DerivedIndexes([NamespaceVectors(), FullTextIndex()], connect)
        derived.saving = sqlite_saving(path, conn)
        if derived.saving is None:
            say({"error": f"{path} has no id to save its indexes under"})
            return
        names = list(derived.names())
        began = time.perf_counter()
        for name in names:
            derived.build_now(name)
        say({"ready": {name: derived.state(name).describe() for name in names},
             "seconds": round(time.perf_counter() - began, 3)})
        finished = threading.Event()

        def wait_for_finish() -> None:
            for line in lines:
                if line.strip() == b"finish":
                    break
            finished.set()

        threading.Thread(target=wait_for_finish, daemon=True).start()
        while not finished.wait(POLL_S):
            derived.catch_up(conn)
        asked = time.perf_counter()
        derived.catch_up(conn)
        caught_up = time.perf_counter()
        failed = _save_at_once(derived, names)
        saved = {}
        for name in names:  # a copy at this commit already on disk counts as saved
            state = derived.state(name)
            if state.ready and state.saved_at == state.watermark:
                saved[name] = state.saved_at
        answer: dict[str, Any] = {"saved": saved, "seconds": {
            "catch_up": round(caught_up - asked, 3),
            "save": round(time.perf_counter() - caught_up, 3)}}
        if failed:
            answer["error"] = "; ".join(failed)
        say(answer)
    finally:
        conn.close()


def _save_at_once(derived: DerivedIndexes, names: list[str]) -> list[str]:
    """Save each index on a thread of its own (at 1M chunks the two took 7.8 s one after
    the other, while the import waited for them); why each that failed did."""
    failed: list[str] = []

    def save(name: str) -> None:
        try:
            derived.save(name)
        except Exception as exc:  # that index is built by the next query instead
            failed.append(f"{name}: {type(exc).__name__}: {exc}")

    savers = [threading.Thread(target=save, args=(name,), name=f"save-{name}")
              for name in names]
    for thread in savers:
        thread.start()
    for thread in savers:
        thread.join()
    return failed


def _main() -> None:
    path, busy_timeout_ms = Path(sys.argv[1]), int(sys.argv[2])
    try:
        follow(path, busy_timeout_ms, sys.stdin.buffer, sys.stdout.buffer)
    except Exception as exc:  # reported to the importing process, which builds as before
        sys.stdout.buffer.write(json.dumps(
            {"error": f"{type(exc).__name__}: {exc}"}).encode() + b"\n")
        sys.stdout.buffer.flush()


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt, BrokenPipeError):
        _main()
