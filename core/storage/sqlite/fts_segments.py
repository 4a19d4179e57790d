"""Merging ``chunks_fts``'s segments, a step at a time, so full-text queries walk fewer.

FTS5 writes the terms of every transaction as a new segment and merges segments only as they
pile up on one level (its automerge, four at a time), so a file written in many
transactions keeps dozens of segments of every size, and a query reads each of its terms'
doclists in each of them. On the 1M-chunk bench file (160,929 index pages), merging them all
into one (141,710) took 12 s and halved a session's full-text leg: p50 0.31 → 0.15 ms, p95
0.41 → 0.20 (the same 200 queries, warm).

That merge is work that can wait. :func:`merge_step` does a bounded part of it in one short
write transaction (FTS5's ``'merge'`` command with a negative page count: merge whatever
segments there are, level or not, as ``'optimize'`` does, but stop after about that many
pages), so a store that arrives meanwhile waits one step at most. The engine runs the steps
when the memory has been quiet (:mod:`core.upkeep`). Merging never changes what a query
finds or its score: it rewrites the same postings into fewer segments.
"""

from __future__ import annotations

from typing import Any

from core.storage.sqlite.connection import transaction

# FTS5's automerge while no import runs: its default (merge four segments of a level).
AUTOMERGE = 4

# FTS5's pending-terms budget (its ``hashsize``): its default, and while an import writes.
HASH_BYTES = 1024 * 1024
IMPORT_HASH_BYTES = 64 * 1024 * 1024

# Pages written per step: on the 100k bench file, 295 steps of at most 12.5 ms (0.96 s in all).
MERGE_PAGES = 64


def merge_step(conn: Any, pages: int = MERGE_PAGES) -> bool:
    """Merge about ``pages`` pages of segments; False when there was nothing left to merge.

    FTS5 says whether a ``'merge'`` did any work through the connection's change count: it
    moves by two or more when pages were written, by less when the index was already one
    segment (fts5 documentation, "The 'merge' command").
    """
    with transaction(conn):
        before = conn.total_changes
        conn.execute("INSERT INTO chunks_fts(chunks_fts, rank) VALUES ('merge', ?)",
                     (-abs(int(pages)),))
        return bool(conn.total_changes - before >= 2)


def segment_count(conn: Any) -> int:
    """How many segments ``chunks_fts`` holds now (each has its own rows in the ``_idx``
    table, which maps a segment's leaf pages by their first terms)."""
    return int(conn.execute("SELECT count(DISTINCT segid) FROM chunks_fts_idx").fetchone()[0])


def tune_for_import(conn: Any, importing: bool) -> None:
    """Tune ``chunks_fts`` for an import's large transactions, or set it back after one.

    Two of FTS5's settings, stored in the index's config in the transaction that sets them
    (an import killed before it set them back leaves them tuned, which costs queries
    nothing; the next import sets them back):

    - automerge off while it writes: with it on, each transaction's new segment was merged
      into older ones as it was written, so an import rewrote its postings again and again
      (20k chunks: full-text inserts 3.0 s with it, 2.1 s without). FTS5's crisis merge still
      caps a level at 16 segments, and the upkeep's merge steps (:func:`merge_step`) tidy
      the rest once the memory is quiet;
    - ``hashsize``, the pending terms FTS5 keeps in memory before it writes them out as a
      segment, from 1 MiB to :data:`IMPORT_HASH_BYTES`: at 1 MiB a transaction of a few
      thousand messages flushed many small segments, each then merged again (100k bench
      chunks in 16k-row transactions, inserts and commits: 15.3 s at 1 MiB, 7.1 s at 64).
    """
    with transaction(conn):
        for key, value in (("automerge", 0 if importing else AUTOMERGE),
                           ("hashsize", IMPORT_HASH_BYTES if importing else HASH_BYTES)):
            conn.execute("INSERT INTO chunks_fts(chunks_fts, rank) VALUES (?, ?)",
                         (key, value))
