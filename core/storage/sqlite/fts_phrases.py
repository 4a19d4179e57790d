"""Where a phrase occurs in ``chunks_fts``'s text and context columns, read from FTS5 itself.

A query word FTS5 reads as several tokens (``calendar_add``) is a phrase: its tokens at
consecutive offsets in one column of one row. The derived full-text index keeps no
positions, so it asks the file once per phrase. Two ways, the cheaper one chosen from
counts FTS5 keeps (both give the same postings):

- the rows matching the phrase (``MATCH``, positions compared inside FTS5), their text read
  again and counted: about 40 µs a matched row, so cheap when few rows hold the phrase;
- every place each of its tokens occurs (an ``fts5vocab`` instance table), the places
  lined up in numpy: about 0.35 µs a place, so cheap when its tokens are not common words
  even if many rows hold the phrase.

At a million chunks, ``calendar_add`` (in 85k rows) took 5.3 s by reading text for every
row holding both tokens; it now takes ~0.05 s by places, and ``flight my`` (``my`` in
millions of places, the phrase in 5.6k rows) ~0.3 s by rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

COLUMNS = ("chunk_text", "context")  # the derived index's columns, in its order
_PLACE_SECONDS = 0.35e-6
_ROW_SECONDS = 40e-6
_OFFSET_BITS = 20  # a token's offset in its column (a chunk holds far fewer)
_VOCAB = "memory_phrase_places"
_COUNTS = "memory_phrase_counts"


def _prepare(conn: Any) -> None:
    """This connection's ``fts5vocab`` tables over ``chunks_fts`` (temp: nothing is written
    to the file; a transaction that ends with ROLLBACK drops them, so they are made again)."""
    conn.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{_VOCAB}"
                 " USING fts5vocab(main, chunks_fts, 'instance')")
    conn.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{_COUNTS}"
                 " USING fts5vocab(main, chunks_fts, 'col')")


def match_expression(word: str) -> str:
    """``word`` as one FTS5 phrase over the text and context columns."""
    return "{chunk_text context} : \"" + word.replace('"', '""') + '"'


def prefer_places(conn: Any, word: str, stems: Sequence[str]) -> bool:
    """Whether lining up the stems' places is cheaper than reading the text of the rows
    that hold the phrase ``word``."""
    _prepare(conn)
    rows = int(conn.execute("SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH ?",
                            (match_expression(word),)).fetchone()[0])
    marks = ", ".join("?" * len(COLUMNS))
    places = 0
    for stem in set(stems):
        found = conn.execute(f"SELECT sum(cnt) FROM temp.{_COUNTS} WHERE term = ?"
                             f" AND col IN ({marks})", (stem, *COLUMNS)).fetchone()
        places += int(found[0] or 0)
    return places * _PLACE_SECONDS < rows * _ROW_SECONDS


def phrase_rows(conn: Any, word: str) -> list[int]:
    """The rows holding the phrase ``word`` in the text or context column (``fts_rowid``,
    ascending)."""
    return [row[0] for row in conn.execute(
        "SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY rowid",
        (match_expression(word),))]


def phrase_instances(conn: Any, stems: Sequence[str],
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The rows holding the phrase ``stems`` (FTS5 terms, in order) in the text or context
    column: (fts_rowids ascending, places it starts at in the text, in the context)."""
    _prepare(conn)
    starts = _places(conn, stems[0])
    for step, stem in enumerate(stems[1:], 1):
        if not len(starts):
            break
        following = starts + step
        same_column = (following & ((1 << _OFFSET_BITS) - 1)) >= step
        starts = starts[same_column & np.isin(following, _places(conn, stem))]
    cells, counts = np.unique(starts >> _OFFSET_BITS, return_counts=True)
    rowids, columns = cells >> 1, cells & 1
    wanted = np.unique(rowids)
    where = np.searchsorted(wanted, rowids)
    in_text = np.zeros(len(wanted), dtype=np.int64)
    in_context = np.zeros(len(wanted), dtype=np.int64)
    in_text[where[columns == 0]] = counts[columns == 0]
    in_context[where[columns == 1]] = counts[columns == 1]
    return wanted, in_text, in_context


def _places(conn: Any, stem: str) -> np.ndarray:
    """Every place ``stem`` occurs in the two columns, one integer each: rowid, column,
    offset (sorted, as the vocabulary gives them)."""
    marks = ", ".join("?" * len(COLUMNS))
    # One text of numbers, parsed by numpy: a row per place through Python cost 2.5x more
    # (0.35 µs a place against 0.9 µs).
    text = conn.execute(
        f"SELECT group_concat((doc << {_OFFSET_BITS + 1}) | ((col = ?) << {_OFFSET_BITS})"
        f" | offset, ' ') FROM temp.{_VOCAB} WHERE term = ? AND col IN ({marks})",
        (COLUMNS[1], stem, *COLUMNS)).fetchone()[0]
    places = (np.fromstring(text, dtype=np.int64, sep=" ") if text
              else np.zeros(0, dtype=np.int64))
    places.sort()
    return places
