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
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from workbench.bench.crash_child import RECALL_NAMESPACE

if TYPE_CHECKING:
    from core.engine import Engine

_WORD = re.compile(r"\w+", re.UNICODE)
PHRASE_WORDS = 8
DEPTH = 50


@dataclass
class RecallFindings:
    """What one check after a kill of the recall workload found."""

    killed_before_sync: bool  # the last acknowledged write came after the last index update
    looked_for: int  # chunks looked for (those above the previous check's)
    checked_rowid: int  # the chunks up to this fts_rowid have now been looked for
    problems: list[str] = field(default_factory=list)  # what a leg did not find


async def check_after_kill(engine: Engine, observer: Any, db: Path, acks: Path,
                           after_rowid: int) -> RecallFindings:
    """The chunks written since the last check, looked for by both namespace legs, by the
    reopened ``engine`` and by the ``observer`` open across the kills."""
    kinds = [json.loads(line)["k"] for line in acks.read_text(encoding="utf-8").splitlines()
             if line.endswith("}")] if acks.exists() else []
    done = [n for n, kind in enumerate(kinds) if kind == "done"]
    synced = [n for n, kind in enumerate(kinds) if kind == "synced"]
    chunks = await asyncio.to_thread(new_chunks, db, after_rowid)
    await ready_matrix(engine)
    problems = await unfindable(engine, chunks, "reopened")
    if observer is not None:
        problems += await unfindable(observer, chunks, "open across")
    return RecallFindings(
        killed_before_sync=bool(done) and done[-1] > max(synced, default=-1),
        looked_for=len(chunks), checked_rowid=max([after_rowid, *(c[0] for c in chunks)]),
        problems=problems)


async def open_observer(db: Path, config: dict[str, Any]) -> Any:
    """An engine on ``db`` with its namespace matrix built, to keep open across the kills."""
    from core import Engine

    engine = await Engine.open(db, config=config, read_only=True, start_worker=False)
    await ready_matrix(engine)
    return engine


async def ready_matrix(engine: Engine) -> None:
    """Build the engine's derived namespace matrix now (a query would start it in the
    background and answer from SQL meanwhile)."""
    backend: Any = engine.backend  # the SQLite backend's own derived indexes
    await asyncio.to_thread(backend.derived.build_now, backend.namespace_vectors.name)


def new_chunks(db: Path, after_rowid: int) -> list[tuple[int, str, str, bytes | None]]:
    """The namespace's chunks above ``after_rowid``: (fts_rowid, chunk_id, text, vector)."""
    from core.storage import open_connection

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


async def unfindable(engine: Engine, chunks: list[tuple[int, str, str, bytes | None]],
                     who: str) -> list[str]:
    """What each leg failed to find among ``chunks``, in words (empty: every one found)."""
    from core.storage.derived.vector_matrix import DERIVED_VECTOR_LEG

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
