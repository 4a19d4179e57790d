"""The bulk path as an import: the full-text index tuned for large transactions while it
writes, and an import killed midway loses nothing it reported done and resumes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from core import Engine
from core.storage.sqlite import fts_segments
from tests.conftest import DETERMINISTIC, rows
from workbench.bench import synthetic

AGENT = "importer"


def _tuning(conn: Any) -> tuple[int | None, int | None]:
    """FTS5's automerge and hashsize as the index's config holds them (None: never set)."""
    found = dict(conn.execute("SELECT k, v FROM chunks_fts_config"
                              " WHERE k IN ('automerge', 'hashsize')").fetchall())
    return found.get("automerge"), found.get("hashsize")


SET_BACK = (fts_segments.AUTOMERGE, fts_segments.HASH_BYTES)
TUNED = (0, fts_segments.IMPORT_HASH_BYTES)


async def test_an_import_writes_with_the_full_text_index_tuned_and_sets_it_back(
        db_path: Path) -> None:
    items = synthetic.messages(120, 4)
    async with Engine.open(db_path, config=DETERMINISTIC) as engine:
        backend: Any = engine.backend
        during: list[int | None] = []
        write = backend.write_messages

        async def watched(*args: Any, **kwargs: Any) -> Any:
            during.append(await backend._db.read(_tuning))
            return await write(*args, **kwargs)

        backend.write_messages = watched
        result = await engine.store_many(items, agent=AGENT, batch_size=30)
        assert result.stored == 120 and not result.rejected
        # The first batch may be written before the import is known to be one; the rest not.
        assert len(during) == 4 and during[1:] == [TUNED] * 3
        assert await backend._db.read(_tuning) == SET_BACK

        # A single batch is no import: nothing tuned, nothing to set back.
        during.clear()
        await engine.store_many([("other", 1, {"role": "user", "content": "hello"})],
                                agent=AGENT, batch_size=30)
        assert during == [SET_BACK]
        assert await engine.backend.integrity_check() == ["ok"]


_IMPORT = """
import asyncio, json, sys
from core import Engine
from workbench.bench import synthetic

async def main():
    items = synthetic.messages(int(sys.argv[2]), 6)
    config = {"embedding": {"backend": "deterministic", "fallback_dimensions": 64}}
    async with Engine.open(sys.argv[1], config=config) as engine:
        for start in range(0, len(items), 100):
            piece = items[start:start + 100]
            result = await engine.store_many(piece, agent="importer", batch_size=25)
            # What an importer reports done: the messages of a call that returned.
            print(json.dumps([[sid, seq] for sid, seq, _ in piece]), flush=True)
            print("refused", len(result.rejected), file=sys.stderr, flush=True)

asyncio.run(main())
"""


def _import(db_path: Path, count: int) -> subprocess.Popen[str]:
    root = Path(__file__).resolve().parents[2]
    return subprocess.Popen([sys.executable, "-c", _IMPORT, str(db_path), str(count)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(root)})


async def test_an_import_killed_midway_resumes_and_loses_nothing_it_reported(
        db_path: Path) -> None:
    count = 1200
    child = _import(db_path, count)
    reported: list[tuple[str, int]] = []
    try:
        assert child.stdout is not None
        for _ in range(3):  # three calls reported done, then killed inside the next ones
            line = child.stdout.readline()
            assert line, child.stderr.read() if child.stderr else ""
            reported += [(sid, seq) for sid, seq in json.loads(line)]
        child.send_signal(signal.SIGKILL)
    finally:
        child.wait()
    assert child.returncode == -signal.SIGKILL  # killed, not finished
    stored = rows(db_path, "SELECT session_id, sequence FROM conversation_events")
    assert set(reported) <= set(stored)
    assert len(stored) < count

    again = _import(db_path, count)  # the same import again: what is stored is refused
    out, err = again.communicate(timeout=600)
    assert again.returncode == 0, err
    stored = rows(db_path, "SELECT session_id, sequence FROM conversation_events")
    expected = {(sid, seq) for sid, seq, _ in synthetic.messages(count, 6)}
    assert len(stored) == len(expected) == count and set(stored) == expected  # each once
    async with Engine.open(db_path, config=DETERMINISTIC) as engine:
        assert await engine.backend.integrity_check() == ["ok"]
        backend: Any = engine.backend
        assert await backend._db.read(_tuning) == SET_BACK
        # Every chunk indexed and embedded, nothing left to the worker.
        (chunks, fts, vectors, pending), = rows(
            db_path, "SELECT (SELECT count(*) FROM chunks),"
            " (SELECT count(*) FROM chunks_fts_docsize), (SELECT count(*) FROM chunks_vec),"
            " (SELECT count(*) FROM chunks WHERE embedding_status != 'done')")
        assert chunks == fts == vectors and pending == 0
        found = await engine.hybrid_query(namespace=AGENT, query="flight hotel", top_k=5)
        assert found
