"""One namespace's full-text postings in memory: the bm25 of :mod:`core.storage.pg.fts_bm25`
computed from arrays instead of from ``chunk_terms``' index.

A namespace query over the postings table reads every posting of each common word through
the B-tree (a word in 20-70% of 100k chunks: tens of milliseconds); the same postings as
arrays are a few vector operations. The scores are the SQL path's, term for term: per query
lexeme ``idf * f(k1 + 1) / (f + k1 * (1 - b + b * len / mean))`` with ``f`` the chunk's
positions of it weighted 1 in its text and ``context_weight`` in its context, ``idf`` from
the lexeme's document frequency in the namespace (clamped at 1e-6, as FTS5 does), ``len``
the chunk's length and ``mean`` the namespace's mean length; ties by fts_rowid.

Each chunk has a slot (its postings' row in the arrays). Postings are only ever added: a
deleted chunk's slot is marked dead and its postings are skipped, a chunk read again gets a
new slot. The postings loaded at build are one array per lexeme; those added since, a list.
A saved copy (:meth:`NamespacePostings.export`) holds every lexeme's live postings end to
end; read back (:meth:`NamespacePostings.restore`, mapped), a lexeme's are sliced out when a
query first asks for them.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable, MutableMapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from core.storage.derived.lookup import SavedLookup
from core.storage.pg.fts_bm25 import BM25_B, BM25_K1

_GROWTH = 1.25
_NO_POSTINGS = (np.empty(0, np.int32), np.empty(0, np.int32), np.empty(0, np.int32))


@dataclass(frozen=True)
class Scored:
    """The chunks a query may match: their rowids, bm25 scores, and whether each is
    matched for sure (else it holds a phrase's every word, positions unchecked)."""

    rowids: np.ndarray
    scores: np.ndarray
    matched: np.ndarray
    complete: bool = False
    """Every chunk the query may match is here (not only those of some lexemes)."""

    def best(self, count: int) -> np.ndarray:
        """The indexes of the ``count`` best, best first, ties by fts_rowid."""
        candidates = np.arange(len(self.rowids))
        if len(candidates) > count > 0:
            cut = np.partition(self.scores, len(candidates) - count)[len(candidates) - count]
            candidates = np.flatnonzero(self.scores >= cut)  # every chunk tied at the cut
        order = np.lexsort((self.rowids[candidates], -self.scores[candidates]))
        return candidates[order][:max(count, 0)]


class NamespacePostings:
    """The postings of one namespace's chunks, by lexeme."""

    def __init__(self) -> None:
        self._slot_of: MutableMapping[int, int] = {}  # fts_rowid -> its live slot
        self._rowids = np.zeros(1024, dtype=np.int64)
        self._lengths = np.zeros(1024, dtype=np.float64)
        self._alive = np.zeros(1024, dtype=bool)
        self._slots = 0
        self._total_length = 0.0
        # lexeme -> (slots, f_text, f_context) loaded at build
        self._base: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        # lexeme -> [(slot, f_text, f_context)] added since
        self._added: dict[str, list[tuple[int, int, int]]] = {}
        self._added_count = 0
        self._base_count = 0
        # A saved copy read back: its lexemes (sorted: a lexeme's number is its place), and
        # the postings end to end by lexeme number (offsets, slots, f_text, f_context), mapped.
        self._saved: tuple[list[str], np.ndarray, np.ndarray, np.ndarray,
                           np.ndarray] | None = None

    # -- keeping it -------------------------------------------------------------------------

    def add_chunk(self, rowid: int, length: int) -> int:
        """A chunk's slot (its old one, if it had one, dies): its postings follow."""
        self.remove(rowid)
        slot = self._slots
        if slot == len(self._rowids):
            size = int(slot * _GROWTH) + 1
            self._rowids = np.resize(self._rowids, size)
            self._lengths = np.resize(self._lengths, size)
            alive = np.zeros(size, dtype=bool)
            alive[:slot] = self._alive[:slot]
            self._alive = alive
        self._rowids[slot], self._lengths[slot], self._alive[slot] = rowid, length, True
        self._slots += 1
        self._slot_of[rowid] = slot
        self._total_length += length
        return slot

    def load_lexeme(self, lexeme: str, rowids: Sequence[int], f_text: Sequence[int],
                    f_context: Sequence[int]) -> None:
        """A build's postings of one lexeme (every chunk already added)."""
        slots = np.fromiter((self._slot_of[rowid] for rowid in rowids), dtype=np.int32,
                            count=len(rowids))
        self._base_count += len(slots)
        order = np.argsort(slots, kind="stable")  # by slot: a chunk is found by bisection
        self._base[lexeme] = (slots[order], np.asarray(f_text, dtype=np.int32)[order],
                              np.asarray(f_context, dtype=np.int32)[order])

    def add_postings(self, rowid: int, postings: Iterable[tuple[str, int, int]]) -> None:
        """A chunk's postings read after the build: (lexeme, f_text, f_context)."""
        slot = self._slot_of[rowid]
        for lexeme, f_text, f_context in postings:
            self._added.setdefault(lexeme, []).append((slot, f_text, f_context))
            self._added_count += 1

    def remove(self, rowid: int) -> None:
        """Forget ``rowid``'s chunk (nothing when it is not held)."""
        slot = self._slot_of.pop(rowid, None)
        if slot is not None:
            self._alive[slot] = False
            self._total_length -= float(self._lengths[slot])

    def holds(self, rowid: int) -> bool:
        return rowid in self._slot_of

    def churn(self) -> float:
        """The share of its slots and postings written since the build (dead slots, and
        postings outside the per-lexeme arrays): what a rebuild would compact."""
        dead = self._slots - len(self._slot_of)
        return (dead + self._added_count) / max(1, self._slots + self.postings_count())

    # -- saving it --------------------------------------------------------------------------

    def export(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """Everything held, as arrays: the slots' rowids, lengths and liveness, and every
        lexeme's live postings end to end (lexemes NUL-separated: PostgreSQL text holds no
        NUL). Postings added since the build join their lexeme's, in slot order."""
        lexemes = sorted(set(self._base) | set(self._added)
                         | (set(self._saved[0]) if self._saved is not None else set()))
        parts = [self._postings(lexeme) if lexeme in self._added else self._stored(lexeme)
                 for lexeme in lexemes]
        counts = np.fromiter((len(part[0]) for part in parts), dtype=np.int64,
                             count=len(parts))
        slots = (np.concatenate([part[0] for part in parts]) if parts
                 else np.empty(0, np.int32)).astype(np.int32, copy=False)
        live = self._alive[slots] if len(slots) else np.empty(0, bool)
        bounds = np.concatenate(([0], np.cumsum(counts)))
        running = np.concatenate(([0], np.cumsum(live, dtype=np.int64)))
        kept_counts = running[bounds[1:]] - running[bounds[:-1]]
        keep = kept_counts > 0
        arrays = {
            "rowids": self._rowids[:self._slots].copy(),
            "lengths": self._lengths[:self._slots].copy(),
            "alive": self._alive[:self._slots].copy(),
            "offsets": np.concatenate(([0], np.cumsum(kept_counts[keep]))).astype(np.int64),
            "slots": slots[live],
            "f_text": (np.concatenate([part[1] for part in parts]).astype(np.int32)[live]
                       if parts else np.empty(0, np.int32)),
            "f_context": (np.concatenate([part[2] for part in parts]).astype(np.int32)[live]
                          if parts else np.empty(0, np.int32)),
            "lexemes": np.frombuffer("\x00".join(
                lexeme for lexeme, kept in zip(lexemes, keep.tolist(), strict=True) if kept)
                .encode(), dtype=np.uint8)}
        return arrays, {"lexeme_count": int(keep.sum())}

    def restore(self, arrays: dict[str, np.ndarray], meta: dict[str, Any]) -> None:
        """Hold what :meth:`export` gave (the postings as they are, mapped)."""
        self.__init__()  # type: ignore[misc]
        used = len(arrays["rowids"])
        size = max(used, 1024)
        self._rowids, self._lengths = np.zeros(size, np.int64), np.zeros(size, np.float64)
        self._alive = np.zeros(size, bool)
        self._rowids[:used], self._lengths[:used] = arrays["rowids"], arrays["lengths"]
        self._alive[:used] = arrays["alive"]
        self._slots = used
        live = np.flatnonzero(self._alive[:used])
        self._slot_of = SavedLookup(self._rowids[live], lambda n: int(live[n]), live.tolist,
                                    values=live)
        self._total_length = float(self._lengths[live].sum())
        names = (bytes(arrays["lexemes"]).decode().split("\x00")
                 if meta["lexeme_count"] else [])
        if len(names) + 1 != len(arrays["offsets"]):
            raise ValueError(f"{len(names)} lexemes for {len(arrays['offsets']) - 1} offsets")
        # Sorted as export wrote them (and the checksum vouches): found by bisection.
        self._saved = (names, arrays["offsets"], arrays["slots"], arrays["f_text"],
                       arrays["f_context"])
        self._base_count = len(arrays["slots"])

    # -- reading it -------------------------------------------------------------------------

    def _stored(self, lexeme: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``lexeme``'s postings of the build (or of the saved copy), dead slots included."""
        found = self._base.get(lexeme)
        if found is None and self._saved is not None:
            names, offsets, slots, f_text, f_context = self._saved
            at = bisect.bisect_left(names, lexeme)
            if at < len(names) and names[at] == lexeme:
                start, end = int(offsets[at]), int(offsets[at + 1])
                found = (slots[start:end], f_text[start:end], f_context[start:end])
        return _NO_POSTINGS if found is None else found

    def _postings(self, lexeme: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The live postings of ``lexeme``, by slot: slots, f_text, f_context (the postings
        added after the build hold newer slots than the build's)."""
        slots, f_text, f_context = self._stored(lexeme)
        added = self._added.get(lexeme)
        if added:
            extra = np.asarray(sorted(added), dtype=np.int32).reshape(-1, 3)
            slots = np.concatenate([slots, extra[:, 0]])
            f_text = np.concatenate([f_text, extra[:, 1]])
            f_context = np.concatenate([f_context, extra[:, 2]])
        live = self._alive[slots]
        if not live.all():
            slots, f_text, f_context = slots[live], f_text[live], f_context[live]
        return slots, f_text, f_context

    def scored(self, lexemes: Sequence[str], context_weight: float,
               words: Sequence[str] | None = None,
               phrases: Sequence[Sequence[str]] = ()) -> Scored:
        """Every chunk a query may match, with its bm25 over ``lexemes`` (each lexeme's share
        where the chunk holds it with a weight above 0, as the SQL path sums them).

        A chunk holding one of ``words`` (terms of one lexeme; all ``lexemes`` when None) is
        matched; one holding every
        lexeme of a phrase (a term of several positions) may be, which only its positions
        tell: it is a candidate for :func:`core.storage.pg.derived_legs` to check in SQL.
        """
        chunks = len(self._slot_of)
        empty = Scored(np.empty(0, np.int64), np.empty(0), np.empty(0, bool), True)
        if not chunks:
            return empty
        mean = max(self._total_length / chunks, 1.0)
        scores = np.zeros(self._slots, dtype=np.float64)
        weighed = np.zeros(self._slots, dtype=bool)
        matched = np.zeros(self._slots, dtype=bool)
        matching = set(lexemes if words is None else words)
        held_by: dict[str, np.ndarray] = {}
        for lexeme in dict.fromkeys(lexemes):
            slots, f_text, f_context = self._postings(lexeme)
            held_by[lexeme] = slots
            if not len(slots):
                continue
            if lexeme in matching:
                matched[slots] = True
            idf = max(1e-6, math.log((chunks - len(slots) + 0.5) / (len(slots) + 0.5)))
            f = f_text.astype(np.float64) + context_weight * f_context
            positive = f > 0
            slots, f = slots[positive], f[positive]
            share = idf * f * (BM25_K1 + 1) / (
                f + BM25_K1 * (1 - BM25_B + BM25_B * self._lengths[slots] / mean))
            scores += np.bincount(slots, weights=share, minlength=self._slots)
            weighed[slots] = True
        maybe = np.zeros(self._slots, dtype=bool)
        for phrase in phrases:
            common = None
            for lexeme in dict.fromkeys(phrase):
                holding = held_by.get(lexeme)
                if holding is None:
                    holding = self._postings(lexeme)[0]
                common = holding if common is None else np.intersect1d(common, holding)
            if common is not None:
                maybe[common] = True
        eligible = np.flatnonzero(weighed & (matched | maybe))
        return Scored(self._rowids[eligible], scores[eligible], matched[eligible], True)

    def plan(self, lexemes: Sequence[str], context_weight: float,
             words: Sequence[str] | None = None,
             phrases: Sequence[Sequence[str]] = ()) -> Plan:
        """:meth:`scored`'s query, to be scored first over the chunks holding its rarest
        lexemes only (MaxScore, as :mod:`core.storage.pg.fts_bm25` does in SQL)."""
        chunks = len(self._slot_of)
        found = []
        for lexeme in dict.fromkeys(lexemes):
            slots, f_text, f_context = self._postings(lexeme)
            if len(slots):
                idf = max(1e-6, math.log((chunks - len(slots) + 0.5) / (len(slots) + 0.5)))
                found.append(_Word(lexeme, idf, slots, f_text, f_context))
        found.sort(key=lambda word: (-word.idf, word.lexeme))
        return Plan(self, found, lexemes, context_weight, words, phrases)

    def top_k(self, lexemes: Sequence[str], k: int,
              context_weight: float) -> list[tuple[int, float]]:
        """The ``k`` chunks with the highest bm25 for ``lexemes`` ORed (each one word):
        (fts_rowid, score), best first, ties by fts_rowid."""
        scored = self.scored(lexemes, context_weight)
        return [(int(scored.rowids[i]), float(scored.scores[i])) for i in scored.best(k)]

    # -- what it costs ----------------------------------------------------------------------

    def chunk_count(self) -> int:
        return len(self._slot_of)

    def mean_length(self) -> float:
        """The namespace's mean chunk length, as bm25 reads it here."""
        return max(self._total_length / len(self._slot_of), 1.0) if self._slot_of else 1.0

    def postings_count(self) -> int:
        return self._base_count + self._added_count

    def memory_bytes(self) -> int:
        """The bytes its arrays hold (the per-lexeme arrays and the per-slot ones)."""
        arrays = sum(a.nbytes + b.nbytes + c.nbytes for a, b, c in self._base.values())
        if self._saved is not None:  # mapped: in the page cache, but held all the same
            arrays += sum(int(a.nbytes) for a in self._saved[1:])
        return int(arrays + self._rowids.nbytes + self._lengths.nbytes + self._alive.nbytes
                   + 40 * self._added_count)


@dataclass(frozen=True)
class _Word:
    lexeme: str
    idf: float
    slots: np.ndarray
    f_text: np.ndarray
    f_context: np.ndarray

    @property
    def bound(self) -> float:
        """The most this lexeme adds to any chunk's score."""
        return self.idf * (BM25_K1 + 1)


class Plan:
    """One query over one namespace's postings, its lexemes rarest first.

    :meth:`scored` with a ``cut`` scores only the chunks holding one of the first ``cut``
    lexemes (the essential ones), exactly, every lexeme they hold counted; a chunk holding
    none of them scores at most :meth:`rest_bound`. When the ``k``-th best found scores
    above that, it is the exhaustive answer's ``k``-th, and the common words' long postings
    were only bisected for the few chunks that mattered.
    """

    def __init__(self, postings: NamespacePostings, words: list[_Word], lexemes: Sequence[str],
                 context_weight: float, matching: Sequence[str] | None,
                 phrases: Sequence[Sequence[str]]) -> None:
        self._postings = postings
        self.words = words
        self._lexemes = list(lexemes)
        self._context_weight = context_weight
        self._matching = set(lexemes if matching is None else matching)
        self._phrases = [list(dict.fromkeys(phrase)) for phrase in phrases]

    def rest_bound(self, cut: int) -> float:
        """The most the lexemes after the first ``cut`` add to any chunk's score (widened by
        a hair so float rounding never leaves a chunk out)."""
        return sum(word.bound for word in self.words[cut:]) * (1 + 1e-9) + 1e-12

    def scored(self, cut: int) -> Scored:
        """The chunks holding one of the first ``cut`` lexemes that the query may match,
        with their exact scores (every chunk it may match once ``cut`` is all of them)."""
        postings = self._postings
        essential = self.words[:cut]
        if not essential:
            return Scored(np.empty(0, np.int64), np.empty(0), np.empty(0, bool))
        candidates = essential[0].slots  # each word's slots are sorted and distinct
        if cut > 1:
            candidates = np.sort(np.concatenate([word.slots for word in essential]))
            candidates = candidates[np.concatenate(([True], candidates[1:] != candidates[:-1]))]
        if cut >= len(self.words) or len(candidates) * 8 > postings._slots:
            # Most chunks are candidates: scoring every posting at once costs less.
            return postings.scored(self._lexemes, self._context_weight,
                                   list(self._matching), self._phrases)
        chunks = len(postings._slot_of)
        mean = max(postings._total_length / chunks, 1.0)
        lengths = postings._lengths[candidates]
        scores = np.zeros(len(candidates), dtype=np.float64)
        weighed = np.zeros(len(candidates), dtype=bool)
        matched = np.zeros(len(candidates), dtype=bool)
        holding: dict[str, np.ndarray] = {}
        for word in self.words:
            at = np.minimum(np.searchsorted(word.slots, candidates), len(word.slots) - 1)
            hit = word.slots[at] == candidates
            holding[word.lexeme] = hit
            if word.lexeme in self._matching:
                matched |= hit
            rows, at = np.flatnonzero(hit), at[hit]
            f = word.f_text[at].astype(np.float64) + self._context_weight * word.f_context[at]
            positive = f > 0
            rows, f = rows[positive], f[positive]
            scores[rows] += word.idf * f * (BM25_K1 + 1) / (
                f + BM25_K1 * (1 - BM25_B + BM25_B * lengths[rows] / mean))
            weighed[rows] = True
        maybe = np.zeros(len(candidates), dtype=bool)
        for phrase in self._phrases:
            every = np.ones(len(candidates), dtype=bool)
            for lexeme in phrase:
                every &= holding.get(lexeme, np.zeros(len(candidates), dtype=bool))
            maybe |= every
        eligible = weighed & (matched | maybe)
        return Scored(postings._rowids[candidates[eligible]], scores[eligible],
                      matched[eligible])
