"""A session's full-text leg ranked from the derived full-text index, as FTS5 ranks it.

A session's full-text query is FTS5's MATCH over the session's prefixed columns
(:mod:`core.storage.fts_rows`): every word glued to the session's consonant prefix, so the
prefixed words are that session's alone. The rows holding one, bm25's ``n``, are then the
session's rows holding the bare word in their text or context, and the index already keeps
every bare word's postings by row: looked up at the session's rows (read whole for the
vector leg anyway, :mod:`core.storage.sqlite.session_vectors`), they give FTS5's counts, and the
index's arithmetic gives its scores bit for bit (N, D and avgdl are the whole table's, as
FTS5 reads them). At 1M chunks this leg went from p50 0.26 / p95 0.36 ms in SQL to 0.14 / 0.31.

What keeps this exact, and where FTS5 answers instead (:func:`session_search` returns None):

- the consonant prefix leaves porter's measure as it was, except in a few words FTS5 stems
  otherwise once prefixed: under three letters ("us" stays "us" bare, loses its "s"
  prefixed, and "used" stems to "us"), a leading "y", two-letter stems, words too long to
  stem. The tokenizer taints both stems of every such word it meets, in the rows and the
  query alike (``Tokenizer.session_tainted``): a query word with a tainted stem goes to FTS5;
- a row whose words the prefix splits otherwise than FTS5's tokens (``Tokenizer.splits_alike``:
  a combining mark inside a word, an emoji inside a token) puts its session on FTS5;
- a query word of several tokens (``search_web``) is a phrase to FTS5: it is counted in the
  text and context of the rows holding all its tokens, given the rows' texts.

Two sessions whose prefixes collide (about one pair in 10^15) would count each other's rows
in FTS5 and not here.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from core.storage.derived.fulltext import K1, FullTextIndex, Key
from core.storage.derived.phrases import Phrase, phrase_postings
from core.storage.fts_rows import words


def ranks_session_words(index: FullTextIndex, terms: Sequence[str]) -> bool:
    """Whether :func:`session_search` can rank these words (given the rows' texts), before
    anything is read for it: only a row FTS5 splits otherwise then stops it."""
    term_ids = index.keys(terms)
    return term_ids is not None and _words_alike(index, terms, term_ids, True)


def session_search(index: FullTextIndex, rowids: Sequence[int], terms: Sequence[str], k: int,
                   context_weight: float = 0.5,
                   texts: dict[int, tuple[str, str]] | None = None,
                   ) -> list[tuple[int, float]] | None:
    """A session's top ``k`` (rowid, -bm25) for ``terms`` ORed, given every row of the
    session (``rowids``) and, for a word of several tokens, their ``texts`` (rowid -> text,
    context); None where FTS5 must answer (see the module's notes).

    Call it while the index is locked and up to date (``DerivedIndexes.reading``).
    """
    term_ids = index.keys(terms)
    if term_ids is None or not _words_alike(index, terms, term_ids, texts is not None):
        return None
    slots = index.session_slots(rowids)
    if slots is None:
        return None
    if not term_ids or k <= 0 or slots.size == 0:
        return []
    norm = index.row_norms()[slots]
    scores = np.zeros(slots.size, dtype=np.float64)
    matched = np.zeros(slots.size, dtype=bool)
    for key in term_ids:  # summed in query order, as FTS5 sums its phrases
        if isinstance(key, tuple):
            assert texts is not None
            counted = _phrase_in(index, key, slots, texts)
        else:
            counted = _word_in(index, key, slots)
        if counted is None:
            continue
        hit, tf_text, tf_context = counted
        freq = tf_text + context_weight * tf_context
        scores[hit] += index.idf(int(np.count_nonzero(hit))) * (
            (freq * (K1 + 1.0)) / (freq + norm[hit]))
        matched |= hit
    found = np.flatnonzero(matched)
    rowids_found = index.rowids_at(slots[found])
    order = np.lexsort((rowids_found, -scores[found]))[:k]
    return list(zip(rowids_found[order].tolist(), scores[found][order].tolist(), strict=True))


Counted = tuple[np.ndarray, np.ndarray, np.ndarray]  # mask over the slots, tf text, tf context


def _word_in(index: FullTextIndex, key: int, slots: np.ndarray) -> Counted | None:
    """Which ``slots`` hold the word and how often; None when none does."""
    postings = index.postings(key)
    if postings is None or not len(postings[0]):
        return None
    held, tf_text, tf_context = postings
    at = np.minimum(np.searchsorted(held, slots), len(held) - 1)
    hit = held[at] == slots
    if not hit.any():
        return None
    return hit, tf_text[at[hit]], tf_context[at[hit]]


def _phrase_in(index: FullTextIndex, phrase: Phrase, slots: np.ndarray,
               texts: dict[int, tuple[str, str]]) -> Counted | None:
    """Which ``slots`` hold the phrase and how often, in the text and the context; None when
    none does. Only a column holding every token of the phrase is read for it."""
    in_text = np.ones(slots.size, dtype=bool)
    in_context = np.ones(slots.size, dtype=bool)
    for term in set(phrase):
        counted = _word_in(index, term, slots)
        if counted is None:
            return None
        hit, tf_text, tf_context = counted
        in_text[~hit] = False
        in_text[hit] &= tf_text > 0
        in_context[~hit] = False
        in_context[hit] &= tf_context > 0
    text_counts = np.zeros(slots.size, dtype=np.uint16)
    context_counts = np.zeros(slots.size, dtype=np.uint16)
    for column, wanted, counts in ((0, in_text, text_counts), (1, in_context, context_counts)):
        where = np.flatnonzero(wanted)
        if where.size:
            read = [texts[rowid][column] for rowid in index.rowids_at(slots[where]).tolist()]
            found, in_read, _ = phrase_postings(index.tokenizer, [phrase], where.tolist(), read,
                                                [""] * len(read))[phrase]
            counts[found] = in_read
    hit = (text_counts > 0) | (context_counts > 0)
    if not hit.any():
        return None
    return hit, text_counts[hit], context_counts[hit]


def _words_alike(index: FullTextIndex, terms: Sequence[str], term_ids: Sequence[Key],
                 phrases: bool) -> bool:
    """Whether the session's prefixed columns hold each query word's prefixed copy in the
    very rows (and as often) as the bare columns hold its stem: a word that is one token
    and one word of the prefix's split, or (with ``phrases``) a phrase of words each one
    token, with no tainted stem."""
    tainted, names = index.tokenizer.session_tainted, index.tokenizer.terms
    for term, key in zip(terms, term_ids, strict=True):
        if isinstance(key, tuple):
            if not (phrases and len(words(term)) == len(key)
                    and not any(names[part] in tainted for part in key)):
                return False
        elif words(term) != [term] or names[key] in tainted:
            return False
    return True
