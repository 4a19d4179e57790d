"""Chunks and vectors: content-hash dedup, the embedding backlog, the vector index."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from core.errors import DimensionMismatch
from core.storage.backend import Backend
from core.storage.rows import ChunkRow
from core.storage.vocabulary import Scope
from tests.backend.builders import DIMENSION, MODEL, message, store, unit
from tests.backend.conftest import Opener


async def test_the_same_content_in_a_session_is_stored_once(backend: Backend) -> None:
    (first,) = await backend.write_messages([message("s", 1, "hello there")],
                                            all_or_nothing=True)
    (again,) = await backend.write_messages([message("s", 2, "hello there")],
                                            all_or_nothing=True)
    (elsewhere,) = await backend.write_messages([message("t", 1, "hello there")],
                                                all_or_nothing=True)
    assert (first.inserted, first.deduplicated) == (1, 0)
    assert (again.inserted, again.deduplicated) == (0, 1)
    assert (elsewhere.inserted, elsewhere.deduplicated) == (1, 0)
    counts = await backend.table_counts()
    assert counts["conversation_events"] == 3 and counts["chunks"] == 2
    (chunk_id,) = [c for c, _ in await backend.fts_search(Scope(session_id="s"), ["hello"], 10)]
    fetched = await backend.fetch_chunks([chunk_id, "no-such-chunk"])
    assert list(fetched) == [chunk_id]
    chunk = fetched[chunk_id]
    assert isinstance(chunk, ChunkRow)
    assert (chunk.chunk_id, chunk.session_id, chunk.text) == (chunk_id, "s", "hello there")
    assert (chunk.sequence_start, chunk.sequence_end) == (1, 2)  # dedup extends it
    assert chunk.metadata()["role"] == "user" and chunk.context() == ""
    assert chunk.created_at is not None and chunk.created_at.endswith("Z")


async def test_the_backlog_is_embedded_and_a_deleted_chunk_gets_no_vector(
        backend: Backend) -> None:
    await store(backend, "s", 1, "kept text")
    await store(backend, "gone", 1, "deleted text")
    pending = await backend.pending_chunks(10)
    assert [row[2] for row in pending] == ["kept text", "deleted text"]
    assert [row[4] for row in pending] == ["ana", "ana"]
    assert await backend.backlog_count() == 2
    assert await backend.pending_chunks(10, after_rowid=pending[0][3]) == pending[1:]
    await backend.delete_session("gone")
    rows = [(chunk_id, session_id, agent) for chunk_id, session_id, _, _, agent, _ in pending]
    saved = await backend.save_vectors(rows, np.stack([unit(1.0), unit(0.0, 1.0)]), MODEL)
    assert saved == 1
    assert await backend.backlog_count() == 0
    counts = await backend.embedding_counts()
    assert (counts.pending, counts.done, counts.models) == (0, 1, {MODEL: 1})


async def test_failures_are_counted_until_the_chunk_gives_up(backend: Backend) -> None:
    await store(backend, "s", 1, "troublesome")
    ((chunk_id, *_),) = await backend.pending_chunks(10)
    assert await backend.record_embedding_failure([chunk_id], "model fell over", 2) == 0
    assert await backend.backlog_count() == 1
    assert await backend.record_embedding_failure([chunk_id], "model fell over", 2) == 1
    assert await backend.backlog_count() == 0
    assert (await backend.embedding_counts()).failed == 1
    assert (await backend.pulse())[1:] == (0, 1)


async def test_the_vector_index_keeps_its_dimension_until_reset(backend: Backend) -> None:
    assert await backend.vector_meta() == (DIMENSION, MODEL)
    with pytest.raises(DimensionMismatch):
        await backend.ensure_vector_table(DIMENSION * 2, "bigger")
    await backend.ensure_vector_table(DIMENSION, MODEL)  # the same size: nothing to do
    await store(backend, "s", 1, "to embed again")
    ((chunk_id, session_id, _, _, agent, _),) = await backend.pending_chunks(10)
    await backend.save_vectors([(chunk_id, session_id, agent)], unit(1.0)[None, :], MODEL)
    assert await backend.reset_vectors(DIMENSION * 2, "bigger") == 1
    assert await backend.vector_meta() == (DIMENSION * 2, "bigger")
    assert await backend.backlog_count() == 1
    assert (await backend.embedding_counts()).models == {}



async def test_two_workers_claiming_the_backlog_at_once_take_disjoint_chunks(
        backend: Backend, open_backend: Opener) -> None:
    if backend.features.single_writer:
        pytest.skip("one embedding worker per memory: its backlog needs no claims")
    other = await open_backend()
    for sequence in range(1, 41):
        await store(backend, "s", sequence, f"message number {sequence}")
    mine, theirs = await asyncio.gather(backend.pending_chunks(25), other.pending_chunks(25))
    mine_ids, their_ids = {row[0] for row in mine}, {row[0] for row in theirs}
    assert not mine_ids & their_ids
    assert len(mine_ids | their_ids) == 40
    # A claimer is handed its own claims again (a refused save reads its batch back); what
    # the other holds stays with the other.
    assert {row[0] for row in await backend.pending_chunks(100)} == mine_ids
    rows = [(chunk_id, session_id, agent) for chunk_id, session_id, _, _, agent, _ in mine]
    assert await backend.save_vectors(rows, np.stack([unit(1.0)] * len(rows)), MODEL) == len(rows)
    assert await backend.pending_chunks(100) == []
    assert await backend.backlog_count() == len(their_ids)


async def test_a_closed_workers_claims_are_taken_over_at_once(
        backend: Backend, open_backend: Opener) -> None:
    if backend.features.single_writer:
        pytest.skip("one embedding worker per memory: its backlog needs no claims")
    other = await open_backend()
    for sequence in range(1, 11):
        await store(backend, "s", sequence, f"message number {sequence}")
    theirs = {row[0] for row in await other.pending_chunks(6)}
    mine = {row[0] for row in await backend.pending_chunks(100)}
    assert len(theirs) == 6 and len(mine) == 4 and not theirs & mine
    # Its process gone (here: its backend closed), no lease needs to run out first.
    await other.close()
    assert {row[0] for row in await backend.pending_chunks(100)} == theirs | mine
