"""``workbench bench ingest`` times the engine, not the harness's own generated messages."""

from __future__ import annotations

import gc
from typing import Any

import pytest

from core.bulk import BulkIngest
from workbench.bench.ingest import run_ingest


async def test_store_many_is_timed_with_the_generated_messages_frozen(
        monkeypatch: pytest.MonkeyPatch) -> None:
    frozen_during: list[int] = []
    real = BulkIngest.store_many

    async def watching(self: BulkIngest, items: Any, **options: Any) -> Any:
        frozen_during.append(gc.get_freeze_count())
        return await real(self, items, **options)

    monkeypatch.setattr(BulkIngest, "store_many", watching)
    figures = await run_ingest({"embedding": {"backend": "deterministic"}}, 60, 3,
                               say=lambda _: None)
    assert figures.messages == 60
    # The messages exist before timing starts; a full collection must not walk them.
    assert frozen_during and frozen_during[0] > 0
    assert gc.get_freeze_count() == 0  # and the process is left as it was
