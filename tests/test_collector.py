"""An import keeps the collector's full passes off what existed before it (core.collector),
and gives it all back when it ends, and never undoes a freeze the process made itself."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path

import pytest

from core import Engine
from core.collector import collector_spared
from tests.conftest import DETERMINISTIC


@pytest.fixture
def unfrozen() -> Iterator[None]:
    """A process that froze nothing (the test run freezes its imports: tests/conftest.py),
    frozen again afterwards."""
    gc.unfreeze()
    try:
        yield
    finally:
        gc.freeze()


def test_what_existed_is_frozen_inside_and_given_back_after(unfrozen: None) -> None:
    before = [object()]
    gc.collect()
    assert gc.get_freeze_count() == 0
    with collector_spared():
        assert gc.get_freeze_count() > 0
        assert gc.is_tracked(before)
    assert gc.get_freeze_count() == 0


def test_overlapping_blocks_give_back_when_the_last_ends(unfrozen: None) -> None:
    first, second = collector_spared(), collector_spared()
    first.__enter__()
    frozen = gc.get_freeze_count()
    second.__enter__()
    assert gc.get_freeze_count() == frozen  # the second freezes nothing more
    first.__exit__(None, None, None)
    assert gc.get_freeze_count() == frozen
    second.__exit__(None, None, None)
    assert gc.get_freeze_count() == 0


def test_an_error_inside_still_gives_back(unfrozen: None) -> None:
    with pytest.raises(RuntimeError), collector_spared():
        raise RuntimeError("the import failed")
    assert gc.get_freeze_count() == 0


def test_a_freeze_the_process_made_is_left_alone(unfrozen: None) -> None:
    gc.freeze()
    theirs = gc.get_freeze_count()
    assert theirs > 0
    with collector_spared():
        assert gc.get_freeze_count() == theirs
    assert gc.get_freeze_count() == theirs


async def test_an_import_runs_spared_and_a_single_batch_does_not(tmp_path: Path,
                                                                unfrozen: None) -> None:
    seen: list[int] = []
    items = [(f"s{n % 3}", None, {"role": "user", "content": f"message {n} about lanterns"})
             for n in range(30)]
    async with Engine.open(tmp_path / "m.db", config=DETERMINISTIC) as engine:
        await engine.store_many(items[:5], batch_size=10,
                                progress=lambda done: seen.append(gc.get_freeze_count()))
        assert seen and set(seen) == {0}  # one batch: not an import
        seen.clear()
        result = await engine.store_many(items[5:], batch_size=10,
                                         progress=lambda done: seen.append(gc.get_freeze_count()))
        assert result.stored == 25
        assert len(seen) == 3 and all(count > 0 for count in seen)
        assert gc.get_freeze_count() == 0
