"""A namespace's full-text top ``k`` from memory, equal to FTS5's bm25 ranking.

FTS5 ranks a namespace query by computing bm25 for every row a query word matches, common
words included (~46 ms at 100k chunks). This index keeps, per term, the rows holding it
(numpy arrays: row slot, occurrences in ``chunk_text``, occurrences in ``context``) and
scores a query with a few vectorised passes over its terms' postings, each word's per-row
quotients kept between queries (:mod:`core.storage.derived.impacts`).

The score is FTS5's own (``fts5_aux.c``, ``fts5Bm25Function``), computed the same way:

- ``idf = log((N - n + 0.5) / (n + 0.5))``, set to 1e-6 when ≤ 0, where ``N`` is the rows of
  the whole table and ``n`` the rows holding the term in ``chunk_text`` or ``context`` (the
  query's column filter) anywhere in the file, not only in the namespace;
- a term's frequency is its occurrences weighted by column (``chunk_text`` 1.0,
  ``context`` the context weight; the session columns and the scope token weigh 0);
- a row's length ``D`` is its tokens in all five columns and ``avgdl`` the table's tokens
  over ``N``: both read from FTS5's own records (``chunks_fts_docsize``, the averages record
  in ``chunks_fts_data``), so they are the numbers bm25 uses;
- ``score = Σ idf * (f * (k1 + 1)) / (f + k1 * (1 - b + b * D / avgdl))``, k1 1.2, b 0.75,
  summed over the query's terms in order.

Ties are ordered by rowid. A query word that is several tokens (``foo_bar`` is the phrase
"foo bar") is scored as FTS5 scores a phrase (:mod:`core.storage.derived.phrases`); one
that is no token at all is not answered here (:meth:`FullTextIndex.search` returns None)
and the caller keeps FTS5 for it.

The index is kept in step with the file by :class:`core.storage.derived.holder.DerivedIndexes`
through the change log, as every derived index is: :meth:`FullTextIndex.apply` drops the rows
deleted or edited since the last sync and reads the inserted and edited ones again.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator, MutableMapping, Sequence
from typing import Any

import numpy as np

from core.storage.derived.impacts import DENSE_SHARE, Impact, ImpactCache
from core.storage.derived.lookup import SavedLookup
from core.storage.derived.phrases import Phrase, phrase_postings
from core.storage.derived.tokenizer import Tokenizer
from core.storage.sqlite.connection import select_in
from core.storage.sqlite.fts_phrases import phrase_instances, phrase_rows, prefer_places

K1 = 1.2  # fts5_aux.c
B = 0.75
_AVERAGES_ROWID = 1  # FTS5's row count and per-column token totals
# Below this bound, a word is scored only on rows other words found (see _scored); a top-k
# row nearly always scores several times more, and the answer is checked either way.
LIGHT_CEILING = 1.0
REBUILD_FLOOR = 4096  # dead slots (deleted rows) always tolerated before a rebuild
# Common words whose quotients a saved copy holds (as many as the impact cache keeps), and
# the context weight they are made for when no query asked yet (retrieval.context_weight's).
SAVED_WORDS = 64
DEFAULT_CONTEXT_WEIGHT = 0.5
_BUILD_BATCH = 5_000  # rows tokenized at a time: bounds the build's transient memory
_MERGE_EVERY = 16  # batches between merges of the terms' segments (each pins its batch)
_ROWS = ("SELECT c.fts_rowid, c.chunk_text, c.context_text, coalesce(s.agent_identity, ''),"
         " d.sz FROM chunks c JOIN sessions s ON s.session_id = c.session_id"
         " JOIN chunks_fts_docsize d ON d.id = c.fts_rowid")
Postings = tuple[np.ndarray, np.ndarray, np.ndarray]  # slots, tf in chunk_text, tf in context
Key = int | Phrase  # a term id, or a phrase's term ids


def varints(blob: bytes) -> list[int]:
    """The SQLite varints (as FTS5 writes its records) packed in ``blob``."""
    if max(blob, default=0) < 0x80:
        return list(blob)
    values, value, count = [], 0, 0
    for byte in blob:
        count += 1
        if count == 9:
            values.append((value << 8) | byte)
            value, count = 0, 0
        elif byte & 0x80:
            value = (value << 7) | (byte & 0x7F)
        else:
            values.append((value << 7) | byte)
            value, count = 0, 0
    return values


@contextlib.contextmanager
def snapshot(conn: Any) -> Iterator[None]:
    """One read transaction around the block, so everything it reads is of one commit."""
    if conn.in_transaction:
        yield
        return
    conn.execute("BEGIN")
    try:
        yield
    finally:
        conn.execute("ROLLBACK")


class FullTextIndex:
    """Postings and row lengths of ``chunks_fts``'s text and context columns, by namespace.

    Not thread-safe on its own (a search may add a phrase's postings): its holder's lock is
    held around every call (:meth:`core.storage.derived.holder.DerivedIndexes.reading`).
    """

    name = "full-text"
    follows = frozenset({"insert", "delete", "update"})

    def __init__(self, tokenizer: Tokenizer | None = None) -> None:
        self.tokenizer = tokenizer or Tokenizer()
        self._reset()

    def _reset(self) -> None:
        self._rowid = np.zeros(0, dtype=np.int64)
        self._namespace = np.zeros(0, dtype=np.int32)
        self._length = np.zeros(0, dtype=np.float64)
        self._alive = np.zeros(0, dtype=bool)
        self._split_alike = np.zeros(0, dtype=bool)  # see Tokenizer.splits_alike
        self._used = 0
        self._slot_of: MutableMapping[int, int] = {}
        self._namespaces: dict[str, int] = {}
        self._postings: dict[Key, list[Postings]] = {}
        self._clean: dict[Key, int] = {}  # key -> deletions its postings are clean of
        self._phrases: list[Phrase] = []  # the phrases queries asked for, kept up to date
        self._deletions = 0
        self._rows = 0  # FTS5's N
        self._tokens = 0  # FTS5's token total over every column
        self._norm: tuple[int, int, np.ndarray] | None = None
        self._impacts = ImpactCache()
        # Postings saved by an earlier process (:meth:`restore`): term id -> its range in the
        # mapped arrays, taken into ``_postings`` when a query or a write first wants it.
        self._base: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None
        self._base_deletions = 0
        self._mapped: set[Key] = set()  # terms whose one segment is still a slice of _base

    # -- keeping in step -------------------------------------------------------------------

    def build(self, conn: Any) -> None:
        """Everything from the file (one read transaction)."""
        with snapshot(conn):
            self._reset()
            self._read_averages(conn)
            rows = conn.execute(_ROWS)
            batches = 0
            while batch := rows.fetchmany(_BUILD_BATCH):
                self._insert(batch)
                batches += 1
                if batches % _MERGE_EVERY == 0:
                    self._merge_all()
            self._merge_all()  # one array per term before the first query

    def apply(self, conn: Any, inserted: Sequence[int], deleted: Sequence[int]) -> None:
        """Drop the ``deleted`` fts_rowids' rows, then read the ``inserted`` ones (a rowid may
        be both); built afresh instead once dead slots outnumber the live rows."""
        with snapshot(conn):
            self._read_averages(conn)
            self._kill(deleted)
            live = len(self._slot_of)
            if self._used - live > max(live, REBUILD_FLOOR):
                self.build(conn)
                return
            self._kill(inserted)  # never two slots for one row
            self._insert(select_in(conn, _ROWS + " WHERE c.fts_rowid IN", sorted(set(inserted))))

    def _read_averages(self, conn: Any) -> None:
        averages = varints(_record(conn, _AVERAGES_ROWID) or b"")
        self._rows = averages[0] if averages else 0
        self._tokens = sum(averages[1:])

    def _kill(self, rowids: Sequence[int]) -> None:
        for rowid in rowids:
            slot = self._slot_of.pop(rowid, None)
            if slot is not None:
                self._alive[slot] = False
                self._deletions += 1

    def _insert(self, rows: Sequence[Sequence[Any]]) -> None:
        if not rows:
            return
        first = self._used
        self._grow(first + len(rows))
        end = first + len(rows)
        self._rowid[first:end] = [row[0] for row in rows]
        self._namespace[first:end] = [self._namespaces.setdefault(row[3], len(self._namespaces))
                                      for row in rows]
        self._length[first:end] = [sum(varints(row[4])) for row in rows]
        self._alive[first:end] = True
        splits_alike = self.tokenizer.splits_alike
        self._split_alike[first:end] = [splits_alike(row[1]) and splits_alike(row[2])
                                        for row in rows]
        self._used = end
        for slot, row in enumerate(rows, first):
            self._slot_of[row[0]] = slot
        texts, contexts = [row[1] for row in rows], [row[2] for row in rows]
        self._add_postings(first, texts, contexts)
        if self._phrases:
            found = phrase_postings(self.tokenizer, self._phrases, range(first, end), texts,
                                    contexts)
            for phrase, postings in found.items():
                self._postings.setdefault(phrase, []).append(postings)

    def _grow(self, needed: int) -> None:
        if needed <= len(self._rowid):
            return
        size = max(needed, 2 * len(self._rowid), 1024)
        for name in ("_rowid", "_namespace", "_length", "_alive", "_split_alike"):
            old = getattr(self, name)
            new = np.zeros(size, dtype=old.dtype)
            new[:len(old)] = old
            setattr(self, name, new)

    def _add_postings(self, first: int, texts: list[str], contexts: list[str]) -> None:
        count = len(texts)
        t_doc, t_term, t_tf = self.tokenizer.count(texts)
        c_doc, c_term, c_tf = self.tokenizer.count(contexts)
        text_keys, context_keys = t_term * count + t_doc, c_term * count + c_doc
        keys = np.concatenate((text_keys, context_keys))
        keys.sort()
        keys = keys[np.concatenate(([True], keys[1:] != keys[:-1]))]
        tf_text = np.zeros(len(keys), dtype=np.uint16)
        tf_text[np.searchsorted(keys, text_keys)] = t_tf
        tf_context = np.zeros(len(keys), dtype=np.uint16)
        tf_context[np.searchsorted(keys, context_keys)] = c_tf
        terms = keys // count
        slots = (keys % count + first).astype(np.int32)
        bounds = np.flatnonzero(np.diff(terms)) + 1
        starts = np.concatenate(([0], bounds)).tolist()
        ends = np.concatenate((bounds, [len(keys)])).tolist()
        for term, start, end in zip(terms[starts].tolist(), starts, ends, strict=True):
            self._parts(term).append(
                (slots[start:end], tf_text[start:end], tf_context[start:end]))

    def _add_phrase(self, conn: Any, phrase: Phrase, word: str) -> None:
        """A phrase's postings (``word`` is the query word it was read from), found by FTS5
        (:mod:`core.storage.sqlite.fts_phrases`): among the rows this index holds, where
        the phrase starts in each column, by its tokens' places or by the matched rows'
        text, whichever FTS5's counts say is cheaper."""
        stems = [self.tokenizer.terms[term] for term in phrase]
        if prefer_places(conn, word, stems):
            rowids, in_text, in_context = phrase_instances(conn, stems)
            slots = self._slots_of(rowids)
            held = slots >= 0
            order = np.argsort(slots[held], kind="stable")
            found = (slots[held][order].astype(np.int32),
                     in_text[held][order].astype(np.uint16),
                     in_context[held][order].astype(np.uint16))
        else:
            texts = {row[0]: row[1:] for row in select_in(
                conn, "SELECT fts_rowid, chunk_text, context_text FROM chunks"
                " WHERE fts_rowid IN", phrase_rows(conn, word))}
            kept = sorted(self._slot_of[rowid] for rowid in texts if rowid in self._slot_of)
            rows = [texts[int(self._rowid[slot])] for slot in kept]
            found = phrase_postings(self.tokenizer, [phrase], kept, [row[0] for row in rows],
                                    [row[1] for row in rows])[phrase]
        self._postings[phrase] = [found]
        self._clean[phrase] = self._deletions
        self._phrases.append(phrase)

    def _slots_of(self, rowids: np.ndarray) -> np.ndarray:
        """The live slots of ``rowids``, -1 for those this index does not hold."""
        if isinstance(self._slot_of, SavedLookup):
            return self._slot_of.get_many(rowids)
        get = self._slot_of.get
        return np.fromiter((get(rowid, -1) for rowid in rowids.tolist()), dtype=np.int64,
                           count=len(rowids))

    def _merge_all(self) -> None:
        """Every term's segments merged: the batches they were sliced from can be freed."""
        for term in list(self._postings):
            self.postings(term)

    def _parts(self, term: Key) -> list[Postings]:
        """A term's segments, its saved postings first (an empty list for a term never
        seen)."""
        parts = self._postings.get(term)
        if parts is None:
            parts = self._postings[term] = []
            if self._base is not None and isinstance(term, int):
                offsets, slots, tf_text, tf_context = self._base
                if term + 1 < len(offsets) and offsets[term] < offsets[term + 1]:
                    start, end = int(offsets[term]), int(offsets[term + 1])
                    parts.append((slots[start:end], tf_text[start:end],
                                  tf_context[start:end]))
                    self._clean[term] = self._base_deletions
                    self._mapped.add(term)
        return parts

    def postings(self, term: Key) -> Postings | None:
        """A term's postings over live rows, merged into one segment."""
        parts = self._parts(term) if self._base is not None else self._postings.get(term)
        if not parts:
            return None
        # A slice of a saved (mapped) array pins no build batch: it is kept as it is.
        if len(parts) > 1 or (parts[0][0].base is not None and term not in self._mapped):
            self._mapped.discard(term)
            # One array per term: a slice of a build batch would keep the whole batch alive.
            parts[:] = [(np.concatenate([part[0] for part in parts]),
                         np.concatenate([part[1] for part in parts]),
                         np.concatenate([part[2] for part in parts]))]
        if self._clean.get(term, 0) != self._deletions:
            slots, tf_text, tf_context = parts[0]
            live = self._alive[slots]
            if not live.all():
                parts[0] = (slots[live], tf_text[live], tf_context[live])
                self._mapped.discard(term)
            self._clean[term] = self._deletions
        return parts[0]

    # -- saving it ---------------------------------------------------------------------------

    def export(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """Everything a new process needs to answer as this index does, as arrays: the rows,
        every term's live postings end to end by term id, the tokenizer's terms, and the
        phrases queries asked for with their postings (call it under the index's lock)."""
        terms = self.tokenizer.terms
        counts = np.zeros(len(terms), dtype=np.int64)
        slots, tf_text, tf_context = [], [], []
        for term in range(len(terms)):
            postings = self.postings(term) if term in self._postings or (
                self._base is not None) else None
            if postings is not None and len(postings[0]):
                counts[term] = len(postings[0])
                slots.append(postings[0])
                tf_text.append(postings[1])
                tf_context.append(postings[2])
        used = self._used
        arrays: dict[str, np.ndarray] = {
            "rowid": self._rowid[:used], "namespace": self._namespace[:used],
            "length": self._length[:used], "alive": self._alive[:used],
            "split_alike": self._split_alike[:used],
            "offsets": np.concatenate(([0], np.cumsum(counts))).astype(np.int64),
            "slots": np.concatenate(slots) if slots else np.zeros(0, dtype=np.int32),
            "tf_text": np.concatenate(tf_text) if tf_text else np.zeros(0, dtype=np.uint16),
            "tf_context": (np.concatenate(tf_context) if tf_context
                           else np.zeros(0, dtype=np.uint16)),
            "terms": np.frombuffer("\n".join(terms).encode(), dtype=np.uint8),
            "tainted": np.frombuffer("\n".join(sorted(self.tokenizer.session_tainted))
                                     .encode(), dtype=np.uint8),
            **self._export_phrases()}
        meta = {"namespaces": self._namespaces, "deletions": self._deletions,
                "term_count": len(terms)}
        quotients, meta["quotient_stamp"] = self._export_quotients(counts)
        arrays.update(quotients)
        return arrays, meta

    def _export_quotients(self, counts: np.ndarray,
                          ) -> tuple[dict[str, np.ndarray], list[float]]:
        """The bm25 quotients of the words in a quarter of the rows or more (the most
        common :data:`SAVED_WORDS`), dense by slot, for this row count and token total and
        the context weight queries last used: a new process of an unchanged file takes them
        instead of making each on its word's first query (at 1M chunks, tens of ms a word)."""
        used = self._used
        stamp = (self._rows, self._tokens,
                 DEFAULT_CONTEXT_WEIGHT if self._impacts.weight is None else self._impacts.weight)
        common = np.flatnonzero(counts * DENSE_SHARE >= max(used, 1))
        common = common[np.argsort(-counts[common], kind="stable")][:SAVED_WORDS]
        words = [(int(term), postings) for term in common.tolist()
                 if (postings := self.postings(int(term))) is not None]
        impacts = self._impacts.dense(stamp, words, self.row_norms(), used)
        return ({"quotient_terms": np.asarray([key for key, _ in impacts], dtype=np.int64),
                 "quotients": (np.stack([impact.quotient for _, impact in impacts]) if impacts
                               else np.zeros((0, used), dtype=np.float64)),
                 "quotient_present": (np.stack([impact.present for _, impact in impacts])
                                      if impacts else np.zeros((0, used), dtype=bool)),
                 "quotient_ceilings": np.asarray([impact.ceiling for _, impact in impacts],
                                                 dtype=np.float64)},
                [float(value) for value in stamp])

    def learned(self) -> int:
        """The phrases queries asked for (each cost a read of the file: worth saving)."""
        return len(self._phrases)

    def _export_phrases(self) -> dict[str, np.ndarray]:
        """The phrases' token ids and postings, end to end (a phrase costs the file a read
        of its places or rows: a new process takes them as they were)."""
        postings = [self.postings(phrase) for phrase in self._phrases]
        empty = (np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.uint16),
                 np.zeros(0, dtype=np.uint16))
        held = [found if found is not None else empty for found in postings]
        return {
            "phrase_tokens": np.asarray([t for p in self._phrases for t in p], dtype=np.int64),
            "phrase_widths": np.asarray([len(p) for p in self._phrases], dtype=np.int64),
            "phrase_offsets": np.concatenate(
                ([0], np.cumsum([len(found[0]) for found in held]))).astype(np.int64),
            **{f"phrase_{name}": (np.concatenate([found[n] for found in held]) if held
                                  else empty[n])
               for n, name in enumerate(("slots", "tf_text", "tf_context"))}}

    def _restore_phrases(self, arrays: dict[str, np.ndarray]) -> None:
        if "phrase_widths" not in arrays:  # saved before phrases were
            return
        tokens = arrays["phrase_tokens"].tolist()
        ends = np.cumsum(arrays["phrase_widths"]).tolist()
        offsets = arrays["phrase_offsets"].tolist()
        for n, end in enumerate(ends):
            phrase = tuple(tokens[end - int(arrays["phrase_widths"][n]):end])
            start, stop = offsets[n], offsets[n + 1]
            self._postings[phrase] = [(arrays["phrase_slots"][start:stop],
                                       arrays["phrase_tf_text"][start:stop],
                                       arrays["phrase_tf_context"][start:stop])]
            self._clean[phrase] = self._base_deletions
            self._mapped.add(phrase)
            self._phrases.append(phrase)

    def restore(self, conn: Any, arrays: dict[str, np.ndarray], meta: dict[str, Any]) -> None:
        """Hold what :meth:`export` gave (its postings mapped, read when first wanted), with
        bm25's row count and token total read from ``conn``'s snapshot."""
        self._reset()
        terms = bytes(arrays["terms"]).decode().split("\n") if meta["term_count"] else []
        tainted = bytes(arrays["tainted"]).decode()
        if self.tokenizer.terms:  # ids learned here would not be the saved ones
            self.tokenizer = Tokenizer()
        self.tokenizer.restore(terms, set(tainted.split("\n")) if tainted else set())
        used = len(arrays["rowid"])
        # The per-row arrays stay the mapped ones (copy-on-write): a delete writes into its
        # page of them, and the first insert grows them into memory (_grow copies).
        for name in ("rowid", "namespace", "length", "alive", "split_alike"):
            setattr(self, f"_{name}", arrays[name])
        self._used = used
        live = np.flatnonzero(self._alive[:used])
        self._slot_of = SavedLookup(self._rowid[live], lambda n: int(live[n]), live.tolist,
                                    values=live)
        self._namespaces = {str(k): int(v) for k, v in meta["namespaces"].items()}
        self._deletions = self._base_deletions = int(meta["deletions"])
        self._base = (arrays["offsets"], arrays["slots"], arrays["tf_text"],
                      arrays["tf_context"])
        self._restore_phrases(arrays)
        with snapshot(conn):
            self._read_averages(conn)
        self.row_norms()  # here, on the load's thread, rather than in the first query
        self._restore_quotients(arrays, meta)

    def _restore_quotients(self, arrays: dict[str, np.ndarray], meta: dict[str, Any]) -> None:
        """The saved words' quotients, when the file's row count and token total are still
        those they were made for (a write since makes them again, word by word)."""
        stamp = meta.get("quotient_stamp")
        if (stamp is None or "quotient_ceilings" not in arrays
                or (int(stamp[0]), int(stamp[1])) != (self._rows, self._tokens)
                or arrays["quotients"].shape[1] != self._used):
            return
        saved = []
        ceilings = arrays["quotient_ceilings"].tolist()
        for row, term in enumerate(arrays["quotient_terms"].tolist()):
            postings = self.postings(term)
            if postings is None:
                return
            saved.append((term, Impact.saved(postings[0], arrays["quotients"][row],
                                             arrays["quotient_present"][row], ceilings[row])))
        self._impacts.take((self._rows, self._tokens, float(stamp[2])), saved)

    # -- querying ----------------------------------------------------------------------------

    def keys(self, terms: Sequence[str]) -> list[Key] | None:
        """Each query word's term id, or its tokens' ids when it is a phrase; None when a
        word is no token at all."""
        found: list[Key] = []
        for term in terms:
            ids = self.tokenizer.token_ids(term)
            if not ids:
                return None
            found.append(ids[0] if len(ids) == 1 else tuple(ids))
        return found

    def search(self, namespace: str, terms: Sequence[str], k: int,
               context_weight: float = 0.5, conn: Any = None,
               ) -> list[tuple[int, float]] | None:
        """The namespace's top ``k`` (rowid, -bm25) for ``terms`` ORed, as FTS5 ranks them;
        None when a word is no token, or is a phrase not seen before and there is no
        ``conn`` to read its rows' text with."""
        term_ids = self.keys(terms)
        if term_ids is None:
            return None
        for word, key in zip(terms, term_ids, strict=True):
            if isinstance(key, tuple) and key not in self._postings:
                if conn is None:
                    return None
                self._add_phrase(conn, key, word)
        wanted = self._namespaces.get(namespace)
        if wanted is None or not term_ids or k <= 0:
            return []
        norm = self.row_norms()
        stamp = (self._rows, self._tokens, float(context_weight))
        weighed: list[tuple[Impact, float]] = []  # each word with rows, in query order
        for key in term_ids:
            postings = self.postings(key)
            if postings is not None and len(postings[0]):
                impact = self._impacts.impact(key, postings, norm, self._used, stamp)
                weighed.append((impact, self.idf(len(postings[0]))))
        in_namespace = (self._namespace[:self._used] == wanted
                        if len(self._namespaces) > 1 else None)
        return self._scored(weighed, _light_words([idf for _, idf in weighed]), in_namespace,
                            k)

    def _scored(self, weighed: list[tuple[Impact, float]], light: set[int],
                in_namespace: np.ndarray | None, k: int) -> list[tuple[int, float]]:
        """The top ``k`` by bm25 summed over the words in query order (as FTS5 sums it).

        With ``light`` words (MaxScore, Turtle and Flood 1995): rows are those holding
        another word, and the light words are scored on those rows only. A row holding only
        light words scores at most ``Σ idf * max q`` over the light words; if the ``k``-th
        row found scores above that, no such row could have entered the top ``k`` and the
        answer is exact; otherwise the rows holding only light words are scored too
        (:meth:`_widened`). Common words (in half the rows or more, idf clamped to 1e-6)
        are light in almost every query, and scoring them on every row was most of a
        query's time.
        """
        used = self._used
        matched = np.zeros(used, dtype=bool)
        for index, (impact, _) in enumerate(weighed):
            if index not in light:
                impact.mark(matched)
        if in_namespace is not None:
            matched &= in_namespace
        scores = np.zeros(used, dtype=np.float64)
        for index, (impact, idf) in enumerate(weighed):
            impact.add(scores, idf, matched if index in light else None)
        top = self._top(np.flatnonzero(matched), scores, k)
        if not light:
            return top
        # A row's computed sum may exceed the exact one by a few ulps: the margin covers it.
        ceiling = sum(weighed[index][1] * weighed[index][0].ceiling
                      for index in light) * (1.0 + 1e-9)
        if len(top) == k and top[-1][1] > ceiling:
            return top
        return self._widened(weighed, light, in_namespace, matched, scores, k)

    def _widened(self, weighed: list[tuple[Impact, float]], light: set[int],
                 in_namespace: np.ndarray | None, matched: np.ndarray, scores: np.ndarray,
                 k: int) -> list[tuple[int, float]]:
        """The top ``k`` once the rows holding only light words are scored too: their sums
        are made afresh from the light words alone, in query order, as FTS5 adds them (the
        other words add nothing to those rows)."""
        used = self._used
        others = np.zeros(used, dtype=np.float64)
        holding = np.zeros(used, dtype=bool)
        for index in sorted(light):
            impact, idf = weighed[index]
            impact.add(others, idf, ~matched)
            impact.mark(holding)
        if in_namespace is not None:
            holding &= in_namespace
        candidates = np.flatnonzero(matched | holding)
        return self._top(candidates, np.where(matched, scores, others), k)

    def row_norms(self) -> np.ndarray:
        """``k1 * (1 - b + b * D / avgdl)`` for every slot, as fts5_aux.c computes it."""
        key = (self._rows, self._tokens)
        if self._norm is None or self._norm[:2] != key or len(self._norm[2]) < self._used:
            avgdl = self._tokens / self._rows if self._rows else 1.0
            norm = K1 * ((1 - B) + (B * self._length[:self._used]) / avgdl)
            self._norm = (key[0], key[1], norm)
        return self._norm[2]

    def _top(self, candidates: np.ndarray, every_score: np.ndarray,
             k: int) -> list[tuple[int, float]]:
        """The best ``k`` of ``candidates`` by score (``every_score`` by slot), ties by
        rowid."""
        scores = every_score[candidates]
        if len(candidates) > k:
            kth = np.partition(scores, len(scores) - k)[len(scores) - k]
            keep = scores >= kth
            candidates, scores = candidates[keep], scores[keep]
        rowids = self._rowid[candidates]
        order = np.lexsort((rowids, -scores))[:k]
        return list(zip(rowids[order].tolist(), scores[order].tolist(), strict=True))

    def bm25_parameters(self, terms: Sequence[str], context_weight: float,
                        columns: tuple[str, str] = ("chunk_text", "context"),
                        ) -> dict[str, Any]:
        """What a search for ``terms`` is scored with, as of now: the words, bm25's k1 and b,
        the table's row count N and mean row length avgdl (FTS5's own records), and the
        weights of the ``columns`` standing for a chunk's text and context."""
        return {"words": list(terms), "k1": K1, "b": B, "N": self._rows,
                "avgdl": self._tokens / self._rows if self._rows else 1.0,
                "weights": {columns[0]: 1.0, columns[1]: float(context_weight)}}

    def idf(self, hits: int) -> float:
        """FTS5's idf for a word in ``hits`` rows: ``log((N - n + 0.5) / (n + 0.5))``, 1e-6
        when that is not above 0."""
        idf = math.log((self._rows - hits + 0.5) / (hits + 0.5))
        return 1e-6 if idf <= 0.0 else idf

    def session_slots(self, rowids: Sequence[int]) -> np.ndarray | None:
        """The slots of ``rowids`` held here, sorted (in the postings' dtype: searchsorted
        would otherwise convert a common word's whole postings array on every lookup, 50 us
        a word at 1M chunks); None when one of them is a row whose words a session's prefix
        splits otherwise than FTS5 (``Tokenizer.splits_alike``)."""
        slots = self._slots_of(np.fromiter(rowids, dtype=np.int64, count=len(rowids)))
        slots = np.sort(slots[slots >= 0]).astype(np.int32)
        return slots if self._split_alike[slots].all() else None

    def rowids_at(self, slots: np.ndarray) -> np.ndarray:
        """The rowids of ``slots``."""
        rowids: np.ndarray = self._rowid[slots]
        return rowids

    # -- what it holds -----------------------------------------------------------------------

    @property
    def row_count(self) -> int:
        """Rows indexed (live)."""
        return len(self._slot_of)

    @property
    def quotients(self) -> ImpactCache:
        """The words' bm25 quotients held between queries (a loaded copy starts with the
        common words' when the file did not move since it was saved)."""
        return self._impacts

    @property
    def slot_count(self) -> int:
        """Rows indexed since the last build, deleted ones included."""
        return self._used

    def memory_bytes(self) -> int:
        """Bytes of the numpy arrays (postings, per-row, the words' cached quotients), not
        Python's dictionaries."""
        arrays: list[np.ndarray] = [self._rowid, self._namespace, self._length, self._alive]
        total = sum(a.nbytes for a in arrays) + self._impacts.nbytes
        for key, parts in self._postings.items():
            if key not in self._mapped:
                total += sum(p[0].nbytes + p[1].nbytes + p[2].nbytes for p in parts)
        if self._base is not None:  # mapped (shared page cache), but held all the same
            total += sum(int(a.nbytes) for a in self._base)
        return int(total)


def _light_words(idfs: Sequence[float]) -> set[int]:
    """The words (by index) worth scoring only on rows other words found: the lowest-idf
    ones whose bound ``(k1 + 1) * Σ idf`` stays under :data:`LIGHT_CEILING`; never all."""
    light: set[int] = set()
    total = 0.0
    for index in sorted(range(len(idfs)), key=idfs.__getitem__)[:-1]:
        total += (K1 + 1.0) * idfs[index]
        if total >= LIGHT_CEILING:
            break
        light.add(index)
    return light


def _record(conn: Any, rowid: int) -> bytes | None:
    row = conn.execute("SELECT block FROM chunks_fts_data WHERE id = ?", (rowid,)).fetchone()
    return None if row is None else bytes(row[0])
