"""A query word's bm25 quotients, per row, kept between queries while the file stands still.

bm25 adds ``idf * q`` per query word, where ``q = f (k1 + 1) / (f + k1 (1 - b + b D / avgdl))``
depends on the row and the word (and the context weight), never on the rest of the query.
Computing ``q`` (converting counts, gathering each row's length, dividing) and scattering the
sums was most of a query's time when its words are common: at 100k chunks a word in 70 % of
them cost ~1.5 ms. An :class:`Impact` holds ``q`` for one word, computed once for the file's
current row count and token total (any write moves ``avgdl``, so every ``q``: it is computed
again on the next query that uses the word). A word in a quarter of the rows or more keeps
``q`` as a dense array over every slot, so a query adds it to the scores in one pass instead
of gathering and scattering by slot.

``idf * q`` is the very product FTS5 computes (``fts5_aux.c``: the quotient first, then the
product), so scores stay bit-equal to FTS5's.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable, Sequence

import numpy as np

K1 = 1.2  # fts5_aux.c
DENSE_SHARE = 4  # a word in at least 1 / DENSE_SHARE of the slots is kept dense
# Bytes of dense quotients kept, per slot of the index: room for 64 words (at 100k chunks of
# agent conversation, 52 words are in a quarter of the rows or more; room for 16 evicted them
# query after query). Least recently used goes first; at most 55 MiB at 100k chunks, 550 MiB
# at 1M, counted in the index's memory.
BUDGET_PER_SLOT = 64 * 9


def quotients(postings: tuple[np.ndarray, np.ndarray, np.ndarray], norm: np.ndarray,
              weight: float) -> np.ndarray:
    """``q`` for each of a word's postings (slots, tf in text, tf in context), given ``norm``
    (``k1 * (1 - b + b * D / avgdl)`` per slot) and the context's weight."""
    slots, tf_text, tf_context = postings
    freq = tf_text + weight * tf_context
    found: np.ndarray = (freq * (K1 + 1.0)) / (freq + norm[slots])
    return found


class Impact:
    """One word's quotients ``q`` for the postings ``slots`` it was computed from."""

    def __init__(self, slots: np.ndarray, quotient: np.ndarray, used: int,
                 dense: bool = True) -> None:
        self.slots = slots
        """The postings' slot array it was computed from: a new array means new postings."""
        self.ceiling = float(quotient.max()) if len(quotient) else 0.0
        """The largest ``q``: no row gets more than ``idf * ceiling`` from this word."""
        self.dense = dense and len(slots) * DENSE_SHARE >= used
        if self.dense:
            self.quotient = np.zeros(used, dtype=np.float64)
            self.quotient[slots] = quotient
            self.present = np.zeros(used, dtype=bool)
            self.present[slots] = True
        else:
            self.quotient = quotient
            self.present = np.zeros(0, dtype=bool)

    @classmethod
    def saved(cls, slots: np.ndarray, quotient: np.ndarray, present: np.ndarray,
              ceiling: float) -> Impact:
        """A dense impact as :meth:`ImpactCache.dense` gave it to be saved (mapped arrays,
        left unread until a query adds them)."""
        impact = cls.__new__(cls)
        impact.slots = slots
        impact.ceiling = ceiling
        impact.dense, impact.quotient, impact.present = True, quotient, present
        return impact

    @property
    def nbytes(self) -> int:
        """Bytes it holds beyond the postings."""
        return int(self.quotient.nbytes + self.present.nbytes)

    def mark(self, matched: np.ndarray) -> None:
        """Set ``matched`` on the rows holding the word."""
        if self.dense:
            matched[:len(self.present)] |= self.present
        else:
            matched[self.slots] = True

    def add(self, scores: np.ndarray, idf: float, only: np.ndarray | None = None) -> None:
        """``scores += idf * q`` on the rows holding the word; with ``only``, sparse words
        add to those rows alone (a dense word adds everywhere: one pass is cheaper than a
        filter, and rows outside ``only`` are the caller's to ignore or recompute)."""
        if self.dense:
            # Rows without the word add idf * 0.0 = 0.0: their sums are unchanged.
            scores[:len(self.quotient)] += idf * self.quotient
            return
        slots, quotient = self.slots, self.quotient
        if only is not None:
            keep = only[slots]
            slots, quotient = slots[keep], quotient[keep]
        scores[slots] += idf * quotient


class ImpactCache:
    """The dense :class:`Impact` of the common words queries used lately, for one (N, tokens,
    weight); a rarer word's is made for each query."""

    def __init__(self) -> None:
        self._held: OrderedDict[Hashable, Impact] = OrderedDict()
        self._stamp: tuple[int, int, float] | None = None
        self._bytes = 0
        self._asked: set[Hashable] = set()  # words asked for once under this stamp

    def impact(self, key: Hashable, postings: tuple[np.ndarray, np.ndarray, np.ndarray],
               norm: np.ndarray, used: int, stamp: tuple[int, int, float]) -> Impact:
        """``key``'s impact for ``postings`` (slots, tf in text, tf in context); ``norm`` is
        ``k1 * (1 - b + b * D / avgdl)`` per slot and ``stamp`` (N, tokens, context weight)
        what it was computed for."""
        if stamp != self._stamp:
            self.clear()
            self._stamp = stamp
        held = self._held.get(key)
        slots = postings[0]
        if held is not None and held.slots is slots:
            self._held.move_to_end(key)
            return held
        # Made dense (and kept) the second time a word is asked for under one stamp: while
        # every query follows a write, laying the quotients out densely would be wasted.
        impact = Impact(slots, quotients(postings, norm, stamp[2]), used,
                        dense=key in self._asked)
        self._asked.add(key)
        if not impact.dense:  # a rarer word's quotients cost less to make than to keep
            return impact
        if held is not None:
            self._bytes -= self._held.pop(key).nbytes
        self._held[key] = impact
        self._bytes += impact.nbytes
        while self._bytes > BUDGET_PER_SLOT * used and len(self._held) > 1:
            _, evicted = self._held.popitem(last=False)
            self._bytes -= evicted.nbytes
        return impact

    def dense(self, stamp: tuple[int, int, float],
              words: Sequence[tuple[Hashable, tuple[np.ndarray, np.ndarray, np.ndarray]]],
              norm: np.ndarray, used: int) -> list[tuple[Hashable, Impact]]:
        """Dense impacts of ``words`` (key, postings) under ``stamp``: those held, else made
        (and not kept), for a saved copy to hold (a new process of an unchanged file then
        starts with the common words' quotients a first query would make)."""
        found = []
        for key, postings in words:
            held = self._held.get(key) if stamp == self._stamp else None
            if held is None or held.slots is not postings[0]:
                held = Impact(postings[0], quotients(postings, norm, stamp[2]), used)
            found.append((key, held))
        return found

    def take(self, stamp: tuple[int, int, float], saved: Sequence[tuple[Hashable, Impact]],
             ) -> None:
        """Hold ``saved`` impacts (a restored index's), made for ``stamp``."""
        self.clear()
        self._stamp = stamp
        for key, impact in saved:
            self._held[key] = impact
            self._asked.add(key)
            self._bytes += impact.nbytes

    def clear(self) -> None:
        """Forget every impact (the index was rebuilt, or N or avgdl moved)."""
        self._held.clear()
        self._asked.clear()
        self._bytes = 0

    def __contains__(self, key: Hashable) -> bool:
        return key in self._held

    def __len__(self) -> int:
        return len(self._held)

    @property
    def weight(self) -> float | None:
        """The context weight queries last asked with (None: none asked yet)."""
        return None if self._stamp is None else self._stamp[2]

    @property
    def nbytes(self) -> int:
        """Bytes held."""
        return self._bytes
