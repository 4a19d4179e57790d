"""Embedding backends: deterministic hashing, model2vec (a tiny real model), OpenAI-style http."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from core.config import EmbeddingConfig
from core.embeddings import load_embedder
from core.embeddings.deterministic import DeterministicEmbedder
from core.errors import DimensionMismatch, EmbeddingError
from tests.embedding_server import EmbeddingServer, isolate_hub_cache, serve

try:  # tests/ is on sys.path under pytest's default import mode; tests.* if it is a package
    from tiny_model import build_tiny_model
except ImportError:
    from tests.tiny_model import build_tiny_model

API_KEY = "sk-secret-123"


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


def assert_unit_rows(vectors: np.ndarray) -> None:
    norms = np.linalg.norm(vectors, axis=1)
    assert np.allclose(norms[norms > 0], 1.0, atol=1e-5)


@pytest.fixture(autouse=True)
def isolated_hub_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point the Hugging Face cache at an empty folder so no test reads or fills a real one."""
    return isolate_hub_cache(tmp_path, monkeypatch) / "hub"


# --- deterministic -----------------------------------------------------------------------------


def test_deterministic_same_text_same_vector() -> None:
    embedder = DeterministicEmbedder(256)
    first, second = embedder.embed(["The cat sat on the mat", "The cat sat on the mat"])
    assert np.array_equal(first, second)
    assert np.array_equal(first, DeterministicEmbedder(256).embed(["The cat sat on the mat"])[0])


def test_deterministic_similar_texts_are_closer() -> None:
    query, near, far = DeterministicEmbedder(256).embed([
        "my dog loves hiking in the mountains",
        "the dog went hiking in the mountain",
        "quarterly tax filing deadline",
    ])
    assert cosine(query, near) > cosine(query, far) + 0.3


def test_deterministic_shape_dtype_and_norm() -> None:
    embedder = DeterministicEmbedder(64)
    vectors = embedder.embed(["one", "two words", "a somewhat longer sentence of text"])
    assert vectors.shape == (3, 64)
    assert vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert embedder.embed([]).shape == (0, 64)
    assert embedder.name == "deterministic-hash-v1-64"
    assert embedder.tokenizer is None


def test_deterministic_empty_string_is_zero_row() -> None:
    vectors = DeterministicEmbedder(32).embed(["", "   ", "word"])
    assert not vectors[:2].any()
    assert np.isclose(np.linalg.norm(vectors[2]), 1.0)


def test_deterministic_unicode_and_emoji() -> None:
    embedder = DeterministicEmbedder(128)
    composed, decomposed, emoji_only, mixed = embedder.embed(
        ["café naïve", "cafe\u0301 nai\u0308ve", "🎉🔥", "Grüße aus 東京 🎉"])
    assert np.allclose(composed, decomposed)  # NFKC: the same words however they are encoded
    assert not emoji_only.any()  # no \w characters, no features, but no NaN either
    assert np.isfinite(mixed).all() and np.isclose(np.linalg.norm(mixed), 1.0)
    assert cosine(mixed, embedder.embed(["grüße aus 東京"])[0]) > 0.99


def test_deterministic_vectors_are_stable_across_processes() -> None:
    texts = ["Stable hashing across processes", "ünïcödé 東京", ""]
    script = (
        "import sys, json; from core.embeddings.deterministic import DeterministicEmbedder; "
        "print(DeterministicEmbedder(96).embed(json.loads(sys.argv[1])).tobytes().hex())"
    )
    result = subprocess.run([sys.executable, "-c", script, json.dumps(texts)],
                            capture_output=True, text=True, check=True, timeout=60,
                            env={**os.environ, "PYTHONHASHSEED": "12345"})
    assert result.stdout.strip() == DeterministicEmbedder(96).embed(texts).tobytes().hex()


@pytest.mark.parametrize(("dimensions", "file_dimension", "expected"),
                         [(48, 64, 48), (None, 64, 64), (None, None, 256)])
def test_load_deterministic_backend_picks_dimension(
        dimensions: int | None, file_dimension: int | None, expected: int) -> None:
    loaded = load_embedder(EmbeddingConfig(backend="deterministic", dimensions=dimensions),
                           file_dimension=file_dimension)
    assert (loaded.embedder.dimension, loaded.fell_back, loaded.warning) == (expected, False, None)
    assert loaded.embedder.name == f"deterministic-hash-v1-{expected}"


# --- model2vec ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("models") / "tiny-m2v")


def test_model2vec_local_folder(tiny_model_dir: Path) -> None:
    loaded = load_embedder(EmbeddingConfig(model=str(tiny_model_dir)))
    embedder = loaded.embedder
    assert (loaded.fell_back, loaded.warning) == (False, None)
    assert embedder.name == "model2vec:tiny-m2v"
    assert embedder.dimension == 16
    assert embedder.tokenizer is not None
    vectors = embedder.embed(["the dog loves hiking", "the dog went hiking", "zzz qqq", ""])
    assert vectors.shape == (4, 16) and vectors.dtype == np.float32
    assert_unit_rows(vectors)
    assert np.isclose(np.linalg.norm(vectors[0]), 1.0)
    assert not vectors[2].any() and not vectors[3].any()  # unknown words only: a zero row
    # Token counting must not stop at the model's max_length (512).
    assert len(embedder.tokenizer.encode(" ".join(["dog"] * 600)).ids) == 600
    embedder.close()


def test_model2vec_dimension_mismatch(tiny_model_dir: Path) -> None:
    with pytest.raises(DimensionMismatch) as info:
        load_embedder(EmbeddingConfig(model=str(tiny_model_dir), dimensions=32))
    assert "16" in str(info.value) and "32" in str(info.value)
    assert "tiny-m2v" in str(info.value)


def test_model2vec_matching_dimensions_loads(tiny_model_dir: Path) -> None:
    loaded = load_embedder(EmbeddingConfig(model=str(tiny_model_dir), dimensions=16))
    assert loaded.embedder.dimension == 16 and not loaded.fell_back


def test_model2vec_broken_folder_falls_back(tmp_path: Path) -> None:
    broken = tmp_path / "not-a-model"
    broken.mkdir()
    loaded = load_embedder(EmbeddingConfig(model=str(broken)), file_dimension=40)
    assert loaded.fell_back and loaded.embedder.dimension == 40
    assert "not-a-model" in loaded.warning and "\n" not in loaded.warning


def test_model2vec_cached_hub_id_loads_without_network(
        tiny_model_dir: Path, isolated_hub_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = isolated_hub_cache / "models--tiny-org--tiny-model"
    shutil.copytree(tiny_model_dir, repo / "snapshots" / "0123abcd")
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("0123abcd")

    def no_download(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a cached model must load without a download")

    monkeypatch.setattr("core.embeddings.model2vec_backend._download", no_download)
    loaded = load_embedder(EmbeddingConfig(model="tiny-org/tiny-model", allow_download=True))
    assert not loaded.fell_back
    assert loaded.embedder.name == "tiny-org/tiny-model"
    assert loaded.embedder.dimension == 16


def test_model2vec_uncached_without_download_falls_back() -> None:
    cfg = EmbeddingConfig(model="minishlab/potion-base-8M", allow_download=False)
    loaded = load_embedder(cfg, file_dimension=64)
    assert loaded.fell_back
    assert isinstance(loaded.embedder, DeterministicEmbedder)
    assert loaded.embedder.dimension == 64
    assert "'minishlab/potion-base-8M'" in loaded.warning
    assert "not in the local cache" in loaded.warning and "deterministic" in loaded.warning
    assert "\n" not in loaded.warning


@pytest.mark.parametrize("model", ["./no/such/folder", "not a hub id/at all", "plainname"])
def test_model2vec_missing_folder_or_invalid_id_falls_back(model: str) -> None:
    loaded = load_embedder(EmbeddingConfig(model=model, allow_download=False))
    assert loaded.fell_back and repr(model) in loaded.warning


def test_model2vec_failed_download_falls_back() -> None:
    cfg = EmbeddingConfig(model="nobody-here/no-such-model-xyz", allow_download=True,
                          download_timeout_secs=2)
    loaded = load_embedder(cfg)
    assert loaded.fell_back and loaded.embedder.dimension == 256
    assert "nobody-here/no-such-model-xyz" in loaded.warning
    assert "download failed" in loaded.warning


def test_model2vec_stalled_download_is_abandoned(monkeypatch: pytest.MonkeyPatch) -> None:
    import huggingface_hub
    from huggingface_hub.errors import LocalEntryNotFoundError

    release = threading.Event()

    def stalled(*args: Any, local_files_only: bool = False, **kwargs: Any) -> str:
        if local_files_only:
            raise LocalEntryNotFoundError("not cached")
        release.wait(30)
        raise OSError("released")

    monkeypatch.setattr(huggingface_hub, "snapshot_download", stalled)
    try:
        loaded = load_embedder(EmbeddingConfig(model="slow-org/slow-model",
                                               download_timeout_secs=0.2))
    finally:
        release.set()
    assert loaded.fell_back
    assert "within 0.2 s" in loaded.warning


# --- http --------------------------------------------------------------------------------------


def server_vector(text: str, dim: int) -> list[float]:
    """A vector derived from the text's length, so the client's ordering can be checked."""
    return [float(len(text) + k) for k in range(dim)]


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[EmbeddingServer]:
    state = EmbeddingServer(server_vector, base_path="/v1/", api_key=API_KEY, shuffle=True,
                            error_body=f"internal error for key {API_KEY}".encode() * 20)
    with serve(state, monkeypatch):
        yield state


def http_cfg(server: EmbeddingServer, **overrides: Any) -> EmbeddingConfig:
    values: dict[str, Any] = {"backend": "http", "base_url": server.url, "model": "test-embed",
                              "api_key": API_KEY, "timeout_secs": 5.0}
    return EmbeddingConfig(**{**values, **overrides})


def test_http_probe_then_embed_in_input_order(server: EmbeddingServer) -> None:
    loaded = load_embedder(http_cfg(server))
    embedder = loaded.embedder
    assert (loaded.fell_back, embedder.dimension, embedder.name) == (False, 8, "http:test-embed")
    assert embedder.tokenizer is None
    probe = server.requests[0]
    assert probe["path"] == "/v1/embeddings" and probe["auth"] == f"Bearer {API_KEY}"
    assert probe["body"] == {"model": "test-embed", "input": ["dimension probe"]}

    texts = ["a", "bbb", "cc", "dddddd", "eeeee", "ffff"]
    vectors = embedder.embed(texts)
    expected = np.array([server_vector(t, 8) for t in texts], dtype=np.float32)
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    assert vectors.dtype == np.float32 and vectors.shape == (6, 8)
    assert np.allclose(vectors, expected, atol=1e-6)
    assert embedder.embed([]).shape == (0, 8)


def test_http_configured_dimensions_are_sent_without_probe(server: EmbeddingServer) -> None:
    embedder = load_embedder(http_cfg(server, dimensions=12)).embedder
    assert server.requests == []
    assert embedder.embed(["hello"]).shape == (1, 12)
    assert server.requests[0]["body"]["dimensions"] == 12


def test_http_without_key_sends_no_authorization(server: EmbeddingServer) -> None:
    embedder = load_embedder(http_cfg(server, api_key="")).embedder
    embedder.embed(["x"])
    assert all(request["auth"] is None for request in server.requests)


def test_http_server_error_names_status_but_never_the_key(server: EmbeddingServer) -> None:
    embedder = load_embedder(http_cfg(server, dimensions=8)).embedder
    server.mode = "error"
    with pytest.raises(EmbeddingError) as info:
        embedder.embed(["hello"])
    message = str(info.value)
    assert "500" in message and server.url.rstrip("/") + "/embeddings" in message
    assert "internal error for key" in message and len(message) < 400
    for text in (message, repr(info.value), repr(embedder), str(vars(info.value))):
        assert API_KEY not in text
    assert info.value.__cause__ is None and info.value.__suppress_context__


def test_http_garbage_body_is_an_embedding_error(server: EmbeddingServer) -> None:
    embedder = load_embedder(http_cfg(server, dimensions=8)).embedder
    server.mode = "garbage"
    with pytest.raises(EmbeddingError, match="unexpected response") as info:
        embedder.embed(["hello"])
    assert "<html> not json </html>" in str(info.value)  # the body excerpt, on one line


def test_http_redirect_is_not_followed(server: EmbeddingServer) -> None:
    embedder = load_embedder(http_cfg(server, dimensions=8)).embedder
    server.mode = "redirect"
    with pytest.raises(EmbeddingError, match="307"):
        embedder.embed(["hello"])
    assert len(server.requests) == 1  # the key was not sent on to the redirect target


def test_http_timeout(server: EmbeddingServer) -> None:
    embedder = load_embedder(http_cfg(server, dimensions=8, timeout_secs=0.3)).embedder
    server.mode = "sleep"
    with pytest.raises(EmbeddingError, match="timed out"):
        embedder.embed(["slow"])


def test_http_wrong_dimension(server: EmbeddingServer) -> None:
    embedder = load_embedder(http_cfg(server, dimensions=8)).embedder
    server.mode = "wrongdim"
    with pytest.raises(DimensionMismatch) as info:
        embedder.embed(["hello"])
    assert isinstance(info.value, EmbeddingError)  # what embed() promises the worker
    assert "4" in str(info.value) and "8" in str(info.value)


def test_http_probe_failure_falls_back(server: EmbeddingServer) -> None:
    server.mode = "error"
    loaded = load_embedder(http_cfg(server), file_dimension=24)
    assert loaded.fell_back and isinstance(loaded.embedder, DeterministicEmbedder)
    assert loaded.embedder.dimension == 24
    assert "'test-embed'" in loaded.warning and "dimension probe failed" in loaded.warning
    assert "500" in loaded.warning and "\n" not in loaded.warning
    assert API_KEY not in loaded.warning


def test_http_unreachable_server_falls_back() -> None:
    with socket.socket() as sock:  # a port that was free a moment ago: nothing listens there
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    cfg = EmbeddingConfig(backend="http", base_url=f"http://127.0.0.1:{port}/v1",
                          model="m", api_key=API_KEY, timeout_secs=2)
    loaded = load_embedder(cfg)
    assert loaded.fell_back and API_KEY not in loaded.warning


def test_http_without_base_url_falls_back() -> None:
    loaded = load_embedder(EmbeddingConfig(backend="http", model="m"))
    assert loaded.fell_back and "base_url" in loaded.warning


def test_http_answer_larger_than_its_texts_can_need_is_refused(
        server: EmbeddingServer, monkeypatch: pytest.MonkeyPatch) -> None:
    from core.embeddings import http_backend

    embedder = load_embedder(http_cfg(server, dimensions=8)).embedder
    assert embedder.embed(["hello"]).shape == (1, 8)
    monkeypatch.setattr(http_backend, "ANSWER_BYTES_BASE", 16)
    monkeypatch.setattr(http_backend, "ANSWER_BYTES_PER_TEXT", 16)
    with pytest.raises(EmbeddingError, match="answered more than 32 bytes for 1 text"):
        embedder.embed(["hello"])
