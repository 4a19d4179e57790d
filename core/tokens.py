"""The one token counter the engine uses (restore budgets now, rolling summaries later).

How tokens are counted:

* With a ``tokenizers.Tokenizer`` (for instance the embedding model's, from model2vec), a
  text costs ``len(tokenizer.encode(text, add_special_tokens=False).ids)``. The counter works on
  a private copy with truncation and padding switched off, because model2vec tokenizers come
  configured to cut at 512 tokens and to pad batches, which would under- or over-count.
* Without one, an estimate: ``ceil(len(text) / 4)`` for non-empty text, 0 for empty text. Four
  characters per token is the usual rule of thumb for English under a BPE tokenizer; it
  over-counts code and under-counts CJK text, so budgets built on it keep some headroom.
* A message costs the tokens of its indexable text (:func:`core.indexing.extract_indexable_text`:
  content plus tool-call names and arguments) plus :data:`MESSAGE_OVERHEAD` for its role and
  framing, as OpenAI's chat format counts about 4 tokens around every message.

Either way the counts are only as close to the chat model's own tokenizer as the tokenizer
given is; they are meant for budgeting, not billing.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from core.indexing import extract_indexable_text

if TYPE_CHECKING:
    from tokenizers import Tokenizer

MESSAGE_OVERHEAD = 4
"""Tokens added per message for its role and framing."""

CHARS_PER_TOKEN = 4
"""Characters per token assumed when there is no tokenizer."""


def _private_copy(tokenizer: Tokenizer) -> Tokenizer:
    """A copy of the tokenizer without truncation or padding, leaving the caller's untouched."""
    copy = type(tokenizer).from_str(tokenizer.to_str())
    copy.no_truncation()
    copy.no_padding()
    return copy


class TokenCounter:
    """Counts tokens with a tokenizer when given one, else estimates from the text length."""

    def __init__(self, tokenizer: Tokenizer | None = None) -> None:
        """Keep a truncation- and padding-free copy of ``tokenizer``, or estimate without one."""
        self._tokenizer = None if tokenizer is None else _private_copy(tokenizer)

    @property
    def exact(self) -> bool:
        """Whether counts come from a tokenizer rather than the length estimate."""
        return self._tokenizer is not None

    @property
    def description(self) -> str:
        """How tokens are counted, in a few words, for restore results and ``doctor``."""
        overhead = f"+ {MESSAGE_OVERHEAD} per message"
        if self._tokenizer is None:
            return f"estimate: ceil(characters / {CHARS_PER_TOKEN}) {overhead}"
        model = type(self._tokenizer.model).__name__
        return f"tokenizer ({model}, {self._tokenizer.get_vocab_size()} tokens) {overhead}"

    def count(self, text: str) -> int:
        """The number of tokens in ``text``."""
        if self._tokenizer is None:
            return math.ceil(len(text) / CHARS_PER_TOKEN)
        if not text:
            return 0
        return len(self._tokenizer.encode(text, add_special_tokens=False).ids)

    def count_many(self, texts: Iterable[str]) -> list[int]:
        """The token count of each text, encoded as one batch (in parallel, in Rust)."""
        texts = list(texts)
        if self._tokenizer is None:
            return [self.count(text) for text in texts]
        if not texts:
            return []
        # encode_batch_fast skips offset tracking, which counting does not need (tokenizers
        # >= 0.20); older versions only have encode_batch.
        encode = getattr(self._tokenizer, "encode_batch_fast", self._tokenizer.encode_batch)
        return [len(encoding.ids) for encoding in encode(texts, add_special_tokens=False)]

    def count_message(self, message: dict[str, Any]) -> int:
        """The tokens a message takes in a prompt: its indexable text plus the framing overhead."""
        return self.count(extract_indexable_text(message)) + MESSAGE_OVERHEAD

    def count_messages(self, messages: Iterable[dict[str, Any]]) -> list[int]:
        """The :meth:`count_message` of each message, tokenized as one batch."""
        texts = [extract_indexable_text(message) for message in messages]
        return [count + MESSAGE_OVERHEAD for count in self.count_many(texts)]
