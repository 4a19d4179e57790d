"""The tests of tests/test_derived_saved.py that read or stage the memory's tables directly (a
pruned change log)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from core import Engine
from core.storage.derived import persisted
from tests.backend.test_derived_vectors import fill
from tests.conftest import DETERMINISTIC, execute, rows
from tests.test_derived_saved import (
    NAMES,
    answers,
    backend_of,
    built_answers,
    more_writes,
    origins_after_open,
    saved_memory,
)


async def test_a_copy_older_than_the_pruned_log_is_rebuilt(db_path: Path, tmp_path: Path) -> None:
    await saved_memory(db_path)
    await more_writes(db_path)
    newest = rows(db_path, "SELECT max(seq) FROM chunk_changes")[0][0]
    execute(db_path, "DELETE FROM chunk_changes WHERE seq < ?", newest - 5)  # as pruning does
    origins, found = await origins_after_open(db_path)
    for name in NAMES:
        assert origins[name][0] == "built"
        assert "pruned" in origins[name][2]
    assert found == await built_answers(db_path, tmp_path)


async def test_a_copy_that_went_on_alone_past_a_pruned_mark_is_rebuilt(db_path: Path,
                                                                       tmp_path: Path) -> None:
    """The same, once the copy's log was pruned up to the saved position and no further:
    the entry at it (the only thing the saved copy tied itself to) is gone, later ones are
    there, so the copy's log reads as a continuation of the original's."""
    await saved_memory(db_path)
    twin = tmp_path / "twin" / "twin.db"
    twin.parent.mkdir()
    shutil.copy(db_path, twin)
    await more_writes(db_path, 10)
    async with Engine.open(db_path, config=DETERMINISTIC) as engine:
        await answers(engine)
        for name in NAMES:
            assert backend_of(engine).derived.save(name)
    saved_at = json.loads((persisted.sqlite_folder(db_path) / "full-text.json").read_text())[
        "position"]
    async with Engine.open(twin, config=DETERMINISTIC) as engine:
        backend_of(engine).derived.saving.writable = False  # type: ignore[union-attr]
        await fill(engine, {"ann": 120, "dora": 120}, 2, seed=5)
    assert rows(twin, "SELECT max(seq) FROM chunk_changes")[0][0] > saved_at
    execute(twin, "DELETE FROM chunk_changes WHERE seq <= ?", saved_at)  # as pruning does
    shutil.copytree(persisted.sqlite_folder(db_path), persisted.sqlite_folder(twin))
    origins, found = await origins_after_open(twin)
    for name in NAMES:
        assert origins[name][0] == "built" and "differs" in origins[name][2]
    assert found == await built_answers(twin, tmp_path)
