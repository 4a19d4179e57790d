"""The SQLite storage backend: the engine's only way to the database.

Everything above this class (pipelines, retrieval fusion, summaries, cadences) is plain
Python over its async methods, which implement :class:`core.storage.backend.Backend` (the
contract a second backend, PostgreSQL with pgvector, implements too). Writes go to the
single writer lane, reads to the pool.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from core.config import StorageConfig
from core.errors import ReadOnlyDatabase, SchemaTooNew, StorageFull
from core.storage import (
    copying,
    events,
    facts,
    logbook,
    note_listing,
    notes,
    schedules,
    scratchpad,
    search,
    session_snapshot,
    summaries,
    vectors,
)
from core.storage.backend import BackendFeatures
from core.storage.connection import Database
from core.storage.locations import parse_location
from core.storage.migrations import (
    current_version,
    latest_version,
    migrate,
    schema_too_new_message,
)
from core.storage.refusals import storage_refusal

if TYPE_CHECKING:
    from core.storage.backend import Backend

log = logging.getLogger(__name__)

SQLITE_FEATURES = BackendFeatures(
    # vec0 answers a KNN by scanning the scope's partition; tagged queries rank exactly.
    exact_vector_search=True,
    full_text_ranking="bm25",
    raw_full_text_syntax="fts5",
    # PRAGMA data_version on a connection of its own moves with every other commit.
    change_counter=True,
    # One writer at a time per file (WAL), whichever process it is in.
    single_writer=True,
    # PRAGMA max_page_count.
    can_cap_size=True,
)


class SqliteBackend:
    """Async storage operations over one SQLite file."""

    features = SQLITE_FEATURES

    def __init__(self, db: Database, warnings: list[str]) -> None:
        self._db = db
        self.path = db.path
        self.location = parse_location(db.path)
        self.read_only = db.read_only
        self.warnings = warnings
        self.schema_version = 0
        self.read_only_reason: str | None = None
        """Why the file is read-only when nobody asked for it (the app's banner says it)."""

    @classmethod
    def open(cls, path: str | Path, config: StorageConfig, *,
             read_only: bool = False) -> SqliteBackend:
        """Open (creating if needed) and migrate; fall back to read-only when it must.

        Blocking (it starts threads and runs migrations): call it via ``asyncio.to_thread``.
        """
        path = Path(path).expanduser()
        warnings: list[str] = []
        forced: str | None = None
        if not read_only:
            forced = _unwritable_reason(path)
            if forced:
                warnings.append(f"{path} is opened read-only: {forced}")
                read_only = True
        existed = path.exists()
        if not read_only:
            path.parent.mkdir(parents=True, exist_ok=True)
        elif not existed:
            raise FileNotFoundError(f"{path} does not exist (and cannot be created read-only)")
        db = _database(path, config, read_only)
        try:
            db.open_writer()
        except Exception as exc:
            db.close()
            refusal = None if read_only else storage_refusal(path, exc, opening=True)
            if refusal is None:
                raise
            if not existed:  # leave no empty file behind for the next open to trip on
                _remove_empty(path)
                raise refusal from exc
            # The file is there but cannot take a writer (no room for its -wal/-shm):
            # everything in it can still be read.
            forced = ("the disk is full; free some space and open it again"
                      if isinstance(refusal, StorageFull)
                      else f"it cannot be opened for writing ({exc})")
            warnings.append(f"{path} is opened read-only: {forced}")
            read_only = True
            db = _database(path, config, read_only)
            db.open_writer()
        writer = db.writer
        assert writer is not None
        known = latest_version()
        found = writer.run_sync(current_version)
        if found > known and not read_only:
            db.close()
            warnings.append(schema_too_new_message(path, found, known))
            forced = f"schema {found} is newer than this workbench ({known})"
            read_only = True
            db = _database(path, config, read_only)
            db.open_writer()
            assert db.writer is not None
        elif not read_only:
            try:
                writer.run_sync(migrate, str(path))
            except Exception as exc:
                db.close()
                refusal = storage_refusal(path, exc)
                if refusal is None:
                    raise
                raise refusal from exc
            found = known
        elif found < known:
            warnings.append(f"{path} has schema version {found}, older than this workbench "
                            f"({known}); open it writable once to upgrade it")
        backend = cls(db, warnings)
        backend.schema_version = found
        backend.read_only_reason = forced
        db.open_readers()
        return backend

    async def close(self) -> None:
        """Close every connection."""
        self._db.close()

    def require_writable(self) -> None:
        """Raise ReadOnlyDatabase when the file is open read-only."""
        if self.read_only:
            why = self.read_only_reason or (self.warnings[0] if self.warnings else None)
            raise ReadOnlyDatabase(
                f"{self.path} is open read-only" + (f" ({why})" if why else "")
                + "; nothing was written")

    # -- messages and sessions -------------------------------------------------------------

    async def write_messages(self, messages: Sequence[events.PreparedMessage], *,
                             all_or_nothing: bool, vectors: np.ndarray | None = None,
                             vector_model: str | None = None, context_messages: int = 0,
                             context_chars: int = 400) -> list[events.WriteOutcome]:
        """Store prepared messages (and their chunks' vectors, if given) in one transaction."""
        self.require_writable()
        return await self._db.write(functools.partial(
            events.write_messages, context_messages=context_messages,
            context_chars=context_chars), messages, all_or_nothing, vectors, vector_model)

    async def session_tails(self, session_ids: Sequence[str],
                            count: int) -> dict[str, list[str]]:
        """Each session's last ``count`` messages' first-chunk text, oldest first."""
        return await self._db.read(events.session_tails, session_ids, count)

    async def read_events(self, session_id: str, limit: int | None = None,
                          after_sequence: int | None = None) -> list[dict[str, Any]]:
        """A session's events, oldest first."""
        return await self._db.read(events.read_events, session_id, limit, after_sequence)

    async def last_sequence(self, session_id: str) -> int | None:
        """The session's highest stored sequence."""
        return await self._db.read(events.last_sequence, session_id)

    async def list_sessions(self, agent_identity: str | None = None, limit: int | None = None,
                            offset: int = 0) -> list[dict[str, Any]]:
        """Sessions, most recently active first."""
        return await self._db.read(events.list_sessions, agent_identity, limit, offset)

    async def delete_session(self, session_id: str) -> bool:
        """Delete a session and everything under it."""
        self.require_writable()
        return await self._db.write(events.delete_session, session_id)

    async def read_session_state(self, session_id: str) -> dict[str, Any] | None:
        """The session's state_json."""
        return await self._db.read(events.read_session_state, session_id)

    async def read_session_snapshot(self, session_id: str) -> dict[str, Any] | None:
        """The session's row, events and state, read in one transaction (None: no session)."""
        return await self._db.read(session_snapshot.read_session_snapshot, session_id)

    async def pulse(self) -> tuple[int, int, int]:
        """(``PRAGMA data_version``, backlog, failed) read on the watch connection."""
        return await self._db.watch(vectors.pulse)

    async def table_counts(self) -> dict[str, int]:
        """Row counts per table."""
        return await self._db.read(events.table_counts)

    async def session_row_counts(self, session_id: str) -> dict[str, int]:
        """Rows one session owns in each table."""
        return await self._db.read(events.session_row_counts, session_id)

    # -- summaries, compactions, consolidation ---------------------------------------------

    async def write_summary_state(self, session_id: str, summary: dict[str, Any],
                                  expected_epoch: int, now: str) -> int | None:
        """Compare-and-swap the rolling summary; its new epoch, or None when it lost."""
        self.require_writable()
        return await self._db.write(summaries.write_summary_state, session_id, summary,
                                    expected_epoch, now)

    async def record_summary_error(self, session_id: str, error: str | None, now: str) -> None:
        """Keep (or clear) the session's last summarizer failure."""
        self.require_writable()
        await self._db.write(summaries.record_summary_error, session_id, error, now)

    async def commit_compaction(self, plan: summaries.CompactionPlan, archive: notes.NoteDraft,
                                now: str) -> dict[str, Any]:
        """Write a compaction whole, or raise SummaryConflict and write nothing."""
        self.require_writable()
        return await self._db.write(summaries.commit_compaction, plan, archive, now)

    async def archive_count(self, session_id: str) -> int:
        """Compactions a session has had."""
        return await self._db.read(summaries.archive_count, session_id)

    async def list_archives(self, session_id: str | None = None) -> list[dict[str, Any]]:
        """Compaction archives, oldest first."""
        return await self._db.read(summaries.list_archives, session_id)

    async def unwritten_archives(self) -> list[dict[str, Any]]:
        """Archives whose markdown file is still to be written."""
        return await self._db.read(summaries.unwritten_archives)

    async def record_archive_file(self, session_id: str, marker_sequence: int,
                                  file_path: str | None, error: str | None) -> None:
        """Record where an archive's markdown went (or why it could not be written)."""
        self.require_writable()
        await self._db.write(summaries.record_archive_file, session_id, marker_sequence,
                             file_path, error)

    async def session_agent(self, session_id: str) -> str | None:
        """The agent identity a session was created under (None: no such session)."""
        found = await self._db.read(events.session_agents, [session_id])
        return found.get(session_id)

    async def idle_sessions(self, idle_before: str) -> list[str]:
        """Conversations idle since before ``idle_before`` with events to consolidate."""
        return await self._db.read(summaries.idle_sessions, idle_before)

    async def read_meta(self, key: str) -> str | None:
        """A value from memory_meta."""
        return await self._db.read(summaries.read_meta, key)

    async def write_meta(self, key: str, value: str) -> None:
        """Set a value in memory_meta."""
        self.require_writable()
        await self._db.write(summaries.write_meta, key, value)

    # -- schedules (seed 001 SchedulerStore) -----------------------------------------------

    async def insert_schedule(self, row: dict[str, Any]) -> dict[str, Any]:
        """Store a new schedule."""
        self.require_writable()
        return await self._db.write(schedules.insert_schedule, row)

    async def get_schedule(self, schedule_id: str) -> dict[str, Any]:
        """One schedule; ``NotFound`` when there is none."""
        return await self._db.read(schedules.get_schedule, schedule_id)

    async def schedules_named(self, name: str, user_id: str | None) -> list[dict[str, Any]]:
        """Schedules with this name (of one user, or of all)."""
        return await self._db.read(schedules.schedules_named, name, user_id)

    async def search_schedules(self, user_id: str | None, status: str | None,
                               name: str | None, text: str | None, limit: int,
                               offset: int) -> tuple[int, list[dict[str, Any]]]:
        """(total, page) of schedules matching every filter given, newest first."""
        return await self._db.read(schedules.search_schedules, user_id, status, name, text,
                                   limit, offset)

    async def count_schedules(self, user_id: str) -> int:
        """A user's schedules."""
        return await self._db.read(schedules.count_schedules, user_id)

    async def delete_schedule(self, schedule_id: str) -> bool:
        """Delete a schedule and its runs."""
        self.require_writable()
        return await self._db.write(schedules.delete_schedule, schedule_id)

    async def update_schedule(self, schedule_id: str, changes: dict[str, Any],
                              now: str) -> dict[str, Any]:
        """Apply checked changes to a schedule."""
        self.require_writable()
        return await self._db.write(schedules.update_schedule, schedule_id, changes, now)

    async def due_schedules(self, now: str, limit: int) -> list[dict[str, Any]]:
        """Active schedules due at ``now``, soonest first."""
        return await self._db.read(schedules.due_schedules, now, limit)

    async def claim_due(self, now: str, runner: str, until: str,
                        limit: int) -> list[dict[str, Any]]:
        """Claim due schedules for one runner, in one transaction."""
        self.require_writable()
        return await self._db.write(schedules.claim_due, now, runner, until, limit)

    async def release_claim(self, schedule_id: str, runner: str) -> None:
        """Give a claim back without recording a run."""
        self.require_writable()
        await self._db.write(schedules.release_claim, schedule_id, runner)

    async def record_run_and_reschedule(self, run: dict[str, Any], next_run_at: str | None,
                                        status: str | None, status_reason: str | None,
                                        failure_limit: int, keep: int,
                                        now: str) -> dict[str, Any]:
        """Record a run and reschedule its schedule in one transaction."""
        self.require_writable()
        return await self._db.write(schedules.record_run_and_reschedule, run, next_run_at,
                                    status, status_reason, failure_limit, keep, now)

    async def prune_run_history(self, schedule_id: str, keep: int) -> int:
        """Delete all but the newest ``keep`` runs of a schedule."""
        self.require_writable()
        return await self._db.write(schedules.prune_run_history, schedule_id, keep)

    async def run_history(self, schedule_id: str, limit: int) -> list[dict[str, Any]]:
        """A schedule's runs, newest first."""
        return await self._db.read(schedules.run_history, schedule_id, limit)

    async def count_runs(self, schedule_id: str) -> int:
        """How many runs of a schedule the history holds."""
        return await self._db.read(schedules.count_runs, schedule_id)

    async def get_run(self, run_id: str) -> dict[str, Any]:
        """One run; ``NotFound`` when there is none."""
        return await self._db.read(schedules.get_run, run_id)

    # -- vectors ---------------------------------------------------------------------------

    async def vector_meta(self) -> tuple[int | None, str | None]:
        """(dimension, model) the file's vector index was made for."""
        def read(conn: Any) -> tuple[int | None, str | None]:
            return vectors.vector_dimension(conn), vectors.get_meta(conn, "embedding_model")
        return await self._db.read(read)

    async def ensure_vector_table(self, dimension: int, model: str) -> None:
        """Create the vector index or refuse a file of another dimension."""
        if self.read_only:
            return
        await self._db.write(vectors.ensure_vector_table, dimension, model)

    async def reset_vectors(self, dimension: int, model: str) -> int:
        """Drop all vectors and queue every chunk for the new model."""
        self.require_writable()
        return await self._db.write(vectors.reset_vectors, dimension, model)

    async def pending_chunks(self, limit: int,
                             after_rowid: int = 0) -> list[tuple[str, str, str, int, str, str]]:
        """Chunks waiting for vectors, in insertion order after ``after_rowid``."""
        return await self._db.read(vectors.pending_chunks, limit, after_rowid)

    async def save_vectors(self, rows: Sequence[tuple[str, str, str]], matrix: np.ndarray,
                           model: str) -> int:
        """Store a batch of vectors and mark its chunks embedded."""
        return await self._db.write(vectors.save_vectors, rows, matrix, model)

    async def record_embedding_failure(self, chunk_ids: Sequence[str], error: str,
                                       max_attempts: int) -> int:
        """Record a failed embedding attempt on each chunk."""
        return await self._db.write(vectors.record_failure, chunk_ids, error, max_attempts)

    async def embedding_counts(self) -> dict[str, Any]:
        """Backlog, failures, embedded chunks, vectors per model."""
        return await self._db.read(vectors.embedding_counts)

    async def backlog_count(self) -> int:
        """Chunks waiting for a vector."""
        return await self._db.read(vectors.backlog_count)

    # -- retrieval legs --------------------------------------------------------------------

    async def vector_search(self, scope: search.Scope, query: np.ndarray, k: int, model: str,
                            tags: Sequence[str] = ()) -> list[tuple[str, float]]:
        """Nearest chunks in a scope, tags filtered in SQL."""
        return await self._db.read(search.vector_search, scope, query, k, model, tags)

    async def fts_search(self, scope: search.Scope, terms: Sequence[str], k: int,
                         tags: Sequence[str] = (),
                         context_weight: float = 0.5) -> list[tuple[str, float]]:
        """Top chunks by bm25 holding any of the query's terms, inside the scope."""
        return await self._db.read(search.fts_search, scope, terms, k, tags, context_weight)

    async def full_text_leg(self, request: search.LegRequest,
                            ) -> tuple[list[tuple[str, float]], str | None]:
        """bm25 (or raw syntax) rows, else the LIKE fallback's, and which answered."""
        return await self._db.read(search.full_text_leg, request)

    async def run_legs(self, request: search.LegRequest, *, full_text: bool) -> search.LegRows:
        """Both legs and their chunks in one hop on one reader (a session's query)."""
        return await self._db.read(functools.partial(search.run_legs, full_text=full_text),
                                   request)

    async def fetch_chunks(self, chunk_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """Chunk rows by id."""
        return await self._db.read(search.fetch_chunks, chunk_ids)

    # -- retrieval log and judgments -------------------------------------------------------

    async def append_logs(self, entries: list[dict[str, Any]]) -> None:
        """Record queries in the retrieval log, in one transaction."""
        await self._db.write(logbook.append_logs, entries)

    async def read_log(self, limit: int = 50, caller: str | None = None,
                       scope_kind: str | None = None, scope_value: str | None = None,
                       log_id: int | None = None) -> list[dict[str, Any]]:
        """Retrieval log entries, newest first."""
        return await self._db.read(logbook.read_log, limit, caller, scope_kind, scope_value,
                                   log_id)

    async def set_judgment(self, scope_kind: str, scope_value: str, query: str, chunk_id: str,
                           grade: int, now: str) -> None:
        """Record how relevant a chunk is to a query."""
        self.require_writable()
        await self._db.write(logbook.set_judgment, scope_kind, scope_value, query, chunk_id,
                             grade, now)

    async def read_judgments(self, scope_kind: str, scope_value: str,
                             query: str) -> dict[str, int]:
        """chunk_id -> grade for a query."""
        return await self._db.read(logbook.read_judgments, scope_kind, scope_value, query)

    async def salient_events(self, session_id: str, threshold: float) -> list[dict[str, Any]]:
        """A session's events at or above an importance."""
        return await self._db.read(events.salient_events, session_id, threshold)

    # -- notes (see core/storage/notes.py) -------------------------------------------------

    async def add_note(self, draft: notes.NoteDraft, now: str) -> dict[str, Any]:
        """Create a note and index it."""
        self.require_writable()
        return await self._db.write(notes.add_note, draft, now)

    async def write_note(self, namespace: str, ref: notes.NoteRef, changes: notes.NoteChanges,
                         now: str) -> dict[str, Any]:
        """Replace a note's content and fields, indexing it again."""
        self.require_writable()
        return await self._db.write(notes.write_note, namespace, ref, changes, now)

    async def rename_note(self, namespace: str, ref: notes.NoteRef, new_name: str,
                          now: str) -> dict[str, Any]:
        """Give a note a new name."""
        self.require_writable()
        return await self._db.write(notes.rename_note, namespace, ref, new_name, now)

    async def alias_note(self, namespace: str, ref: notes.NoteRef, alias: str,
                         now: str) -> dict[str, Any]:
        """Bind an alias to a note."""
        self.require_writable()
        return await self._db.write(notes.alias_note, namespace, ref, alias, now)

    async def unalias_note(self, namespace: str, alias: str, now: str) -> dict[str, Any]:
        """Unbind an alias."""
        self.require_writable()
        return await self._db.write(notes.unalias_note, namespace, alias, now)

    async def remove_note(self, namespace: str, ref: notes.NoteRef) -> bool:
        """Delete a note and every row that indexes it."""
        self.require_writable()
        return await self._db.write(notes.remove_note, namespace, ref)

    async def edit_note(self, namespace: str, ref: notes.NoteRef, new_name: str | None,
                        aliases: Sequence[str] | None, changes: notes.NoteChanges,
                        now: str) -> dict[str, Any]:
        """Rename, re-alias and write a note in one transaction."""
        self.require_writable()
        return await self._db.write(notes.edit_note, namespace, ref, new_name, aliases,
                                    changes, now)

    async def note_namespaces(self) -> list[str]:
        """Every namespace that holds a note, in order."""
        return await self._db.read(notes.namespaces)

    async def read_note(self, namespace: str, ref: notes.NoteRef) -> dict[str, Any] | None:
        """The note a reference names in a namespace."""
        return await self._db.read(notes.read_note, namespace, ref)

    async def list_notes(self, query: note_listing.NoteQuery,
                         ) -> tuple[list[dict[str, Any]], int, bool, str | None]:
        """A page of filtered notes, the total and whether it is exact, and how the text
        filter matched."""
        return await self._db.read(note_listing.list_notes, query)

    async def note_names(self, namespace: str, category: str | None = None) -> list[str]:
        """A namespace's note names, in order."""
        return await self._db.read(notes.note_names, namespace, category)

    async def notes_by_ids(self, namespace: str,
                           note_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """The namespace's notes among these ids."""
        return await self._db.read(notes.notes_by_ids, namespace, note_ids)

    async def all_notes(self, namespace: str) -> list[dict[str, Any]]:
        """Every note of a namespace, by name."""
        return await self._db.read(notes.all_notes, namespace)

    async def import_notes(self, namespace: str, drafts: Sequence[notes.NoteDraft],
                           overwrite: bool, now: str,
                           new_id: Callable[[], str]) -> dict[str, Any]:
        """Apply imported notes in one transaction, or report the collisions."""
        self.require_writable()
        return await self._db.write(notes.import_notes, namespace, drafts, overwrite, now,
                                    new_id)

    # -- facts -----------------------------------------------------------------------------

    async def upsert_fact(self, namespace: str, category: str, key: str, value: str,
                          source: str, now: str) -> dict[str, Any]:
        """Insert or replace a fact."""
        self.require_writable()
        return await self._db.write(facts.upsert_fact, namespace, category, key, value,
                                    source, now)

    async def read_fact(self, namespace: str, category: str,
                        key: str) -> dict[str, Any] | None:
        """One fact."""
        return await self._db.read(facts.read_fact, namespace, category, key)

    async def list_facts(self, namespace: str,
                         category: str | None = None) -> list[dict[str, Any]]:
        """A namespace's facts."""
        return await self._db.read(facts.list_facts, namespace, category)

    async def delete_fact(self, namespace: str, category: str, key: str) -> bool:
        """Delete a fact."""
        self.require_writable()
        return await self._db.write(facts.delete_fact, namespace, category, key)

    # -- scratchpad ------------------------------------------------------------------------

    async def read_scratchpad(self, session_id: str) -> dict[str, Any] | None:
        """A session's scratchpad field."""
        return await self._db.read(scratchpad.read_scratchpad, session_id)

    async def write_scratchpad(self, session_id: str, agent_identity: str,
                               items: Sequence[str], now: str,
                               bound: bool = False) -> dict[str, Any]:
        """Replace a session's scratchpad (``bound``: only in a session of that agent)."""
        self.require_writable()
        return await self._db.write(scratchpad.write_scratchpad, session_id, agent_identity,
                                    items, now, bound)

    async def clear_scratchpad(self, session_id: str, now: str,
                               agent_identity: str | None = None) -> bool:
        """Remove a session's scratchpad (with ``agent_identity``: only in its sessions)."""
        self.require_writable()
        return await self._db.write(scratchpad.clear_scratchpad, session_id, now,
                                    agent_identity)

    async def scratchpad_sessions(self, limit: int) -> list[dict[str, Any]]:
        """The sessions that have a scratchpad, most recently written first."""
        return await self._db.read(scratchpad.scratchpad_sessions, limit)

    # -- diagnostics -----------------------------------------------------------------------

    async def versions(self) -> dict[str, str]:
        """SQLite and sqlite-vec versions as the connection reports them."""
        def read(conn: Any) -> dict[str, str]:
            sqlite_version, vec_version = conn.execute(
                "SELECT sqlite_version(), vec_version()").fetchone()
            return {"sqlite": sqlite_version, "sqlite_vec": vec_version}
        return await self._db.read(read)

    async def cap_size(self, extra_pages: int | None) -> int:
        """Cap the file at its current size plus ``extra_pages`` (None lifts the cap) and
        return the cap in pages. A write that needs more fails with SQLITE_FULL exactly as
        on a full disk: what disk-full drills and tests use. Lasts until the engine closes
        (or the writer's connection is renewed after it was left unable to commit)."""
        def cap(conn: Any) -> int:
            pages = conn.execute("PRAGMA page_count").fetchone()[0]
            limit = 0xFFFFFFFE if extra_pages is None else pages + max(0, extra_pages)
            return int(conn.execute(f"PRAGMA max_page_count = {int(limit)}").fetchone()[0])
        self.require_writable()
        return await self._db.write(cap)

    async def integrity_check(self) -> list[str]:
        """PRAGMA integrity_check plus the FTS index's own check; ['ok'] when sound."""
        def check(conn: Any) -> list[str]:
            problems = [row[0] for row in conn.execute("PRAGMA integrity_check").fetchall()]
            try:
                conn.execute(
                    "INSERT INTO chunks_fts(chunks_fts, rank) VALUES ('integrity-check', 1)")
            except Exception as exc:  # the driver's own DatabaseError type
                problems.append(f"chunks_fts: {exc}")
            return problems
        return await self._db.read(check) if self.read_only else await self._db.write(check)

    # -- copying a whole memory ------------------------------------------------------------

    async def copy_tables(self) -> list[str]:
        """The tables a whole memory is copied by, parents first."""
        return await self._db.read(copying.copy_tables)

    async def count_rows(self, table: str) -> int:
        """How many rows ``table`` holds."""
        return await self._db.read(copying.count_rows, table)

    async def read_rows(self, table: str, after: Sequence[Any] | None,
                        limit: int) -> copying.RowPage:
        """A page of ``table`` in key order, and the key to read the next page after."""
        return await self._db.read(copying.read_rows, table, after, limit)

    async def write_rows(self, table: str, rows: Sequence[dict[str, Any]], *,
                         mark: tuple[str, str] | None = None) -> copying.WriteResult:
        """Insert a page of ``table`` (rows already there left as they are) and set the
        memory_meta entry ``mark``, in one transaction."""
        self.require_writable()
        return await self._db.write(copying.write_rows, table, rows, mark)


def _database(path: Path, config: StorageConfig, read_only: bool) -> Database:
    return Database(path, read_only=read_only, reader_pool_size=config.reader_pool_size,
                    busy_timeout_ms=config.busy_timeout_ms,
                    synchronous=config.synchronous.upper(), mmap_mb=config.mmap_mb)


def _unwritable_reason(path: Path) -> str | None:
    """Why a file cannot be opened for writing (None when it can).

    ``os.access`` answers for root too on a read-only mount or an immutable file (root's
    permission bits say nothing there), so this holds whoever runs it.
    """
    if (problem := _filesystem_problem(path)) is not None:
        return problem
    if path.exists():
        if not os.access(path, os.W_OK):
            return "the file is not writable"
        if not os.access(path.parent, os.W_OK):
            return "its folder is not writable (SQLite needs to create the -wal file there)"
        return None
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not os.access(parent, os.W_OK):
        return f"{parent} is not writable"
    return None


def _remove_empty(path: Path) -> None:
    """Remove what a failed first open created: the file while it is still empty, and the
    -wal/-shm it began (a file nothing was committed to needs neither)."""
    for name in (path.name, f"{path.name}-wal", f"{path.name}-shm"):
        leftover = path.with_name(name)
        with contextlib.suppress(OSError):
            if leftover.stat().st_size == 0 or name != path.name:
                leftover.unlink()


def _filesystem_problem(path: Path) -> str | None:
    """A read-only or completely full file system under an existing file, else None."""
    if not path.exists() or not hasattr(os, "statvfs"):  # no statvfs on Windows
        return None
    try:
        stats = os.statvfs(path)
    except OSError:
        return None
    if stats.f_flag & os.ST_RDONLY:
        return "it is on a read-only file system"
    # Root may write into the blocks kept back for it, so it counts them as free.
    free_blocks = stats.f_bfree if os.geteuid() == 0 else stats.f_bavail
    if free_blocks == 0:
        return "the disk is full (no space left); free some space and open it again"
    return None


if TYPE_CHECKING:
    def _conforms(backend: SqliteBackend) -> Backend:
        """Fails type-checking when SqliteBackend stops implementing the Backend protocol."""
        return backend


__all__ = ["SQLITE_FEATURES", "SqliteBackend", "SchemaTooNew"]
