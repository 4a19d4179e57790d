"""The exhaustive full-text query (tags, phrase words) matches a small session's chunks row
by row and a large one's through the GIN index (core/storage/pg/search.py): both give the
same ranking."""

from __future__ import annotations

import asyncio

import pytest

from core import Engine
from core.storage.pg import fts_bm25, search
from tests.conftest import DETERMINISTIC

WORDS = ("deploy", "cache", "invoice", "latency", "rollback", "ticket", "schema", "queue")


def test_small_and_large_session_paths_rank_alike(pg_url: str,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    async def run() -> list[list[tuple[str, float]]]:
        async with Engine.open(pg_url, config=DETERMINISTIC) as engine:
            for sequence in range(1, 41):
                words = " ".join(WORDS[(sequence * j) % len(WORDS)] for j in range(1, 6))
                await engine.store("s", sequence, {"role": "user", "content": words})
                await engine.store("t", sequence, {"role": "user", "content": words})
            async def no_postings(*_: object) -> None:
                return None  # as for a phrase word or tags: the exhaustive query ranks
            monkeypatch.setattr(fts_bm25, "top_k", no_postings)
            answers = []
            for small in (1000, 0):
                monkeypatch.setattr(search, "SMALL_SESSION_CHUNKS", small)
                found = await engine.search(query="deploy rollback queue", session_id="s",
                                            top_k=20)
                answers.append([(hit.chunk_id, round(hit.raw, 6)) for hit in found.legs.fts])
            return answers
    small, large = asyncio.run(run())
    assert small and small == large
