"""PostgreSQL: a namespace's derived indexes (:mod:`core.storage.pg.derived`) saved in a
local cache folder, so the next process on this machine maps them instead of reading the
whole namespace from the server (7.1 s at 100k chunks).

Where: ``$WORKBENCH_INDEX_CACHE`` or the user's cache folder (``platformdirs``), then one
folder per database and reader: ``pg-index/SYSTEM-DATOID-HASH`` (HASH of the schema and the
role: a role bound to a namespace by row-level security reads only its own namespace, so
its copy is never handed to another role, nor another role's to it). Deleting it is always
safe: the next process builds again. A local folder rather than a table in the database:
mapping 180 MiB of files costs ~0.1 s (pages read as queries touch them) where reading the
same bytes back from a table is a transfer of every byte through the connection (~1-2 s at
100k chunks), and a cache must not grow the database every backup copies.

Each saved copy is tied to its database by the server's system identifier, the database's
oid, the schema, the role and the memory's random id (``memory_meta.database_id``, so a
database dropped and created again under the same oid is another); it carries the snapshot
position the in-memory index uses to catch up (the sync's xmax and in-progress list), so a
loaded copy is caught up by exactly the sync every query runs, and changes pruned since it
was saved make it rebuild. The file format, checks and atomic writes are
:mod:`core.storage.derived.persisted`'s.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import psycopg

from core.storage.derived import persisted
from core.storage.derived.lookup import SavedLookup
from core.storage.index_cache import cache_root
from core.storage.pg import migrations, vector_index
from core.storage.pg.connection import Conn
from core.storage.pg.fts_bm25 import CONFIG
from core.storage.vocabulary import VECTOR_IDENTITY_KEY

DATABASE_ID_KEY = "database_id"
_POSTINGS = "p."
_VECTORS = "v."


@dataclass
class PgSaving:
    """Where and as what one database's namespace indexes are saved."""

    folder: Path
    database: str
    """The database's identity: a copy saved from another is refused."""
    writable: bool = True
    quiet_s: float = 5.0
    """Saved once a namespace's index was this long neither changed nor queried."""
    close_after: int = 1000
    """At close, saved only when built here or this many chunks changed since saved."""


async def ensure_database_id(conn: Conn) -> None:
    """Give the memory its random id unless it has one (a writable open)."""
    await conn.execute(
        "INSERT INTO memory_meta(key, value) VALUES (%s, %s) ON CONFLICT (key) DO NOTHING",
        (DATABASE_ID_KEY, secrets.token_hex(16)))


async def pg_saving(conn: Conn, *, writable: bool) -> PgSaving | str:
    """Where this connection's database saves its indexes; or why it cannot (no id yet,
    or the server's identity is not readable by this role)."""
    try:
        cursor = await conn.execute(
            "SELECT (SELECT system_identifier FROM pg_control_system())::text,"
            " (SELECT oid FROM pg_database WHERE datname = current_database())::text,"
            " current_schema(), current_user")
        row = await cursor.fetchone()
    except psycopg.Error as exc:
        return f"the database's identity cannot be read ({str(exc).strip()[:100]})"
    assert row is not None
    system, oid, schema, role = (str(value) for value in row)
    memory = await vector_index.get_meta(conn, DATABASE_ID_KEY)
    if memory is None:
        return "the memory has no id yet (opened writable once, it gets one)"
    reader = hashlib.sha256(f"{schema}\x00{role}".encode()).hexdigest()[:16]
    return PgSaving(cache_root() / "pg-index" / f"{system}-{oid}-{reader}",
                    f"{system}/{oid}/{schema}/{role}/{memory}", writable=writable)


async def fingerprint(conn: Conn) -> dict[str, Any]:
    """What a namespace's index is built from: the schema, the vectors' model and
    dimension, the text search configuration."""
    return {"schema": await migrations.current_version(conn),
            "dimension": await vector_index.vector_dimension(conn),
            "model": await vector_index.get_meta(conn, "embedding_model"),
            "identity": await vector_index.get_meta(conn, VECTOR_IDENTITY_KEY),
            "text_search": CONFIG}


def index_name(namespace: str) -> str:
    """A namespace's index's name in the folder (any text is a namespace: hashed)."""
    return "ns-" + hashlib.sha256(namespace.encode()).hexdigest()[:24]


def export(held: Any) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """A :class:`~core.storage.pg.derived.NamespaceIndex`'s arrays and what places them."""
    vectors, vector_meta = held.vectors.export()
    postings, postings_meta = held.postings.export()
    rowids = np.fromiter(held.chunk_ids, dtype=np.int64, count=len(held.chunk_ids))
    arrays = {**{_VECTORS + k: v for k, v in vectors.items()},
              **{_POSTINGS + k: v for k, v in postings.items()},
              "chunk_rowids": rowids,
              "chunk_ids": np.frombuffer("\x00".join(held.chunk_ids.values()).encode(),
                                         dtype=np.uint8)}
    return arrays, {"vectors": vector_meta, "postings": postings_meta,
                    "namespace": held.namespace}


def restore(held: Any, arrays: dict[str, np.ndarray], meta: dict[str, Any]) -> None:
    """Fill ``held`` from what :func:`export` gave, read back (mapped); ValueError,
    KeyError and the like when the arrays do not fit together."""
    if meta["namespace"] != held.namespace:
        raise ValueError(f"saved for another namespace ({str(meta['namespace'])[:40]})")
    if meta["vectors"]["dimension"] is not None:
        held.vectors.restore(None, {k[len(_VECTORS):]: v for k, v in arrays.items()
                                    if k.startswith(_VECTORS)}, meta["vectors"])
    held.postings.restore({k[len(_POSTINGS):]: v for k, v in arrays.items()
                           if k.startswith(_POSTINGS)}, meta["postings"])
    rowids, text = arrays["chunk_rowids"], arrays["chunk_ids"]
    ends = (np.append(np.flatnonzero(text == 0), len(text)) if len(rowids)
            else np.zeros(0, dtype=np.int64))
    if len(ends) != len(rowids):
        raise ValueError(f"{len(ends)} chunk ids for {len(rowids)} rowids")

    def chunk_id(n: int) -> str:
        return bytes(text[(int(ends[n - 1]) + 1 if n else 0):int(ends[n])]).decode()

    def every() -> list[str]:
        return bytes(text).decode().split("\x00") if len(rowids) else []

    held.chunk_ids = SavedLookup(rowids, chunk_id, every)


def save(saving: PgSaving, held: Any, fingerprint: dict[str, Any],
         arrays: dict[str, np.ndarray], meta: dict[str, Any],
         position: dict[str, Any]) -> int | None:
    """Write one namespace's exported index (a thread's work: it writes and flushes)."""
    return persisted.save(saving.folder, index_name(held.namespace), fingerprint=fingerprint,
                          database=saving.database, position=position, entry=None,
                          meta=meta, arrays=arrays)


def load(saving: PgSaving, namespace: str,
         fingerprint: dict[str, Any]) -> persisted.Loaded | str:
    """The namespace's saved index, mapped, if every check passes; else why not."""
    return persisted.load(saving.folder, index_name(namespace), fingerprint=fingerprint,
                          database=saving.database, mmap_mode="c")
