"""What a SQLite file's saved derived indexes are keyed by: the file's id and a fingerprint.

The id is a random string written to ``memory_meta`` once (at the first writable open), so
a saved copy is tied to the file it came from, not to its path: another file put in its
place, or another file's folder copied beside it, is refused. A copy of the file shares the
id; its change log's lineage (:mod:`core.storage.derived.changes`) tells it apart once
either went on alone. The fingerprint names what
an index was built from; any difference makes the next process build afresh.
"""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

from core.storage.derived import persisted
from core.storage.derived.changes import begin_lineage_entry
from core.storage.derived.holder import DerivedIndex, Saving
from core.storage.derived.tokenizer import TOKENIZER
from core.storage.sqlite.migrations import current_version
from core.storage.sqlite.vectors import get_meta
from core.storage.vocabulary import VECTOR_IDENTITY_KEY

DATABASE_ID_KEY = "database_id"


def ensure_database_id(conn: Any) -> None:
    """Give the file its random id unless it has one, and this open its lineage entry
    (:func:`core.storage.derived.changes.begin_lineage_entry`); on the writer, at open."""
    conn.execute("INSERT OR IGNORE INTO memory_meta(key, value) VALUES (?, ?)",
                 (DATABASE_ID_KEY, secrets.token_hex(16)))
    begin_lineage_entry(conn)


def fingerprint(conn: Any, index: DerivedIndex) -> dict[str, Any]:
    """What ``index`` is built from: the schema, and the vectors' model and dimension or
    the full-text tokenizer, whichever it follows."""
    found: dict[str, Any] = {"index": index.name, "schema": current_version(conn)}
    if "vector" in index.follows:
        for key in ("embedding_dimension", "embedding_model", VECTOR_IDENTITY_KEY):
            found[key] = get_meta(conn, key)
    else:
        found["tokenizer"] = TOKENIZER
    return found


def sqlite_saving(path: Path, conn: Any, *, writable: bool = True) -> Saving | None:
    """Where the file at ``path`` saves its indexes (``writable``: it may write them too);
    None for a file without an id (opened read-only before it was ever opened writable)."""
    database = get_meta(conn, DATABASE_ID_KEY)
    if database is None:
        return None
    return Saving(persisted.sqlite_folder(path), database, fingerprint, writable=writable)
