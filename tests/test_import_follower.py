"""An import's derived indexes followed by a helper process and saved at its end: the
importing process then loads them instead of building them, and answers as a build would;
a helper that dies or is not ready costs nothing but the build it would have spared."""

from __future__ import annotations

import asyncio
import io
import json
import random
import threading
from pathlib import Path
from typing import Any

import pytest

from core import Engine, bulk
from core.storage.derived import persisted
from core.storage.derived.changes import newest_seq
from core.storage.sqlite import index_follower
from tests.backend.test_derived_vectors import sentence
from tests.conftest import DETERMINISTIC
from tests.test_derived_saved import NAMES, answers, backend_of, built_answers


def items(agent: str, count: int, seed: int) -> list[tuple[str, None, dict[str, Any]]]:
    rng = random.Random(seed)
    return [(f"{agent}-s{n % 3}", None, {"role": "user", "content": sentence(rng)})
            for n in range(count)]


def manifests(path: Path) -> dict[str, dict[str, Any]]:
    folder = persisted.sqlite_folder(path)
    return {name: json.loads((folder / f"{name}.json").read_text()) for name in NAMES
            if (folder / f"{name}.json").exists()}


@pytest.fixture(autouse=True)
def follows_small_imports(monkeypatch: pytest.MonkeyPatch) -> None:
    """An import of two batches or more is followed (not only one of 10,000 messages)."""
    monkeypatch.setattr(bulk, "FOLLOW_FROM_MESSAGES", 1)


@pytest.fixture
def waits_for_the_follower(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, int]]:
    """Each import's follower is waited for (a short import ends before its start), and
    what its finish reported is kept."""
    monkeypatch.setattr(index_follower, "READY_WAIT_S", 60.0)
    reported: list[dict[str, int]] = []
    finish = index_follower.IndexFollower.finish

    async def kept(self: index_follower.IndexFollower) -> dict[str, int]:
        reported.append(await finish(self))
        return reported[-1]

    monkeypatch.setattr(index_follower.IndexFollower, "finish", kept)
    return reported


async def test_an_import_leaves_its_indexes_saved_at_its_last_commit(
        db_path: Path, tmp_path: Path, waits_for_the_follower: list[dict[str, int]]) -> None:
    async with Engine.open(db_path, config=DETERMINISTIC) as engine:
        for agent, count, seed in (("ann", 300, 1), ("bob", 200, 2)):
            result = await engine.store_many(items(agent, count, seed), agent=agent,
                                             batch_size=50)
            assert result.stored == count
        backend = backend_of(engine)
        newest = await backend._db.read(newest_seq)
        assert waits_for_the_follower[-1] == {name: newest for name in NAMES}
        assert {m["position"] for m in manifests(db_path).values()} == {newest}
        # This process held neither index: a query loads the saved copies, caught up 0.
        found = await answers(engine)
        for name in NAMES:
            assert backend.derived.state(name).describe() == "loaded from disk, caught up 0 changes"
    assert found == await built_answers(db_path, tmp_path)


async def test_an_index_held_through_an_import_is_taken_from_the_saved_copy(
        db_path: Path, tmp_path: Path, waits_for_the_follower: list[dict[str, int]]) -> None:
    async with Engine.open(db_path, config=DETERMINISTIC) as engine:
        for agent in ("ann", "bob"):  # one batch each: no follower
            await engine.store_many(items(agent, 200, 3), agent=agent)
        await answers(engine)
        backend = backend_of(engine)
        assert not waits_for_the_follower
        assert {backend.derived.state(name).origin for name in NAMES} == {"built"}
        await engine.store_many(items("bob", 400, 4), agent="bob", batch_size=100)
        assert set(waits_for_the_follower[-1]) == set(NAMES)
        found = await answers(engine)
        for name in NAMES:  # not the import applied here change by change
            assert backend.derived.state(name).describe() == "loaded from disk, caught up 0 changes"
    assert found == await built_answers(db_path, tmp_path)


async def test_an_import_whose_follower_dies_is_answered_from_a_build(
        db_path: Path, tmp_path: Path, waits_for_the_follower: list[dict[str, int]]) -> None:
    async with Engine.open(db_path, config=DETERMINISTIC) as engine:
        backend = backend_of(engine)
        await engine.store_many(items("bob", 200, 9), agent="bob")  # one batch: no follower
        killed: list[int] = []

        def kill_it(settled: int) -> None:
            follower = backend._follower
            if follower is not None and follower._process is not None and not killed:
                follower._process.kill()
                killed.append(settled)

        result = await engine.store_many(items("ann", 400, 5), agent="ann", batch_size=50,
                                         progress=kill_it)
        assert result.stored == 400 and killed and killed[0] < 400
        assert waits_for_the_follower == [{}]  # nothing taken from it
        # Built from the file (or loaded from a copy the child saved before it was killed,
        # if it got that far, and caught up): either way, the build's answers.
        found = await answers(engine)
    assert found == await built_answers(db_path, tmp_path)


async def test_an_import_shorter_than_the_followers_start_stops_it(db_path: Path,
                                                                   tmp_path: Path) -> None:
    async with Engine.open(db_path, config=DETERMINISTIC) as engine:
        backend = backend_of(engine)
        started: list[Any] = []
        start = index_follower.IndexFollower.start

        async def never_ready(self: index_follower.IndexFollower) -> None:
            await start(self)
            started.append(self._process)
            assert self._ready is not None
            self._ready.cancel()  # as if it were still loading when the import ends

            async def pending() -> dict[str, Any]:
                await asyncio.Event().wait()
                return {}
            self._ready = asyncio.create_task(pending())

        index_follower.IndexFollower.start = never_ready  # type: ignore[method-assign]
        try:
            await engine.store_many(items("bob", 200, 9), agent="bob")
            await engine.store_many(items("ann", 200, 6), agent="ann", batch_size=50)
        finally:
            index_follower.IndexFollower.start = start  # type: ignore[method-assign]
        assert len(started) == 1 and started[0].returncode is not None
        assert backend._follower is None
        found = await answers(engine)  # built, or loaded from the child's copy after its build
    assert found == await built_answers(db_path, tmp_path)


async def test_the_child_follows_commits_until_told_to_finish(db_path: Path) -> None:
    async with Engine.open(db_path, config=DETERMINISTIC) as engine:
        await engine.store_many(items("ann", 60, 7), agent="ann")
    lines = _Lines()
    out = io.BytesIO()
    child = threading.Thread(target=index_follower.follow,
                             args=(db_path, 5000, lines, out))
    child.start()
    async with Engine.open(db_path, config=DETERMINISTIC) as engine:
        backend_of(engine).derived.saving = None  # nothing saved but by the child
        await engine.store_many(items("bob", 90, 8), agent="bob")
        newest = await backend_of(engine)._db.read(newest_seq)
    lines.send(b"finish\n")
    child.join(60)
    said = [json.loads(line) for line in out.getvalue().splitlines()]
    assert set(said[0]["ready"]) == set(NAMES)
    assert said[-1]["saved"] == {name: newest for name in NAMES}
    assert "error" not in said[-1] and set(said[-1]["seconds"]) == {"catch_up", "save"}


@pytest.mark.filterwarnings("error::pytest.PytestUnhandledThreadExceptionWarning")
async def test_a_save_that_fails_costs_only_its_own_index(
        db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The child saves each index on a thread of its own: one that fails is reported, and
    the other is still saved and named; a failed save on a thread never escapes it."""
    from core.storage.derived import holder

    save = holder.DerivedIndexes.save

    def failing(self: holder.DerivedIndexes, name: str, **kwargs: Any) -> bool:
        # Every save of it fails: the end's, and the one a quiet moment may start before.
        if name == "full-text":
            raise RuntimeError("disk on fire")
        return save(self, name, **kwargs)

    async with Engine.open(db_path, config=DETERMINISTIC) as engine:
        await engine.store_many(items("ann", 60, 7), agent="ann")
        newest = await backend_of(engine)._db.read(newest_seq)
    monkeypatch.setattr(holder.DerivedIndexes, "save", failing)
    lines, out = _Lines(), io.BytesIO()
    lines.send(b"finish\n")
    index_follower.follow(db_path, 5000, lines, out)
    said = json.loads(out.getvalue().splitlines()[-1])
    assert said["saved"] == {"namespace-vectors": newest}
    assert said["error"] == "full-text: RuntimeError: disk on fire"


class _Lines:
    """A child's input, fed a line at a time by the test."""

    def __init__(self) -> None:
        self._lines: list[bytes] = []
        self._more = threading.Condition()

    def send(self, line: bytes) -> None:
        with self._more:
            self._lines.append(line)
            self._more.notify()

    def __iter__(self) -> _Lines:
        return self

    def __next__(self) -> bytes:
        with self._more:
            self._more.wait_for(lambda: bool(self._lines))
            return self._lines.pop(0)


async def test_an_import_under_the_threshold_starts_no_follower(
        db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bulk, "FOLLOW_FROM_MESSAGES", 300)
    started: list[int] = []
    start = index_follower.IndexFollower.start

    async def counted(self: index_follower.IndexFollower) -> None:
        started.append(1)
        await start(self)

    monkeypatch.setattr(index_follower.IndexFollower, "start", counted)
    async with Engine.open(db_path, config=DETERMINISTIC) as engine:
        await engine.store_many(items("ann", 250, 10), agent="ann", batch_size=50)
        assert started == []
        await engine.store_many(items("bob", 350, 11), agent="bob", batch_size=50)
        assert started == [1]
