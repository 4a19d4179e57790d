"""A namespace's derived indexes saved in the local cache folder on PostgreSQL: a new
process loads them (and catches them up) instead of reading the namespace from the server,
and a copy it cannot trust (another database, another role, damaged, pruned past) is built
afresh. Each case compares the answers, both legs from the derived indexes, with those of
an index built from the database."""

from __future__ import annotations

import asyncio
import json
import random
import shutil
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from core import Engine
from core.storage import index_cache
from core.storage.derived import persisted
from core.storage.derived.vector_matrix import DERIVED_VECTOR_LEG
from core.storage.pg import derived_saved
from core.storage.pg.backend import PostgresBackend
from tests.conftest import DETERMINISTIC
from tests.pg.test_pg_fts_postings import QUERIES, fill, sentence
from tests.pg_server import PgTestServer
from tests.test_derived_saved import watch_checks_ahead

Answers = list[list[tuple[str, float]]]


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv(index_cache.CACHE_ENV, str(folder))
    return folder


def backend_of(engine: Engine) -> PostgresBackend:
    backend = engine.backend
    assert isinstance(backend, PostgresBackend)
    return backend


async def answers(engine: Engine) -> Answers:
    """Namespace a's hybrid results, asserting both legs came from the derived indexes
    (the full-text one hands a query matching no word to SQL, which tries LIKE)."""
    await engine.drain()
    await backend_of(engine).derived.indexes.build_now("a")
    found, derived_text = [], []
    for query in QUERIES:
        result = await engine.search(namespace="a", query=query, top_k=8)
        assert result.legs.vector_path == DERIVED_VECTOR_LEG
        derived_text.append(result.legs.fts_derived)  # (a query matching no word: SQL's)
        found.append([(r.chunk_id, round(r.score, 9)) for r in result.results])
    assert sum(derived_text) >= len(QUERIES) - 2
    return found


async def opened(url: str) -> tuple[Any, Answers]:
    """A new engine's index of namespace a once it answered, and its answers."""
    async with Engine.open(url, config=DETERMINISTIC) as engine:
        found = await answers(engine)
        held = backend_of(engine).derived.indexes.index("a")
        assert held is not None
        return held, found


async def built_answers(url: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Answers:
    """The answers of an index built from the database (an empty cache folder)."""
    with monkeypatch.context() as scoped:
        scoped.setenv(index_cache.CACHE_ENV, str(tmp_path / "empty-cache"))
        held, found = await opened(url)
    assert held.origin == "built" and held.refused == "none saved"
    return found


async def saved_memory(url: str) -> Path:
    """A memory whose namespace a's index was built and saved; its folder."""
    await fill(url)
    async with Engine.open(url, config=DETERMINISTIC) as engine:
        await answers(engine)
        indexes = backend_of(engine).derived.indexes
        assert indexes.saving is not None
        folder = indexes.saving.folder
    assert (folder / f"{derived_saved.index_name('a')}.json").exists()
    return folder


async def more_writes(url: str, count: int = 20) -> None:
    rng = random.Random(9)
    async with Engine.open(url, config=DETERMINISTIC) as engine:
        for sequence in range(1, count + 1):
            await engine.store("s9", sequence, {"role": "user", "content": sentence(rng)},
                               namespace="a")
        await engine.forget("s2")
        await engine.drain()


async def test_a_new_process_loads_the_saved_index(pg_url: str, monkeypatch: pytest.MonkeyPatch,
                                                   tmp_path: Path) -> None:
    await saved_memory(pg_url)
    held, found = await opened(pg_url)
    assert (held.origin, held.caught_up, held.refused) == ("loaded", 0, None)
    assert found == await built_answers(pg_url, monkeypatch, tmp_path)


async def test_the_first_query_waits_for_the_load(pg_url: str) -> None:
    """A fresh process's first namespace query is answered from the loaded copy (a load is
    a fraction of a second), not from SQL while it loads."""
    await saved_memory(pg_url)
    async with Engine.open(pg_url, config=DETERMINISTIC) as engine:
        result = await engine.search(namespace="a", query=QUERIES[0], top_k=8)
        assert result.legs.vector_path == DERIVED_VECTOR_LEG and result.legs.fts_derived
        held = backend_of(engine).derived.indexes.index("a")
        assert held is not None and held.origin == "loaded"


async def test_the_load_starts_at_open(pg_url: str) -> None:
    """The saved namespaces start loading with the open (the first query waits for a load
    under way, not one it starts), and only namespaces that were saved."""
    await saved_memory(pg_url)
    async with Engine.open(pg_url, config=DETERMINISTIC) as engine:
        indexes = backend_of(engine).derived.indexes
        held = indexes.index("a")  # asked for by nothing yet
        assert held is not None and indexes.index("b") is None
        await indexes.build_now("a")
        assert held.origin == "loaded" and held.ready


async def test_the_next_open_checks_its_copies_before_it_connects(
        pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """An open leaves a hint naming its folder; the next open of the location starts the
    copies' checks before importing the driver and connecting, and the load takes them."""
    await saved_memory(pg_url)
    async with Engine.open(pg_url, config=DETERMINISTIC):
        pass  # this open leaves the hint (an open that saved nothing may predate it)
    ahead, taken = watch_checks_ahead(monkeypatch)
    async with Engine.open(pg_url, config=DETERMINISTIC) as engine:
        await backend_of(engine).derived.indexes.build_now("a")
        saving = backend_of(engine).derived.indexes.saving
        assert saving is not None
        assert ahead == [(saving.folder, [derived_saved.index_name("a")])]
        assert taken == [True]
        held = backend_of(engine).derived.indexes.index("a")
        assert held is not None and held.origin == "loaded"


async def test_a_stale_copy_is_caught_up(pg_url: str, monkeypatch: pytest.MonkeyPatch,
                                         tmp_path: Path) -> None:
    await saved_memory(pg_url)
    await more_writes(pg_url)
    async with Engine.open(pg_url, config=DETERMINISTIC) as engine:
        await answers(engine)
        held = backend_of(engine).derived.indexes.index("a")
        assert held is not None and held.origin == "loaded" and held.caught_up > 40
        result = await engine.search(namespace="a", query="good deploy", top_k=5)
        assert result.explain()["legs"]["derived_indexes"]["namespace"].startswith(
            "loaded from disk, caught up ")
        saved = await backend_of(engine).saved_indexes()
        # Doctor counts log entries; caught_up, the chunks they named (read again once).
        assert [entry["state"][:10] for entry in saved] == ["behind by "]
        found = await answers(engine)
        # Saved again: the loaded arrays with the chunks read since (removed, added).
        assert await backend_of(engine).derived.indexes.save("a")
    assert found == await built_answers(pg_url, monkeypatch, tmp_path)
    held, again = await opened(pg_url)
    assert (held.origin, held.caught_up, held.refused) == ("loaded", 0, None)
    assert again == found


async def test_another_databases_copy_is_rebuilt(pg_url: str, pg_server: PgTestServer,
                                                 monkeypatch: pytest.MonkeyPatch,
                                                 tmp_path: Path) -> None:
    folder = await saved_memory(pg_url)
    other = pg_server.url(pg_server.create_database())
    try:
        await fill(other)
        async with Engine.open(other, config=DETERMINISTIC) as engine:
            indexes = backend_of(engine).derived.indexes
            assert indexes.saving is not None and indexes.saving.folder != folder
            target = indexes.saving.folder
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(folder, target)
        held, found = await opened(other)
        assert (held.origin, held.refused) == ("built", "saved from another database")
        assert found == await built_answers(other, monkeypatch, tmp_path)
    finally:
        pg_server.drop_database(other.rsplit("/", 1)[1].split("?")[0])


async def test_another_roles_copy_is_rebuilt(pg_url: str, pg_server: PgTestServer,
                                             monkeypatch: pytest.MonkeyPatch,
                                             tmp_path: Path) -> None:
    """A copy saved by one role is never read by another (one bound to a namespace sees
    less of the database): each role has its folder, and a copy put in another's is
    refused."""
    folder = await saved_memory(pg_url)
    role = "saved_index_reader"
    with pg_server.admin() as conn:
        conn.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(role)))
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN SUPERUSER").format(sql.Identifier(role)))
    try:
        url = pg_url.replace("://", f"://{role}@", 1) if "@" not in pg_url else (
            pg_url.split("://", 1)[0] + f"://{role}@" + pg_url.split("@", 1)[1])
        async with Engine.open(url, config=DETERMINISTIC) as engine:
            indexes = backend_of(engine).derived.indexes
            assert indexes.saving is not None and indexes.saving.folder != folder
            target = indexes.saving.folder
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(folder, target)
        held, found = await opened(url)
        assert (held.origin, held.refused) == ("built", "saved from another database")
        assert found == await built_answers(pg_url, monkeypatch, tmp_path)
    finally:
        with pg_server.admin() as conn:
            conn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(role)))
            conn.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(role)))


async def test_a_corrupt_copy_is_rebuilt(pg_url: str, monkeypatch: pytest.MonkeyPatch,
                                         tmp_path: Path) -> None:
    folder = await saved_memory(pg_url)
    name = derived_saved.index_name("a")
    manifest = json.loads((folder / f"{name}.json").read_text())
    target = folder / manifest["folder"] / "p.f_text.npy"
    data = bytearray(target.read_bytes())
    data[len(data) - 3] ^= 0x5A  # same size, one byte of the data changed
    target.write_bytes(bytes(data))
    held, found = await opened(pg_url)
    assert held.origin == "built" and "checksum" in held.refused
    assert found == await built_answers(pg_url, monkeypatch, tmp_path)
    # and the rebuilt index was saved over it
    assert isinstance(persisted.load(folder, name, fingerprint=manifest["fingerprint"],
                                     database=manifest["database"]), persisted.Loaded)


async def test_a_copy_older_than_the_pruned_log_is_rebuilt(pg_url: str,
                                                           monkeypatch: pytest.MonkeyPatch,
                                                           tmp_path: Path) -> None:
    await saved_memory(pg_url)
    await more_writes(pg_url)
    with psycopg.connect(pg_url, autocommit=True) as conn:  # as pruning does
        conn.execute("DELETE FROM chunk_changes WHERE xid < pg_current_xact_id()")
        conn.execute("UPDATE chunk_changes_pruned SET max_xid = pg_current_xact_id()")
    held, found = await opened(pg_url)
    assert held.origin == "built" and "pruned" in held.refused
    assert found == await built_answers(pg_url, monkeypatch, tmp_path)


async def test_the_save_after_a_build_does_not_hold_up_close(pg_url: str) -> None:
    """A build's save runs in the background; close waits for it, and the copy is whole."""
    await fill(pg_url)
    async with Engine.open(pg_url, config=DETERMINISTIC) as engine:
        await answers(engine)
        indexes = backend_of(engine).derived.indexes
        await asyncio.gather(*indexes._saves)
        assert indexes.saving is not None
        saved = await backend_of(engine).saved_indexes()
        assert [entry["state"] for entry in saved] == ["current"]
        assert saved[0]["index"] == "namespace 'a'" and saved[0]["bytes"] > 0


async def test_a_namespace_without_chunks_is_not_saved(pg_url: str) -> None:
    """A query of a namespace that holds nothing builds its (empty) index, which is not
    saved: the next open would start loading it in place of one that has chunks."""
    folder = await saved_memory(pg_url)
    async with Engine.open(pg_url, config=DETERMINISTIC) as engine:
        for namespace in ("nobody", "a%"):
            await engine.search(namespace=namespace, query=QUERIES[0], top_k=8)
            indexes = backend_of(engine).derived.indexes
            held = await indexes.build_now(namespace)
            assert held.ready and not held.chunk_ids
            assert not await indexes.save(namespace)
    assert sorted(path.name for path in folder.glob("*.json")) == [
        f"{derived_saved.index_name('a')}.json"]
