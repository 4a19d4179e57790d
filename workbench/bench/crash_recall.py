"""``bench crash``'s recall workload, checked: after a writer is killed (between a commit
and the derived index update that follows it, among other moments), every chunk it wrote is
found in namespace scope by both legs.

Two readers look: the engine the check opens after the kill, its namespace matrix built
from the file, and an engine kept open across every kill of the run (another process's
reader, as far as the child is concerned), whose matrix was built before the first child
wrote and has only been kept in step through the change log since. A chunk is found by the
vector leg when a query with its own stored vector lists it, and by the full-text leg when
a phrase of its first words lists it.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import numpy as np

from workbench.bench.crash_child import RECALL_NAMESPACE

_WORD = re.compile(r"\w+", re.UNICODE)
PHRASE_WORDS = 8
DEPTH = 50


async def open_observer(db: Path, config: dict[str, Any]) -> Any:
    """An engine on ``db`` with its namespace matrix built, to keep open across the kills."""
    from core import Engine

    engine = await Engine.open(db, config=config, read_only=True, start_worker=False)
    await ready_matrix(engine)
    return engine


async def ready_matrix(engine: Any) -> None:
    """Build the engine's derived namespace matrix now (a query would start it in the
    background and answer from SQL meanwhile)."""
    backend = engine.backend
    await asyncio.to_thread(backend.derived.build_now, backend.namespace_vectors.name)


def new_chunks(db: Path, after_rowid: int) -> list[tuple[int, str, str, bytes | None]]:
    """The namespace's chunks above ``after_rowid``: (fts_rowid, chunk_id, text, vector)."""
    from core.storage.connection import open_connection

    conn = open_connection(db, read_only=True, busy_timeout_ms=15000)
    try:
        return conn.execute(
            "SELECT c.fts_rowid, c.chunk_id, c.chunk_text, v.embedding_blob FROM chunks c"
            " JOIN sessions s ON s.session_id = c.session_id"
            " LEFT JOIN chunks_vec v ON v.chunk_id = c.chunk_id"
            " WHERE s.agent_identity = ? AND c.fts_rowid > ? ORDER BY c.fts_rowid",
            (RECALL_NAMESPACE, after_rowid)).fetchall()
    finally:
        conn.close()


async def unfindable(engine: Any, chunks: list[tuple[int, str, str, bytes | None]],
                     who: str) -> list[str]:
    """What each leg failed to find among ``chunks``, in words (empty: every one found)."""
    from core.storage.sqlite_backend import DERIVED_VECTOR_LEG

    problems = []
    for _, chunk_id, text, blob in chunks:
        if blob is None:
            problems.append(f"{who}: chunk {chunk_id} has no vector after drain()")
        else:
            vector = np.frombuffer(blob, dtype=np.float32).tolist()
            found = await engine.search(namespace=RECALL_NAMESPACE, query="own vector",
                                        query_embedding=vector, mode="vector", top_k=DEPTH)
            if found.legs.vector_path != DERIVED_VECTOR_LEG:
                problems.append(f"{who}: the vector leg was answered by "
                                f"{found.legs.vector_path}, not the namespace matrix")
            if chunk_id not in {hit.chunk_id for hit in found.legs.vector}:
                problems.append(f"{who}: the vector leg does not find chunk {chunk_id}")
        words = _WORD.findall(text)[:PHRASE_WORDS]
        if not words:
            continue
        found = await engine.search(namespace=RECALL_NAMESPACE, query=f'"{" ".join(words)}"',
                                    raw_fts=True, mode="keyword", top_k=DEPTH)
        if chunk_id not in {hit.chunk_id for hit in found.legs.fts}:
            problems.append(f"{who}: the full-text leg does not find chunk {chunk_id}")
    return problems
