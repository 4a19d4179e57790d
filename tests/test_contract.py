"""The DESIGN.md contract, called exactly as outside checks call it — only those names."""

from __future__ import annotations

from pathlib import Path

import pytest

from core import Engine


async def _exercise_contract(path: Path, config: dict) -> None:
    async with Engine.open(path, config=config) as engine:
        await engine.store("alice", 1, {"role": "user", "content": "I adopted a beagle named Max",
                                        "metadata": {"dia_id": "D1:1", "tags": ["Pets"]}})
        await engine.store("alice", 2, {"role": "assistant",
                                        "content": "Congratulations on Max the beagle!"})
        await engine.store("alice", 3, {
            "role": "assistant", "content": None,
            "tool_calls": [{"id": "c1", "type": "function",
                            "function": {"name": "weather",
                                         "arguments": '{"city": "Lisbon"}'}}]})
        await engine.store("alice", 4, {"role": "tool", "tool_call_id": "c1",
                                        "tool_name": "weather", "content": "Sunny, 24 C"})
        await engine.store("bob", 1, {"role": "user", "content": "my beagle is called Rex"})
        await engine.drain()

        records = await engine.recall("alice", limit=None)
        assert [r.sequence for r in records] == [1, 2, 3, 4]
        first = records[0]
        assert first.session_id == "alice"
        assert first.payload["content"] == "I adopted a beagle named Max"
        assert first.payload["metadata"]["dia_id"] == "D1:1"
        assert isinstance(first.created_at, str) and first.created_at
        assert [r.sequence for r in await engine.recall("alice", limit=2)] == [3, 4]

        results = await engine.hybrid_query(session_id="alice", query="beagle", top_k=10,
                                            vector_weight=None, fts_weight=None, tags=None)
        assert results, "the query word is in the session"
        top = results[0]
        assert "beagle" in top.text.lower()
        for name in ("chunk_id", "text", "score", "vector_score", "fts_score",
                     "sequence_start", "sequence_end", "metadata"):
            assert hasattr(top, name), name
        assert 0.0 <= top.vector_score <= 1.0 and 0.0 <= top.fts_score <= 1.0
        weights = engine.config.retrieval  # None -> the configured defaults (DESIGN.md)
        # The fused legs plus what the boosts added (a named speaker or period, a nearby
        # match: core.retrieval.boosts), which the search's explanation names.
        boosts = (await engine.search(session_id="alice", query="beagle")).boosts
        assert top.score == pytest.approx(weights.vector_weight * top.vector_score
                                          + weights.fts_weight * top.fts_score
                                          + sum(boosts.get(top.chunk_id, {}).values()))
        first_turn = next(r for r in results if r.sequence_start == 1)
        assert first_turn.metadata["dia_id"] == "D1:1"  # event metadata rides with its chunks
        assert all(r.session_id == "alice" for r in results)  # never another session's chunk

        tool_hits = await engine.hybrid_query(session_id="alice", query="Lisbon", top_k=3,
                                              vector_weight=0.0, fts_weight=1.0, tags=None)
        assert tool_hits and "lisbon" in tool_hits[0].text.lower()  # tool-call arguments indexed

        tagged = await engine.hybrid_query(session_id="alice", query="beagle", top_k=10,
                                           vector_weight=None, fts_weight=None, tags=["pets"])
        assert [r.sequence_start for r in tagged] == [1]

        await engine.forget("alice")
        assert await engine.recall("alice", limit=None) == []
        assert await engine.hybrid_query(session_id="alice", query="beagle", top_k=10,
                                         vector_weight=None, fts_weight=None, tags=None) == []
        assert await engine.recall("bob", limit=None)


async def test_contract_with_the_deterministic_backend(memory: str) -> None:
    await _exercise_contract(memory, {"embedding": {"backend": "deterministic"}})


async def test_contract_with_a_model2vec_folder(memory: str, tiny_model_dir: Path) -> None:
    config = {"embedding": {"backend": "model2vec", "model": str(tiny_model_dir)}}
    await _exercise_contract(memory, config)


@pytest.mark.real_model
async def test_contract_with_the_shared_model(memory: str, shared_model: Path) -> None:
    config = {"embedding": {"backend": "model2vec", "model": str(shared_model)}}
    await _exercise_contract(memory, config)


async def test_contract_with_a_config_file(tmp_path: Path, memory: str) -> None:
    toml = tmp_path / "workbench.toml"
    toml.write_text('[embedding]\nbackend = "deterministic"\n')
    async with Engine.open(memory, config=toml) as engine:
        await engine.store("s", 1, {"role": "user", "content": "hello"})
        await engine.drain()
        assert len(await engine.recall("s", limit=None)) == 1
