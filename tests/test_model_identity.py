"""The file records the model its vectors were made by (name, size, fingerprint), and an
engine running another model, even one of the same name or the same size, turns the vector
leg off and says which model made them and what to do."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from core import Engine
from core.embeddings.identity import identify, parse_identity
from tests.tiny_model import build_tiny_model

MESSAGES = ["the quarterly tax filing deadline is near", "we went hiking in the mountains"]


def model2vec(folder: Path) -> dict[str, Any]:
    return {"embedding": {"backend": "model2vec", "model": str(folder)}}


async def store_and_embed(engine: Engine, session: str = "s") -> None:
    for sequence, text in enumerate(MESSAGES, 1):
        await engine.store(session, sequence, {"role": "user", "content": text})
    await engine.drain(timeout=30)


async def test_same_name_other_weights_is_a_mismatch(tmp_path: Path,
                                                     tiny_model_dir: Path) -> None:
    """Two folders named alike (``tiny-m2v``) with other weights are told apart."""
    other = build_tiny_model(tmp_path / "elsewhere" / "tiny-m2v", seed=1)
    path = tmp_path / "memory.db"
    async with Engine.open(path, config=model2vec(tiny_model_dir)) as engine:
        await store_and_embed(engine)
    async with Engine.open(path, config=model2vec(other)) as engine:
        assert engine.embedder.name == "model2vec:tiny-m2v"
        assert engine.model.vectors_usable is False
        off = engine.model.vectors_off
        assert off is not None
        message = off.message
        assert message.startswith("vectors made by model2vec:tiny-m2v (fingerprint ")
        assert "engine runs model2vec:tiny-m2v (fingerprint " in message
        assert f"reopen with --model {tiny_model_dir.resolve()}" in message
        assert f"`workbench reindex --model {other.resolve()}` to replace them" in message
        assert "\n" not in message
        assert (await engine.pulse()).vectors_off == off.short
        found = await engine.search(session_id="s", query="quarterly tax")
        assert all(r.vector_rank is None for r in found.results)
        assert any(message in note for note in found.explain()["notes"])
    # The same model again: the vectors are its own.
    async with Engine.open(path, config=model2vec(tiny_model_dir)) as engine:
        assert engine.model.vectors_usable and engine.model.vectors_off is None


async def test_same_size_other_name_is_a_mismatch(memory: str, tiny_model_dir: Path) -> None:
    async with Engine.open(memory, config=model2vec(tiny_model_dir)) as engine:
        await store_and_embed(engine)
    deterministic = {"embedding": {"backend": "deterministic", "dimensions": 16}}
    async with Engine.open(memory, config=deterministic) as engine:
        off = engine.model.vectors_off
        assert off is not None and not engine.model.vectors_usable
        assert off.message.startswith(
            "vectors made by model2vec:tiny-m2v, engine runs deterministic-")
        assert "`workbench reindex --model deterministic` to replace them" in off.message
        status = await engine.embedding_status()
        assert status.warning == off.message
        # Reindexing records the new model's identity; the mismatch is gone.
        await engine.reindex()
        assert engine.model.vectors_usable and engine.model.vectors_off is None
        assert (await engine.pulse()).vectors_off is None
        recorded = parse_identity(await engine.backend.vector_identity())
        assert recorded is not None and recorded.name.startswith("deterministic-")


def test_identity_tolerates_arithmetic_noise_but_not_other_weights(
        tiny_model_dir: Path, tmp_path: Path) -> None:
    from core.config import EmbeddingConfig
    from core.embeddings import load_embedder

    def identity_of(folder: Path) -> Any:
        loaded = load_embedder(EmbeddingConfig(backend="model2vec", model=str(folder)))
        return identify(loaded.embedder, str(folder))

    first = identity_of(tiny_model_dir)
    assert first is not None
    noisy = type(first)(first.name, first.dimension, first.source,
                        tuple(tuple(x + 1e-5 for x in row) for row in first.probe))
    assert first.same_model(noisy)
    other = identity_of(build_tiny_model(tmp_path / "tiny-m2v", seed=3))
    assert not first.same_model(other)
    assert parse_identity(first.to_text()) == first
    assert parse_identity("not json") is None
