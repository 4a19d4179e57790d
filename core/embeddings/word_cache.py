"""A static model's vectors with its tokenizer's work remembered a word at a time.

model2vec spends most of an import's embedding in its tokenizer (measured on 97k messages of
``bench peers``: 7 of 9.7 s of CPU), though agents' text repeats a small vocabulary. For a
BERT-style tokenizer (``BertNormalizer``, ``BertPreTokenizer``, ``WordPiece``) and a text of
printable ASCII, the tokenizer's work is a fixed function of each word: lower-case it, cut it
at spaces and at every punctuation mark, and split each piece into word pieces alone. So each
distinct piece is asked of the tokenizer once, and a text's ids are its pieces' ids in order.

The ids then go through the model's own arithmetic (truncation, unknown tokens dropped, the
mean per text in the batches and dtype model2vec uses, its normalisation), so a vector is the
one ``StaticModel.encode`` gives, bit for bit. :meth:`WordCache.for_model` checks that on a
set of awkward texts before it is used; any other text (accents, CJK, control characters, a
special token's spelling) and any other tokenizer goes to ``encode`` itself.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Sequence
from itertools import chain
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from model2vec import StaticModel

log = logging.getLogger(__name__)

# Texts the cache vouches for: printable ASCII, tab, newline and carriage return. Beyond them
# BertNormalizer removes control characters, strips accents and spaces out CJK characters.
_PLAIN = re.compile(r"[\x20-\x7e\t\n\r]*\Z")
# BertPreTokenizer on such text: runs of letters and digits, and each punctuation mark alone.
_LOWER_PIECES = re.compile(r"[a-z0-9]+|[^a-z0-9\s]")
_CASED_PIECES = re.compile(r"[A-Za-z0-9]+|[^A-Za-z0-9\s]")
# Distinct pieces remembered before the cache starts again (some 25 MB).
MAX_PIECES = 100_000
# model2vec's own batch: its mean runs per batch, bucketed by token count.
_BATCH = 1024
# Texts :meth:`WordCache.for_model` compares with ``StaticModel.encode`` before trusting it.
_PROBES = [
    "", " ", "Hello, World!", "don't stop--now!!", "$1,000.50 (approx.) [see #42]",
    "tab\tand\nnewline\r\nend", "CamelCase snake_case kebab-case UPPER", "a" * 150,
    "x [UNK] y", "ünïcödé text", "日本語のテキスト", "control\x07char", "zzqxj vvwkp",
    " ".join(f"word{i % 97}" for i in range(900)),
]


class WordCache:
    """``StaticModel.encode`` for plain text, with each word's pieces asked once."""

    def __init__(self, model: StaticModel, lowercase: bool, specials: list[str]) -> None:
        self._model = model
        self._pieces = _LOWER_PIECES if lowercase else _CASED_PIECES
        self._lowercase = lowercase
        self._specials = specials
        self._ids: dict[str, list[int]] = {}
        self._table = np.asarray(model.embedding, dtype=np.float32)

    @classmethod
    def for_model(cls, model: StaticModel) -> WordCache | None:
        """A cache for ``model``, or None when its tokenizer or arithmetic is not the kind
        this reproduces (checked against ``encode`` itself on awkward texts)."""
        try:
            settings = json.loads(model.tokenizer.to_str())
        except Exception:  # a tokenizer that cannot describe itself is not one we know
            return None
        normalizer = settings.get("normalizer") or {}
        if (normalizer.get("type") != "BertNormalizer"
                or (settings.get("pre_tokenizer") or {}).get("type") != "BertPreTokenizer"
                or (settings.get("model") or {}).get("type") != "WordPiece"
                or model.embedding.dtype not in (np.float16, np.float32)
                or getattr(model, "token_mapping", None) is not None
                or getattr(model, "weights", None) is not None):
            return None
        specials = [token["content"] for token in settings.get("added_tokens") or []]
        cache = cls(model, bool(normalizer.get("lowercase")), specials)
        try:
            same = np.array_equal(cache.encode(_PROBES), _encode(model, _PROBES))
        except Exception as exc:  # a model2vec whose internals moved: use it as it is
            log.debug("word cache off for this model: %s", exc)
            return None
        if not same:
            log.debug("word cache off for this model: its vectors differ from encode's")
            return None
        return cache

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """One row per text, as ``StaticModel.encode(texts)`` gives them."""
        model = self._model
        max_length: int | None = model.max_length
        if max_length is not None:
            cut = max_length * model.median_token_length
            texts = [text[:cut] for text in texts]
        ids: list[list[int] | None] = [self._text_ids(text) for text in texts]
        others = [i for i, found in enumerate(ids) if found is None]
        if others:
            for i, found in zip(others, _tokenized(model, [texts[i] for i in others]),
                                strict=True):
                ids[i] = found
        rows = [_mean_rows(model, ids[start:start + _BATCH], self._table)  # type: ignore[arg-type]
                for start in range(0, len(texts), _BATCH)]
        if not rows:
            return np.zeros((0, model.dim), dtype=np.float32)
        return np.concatenate(rows, axis=0)

    def _text_ids(self, text: str) -> list[int] | None:
        """The text's ids before truncation and unknown tokens go, or None for a text the
        cache cannot vouch for."""
        if not _PLAIN.match(text):
            return None
        if self._specials and any(special in text or special in text.lower()
                                  for special in self._specials):
            return None  # the tokenizer matches added tokens in the raw text first
        known = self._ids
        if len(known) > MAX_PIECES:
            # A new dict, not clear(): a thread embedding meanwhile keeps the one it holds.
            self._ids = known = {}
        pieces = self._pieces.findall(text.lower() if self._lowercase else text)
        missing = [piece for piece in dict.fromkeys(pieces) if piece not in known]
        if missing:
            encode = self._model.tokenizer.encode_batch_fast
            for piece, encoding in zip(missing, encode(missing, add_special_tokens=False),
                                       strict=True):
                known[piece] = encoding.ids
        return list(chain.from_iterable(map(known.__getitem__, pieces)))


def _encode(model: StaticModel, texts: list[str]) -> np.ndarray:
    return model.encode(texts, show_progress_bar=False, use_multiprocessing=False)


def _tokenized(model: StaticModel, texts: list[str]) -> list[list[int]]:
    """The tokenizer's own ids for ``texts`` (truncated or not: :func:`_mean_rows` cuts them
    at ``max_length`` either way)."""
    tokenizer = model.tokenizer
    return [encoding.ids for encoding in tokenizer.encode_batch_fast(
        texts, add_special_tokens=False)] if texts else []


def _mean_rows(model: StaticModel, ids: list[list[int]], table: np.ndarray) -> np.ndarray:
    """model2vec's ``_encode_batch`` from token ids: truncated to ``max_length``, unknown
    tokens dropped, the mean of each text's rows (zeros for none), normalised if the model
    normalises. ``table`` is the model's embedding as float32.

    model2vec takes the mean per bucket of texts of one length, ``embedding[ids].mean(1)``:
    float32 sums in token order, divided by the count, rounded to the embedding's dtype.
    Here the texts are sorted longest first, and the sums run a token position at a time
    over the texts that long, in that same order, so a batch costs one step per position,
    not one per distinct length (three times faster, the same bits).
    """
    max_length, unknown = model.max_length, model.unk_token_id
    if max_length is not None:
        ids = [found[:max_length] for found in ids]
    if unknown is not None:
        ids = [[token for token in found if token != unknown] if unknown in found else found
               for found in ids]
    dtype = model.embedding.dtype
    if dtype == np.int8:
        dtype = np.dtype(np.float32)
    out = np.zeros((len(ids), model.dim), dtype=dtype)
    lengths = np.fromiter(map(len, ids), dtype=np.intp, count=len(ids))
    order = np.argsort(-lengths, kind="stable")
    texts = int(np.count_nonzero(lengths))
    if texts:
        order = order[:texts]
        longest = int(lengths[order[0]])
        padded = np.zeros((texts, longest), dtype=np.intp)
        for row, i in enumerate(order.tolist()):
            padded[row, :lengths[i]] = ids[i]
        # How many texts (longest first) have a token at each position.
        reaching = np.searchsorted(-lengths[order], -np.arange(longest), side="left")
        sums = table[padded[:, 0]]
        for position in range(1, longest):
            count = int(reaching[position])
            sums[:count] += table[padded[:count, position]]
        np.true_divide(sums, lengths[order][:, None], out=sums, casting="unsafe")
        out[order] = sums
    if model.normalize:
        out32 = out.astype(np.float32)
        norm = np.linalg.norm(out32, axis=1, keepdims=True) + 1e-32
        return (out32 / norm).astype(out.dtype)
    return out
