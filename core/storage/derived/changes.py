"""Reading the chunk change log (migration 0008) for the indexes derived from the file.

Every write that adds, removes, edits or re-embeds a chunk appends ``(seq, fts_rowid, op)``
to ``chunk_changes`` in its own transaction, through triggers, so another process's writes
are logged exactly as this one's. An index remembers the last ``seq`` it has applied (its
watermark); :func:`changes_after` reads what came after it. The log is pruned as it is
written, so an index whose watermark fell off its start must be rebuilt.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

OPS = ("insert", "delete", "update", "vector", "reset")


@dataclass
class Changes:
    """The log after a watermark: its entries in order, and whether they can be applied."""

    newest: int
    """The log's newest seq (0 when empty): the watermark once these are applied."""
    entries: list[tuple[int, int | None, str]] = field(default_factory=list)
    rebuild: str | None = None
    """Why an index at the watermark must be rebuilt instead (entries pruned, vectors
    reset); None when the entries bring it up to date."""


def newest_seq(conn: Any) -> int:
    """The newest entry's seq (0 for an empty log): one index lookup."""
    return int(conn.execute("SELECT coalesce(max(seq), 0) FROM chunk_changes").fetchone()[0])


def changes_after(conn: Any, watermark: int, follows: Iterable[str] = OPS) -> Changes:
    """Everything logged after ``watermark``; read it in the transaction that applies it.

    A reindex's reset rebuilds only an index that ``follows`` vectors: the text it leaves
    alone."""
    newest = newest_seq(conn)
    if newest == watermark:
        return Changes(newest)
    if newest < watermark:  # the file was replaced (restored, copied over) under the index
        return Changes(newest, rebuild="the change log is behind the index")
    oldest = int(conn.execute(
        "SELECT coalesce(min(seq), 0) FROM chunk_changes").fetchone()[0])
    if oldest > watermark + 1:
        return Changes(newest, rebuild="the changes since the index was built were pruned")
    entries = conn.execute(
        "SELECT seq, fts_rowid, op FROM chunk_changes WHERE seq > ? ORDER BY seq",
        (watermark,)).fetchall()
    if "vector" in follows and any(op == "reset" for _, _, op in entries):
        return Changes(newest, rebuild="every vector was reset (reindex)")
    return Changes(newest, entries)


def collapse(entries: Iterable[tuple[int, int | None, str]],
             follows: frozenset[str]) -> tuple[list[int], list[int]]:
    """The entries an index follows as ``(inserted, deleted)`` fts_rowids, each in log order.

    ``deleted`` names every rowid the index may hold an outdated row for (deleted, edited,
    re-embedded); ``inserted`` every rowid to read again from the file because its row
    exists after the entries. An index applies ``deleted`` first, then ``inserted``: a rowid
    deleted and handed out again (``max + 1``) is in both, as is a re-embedded chunk. A
    deleted rowid the index never held is ignored.
    """
    last: dict[int, str] = {}
    replaced: dict[int, None] = {}
    for _, rowid, op in entries:
        if rowid is None or op not in follows:
            continue
        if op != "insert":
            replaced[rowid] = None
        last.pop(rowid, None)  # keep ``last`` in the order of each rowid's latest entry
        last[rowid] = op
    inserted = [rowid for rowid, op in last.items() if op != "delete"]
    return inserted, list(replaced)
