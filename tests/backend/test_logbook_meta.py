"""The retrieval log, relevance judgments, the memory's own settings, and maintenance."""

from __future__ import annotations

import numpy as np
import pytest

from core.errors import ReadOnlyDatabase, StorageFull
from core.storage.backend import Backend, BackendFeatures
from core.storage.log_rows import LogRow, log_row
from core.storage.vocabulary import ScheduleDraft, SummaryDraft
from tests.backend.builders import DIMENSION, MODEL, NOW, store
from tests.backend.conftest import Opener

LATER = "2026-01-02T00:00:00.000Z"


def entry(query: str, caller: str = "agent", scope_value: str = "s") -> LogRow:
    return log_row({"created_at": NOW, "caller": caller, "scope_kind": "session",
                    "scope_value": scope_value, "query": query, "params": {"top_k": 5},
                    "results": [{"chunk_id": "chk-1"}], "timings_ms": {"fts": 0.1}})


async def test_the_log_reads_newest_first_by_caller_scope_or_id(backend: Backend) -> None:
    await backend.append_logs([entry("first"), entry("second", caller="app"),
                               entry("third", scope_value="t")])
    log = await backend.read_log()
    assert [e.query for e in log] == ["third", "second", "first"]
    assert log[-1].params == {"top_k": 5} and log[-1].results == [{"chunk_id": "chk-1"}]
    assert [e.query for e in await backend.read_log(caller="app")] == ["second"]
    assert [e.query for e in await backend.read_log(scope_kind="session",
                                                       scope_value="t")] == ["third"]
    assert [e.query for e in await backend.read_log(log_id=log[1].log_id)] == ["second"]
    assert [e.query for e in await backend.read_log(limit=1)] == ["third"]
    assert len(await backend.read_log(limit=-1)) == 3  # a negative limit is none


async def test_judgments_are_stored_and_changed_per_scope_and_query(backend: Backend) -> None:
    await backend.set_judgment("session", "s", "find", "chk-1", 3, NOW)
    await backend.set_judgment("session", "s", "find", "chk-2", 0, NOW)
    await backend.set_judgment("session", "s", "find", "chk-1", 2, LATER)
    await backend.set_judgment("namespace", "ana", "find", "chk-1", 1, NOW)
    assert await backend.read_judgments("session", "s", "find") == {"chk-1": 2, "chk-2": 0}
    assert await backend.read_judgments("namespace", "ana", "find") == {"chk-1": 1}
    assert await backend.read_judgments("session", "s", "other") == {}


async def test_a_scopes_judged_queries_are_read_together(backend: Backend) -> None:
    await backend.set_judgment("session", "s", "second", "chk-9", 1, NOW)
    await backend.set_judgment("session", "s", "first", "chk-1", 3, NOW)
    await backend.set_judgment("session", "s", "second", "chk-2", 0, NOW)
    await backend.set_judgment("session", "t", "first", "chk-1", 2, NOW)
    judged = await backend.read_scope_judgments("session", "s")
    assert judged == {"second": {"chk-9": 1, "chk-2": 0}, "first": {"chk-1": 3}}
    assert list(judged) == ["second", "first"]  # in the order first judged
    assert await backend.read_scope_judgments("namespace", "s") == {}


async def test_meta_values_are_set_and_replaced(backend: Backend) -> None:
    assert await backend.read_meta("last_consolidation") is None
    await backend.write_meta("last_consolidation", NOW)
    await backend.write_meta("last_consolidation", LATER)
    assert await backend.read_meta("last_consolidation") == LATER


async def test_the_change_counter_moves_when_another_writer_commits(
        backend: Backend, open_backend: Opener) -> None:
    if not backend.features.change_counter:
        pytest.skip("this backend has no change counter")
    other = await open_backend()
    before, backlog, failed = await backend.pulse()
    assert (backlog, failed) == (0, 0)
    assert (await backend.pulse())[0] == before  # nothing committed: it stands still
    await store(other, "s", 1, "from another writer")
    after, backlog, _ = await backend.pulse()
    assert after != before and backlog == 1


async def test_table_counts_integrity_and_versions(backend: Backend) -> None:
    await store(backend, "s", 1, "one")
    counts = await backend.table_counts()
    assert (counts["sessions"], counts["conversation_events"], counts["chunks"],
            counts["chunks_fts"], counts["chunks_vec"]) == (1, 1, 1, 1, 0)
    assert await backend.integrity_check() == ["ok"]
    versions = await backend.versions()
    assert versions and all(isinstance(v, str) and v for v in versions.values())


async def test_features_are_declared(backend: Backend) -> None:
    assert isinstance(backend.features, BackendFeatures)
    assert backend.features.full_text_ranking and backend.features.raw_full_text_syntax


async def test_a_capped_store_refuses_a_write_whole_and_reads_on(backend: Backend) -> None:
    if not backend.features.can_cap_size:
        pytest.skip("this backend cannot cap its size")
    await store(backend, "s", 1, "before the cap")
    await backend.cap_size(0)
    with pytest.raises(StorageFull):
        await store(backend, "s", 2, "too much " * 4000)
    assert [e.sequence for e in await backend.read_events("s")] == [1]
    await backend.cap_size(None)
    await store(backend, "s", 2, "room again")
    assert await backend.last_sequence("s") == 2


async def _embed_one(backend: Backend) -> int:
    ((chunk_id, session_id, _, _, agent, _),) = await backend.pending_chunks(1)
    return await backend.save_vectors([(chunk_id, session_id, agent)],
                                      np.zeros((1, DIMENSION), dtype=np.float32), MODEL)


@pytest.mark.parametrize("write", [
    lambda b: b.write_meta("k", "v"),
    lambda b: b.upsert_fact("ana", "user", "k", "v", "user", NOW),
    lambda b: b.set_judgment("session", "s", "q", "chk", 1, NOW),
    lambda b: b.write_scratchpad("s", "ana", ["x"], NOW),
    lambda b: b.reset_vectors(8, "m"),
    lambda b: b.insert_schedule(ScheduleDraft("x", "ana", None, "g", "{}", "never", "active",
                                              NOW, NOW, None, 0, None, None)),
    lambda b: b.write_summary_state("s", SummaryDraft("", 0, "test"), 0, NOW),
    lambda b: b.append_logs([entry("q")]),
    lambda b: b.record_embedding_failure(["chk"], "e", 3),
    lambda b: _embed_one(b),
], ids=["meta", "fact", "judgment", "scratchpad", "vectors", "schedule", "summary", "log",
        "failure", "save"])
async def test_a_read_only_backend_refuses_every_write(backend: Backend, open_backend: Opener,
                                                       write) -> None:
    await store(backend, "s", 1, "written while writable")
    before = await backend.table_counts()
    reader = await open_backend(read_only=True)
    with pytest.raises(ReadOnlyDatabase):
        await write(reader)
    assert await backend.table_counts() == before
    assert await reader.read_meta("k") is None
