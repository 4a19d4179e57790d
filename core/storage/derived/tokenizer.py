"""The tokens ``chunks_fts`` indexes for a text, computed outside FTS5 but by FTS5's rules.

The table's tokenizer is ``porter unicode61 remove_diacritics 2``. unicode61 (with its
default options) treats every ASCII character other than ``0-9 A-Z a-z`` as a separator,
so no token spans one: a text's tokens are the tokens of its runs between ASCII separators
(:data:`core.storage.fts_words.RUN`, the one rule's split for an index that must stay
bit-exact with FTS5), in order. Each distinct run is handed to FTS5 itself once (a
throwaway in-memory FTS5 table with the same tokenizer, read back through ``fts5vocab``)
and its tokens are cached, so case folding, diacritics, Unicode categories and porter
stemming are FTS5's own, never a re-implementation. Texts repeat few distinct runs
(words), so almost every run is a cache hit and a text costs one regular-expression split
and a dictionary look-up per word.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from itertools import chain

import numpy as np

from core.storage.fts_rows import prefixed
from core.storage.fts_words import RUN, words
from core.storage.sqlite.connection import sqlite_module

TOKENIZER = "porter unicode61 remove_diacritics 2"  # chunks_fts's (migration 0003)
_BATCH = 50_000  # runs tokenized per FTS5 round trip
# Any twelve consonants other than "y" stem alike in front of a word (fts_rows.session_prefix).
PROBE_PREFIX = "b" * 12


# The mark :func:`_runs` puts between two texts, and the term id its run stands for. NUL is
# no character of a stored text (normalize_text removes control characters).
_END_RUN = "\x00"
_END = -1
# Every ASCII character but letters, digits and the mark, to a space: a text's runs are then
# split() apart. split() also splits at non-ASCII white space, which unicode61 separates too
# (categories Z* and Cc are no token characters), so the tokens are those of RUN's runs.
_SEPARATORS = str.maketrans({chr(c): " " for c in range(1, 128) if not chr(c).isalnum()})


def _runs(texts: Sequence[str]) -> list[str]:
    """Every run of ``texts`` in order, the mark between two texts' runs: one pass over
    them all, or a :data:`RUN` split a text at a time when a text holds the mark."""
    joined = f" {_END_RUN} ".join(texts)
    if joined.count(_END_RUN) == max(len(texts) - 1, 0):
        return joined.translate(_SEPARATORS).split()
    runs: list[str] = []
    for number, text in enumerate(texts):
        if number:
            runs.append(_END_RUN)
        runs += RUN.findall(text)  # the mark is no character of a run
    return runs


class Tokenizer:
    """Texts to term ids by ``chunks_fts``'s tokenizer, with every run's tokens cached.

    Term ids are dense integers in order of first sight; :attr:`terms` names them.
    Thread-safe: the cache only grows, under a lock.
    """

    def __init__(self) -> None:
        self.terms: list[str] = []
        self.session_tainted: set[str] = set()
        """Stems whose words a session's prefixed columns index otherwise: a word whose
        prefixed copy FTS5 stems to something else than the prefix and its bare stem ("us"
        stays "us" bare, as a word under three letters, but loses its "s" once prefixed;
        a leading "y" is a vowel after the prefix) taints both its stems."""
        self._term_ids: dict[str, int] = {}
        self._runs: dict[str, tuple[int, ...]] = {_END_RUN: (_END,)}
        self._lock = threading.Lock()
        self._conn = sqlite_module().connect(":memory:", check_same_thread=False,
                                             isolation_level=None)
        self._conn.execute(f"CREATE VIRTUAL TABLE probe USING fts5(x, tokenize = '{TOKENIZER}')")
        self._conn.execute("CREATE VIRTUAL TABLE probe_vocab USING fts5vocab(probe, 'instance')")

    def restore(self, terms: list[str], session_tainted: set[str]) -> None:
        """Take the term ids (and tainted stems) a saved index was built with, before any
        text is tokenized: runs learned later map their tokens to these ids."""
        assert not self.terms, "a tokenizer that learned terms keeps its ids"
        self.terms = list(terms)
        self._term_ids = dict(zip(self.terms, range(len(self.terms)), strict=True))
        self.session_tainted = set(session_tainted)

    def term_id(self, term: str) -> int | None:
        """The id of an indexed term (a stem), None when no text held it yet."""
        return self._term_ids.get(term)

    def tokens(self, text: str) -> list[str]:
        """``text``'s tokens, as FTS5 would index them, in order."""
        return [self.terms[tid] for tid in self.token_ids(text)]

    def token_ids(self, text: str) -> list[int]:
        """``text``'s tokens as term ids, in order."""
        runs = RUN.findall(text)
        try:
            return list(chain.from_iterable(map(self._runs.__getitem__, runs)))
        except KeyError:  # a run not seen before: tokenize the new ones, then look up again
            self._learn(set(runs).difference(self._runs))
            return list(chain.from_iterable(map(self._runs.__getitem__, runs)))

    def splits_alike(self, text: str) -> bool:
        """Whether a session's prefixed copy of ``text`` (:func:`core.storage.fts_rows.prefixed`,
        which splits by :data:`core.storage.fts_words.WORD`) holds its FTS5 tokens one for
        one: always for ASCII; not where unicode61 and Python's tables part ways (a combining
        mark inside a word, an emoji FTS5 keeps inside a token, a letter newer than SQLite's
        tables)."""
        if text.isascii():
            return True
        per_word = [self.token_ids(word) for word in words(text)]
        return (all(len(ids) == 1 for ids in per_word)
                and [ids[0] for ids in per_word] == self.token_ids(text))

    def count(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every (text index, term id, occurrences) of ``texts``, sorted by term then text.

        The texts are split into runs in one pass over them all (:func:`_runs`), the runs
        looked up and flattened by C-level iterators, and counted by one sort: a Python
        loop per token cost several times more at 100k chunks, a regular-expression split
        per text twice as much as the one pass.
        """
        runs = _runs(texts)
        self._learn(set(runs).difference(self._runs))
        tokens = list(map(self._runs.__getitem__, runs))
        sizes = np.fromiter(map(len, tokens), dtype=np.int64, count=len(tokens))
        flat = np.fromiter(chain.from_iterable(tokens), dtype=np.int64, count=int(sizes.sum()))
        ends = flat == _END
        keys = flat[~ends] * len(texts) + np.cumsum(ends)[~ends]
        if not len(keys):
            empty = np.zeros(0, dtype=np.int64)
            return empty, empty, empty
        keys.sort()
        starts = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1])))
        counts = np.diff(np.append(starts, len(keys)))
        unique = keys[starts]
        return unique % len(texts), unique // len(texts), counts

    def _learn(self, unknown: set[str]) -> None:
        """Tokenize, through FTS5, runs not seen before."""
        if not unknown:
            return
        with self._lock:
            runs = [run for run in unknown if run not in self._runs]
            for start in range(0, len(runs), _BATCH):
                self._tokenize(runs[start:start + _BATCH])

    def _tokenize(self, runs: list[str]) -> None:
        """Each run's tokens, and beside it (doc ``count + n``) its words as a session's
        prefixed columns hold them (:func:`core.storage.fts_rows.prefixed`)."""
        conn = self._conn
        count = len(runs)
        conn.execute("BEGIN")
        conn.execute("DELETE FROM probe")
        conn.executemany("INSERT INTO probe(rowid, x) VALUES (?, ?)",
                         [(n, run) for n, run in enumerate(runs, 1)]
                         + [(count + n, prefixed(PROBE_PREFIX, run))
                            for n, run in enumerate(runs, 1)])
        conn.execute("COMMIT")
        found: dict[int, list[tuple[int, str]]] = {}
        for term, doc, offset in conn.execute("SELECT term, doc, offset FROM probe_vocab"):
            found.setdefault(doc, []).append((offset, term))
        for n, run in enumerate(runs, 1):
            bare = [term for _, term in sorted(found.get(n, ()))]
            self._runs[run] = tuple(self._id(term) for term in bare)
            session = [term for _, term in sorted(found.get(count + n, ()))]
            if session != [PROBE_PREFIX + term for term in bare]:
                self.session_tainted.update(bare)
                self.session_tainted.update(term.removeprefix(PROBE_PREFIX)
                                            for term in session)

    def _id(self, term: str) -> int:
        tid = self._term_ids.get(term)
        if tid is None:
            tid = self._term_ids[term] = len(self.terms)
            self.terms.append(term)
        return tid
