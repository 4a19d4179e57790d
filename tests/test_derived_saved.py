"""Derived indexes saved beside the file: a new process loads them (and catches them up)
instead of building them, and a copy it cannot trust is built afresh, never answered from.

Each case compares the answers (hybrid, both legs from the derived indexes) with those of
the same file whose indexes were built from it in memory."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from core import Engine
from core.storage.derived import persisted
from core.storage.derived.vector_matrix import DERIVED_VECTOR_LEG
from core.storage.sqlite.sqlite_backend import SqliteBackend
from tests.backend.test_derived_vectors import fill
from tests.conftest import DETERMINISTIC

QUERIES = (("ann", "apple pie jazz"), ("ann", "winter harbour lamp coffee"),
           ("bob", "tax invoice doctor"), ("bob", "river museum ticket"))
NAMES = ("namespace-vectors", "full-text")


def backend_of(engine: Engine) -> SqliteBackend:
    backend = engine.backend
    assert isinstance(backend, SqliteBackend)
    return backend


async def answers(engine: Engine) -> list[list[tuple[str, float]]]:
    """Each query's results, asserting both legs came from the derived indexes."""
    backend = backend_of(engine)
    for name in NAMES:
        await asyncio.to_thread(backend.derived.build_now, name)
    found = []
    for namespace, query in QUERIES:
        result = await engine.search(namespace=namespace, query=query, top_k=8)
        assert result.legs.vector_path == DERIVED_VECTOR_LEG
        assert result.legs.fts_derived
        found.append([(r.chunk_id, round(r.score, 9)) for r in result.results])
    return found


async def built_answers(path: Path, tmp: Path) -> list[list[tuple[str, float]]]:
    """The answers of a copy of ``path`` whose indexes are built from it in memory."""
    copy = tmp / "built" / path.name
    copy.parent.mkdir(exist_ok=True)
    shutil.copy(path, copy)
    async with Engine.open(copy, config=DETERMINISTIC) as engine:
        backend = backend_of(engine)
        assert backend.derived.saving is not None
        backend.derived.saving.writable = False
        found = await answers(engine)
        assert all(backend.derived.state(name).origin == "built" for name in NAMES)
    return found


async def saved_memory(path: Path) -> None:
    """A memory of two namespaces whose indexes were built and saved."""
    async with Engine.open(path, config=DETERMINISTIC) as engine:
        await fill(engine, {"ann": 300, "bob": 200}, 3)
        await answers(engine)
    assert (persisted.sqlite_folder(path) / "namespace-vectors.json").exists()


async def more_writes(path: Path, count: int = 40) -> None:
    """Writes the saved copies do not see (this process saves nothing)."""
    async with Engine.open(path, config=DETERMINISTIC) as engine:
        saving = backend_of(engine).derived.saving
        assert saving is not None
        saving.writable = False
        await fill(engine, {"ann": count, "carl": count}, 2, seed=11)
        await engine.forget("ann-s0")


async def origins_after_open(path: Path) -> tuple[dict[str, Any], list[list[tuple[str, float]]]]:
    async with Engine.open(path, config=DETERMINISTIC) as engine:
        found = await answers(engine)
        derived = backend_of(engine).derived
        states = {name: derived.state(name) for name in NAMES}
        return ({name: (s.origin, s.caught_up, s.refused) for name, s in states.items()},
                found)


async def test_a_new_process_loads_the_saved_indexes(db_path: Path, tmp_path: Path) -> None:
    await saved_memory(db_path)
    origins, found = await origins_after_open(db_path)
    assert origins == {name: ("loaded", 0, None) for name in NAMES}
    assert found == await built_answers(db_path, tmp_path)


async def test_a_copy_of_an_unchanged_file_starts_with_the_common_words_quotients(
        db_path: Path, tmp_path: Path) -> None:
    await saved_memory(db_path)
    async with Engine.open(db_path, config=DETERMINISTIC) as engine:
        backend = backend_of(engine)
        for name in NAMES:  # their loads
            await asyncio.to_thread(backend.derived.build_now, name)
        index = backend.full_text_index
        common = [term for term in range(len(index.tokenizer.terms)) if term in index.quotients]
        assert common  # before any query: made when the copy was saved
        words = [index.tokenizer.terms[term] for term in common[:3]] + ["harbour"]
        taken = await engine.search(namespace="ann", query=" ".join(words), top_k=8)
        assert taken.legs.fts_derived
    copy = tmp_path / "built" / db_path.name
    copy.parent.mkdir()
    shutil.copy(db_path, copy)
    async with Engine.open(copy, config=DETERMINISTIC) as engine:
        for name in NAMES:
            await asyncio.to_thread(backend_of(engine).derived.build_now, name)
            assert backend_of(engine).derived.state(name).origin == "built"
        made = await engine.search(namespace="ann", query=" ".join(words), top_k=8)
    assert [(r.chunk_id, r.score) for r in taken.results] == [
        (r.chunk_id, r.score) for r in made.results]
    await more_writes(db_path, 5)  # the row count moves: the saved quotients no longer fit
    async with Engine.open(db_path, config=DETERMINISTIC) as engine:
        backend = backend_of(engine)
        await asyncio.to_thread(backend.derived.build_now, "full-text")
        assert backend.derived.state("full-text").origin == "loaded"
        assert len(backend.full_text_index.quotients) == 0


async def test_a_query_asked_while_the_copies_load_waits_for_them_on_one_reader(
        db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A fresh process's first query: both legs from the loaded indexes, one after the
    other on one reader (split, each leg waited for its load on a reader of its own)."""
    await saved_memory(db_path)
    release = threading.Event()
    load = persisted.load

    def held(*args: Any, **kwargs: Any) -> Any:
        assert release.wait(10)
        return load(*args, **kwargs)

    monkeypatch.setattr(persisted, "load", held)
    try:
        # No worker and no upkeep: the only reads are the query's.
        async with Engine.open(db_path, config=DETERMINISTIC, start_worker=False,
                               background=False) as engine:
            backend = backend_of(engine)
            assert not any(backend.derived.state(name).ready for name in NAMES)
            assert all(backend.derived.answers_from_memory(name) for name in NAMES)
            query = asyncio.ensure_future(engine.search(namespace="ann",
                                                        query="apple pie jazz", top_k=8))
            for _ in range(500):  # until the query holds the reader, waiting for the loads
                await asyncio.sleep(0.01)
                if backend._db._idle is not None and backend._db._idle.empty():
                    break
            await asyncio.sleep(0.05)  # time for a second leg to ask for a reader of its own
            release.set()
            result = await query
            assert result.legs.vector_path == DERIVED_VECTOR_LEG and result.legs.fts_derived
            assert len(backend._db._readers) == 1
            assert all(backend.derived.state(name).origin == "loaded" for name in NAMES)
    finally:
        release.set()


async def test_writes_to_a_loaded_copy_leave_the_saved_files_as_they_were(
        db_path: Path, tmp_path: Path) -> None:
    """The loaded per-row arrays are the saved files mapped copy-on-write: a delete writes
    into this process's pages of them, never into the files."""
    await saved_memory(db_path)
    files = sorted(persisted.sqlite_folder(db_path).rglob("*.npy"))
    before = [path.read_bytes() for path in files]
    async with Engine.open(db_path, config=DETERMINISTIC) as engine:
        saving = backend_of(engine).derived.saving
        assert saving is not None
        saving.writable = False
        await engine.forget("ann-s0")
        await answers(engine)  # the deletes, applied to the mapped arrays
        await fill(engine, {"ann": 30}, 2, seed=11)
        await answers(engine)  # the inserts grow them into memory
        assert backend_of(engine).derived.state("full-text").origin == "loaded"
    assert [path.read_bytes() for path in files] == before
    origins, found = await origins_after_open(db_path)
    assert all(origin == "loaded" for origin, _, _ in origins.values())
    assert found == await built_answers(db_path, tmp_path)


async def test_a_stale_copy_is_caught_up_from_the_log(db_path: Path, tmp_path: Path) -> None:
    await saved_memory(db_path)
    await more_writes(db_path)
    origins, found = await origins_after_open(db_path)
    for name in NAMES:
        origin, caught_up, _ = origins[name]
        assert origin == "loaded" and caught_up > 80
    assert found == await built_answers(db_path, tmp_path)


async def test_a_truncated_array_is_rebuilt(db_path: Path, tmp_path: Path) -> None:
    await saved_memory(db_path)
    for name, array in (("namespace-vectors", "codes"), ("full-text", "slots")):
        target = _array(db_path, name, array)
        target.write_bytes(target.read_bytes()[:-7])
    origins, found = await origins_after_open(db_path)
    for name in NAMES:
        assert origins[name][0] == "built" and "bytes, not" in origins[name][2]
    assert found == await built_answers(db_path, tmp_path)


async def test_a_corrupt_array_is_rebuilt(db_path: Path, tmp_path: Path) -> None:
    await saved_memory(db_path)
    for name, array in (("namespace-vectors", "codes"), ("full-text", "tf_text")):
        target = _array(db_path, name, array)
        data = bytearray(target.read_bytes())
        data[len(data) - 3] ^= 0x5A  # same size, one byte of the data changed
        target.write_bytes(bytes(data))
    origins, found = await origins_after_open(db_path)
    for name in NAMES:
        assert origins[name][0] == "built" and "checksum" in origins[name][2]
    assert found == await built_answers(db_path, tmp_path)


async def test_a_copy_from_another_model_is_rebuilt(db_path: Path, tmp_path: Path) -> None:
    await saved_memory(db_path)
    manifest_path = persisted.sqlite_folder(db_path) / "namespace-vectors.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["fingerprint"]["embedding_model"] = "another-model"
    manifest["seal"] = persisted._seal(manifest)  # a well-formed copy, made by another model
    manifest_path.write_text(json.dumps(manifest))
    origins, found = await origins_after_open(db_path)
    assert origins["namespace-vectors"][0] == "built"
    assert "another-model" in origins["namespace-vectors"][2]
    assert origins["full-text"] == ("loaded", 0, None)
    assert found == await built_answers(db_path, tmp_path)


async def test_another_databases_copy_is_rebuilt(db_path: Path, tmp_path: Path) -> None:
    await saved_memory(db_path)
    other = tmp_path / "other" / "other.db"
    other.parent.mkdir()
    async with Engine.open(other, config=DETERMINISTIC) as engine:
        await fill(engine, {"ann": 120, "bob": 90}, 2, seed=3)
    shutil.copytree(persisted.sqlite_folder(db_path), persisted.sqlite_folder(other))
    origins, found = await origins_after_open(other)
    for name in NAMES:
        assert origins[name] == ("built", 0, "saved from another database")
    assert found == await built_answers(other, tmp_path)


async def test_a_copy_whose_log_went_on_alone_is_rebuilt(db_path: Path, tmp_path: Path) -> None:
    """A copy of the file (same id) that was written on its own, with the original's later
    indexes beside it: its log at their position holds another entry."""
    await saved_memory(db_path)
    twin = tmp_path / "twin" / "twin.db"
    twin.parent.mkdir()
    shutil.copy(db_path, twin)
    await more_writes(db_path, 30)
    async with Engine.open(db_path, config=DETERMINISTIC) as engine:
        await answers(engine)
        for name in NAMES:
            assert backend_of(engine).derived.save(name)
    async with Engine.open(twin, config=DETERMINISTIC) as engine:
        backend_of(engine).derived.saving.writable = False  # type: ignore[union-attr]
        await engine.forget("ann-s1")
        await engine.forget("bob-s1")
        await fill(engine, {"dora": 120}, 2, seed=5)
    shutil.copytree(persisted.sqlite_folder(db_path), persisted.sqlite_folder(twin))
    origins, found = await origins_after_open(twin)
    for name in NAMES:
        assert origins[name][0] == "built" and "differs" in origins[name][2]
    assert found == await built_answers(twin, tmp_path)


_SAVER = """
import asyncio, sys
sys.path.insert(0, {root!r})
import numpy as np
import pytest

from core import Engine
from tests.conftest import DETERMINISTIC
from tests.test_derived_saved import answers, backend_of
async def main():
    async with Engine.open({path!r}, config=DETERMINISTIC) as engine:
        derived = backend_of(engine).derived
        derived.saving.writable = False
        await engine.store("late", 1, {{"role": "user", "content": "violin tennis"}}, agent="ann")
        await engine.drain()
        await answers(engine)
        derived.saving.writable = True
        saved = derived.save("full-text")
        derived.saving.writable = False
        print("saved" if saved else "not saved")
asyncio.run(main())
"""


async def test_two_processes_saving_at_once_keep_a_whole_copy(db_path: Path,
                                                               tmp_path: Path) -> None:
    """A process saves while another's long save is under way (its folder's files untouched
    for minutes): the saves do not remove each other's folders, and the copy named last
    is whole and loaded."""
    await saved_memory(db_path)
    folder = persisted.sqlite_folder(db_path)
    flag = tmp_path / "paused"
    child = subprocess.Popen(
        [sys.executable, "-c", _SAVER.format(root=str(Path.cwd()), path=str(db_path))],
        env={**os.environ, "WORKBENCH_INDEX_SAVE_PAUSE": str(flag)},
        stdout=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not flag.exists() and child.poll() is None and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    assert flag.exists(), "the child never reached its save"
    old = time.time() - 3600
    for entry in folder.iterdir():  # the child's save as if it had been writing for an hour
        if entry.is_dir():
            os.utime(entry, (old, old))
    async with Engine.open(db_path, config=DETERMINISTIC) as engine:
        await engine.store("later", 1, {"role": "user", "content": "cello squash"}, agent="bob")
        await engine.drain()
        await answers(engine)
        backend_of(engine).derived.save("full-text")
        saving = backend_of(engine).derived.saving
        assert saving is not None
        saving.writable = False
    flag.unlink()
    out, _ = child.communicate(timeout=120)
    assert child.returncode == 0
    assert out.strip() == "saved"
    manifest = json.loads((folder / "full-text.json").read_text())
    assert (folder / manifest["folder"]).is_dir()
    origins, found = await origins_after_open(db_path)
    assert origins["full-text"][0] == "loaded" and origins["full-text"][2] is None
    assert found == await built_answers(db_path, tmp_path)


_CHILD = """
import asyncio, sys
sys.path.insert(0, {root!r})
import numpy as np
import pytest

from core import Engine
from tests.conftest import DETERMINISTIC
from tests.test_derived_saved import answers, backend_of
async def main():
    async with Engine.open({path!r}, config=DETERMINISTIC) as engine:
        await engine.store("late", 1, {{"role": "user", "content": "violin tennis"}}, agent="ann")
        await engine.drain()
        await answers(engine)
        for name in {names!r}:
            backend_of(engine).derived.save(name)
asyncio.run(main())
"""


async def test_a_writer_killed_mid_save_leaves_the_old_copy(db_path: Path,
                                                            tmp_path: Path) -> None:
    await saved_memory(db_path)
    folder = persisted.sqlite_folder(db_path)
    before = {name: json.loads((folder / f"{name}.json").read_text()) for name in NAMES}
    flag = tmp_path / "paused"
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD.format(root=str(Path.cwd()), path=str(db_path),
                                             names=NAMES)],
        env={**os.environ, "WORKBENCH_INDEX_SAVE_PAUSE": str(flag)})
    deadline = time.monotonic() + 120
    while not flag.exists() and child.poll() is None and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    assert flag.exists(), "the child never reached its save"
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=60)
    # The first array of a new copy was written; the manifests still name the old copies.
    assert {name: json.loads((folder / f"{name}.json").read_text()) for name in NAMES} == before
    origins, found = await origins_after_open(db_path)
    for name in NAMES:
        assert origins[name][0] == "loaded" and origins[name][1] > 0
    assert found == await built_answers(db_path, tmp_path)


async def test_explain_and_doctor_say_where_the_indexes_came_from(db_path: Path) -> None:
    await saved_memory(db_path)
    await more_writes(db_path, 5)
    async with Engine.open(db_path, config=DETERMINISTIC) as engine:
        saved = {entry["index"]: entry for entry in await backend_of(engine).saved_indexes()}
        assert saved["full-text"]["state"].startswith("behind by ")
        assert saved["namespace-vectors"]["bytes"] > 0
        await answers(engine)
        result = await engine.search(namespace="ann", query="apple pie", top_k=5)
        explained = result.explain()
        for name in NAMES:
            assert explained["legs"]["derived_indexes"][name].startswith("loaded from disk, "
                                                                         "caught up ")
        for name in NAMES:  # False when the quiet-period saver (5 s) was first: a slow host
            backend_of(engine).derived.save(name)
        saved = {entry["index"]: entry for entry in await backend_of(engine).saved_indexes()}
        assert {entry["state"] for entry in saved.values()} == {"current"}
    _array(db_path, "full-text", "slots").write_bytes(b"")
    # Read only: a writable open starts loading at once, builds when the copy is refused
    # and saves the build, so its doctor may already find the new copy current.
    async with Engine.open(db_path, config=DETERMINISTIC, read_only=True) as engine:
        saved = {entry["index"]: entry for entry in await backend_of(engine).saved_indexes()}
        assert saved["full-text"]["state"].startswith("invalid: slots.npy is 0 bytes")
        result = await engine.search(namespace="ann", query="apple pie", top_k=5)
        await answers(engine)
        result = await engine.search(namespace="ann", query="apple pie", top_k=5)
        assert result.explain()["legs"]["derived_indexes"]["full-text"].startswith(
            "built from the file")
    async with Engine.open(db_path, config=DETERMINISTIC) as engine:
        await answers(engine)
        backend_of(engine).derived.save("full-text")  # else the save after its build did
        saved = {entry["index"]: entry for entry in await backend_of(engine).saved_indexes()}
        assert saved["full-text"]["state"] == "current"


def _array(path: Path, name: str, array: str) -> Path:
    folder = persisted.sqlite_folder(path)
    manifest = json.loads((folder / f"{name}.json").read_text())
    return folder / manifest["folder"] / f"{array}.npy"


async def test_the_phrases_queries_asked_for_are_saved_and_loaded(db_path: Path,
                                                                   tmp_path: Path) -> None:
    # A phrase ("search_web" is "search web" to FTS5) costs a read of the file the first
    # time it is asked: a quiet period saves it, though the file did not move.
    async with Engine.open(db_path, config=DETERMINISTIC) as engine:
        await fill(engine, {"ann": 300, "bob": 200}, 3)
        await engine.store_many([("ann-s9", None, {"role": "user", "content": text})
                                 for text in ("search_web found the hotel",
                                              "web search, then search web pages")],
                                agent="ann")
        await answers(engine)
    async with Engine.open(db_path, config=DETERMINISTIC) as engine:
        backend = backend_of(engine)
        await answers(engine)
        index = backend.full_text_index
        assert index.search("ann", ["search_web"], 10) is None  # not asked yet: needs the file
        asked = await engine.search(namespace="ann", query="search_web hotel", mode="keyword")
        assert asked.legs.fts_derived
        assert index.learned() == 1
        assert backend.derived.save("full-text")  # what the quiet period does
        assert not backend.derived.save("full-text")  # nothing new since
        found = index.search("ann", ["search_web"], 10)
    async with Engine.open(db_path, config=DETERMINISTIC) as engine:
        backend = backend_of(engine)
        await answers(engine)
        assert backend.derived.state("full-text").origin == "loaded"
        index = backend.full_text_index
        assert index.learned() == 1
        assert found and index.search("ann", ["search_web"], 10) == found
        again = await engine.search(namespace="ann", query="search_web hotel", mode="keyword")
        assert [r.chunk_id for r in again.results] == [r.chunk_id for r in asked.results]


def test_a_copy_saved_with_crc32_checksums_is_still_checked_and_loaded(tmp_path: Path) -> None:
    # Copies saved before xxh3 carry CRC-32s: they load (no rebuild on upgrading), and a
    # changed byte is still caught.
    arrays = {"a": np.arange(1000, dtype=np.int64), "b": np.zeros(0, dtype=np.int32)}
    keys: dict[str, Any] = {"fingerprint": {"model": "m"}, "database": "db"}
    persisted.save(tmp_path, "ix", position=3, entry=None, meta={}, arrays=arrays, **keys)
    path = tmp_path / "ix.json"
    manifest = json.loads(path.read_text())
    folder = tmp_path / manifest["folder"]
    for key, described in manifest["arrays"].items():
        del described["xxh3"]
        described["crc32"] = zlib.crc32(np.load(folder / f"{key}.npy").tobytes())
    manifest["seal"] = persisted._seal(manifest)
    path.write_text(json.dumps(manifest))
    loaded = persisted.load(tmp_path, "ix", **keys)
    assert not isinstance(loaded, str)
    assert loaded.arrays["a"].tolist() == list(range(1000))
    target = folder / "a.npy"
    data = bytearray(target.read_bytes())
    data[-5] ^= 0x01
    target.write_bytes(bytes(data))
    assert persisted.load(tmp_path, "ix", **keys) == "a.npy is corrupt (checksum)"


def test_arrays_checked_ahead_serve_only_the_manifest_that_was_checked(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # An open may start checking saved copies before it knows they are its own
    # (core.storage.index_cache): the load takes those arrays for that very manifest only.
    keys: dict[str, Any] = {"fingerprint": {"model": "m"}, "database": "db"}
    persisted.save(tmp_path, "ix", position=1, entry=None, meta={},
                   arrays={"a": np.arange(10, dtype=np.int64)}, **keys)
    checked: list[str] = []
    real = persisted._checked_arrays

    def counting(folder: Path, manifest: dict[str, Any], mode: Any) -> Any:
        checked.append(manifest["folder"])
        return real(folder, manifest, mode)

    monkeypatch.setattr(persisted, "_checked_arrays", counting)
    persisted.check_ahead(tmp_path, ["ix"], "r")
    loaded = persisted.load(tmp_path, "ix", **keys)
    assert not isinstance(loaded, str) and loaded.arrays["a"].tolist() == list(range(10))
    assert len(checked) == 1  # checked once, ahead
    persisted.check_ahead(tmp_path, ["ix"], "r")
    persisted._ahead[(str(tmp_path), "ix", "r")].result()  # checked before the next save
    persisted.save(tmp_path, "ix", position=2, entry=None, meta={},
                   arrays={"a": np.arange(20, dtype=np.int64)}, **keys)
    loaded = persisted.load(tmp_path, "ix", **keys)
    assert not isinstance(loaded, str) and loaded.arrays["a"].tolist() == list(range(20))
    assert len(checked) == 3 and checked[-1] != checked[-2]  # the new copy, checked anew
    # A hint naming no folder, or a folder with nothing saved, checks nothing.
    persisted.check_ahead(tmp_path / "nowhere", ["ix"], "r")
    assert persisted.load(tmp_path / "nowhere", "ix", **keys) == "none saved"


def test_checks_ahead_not_loaded_in_time_are_dropped_by_one_timer(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """However many opens check ahead, one timer thread waits to drop what was not loaded,
    and it drops only what is due."""
    keys: dict[str, Any] = {"fingerprint": {"model": "m"}, "database": "db"}
    for name in ("early", "late"):
        persisted.save(tmp_path, name, position=1, entry=None, meta={},
                       arrays={"a": np.arange(3, dtype=np.int64)}, **keys)
    monkeypatch.setattr(persisted, "AHEAD_KEEP_S", 3600.0)  # the test drops them itself
    before = threading.active_count()
    for _ in range(20):
        persisted.check_ahead(tmp_path, ["early"], "r")
    persisted.check_ahead(tmp_path, ["late"], "r")
    assert threading.active_count() - before <= 2  # the timer, and the pool's one worker
    early, late = (str(tmp_path), "early", "r"), (str(tmp_path), "late", "r")
    persisted._ahead_until[early] = 0.0  # its time has come
    persisted._forget_due()
    assert early not in persisted._ahead and late in persisted._ahead
    loaded = persisted.load(tmp_path, "late", **keys)
    assert not isinstance(loaded, str) and late not in persisted._ahead_until


def watch_checks_ahead(monkeypatch: pytest.MonkeyPatch,
                       ) -> tuple[list[tuple[Path, list[str]]], list[bool]]:
    """The checks started ahead (folder, names) and, for each load, whether it took what
    was checked ahead; both filled as the code runs."""
    ahead: list[tuple[Path, list[str]]] = []
    taken: list[bool] = []
    check_ahead, taken_ahead = persisted.check_ahead, persisted._taken_ahead

    def checking(folder: Path, names: Any, mode: Any) -> None:
        ahead.append((folder, list(names)))
        check_ahead(folder, names, mode)

    def taking(*args: Any) -> Any:
        found = taken_ahead(*args)
        taken.append(found is not None)
        return found

    monkeypatch.setattr(persisted, "check_ahead", checking)
    monkeypatch.setattr(persisted, "_taken_ahead", taking)
    return ahead, taken


async def test_an_open_checks_the_copies_beside_the_file_before_it_reads_it(
        db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    await saved_memory(db_path)
    ahead, taken = watch_checks_ahead(monkeypatch)
    origins, _ = await origins_after_open(db_path)
    assert ahead == [(persisted.sqlite_folder(db_path), list(NAMES))]
    assert taken == [True, True]
    assert origins == {name: ("loaded", 0, None) for name in NAMES}
