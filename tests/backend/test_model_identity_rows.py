"""The tests of tests/test_model_identity.py that read or stage the memory's tables directly (the
identity recorded in the file)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core import Engine
from core.embeddings.identity import parse_identity
from tests.conftest import rows
from tests.test_model_identity import model2vec, store_and_embed
from tests.tiny_model import build_tiny_model


async def test_the_file_records_name_size_and_fingerprint(tmp_path: Path,
                                                          tiny_model_dir: Path) -> None:
    path = tmp_path / "memory.db"
    async with Engine.open(path, config=model2vec(tiny_model_dir)) as engine:
        await store_and_embed(engine)
        running = engine.model.identity
    [(text,)] = rows(path, "SELECT value FROM memory_meta WHERE key = 'embedding_fingerprint'")
    recorded = json.loads(text)
    assert (recorded["name"], recorded["dimension"]) == ("model2vec:tiny-m2v", 16)
    assert recorded["source"] == str(tiny_model_dir.resolve())
    assert running is not None and recorded["fingerprint"] == running.fingerprint
    identity = parse_identity(text)
    assert identity is not None and identity.same_model(running)


async def test_a_fallback_never_advises_replacing_real_vectors(
        tmp_path: Path, tiny_model_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-hub"))
    path = tmp_path / "memory.db"
    async with Engine.open(path, config=model2vec(tiny_model_dir)) as engine:
        await store_and_embed(engine)
    missing = {"embedding": {"backend": "model2vec", "model": "no-such-org/no-such-model",
                             "allow_download": False}}
    async with Engine.open(path, config=missing) as engine:
        assert engine.model.fell_back
        off = engine.model.vectors_off
        assert off is not None
        assert "could not load" in off.message and "do not reindex" in off.message
        assert "`workbench reindex --model" not in off.message
        assert f"reopen with --model {tiny_model_dir.resolve()}" in off.message
    # Nothing was recorded over the real model's identity.
    recorded = parse_identity(rows(path, "SELECT value FROM memory_meta"
                                         " WHERE key = 'embedding_fingerprint'")[0][0])
    assert recorded is not None and recorded.name == "model2vec:tiny-m2v"


async def test_an_older_file_gets_the_identity_of_its_own_model(
        tmp_path: Path, tiny_model_dir: Path) -> None:
    """A file recorded before identities were kept is fingerprinted by the first model of
    its name that opens it, and then tells a same-named other model apart."""
    import sqlite3

    path = tmp_path / "memory.db"
    async with Engine.open(path, config=model2vec(tiny_model_dir)) as engine:
        await store_and_embed(engine)
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("DELETE FROM memory_meta WHERE key = 'embedding_fingerprint'")
    conn.close()
    async with Engine.open(path, config=model2vec(tiny_model_dir)) as engine:
        assert engine.model.vectors_usable
    assert rows(path, "SELECT count(*) FROM memory_meta WHERE key = 'embedding_fingerprint'") \
        == [(1,)]
    other = build_tiny_model(tmp_path / "elsewhere" / "tiny-m2v", seed=2)
    async with Engine.open(path, config=model2vec(other)) as engine:
        assert not engine.model.vectors_usable
