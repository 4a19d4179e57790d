"""The word cache gives model2vec's own vectors, bit for bit, and steps aside when it cannot."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from core.config import EmbeddingConfig
from core.embeddings import load_embedder, word_cache
from core.embeddings.word_cache import WordCache
from tests.tiny_model import DEFAULT_WORDS

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
PIECES = ["##s", "##ing", "##ed", "##ly", "##er", "##t", "##a", "##b", "##x", "##0", "##1"]
SHARED_MODEL = Path(__file__).resolve().parents[1].parent / "shared" / "models" / "m2v-minilm-256"


def bert_style_model(dtype: type = np.float16, dim: int = 12):
    """A real StaticModel with a BERT-style tokenizer: BertNormalizer, BertPreTokenizer,
    WordPiece with continuation pieces, digits and punctuation in its vocabulary."""
    from model2vec import StaticModel
    from tokenizers import Tokenizer, normalizers, pre_tokenizers
    from tokenizers.models import WordPiece

    letters = list("abcdefghijklmnopqrstuvwxyz0123456789")
    punctuation = list("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
    vocabulary = list(dict.fromkeys(SPECIALS + DEFAULT_WORDS + PIECES + letters + punctuation))
    tokenizer = Tokenizer(WordPiece({token: i for i, token in enumerate(vocabulary)},
                                    unk_token="[UNK]", max_input_chars_per_word=100))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.add_special_tokens(SPECIALS)
    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((len(vocabulary), dim)).astype(dtype)
    return StaticModel(vectors=vectors, tokenizer=tokenizer, normalize=True)


def awkward_texts() -> list[str]:
    """Texts at every edge the cache must match or hand back: case, punctuation runs, digits,
    unknown words, words over 100 characters, past 512 tokens, special tokens spelt out,
    accents, CJK, control characters, blanks."""
    rng = random.Random(3)
    words = DEFAULT_WORDS + ["walking", "Talked", "cats", "zzqx", "dogs!!", "x-ray", "e.g.",
                             "3.14", "$100", "(note)", "[tag]", "it's", "A" * 120, "snake_case"]
    texts = ["", " ", "\n\t\r", "Hello, World!", "THE DOG", "a [MASK] b", "a [mask] b",
             "[UNK]", "naïve café", "東京 tower", "bell\x07char", "zero\x00byte",
             "line\x0bfeed", "\u00a0nbsp", "emoji 🙂 ok", " ".join(["dog"] * 700),
             "dog " * 100 + "walking" * 30]
    for _ in range(600):
        size = rng.choice([1, 2, 5, 20, 80, 200])
        glue = rng.choice([" ", "  ", "\n", ", ", "-", "", ". "])
        texts.append(glue.join(rng.choice(words) for _ in range(size)))
    return texts


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_vectors_are_encodes_own_bit_for_bit(dtype: type) -> None:
    model = bert_style_model(dtype)
    cache = WordCache.for_model(model)
    assert cache is not None
    texts = awkward_texts()
    expected = model.encode(texts, show_progress_bar=False, use_multiprocessing=False)
    got = cache.encode(texts)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    differ = [texts[i][:40] for i in range(len(texts)) if not np.array_equal(got[i], expected[i])]
    assert differ == []
    # Again, with every word now remembered, and in batches of another size.
    assert np.array_equal(np.concatenate([cache.encode(texts[i:i + 37])
                                          for i in range(0, len(texts), 37)]), expected)


def test_a_full_cache_starts_again_and_still_agrees(monkeypatch: pytest.MonkeyPatch) -> None:
    model = bert_style_model()
    cache = WordCache.for_model(model)
    assert cache is not None
    monkeypatch.setattr(word_cache, "MAX_PIECES", 5)
    texts = awkward_texts()[:200]
    assert np.array_equal(cache.encode(texts), model.encode(texts, use_multiprocessing=False))
    distinct = {piece for text in texts for piece in word_cache._LOWER_PIECES.findall(text.lower())}
    assert len(cache._ids) < len(distinct)  # it was emptied on the way


def test_tokenizers_it_does_not_know_are_left_to_encode(tiny_model_dir: Path) -> None:
    from model2vec import StaticModel

    # A WordLevel tokenizer (the tests' usual tiny model) is not one it reproduces.
    assert WordCache.for_model(StaticModel.from_pretrained(tiny_model_dir)) is None
    # Nor a BERT-style model that weighs its tokens.
    weighted = bert_style_model()
    weighted.weights = np.ones(weighted.embedding.shape[0], dtype=np.float32)
    assert WordCache.for_model(weighted) is None


def test_a_cache_whose_vectors_differ_is_never_used(monkeypatch: pytest.MonkeyPatch) -> None:
    model = bert_style_model()

    def one_off(*args: object) -> np.ndarray:
        rows = real(*args)
        rows[0] = rows[0] + np.float16(0.001)
        return rows

    real = word_cache._mean_rows
    monkeypatch.setattr(word_cache, "_mean_rows", one_off)
    assert WordCache.for_model(model) is None


@pytest.mark.skipif(not SHARED_MODEL.is_dir(), reason="the real model is not beside the checkout")
def test_the_real_model_embeds_as_it_did() -> None:
    from workbench.bench import synthetic

    embedder = load_embedder(EmbeddingConfig(model=str(SHARED_MODEL))).embedder
    assert embedder._words is not None
    texts = [payload["content"] for _, _, payload in synthetic.messages(3000, 30)
             if payload.get("content")] + awkward_texts()
    model = embedder._model
    expected = model.encode(texts, show_progress_bar=False, use_multiprocessing=False)
    assert np.array_equal(embedder._words.encode(texts), expected)
