"""Reading the chunk change log (migration 0008) for the indexes derived from the file.

Every write that adds, removes, edits or re-embeds a chunk appends ``(seq, fts_rowid, op)``
to ``chunk_changes`` in its own transaction, through triggers, so another process's writes
are logged exactly as this one's. An index remembers the last ``seq`` it has applied (its
watermark); :func:`changes_after` reads what came after it. The log is pruned as it is
written, so an index whose watermark fell off its start must be rebuilt.
"""

from __future__ import annotations

import json
import secrets
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


# -- the log's lineage -------------------------------------------------------------------------
#
# A copy of the file shares its log up to the copy; from then on each goes on alone, with
# seqs that may coincide (both hand out the same next seq, often for the same next rowid).
# So every writable open of a file appends ``[random token, newest seq]`` to its lineage
# (memory_meta, in one transaction): a copy opened to be written gets a token the original
# never has, at the seq where it parted. A saved index records the lineage's last entry when
# saved; it holds for a file whose lineage has that entry and no later one starting before
# the saved position, i.e. one whose log up to that position is the log it was saved from.

LINEAGE_KEY = "log_lineage"
LINEAGE_KEPT = 1000
"""Opens remembered; an index saved more opens ago than this is rebuilt."""


def lineage(conn: Any) -> list[list[Any]]:
    """The file's lineage, oldest first: ``[token, seq]`` per writable open."""
    row = conn.execute("SELECT value FROM memory_meta WHERE key = ?",
                       (LINEAGE_KEY,)).fetchone()
    try:
        found = json.loads(row[0]) if row is not None else []
    except ValueError:
        return []
    return found if isinstance(found, list) else []


def begin_lineage_entry(conn: Any) -> None:
    """Append this open's entry to the file's lineage (the writer, at open)."""
    began = not conn.in_transaction
    if began:
        conn.execute("BEGIN IMMEDIATE")  # the seq and the entry read and written as one
    try:
        entries = [*lineage(conn), [secrets.token_hex(8), newest_seq(conn)]]
        conn.execute("INSERT OR REPLACE INTO memory_meta(key, value) VALUES (?, ?)",
                     (LINEAGE_KEY, json.dumps(entries[-LINEAGE_KEPT:])))
    except BaseException:
        if began:
            conn.execute("ROLLBACK")
        raise
    if began:
        conn.execute("COMMIT")


def lineage_mark(conn: Any) -> list[Any] | None:
    """The lineage's last entry, recorded with an index saved now (None: no entry yet)."""
    entries = lineage(conn)
    return entries[-1] if entries else None


def lineage_mismatch(conn: Any, position: int, mark: list[Any] | None) -> str | None:
    """Why this file's log up to ``position`` may not be the one an index saved with
    ``mark`` was saved from (a copy of the file that went on alone), or None."""
    entries = lineage(conn)
    if mark is None:  # saved before the file had a lineage
        if len(entries) >= LINEAGE_KEPT:
            return "saved too many opens ago to tell its change log"
        after = entries[0] if entries else None
    else:
        at = next((i for i, entry in enumerate(entries) if entry == mark), None)
        if at is None:
            return ("the change log differs from the one it was saved at (saved by another"
                    " copy of the file, or too many opens ago)")
        after = entries[at + 1] if at + 1 < len(entries) else None
    if after is not None and int(after[1]) < position:
        return ("the change log differs from the one it was saved at (a copy of the file"
                " went on alone)")
    return None
