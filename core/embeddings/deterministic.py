"""A model-free embedder: signed feature hashing of words, word pairs and character 3-grams.

It needs no download and gives lexically similar texts similar vectors, so search still works
(by words, not meaning) when no model is available. The vectors must be identical in every
process and on every machine, hence ``blake2b`` rather than Python's salted ``hash()``; any
change to the features or weights below must also change ``VERSION`` so stored vectors are
never compared with vectors made differently.
"""

from __future__ import annotations

import hashlib
import math
import re
import unicodedata
from collections import Counter
from functools import lru_cache
from itertools import chain
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

VERSION = "deterministic-hash-v1"

_WORD = re.compile(r"\w+")

# Weights of word unigrams, word bigrams and character 3-grams, in the order ``features``
# returns them. 3-grams are many per word; a lower weight keeps them from drowning whole-word
# matches while still pulling "mountain" and "mountains" together.
_WEIGHTS = (1.0, 0.8, 0.35)


@lru_cache(maxsize=1 << 17)
def _feature_hash(feature: str) -> int:
    """A stable 64-bit hash of one feature; cached because words repeat across texts."""
    return int.from_bytes(hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest(),
                          "little")


@lru_cache(maxsize=1 << 16)
def _trigrams(word: str) -> tuple[str, ...]:
    """The character 3-grams of a word, with ``<`` and ``>`` marking its ends."""
    padded = f"<{word}>"
    return tuple("c:" + padded[i:i + 3] for i in range(len(padded) - 2))


def features(text: str) -> tuple[Counter[str], Counter[str], Counter[str]]:
    """Counts of the namespaced word unigrams, word bigrams and character 3-grams of ``text``."""
    words = _WORD.findall(unicodedata.normalize("NFKC", text).casefold())
    unigrams = Counter("w:" + word for word in words)
    bigrams = Counter(f"b:{first} {second}" for first, second in zip(words, words[1:],
                                                                       strict=False))
    trigrams = Counter(chain.from_iterable(map(_trigrams, words)))
    return unigrams, bigrams, trigrams


class DeterministicEmbedder:
    """Hashes text features into a fixed-size, L2-normalised float32 vector."""

    tokenizer = None
    quick = True

    def __init__(self, dimension: int) -> None:
        if dimension < 1:
            raise ValueError(f"dimension must be positive, got {dimension}")
        self.dimension = dimension
        self.name = f"{VERSION}-{dimension}"

    def __repr__(self) -> str:
        return f"DeterministicEmbedder(name={self.name!r}, dimension={self.dimension})"

    def embed(self, texts: list[str]) -> np.ndarray:
        """One unit-length row per text; a text without any word gives an all-zero row."""
        import numpy as np

        hashes: list[int] = []
        counts: list[int] = []
        segments: list[tuple[int, float, int]] = []  # (row, weight, features) per feature kind
        for row, text in enumerate(texts):
            for weight, counter in zip(_WEIGHTS, features(text), strict=True):
                hashes.extend(map(_feature_hash, counter))
                counts.extend(counter.values())
                segments.append((row, weight, len(counter)))
        flat: np.ndarray = np.zeros(len(texts) * self.dimension, dtype=np.float64)
        if hashes:
            seg_rows, seg_weights, seg_sizes = zip(*segments, strict=True)
            rows = np.repeat(np.asarray(seg_rows, dtype=np.intp), seg_sizes)
            weights = np.repeat(np.asarray(seg_weights, dtype=np.float64), seg_sizes)
            hashed = np.asarray(hashes, dtype=np.uint64)
            # The lowest bit picks the sign so colliding features tend to cancel out rather
            # than pile up; the rest of the hash picks the bucket.
            signs = np.where(hashed & np.uint64(1), 1.0, -1.0)
            cols = ((hashed >> np.uint64(1)) % np.uint64(self.dimension)).astype(np.intp)
            # Sublinear tf from math.log on the few distinct counts: numpy's vectorised log
            # may differ in the last bit between CPUs, and vectors must not.
            tf = np.asarray(counts, dtype=np.intp)
            table = np.asarray([0.0] + [1.0 + math.log(n) for n in range(1, int(tf.max()) + 1)])
            # bincount adds in input order, so the sums (and vectors) are reproducible.
            flat = np.bincount(rows * self.dimension + cols, weights=signs * weights * table[tf],
                               minlength=flat.size)
        out = flat.reshape(len(texts), self.dimension)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        np.divide(out, norms, out=out, where=norms > 0)
        return out.astype(np.float32)

    def close(self) -> None:
        """Nothing to release."""
