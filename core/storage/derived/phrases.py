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
    found: dict[Phrase, tuple[list[int], list[int], list[int]]] = {
        phrase: ([], [], []) for phrase in phrases}
    for slot, text, context in zip(slots, texts, contexts, strict=True):
        text_ids, context_ids = tokenizer.token_ids(text), tokenizer.token_ids(context)
        for phrase in phrases:
            in_text, in_context = occurrences(text_ids, phrase), occurrences(context_ids, phrase)
            if in_text or in_context:
                lists = found[phrase]
                lists[0].append(slot)
                lists[1].append(in_text)
                lists[2].append(in_context)
    return {phrase: (np.array(lists[0], dtype=np.int32), np.array(lists[1], dtype=np.uint16),
                     np.array(lists[2], dtype=np.uint16)) for phrase, lists in found.items()}
