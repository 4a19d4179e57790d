"""Postings of a phrase: a query word FTS5 reads as several tokens (``search_web``).

FTS5 matches such a word as a phrase (its tokens next to each other in one column) and
scores it as one phrase: its frequency in a row is the number of places it starts at in
each column (overlapping places count), and its ``n`` the rows where it occurs at all. The
index keeps no positions, so a phrase's rows are found among the rows holding all of its
tokens, by reading their text again, once; the postings are then kept up to date like a
term's.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain

import numpy as np

from core.storage.derived.tokenizer import Tokenizer

Phrase = tuple[int, ...]


def occurrences(tokens: Sequence[int], phrase: Phrase) -> int:
    """How many places ``phrase`` starts at in ``tokens`` (as FTS5 counts its instances)."""
    width = len(phrase)
    first = phrase[0]
    return sum(1 for start in range(len(tokens) - width + 1)
               if tokens[start] == first and tuple(tokens[start:start + width]) == phrase)


def phrase_postings(tokenizer: Tokenizer, phrases: Sequence[Phrase], slots: Sequence[int],
                    texts: Sequence[str], contexts: Sequence[str],
                    ) -> dict[Phrase, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Each phrase's (slots, occurrences in the text, in the context) among these rows."""
    slot_array = np.asarray(slots, dtype=np.int32)
    text_counts = _counts(tokenizer, phrases, texts)
    context_counts = _counts(tokenizer, phrases, contexts)
    found = {}
    for phrase in phrases:
        in_text, in_context = text_counts[phrase], context_counts[phrase]
        rows = np.flatnonzero((in_text > 0) | (in_context > 0))
        found[phrase] = (slot_array[rows], in_text[rows].astype(np.uint16),
                         in_context[rows].astype(np.uint16))
    return found


def _counts(tokenizer: Tokenizer, phrases: Sequence[Phrase],
            texts: Sequence[str]) -> dict[Phrase, np.ndarray]:
    """Per phrase, how many places it starts at in each text: every text's tokens in one
    array, the phrase's tokens compared at each offset, starts whose end falls in another
    text dropped."""
    token_lists = [tokenizer.token_ids(text) for text in texts]
    lengths = np.fromiter(map(len, token_lists), dtype=np.int64, count=len(texts))
    flat = np.fromiter(chain.from_iterable(token_lists), dtype=np.int64,
                       count=int(lengths.sum()))
    text_of = np.repeat(np.arange(len(texts)), lengths)
    counts = {}
    for phrase in phrases:
        places = len(flat) - len(phrase) + 1
        if places <= 0:
            counts[phrase] = np.zeros(len(texts), dtype=np.int64)
            continue
        hit = text_of[:places] == text_of[len(phrase) - 1:]
        for offset, term in enumerate(phrase):
            hit &= flat[offset:offset + places] == term
        counts[phrase] = np.bincount(text_of[:places][hit], minlength=len(texts))
    return counts
