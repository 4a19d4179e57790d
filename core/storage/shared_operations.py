"""The operations every backend runs the same way: each is one function of a connection, in
the backend's own modules, run as a read or a write by the backend's database.

:class:`core.storage.sqlite.sqlite_backend.SqliteBackend` runs the functions of
``core/storage/sqlite/*.py`` on its writer lane and reader pool;
:class:`core.storage.pg.backend.PostgresBackend` runs those of ``core/storage/pg/*.py`` (same
names, same arguments, async) in its pool's transactions. Each backend names its modules in
``_ops`` and its database in ``_db``, and writes itself only what differs: opening, closing,
the change counter, the vector table, the backlog claim, diagnostics. The promise of each
operation is stated once, in :class:`core.storage.backend.Backend`.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from core.errors import ReadOnlyDatabase
from core.storage.namespace_legs import legs_then_fetch
from core.types import (
    Archive,
    Fact,
    MemoryRecord,
    Note,
    ScheduleDefinition,
    ScheduleRun,
    ScratchpadState,
    SessionInfo,
)

if TYPE_CHECKING:
    from core.locations import Location
    from core.storage.log_rows import LogEntry, LogRow
    from core.storage.messages import PreparedMessage, WriteOutcome
    from core.storage.operations import OperationModules
    from core.storage.rows import (
        ChunkRow,
        CommittedCompaction,
        EmbeddingCounts,
        NoteImportOutcome,
        NoteRow,
        SessionSnapshot,
        UnwrittenArchive,
    )
    from core.storage.vocabulary import (
        CompactionPlan,
        FullTextRows,
        LegRequest,
        LegRows,
        NoteChanges,
        NoteDraft,
        NoteQuery,
        NoteRef,
        RowPage,
        ScheduleChanges,
        ScheduleDraft,
        Scope,
        SummaryDraft,
        WriteResult,
    )


class SharedOperations:
    """The delegations both backends share (see the module's docstring)."""

    _db: Any
    """The backend's database: ``read(fn, *args)`` and ``write(fn, *args)``."""
    _ops: ClassVar[OperationModules]
    """The backend's operation modules, by the SQLite modules' names."""
    vector_leg_name: str
    """What answers a vector leg in the database (explanations and the retrieval log say it)."""

    location: Location
    read_only: bool
    read_only_reason: str | None
    warnings: list[str]

    def require_writable(self) -> None:
        """Raise ReadOnlyDatabase when the memory is open read-only, saying why."""
        if self.read_only:
            why = self.read_only_reason or (self.warnings[0] if self.warnings else None)
            raise ReadOnlyDatabase(
                f"{self.location} is open read-only" + (f" ({why})" if why else "")
                + "; nothing was written")

    async def write_messages(self, messages: Sequence[PreparedMessage], *,
                             all_or_nothing: bool, vectors: np.ndarray | None = None,
                             vector_model: str | None = None, context_messages: int = 0,
                             context_chars: int = 400) -> list[WriteOutcome]:
        """Store prepared messages (and their chunks' vectors, if given) in one transaction."""
        self.require_writable()
        return await self._db.write(functools.partial(
            self._ops.events.write_messages, context_messages=context_messages,
            context_chars=context_chars), messages, all_or_nothing, vectors, vector_model)

    async def session_tails(self, session_ids: Sequence[str],
                            count: int) -> dict[str, list[str]]:
        """Each session's last ``count`` messages' first-chunk text, oldest first."""
        return await self._db.read(self._ops.events.session_tails, session_ids, count)

    async def read_events(self, session_id: str, limit: int | None = None,
                          after_sequence: int | None = None) -> list[MemoryRecord]:
        """A session's events, oldest first."""
        records: list[MemoryRecord] = await self._db.read(self._ops.events.read_events,
                                                          session_id, limit, after_sequence)
        return records

    async def last_sequence(self, session_id: str) -> int | None:
        """The session's highest stored sequence."""
        return await self._db.read(self._ops.events.last_sequence, session_id)

    async def list_sessions(self, agent_identity: str | None = None, limit: int | None = None,
                            offset: int = 0) -> list[SessionInfo]:
        """Sessions, most recently active first."""
        rows = await self._db.read(self._ops.events.list_sessions, agent_identity, limit,
                                   offset)
        return [SessionInfo(**row) for row in rows]

    async def delete_session(self, session_id: str) -> bool:
        """Delete a session and everything under it."""
        self.require_writable()
        return await self._db.write(self._ops.events.delete_session, session_id)

    async def read_session_state(self, session_id: str) -> dict[str, Any] | None:
        """The session's state_json."""
        return await self._db.read(self._ops.events.read_session_state, session_id)

    async def read_session_snapshot(self, session_id: str) -> SessionSnapshot | None:
        """The session's row, events and state, read in one transaction (None: no session)."""
        return await self._db.read(self._ops.session_snapshot.read_session_snapshot, session_id)

    async def table_counts(self) -> dict[str, int]:
        """Row counts per table."""
        return await self._db.read(self._ops.events.table_counts)

    async def session_row_counts(self, session_id: str) -> dict[str, int]:
        """Rows one session owns in each table."""
        return await self._db.read(self._ops.events.session_row_counts, session_id)

    async def write_summary_state(self, session_id: str, summary: SummaryDraft,
                                  expected_epoch: int, now: str) -> int | None:
        """Compare-and-swap the rolling summary; its new epoch, or None when it lost."""
        self.require_writable()
        return await self._db.write(self._ops.summaries.write_summary_state, session_id, summary,
                                    expected_epoch, now)

    async def record_summary_error(self, session_id: str, error: str | None, now: str) -> None:
        """Keep (or clear) the session's last summarizer failure."""
        self.require_writable()
        await self._db.write(self._ops.summaries.record_summary_error, session_id, error, now)

    async def commit_compaction(self, plan: CompactionPlan, archive: NoteDraft,
                                now: str) -> CommittedCompaction:
        """Write a compaction whole, or raise SummaryConflict and write nothing."""
        self.require_writable()
        return await self._db.write(self._ops.summaries.commit_compaction, plan, archive, now)

    async def archive_count(self, session_id: str) -> int:
        """Compactions a session has had."""
        return await self._db.read(self._ops.summaries.archive_count, session_id)

    async def list_archives(self, session_id: str | None = None) -> list[Archive]:
        """Compaction archives, oldest first."""
        return await self._db.read(self._ops.summaries.list_archives, session_id)

    async def unwritten_archives(self) -> list[UnwrittenArchive]:
        """Archives whose markdown file is still to be written."""
        return await self._db.read(self._ops.summaries.unwritten_archives)

    async def record_archive_file(self, session_id: str, marker_sequence: int,
                                  file_path: str | None, error: str | None) -> None:
        """Record where an archive's markdown went (or why it could not be written)."""
        self.require_writable()
        await self._db.write(self._ops.summaries.record_archive_file, session_id, marker_sequence,
                             file_path, error)

    async def session_agent(self, session_id: str) -> str | None:
        """The agent identity a session was created under (None: no such session)."""
        found = await self._db.read(self._ops.events.session_agents, [session_id])
        return found.get(session_id)

    async def idle_sessions(self, idle_before: str) -> list[str]:
        """Conversations idle since before ``idle_before`` with events to consolidate."""
        return await self._db.read(self._ops.summaries.idle_sessions, idle_before)

    async def read_meta(self, key: str) -> str | None:
        """A value from memory_meta."""
        return await self._db.read(self._ops.summaries.read_meta, key)

    async def write_meta(self, key: str, value: str) -> None:
        """Set a value in memory_meta."""
        self.require_writable()
        await self._db.write(self._ops.summaries.write_meta, key, value)

    async def insert_schedule(self, draft: ScheduleDraft) -> ScheduleDefinition:
        """Store a new schedule."""
        self.require_writable()
        return await self._db.write(self._ops.schedules.insert_schedule, draft)

    async def get_schedule(self, schedule_id: str) -> ScheduleDefinition:
        """One schedule; ``NotFound`` when there is none."""
        return await self._db.read(self._ops.schedules.get_schedule, schedule_id)

    async def schedules_named(self, name: str, user_id: str | None) -> list[ScheduleDefinition]:
        """Schedules with this name (of one user, or of all)."""
        return await self._db.read(self._ops.schedules.schedules_named, name, user_id)

    async def search_schedules(self, user_id: str | None, status: str | None,
                               name: str | None, text: str | None, limit: int,
                               offset: int) -> tuple[int, list[ScheduleDefinition]]:
        """(total, page) of schedules matching every filter given, newest first."""
        return await self._db.read(self._ops.schedules.search_schedules, user_id, status,
                                   name, text, limit, offset)

    async def count_schedules(self, user_id: str) -> int:
        """A user's schedules."""
        return await self._db.read(self._ops.schedules.count_schedules, user_id)

    async def delete_schedule(self, schedule_id: str) -> bool:
        """Delete a schedule and its runs."""
        self.require_writable()
        return await self._db.write(self._ops.schedules.delete_schedule, schedule_id)

    async def update_schedule(self, schedule_id: str, changes: ScheduleChanges,
                              now: str) -> ScheduleDefinition:
        """Apply checked changes to a schedule."""
        self.require_writable()
        return await self._db.write(self._ops.schedules.update_schedule, schedule_id, changes, now)

    async def due_schedules(self, now: str, limit: int) -> list[ScheduleDefinition]:
        """Active schedules due at ``now``, soonest first."""
        return await self._db.read(self._ops.schedules.due_schedules, now, limit)

    async def claim_due(self, now: str, runner: str, until: str,
                        limit: int) -> list[ScheduleDefinition]:
        """Claim due schedules for one runner, in one transaction."""
        self.require_writable()
        return await self._db.write(self._ops.schedules.claim_due, now, runner, until, limit)

    async def release_claim(self, schedule_id: str, runner: str) -> None:
        """Give a claim back without recording a run."""
        self.require_writable()
        await self._db.write(self._ops.schedules.release_claim, schedule_id, runner)

    async def record_run_and_reschedule(self, run: ScheduleRun, next_run_at: str | None,
                                        status: str | None, status_reason: str | None,
                                        failure_limit: int, keep: int,
                                        now: str) -> ScheduleDefinition:
        """Record a run and reschedule its schedule in one transaction."""
        self.require_writable()
        return await self._db.write(self._ops.schedules.record_run_and_reschedule, run, next_run_at,
                                    status, status_reason, failure_limit, keep, now)

    async def prune_run_history(self, schedule_id: str, keep: int) -> int:
        """Delete all but the newest ``keep`` runs of a schedule."""
        self.require_writable()
        return await self._db.write(self._ops.schedules.prune_run_history, schedule_id, keep)

    async def run_history(self, schedule_id: str, limit: int) -> list[ScheduleRun]:
        """A schedule's runs, newest first."""
        return await self._db.read(self._ops.schedules.run_history, schedule_id, limit)

    async def count_runs(self, schedule_id: str) -> int:
        """How many runs of a schedule the history holds."""
        return await self._db.read(self._ops.schedules.count_runs, schedule_id)

    async def get_run(self, run_id: str) -> ScheduleRun:
        """One run; ``NotFound`` when there is none."""
        return await self._db.read(self._ops.schedules.get_run, run_id)

    async def reset_vectors(self, dimension: int, model: str, identity: str | None = None) -> int:
        """Drop all vectors and queue every chunk for the new model (recording its
        ``identity``)."""
        self.require_writable()
        return await self._db.write(self._ops.vectors.reset_vectors, dimension, model, identity)

    async def save_vectors(self, rows: Sequence[tuple[str, str, str]], matrix: np.ndarray,
                           model: str) -> int:
        """Store a batch of vectors and mark its chunks embedded."""
        return await self._db.write(self._ops.vectors.save_vectors, rows, matrix, model)

    async def record_embedding_failure(self, chunk_ids: Sequence[str], error: str,
                                       max_attempts: int) -> int:
        """Record a failed embedding attempt on each chunk."""
        return await self._db.write(self._ops.vectors.record_failure, chunk_ids, error,
                                    max_attempts)

    async def embedding_counts(self) -> EmbeddingCounts:
        """Backlog, failures, embedded chunks, vectors per model."""
        return await self._db.read(self._ops.vectors.embedding_counts)

    async def backlog_count(self) -> int:
        """Chunks waiting for a vector."""
        return await self._db.read(self._ops.vectors.backlog_count)

    async def vector_search(self, scope: Scope, query: np.ndarray, k: int, model: str,
                            tags: Sequence[str] = ()) -> list[tuple[str, float]]:
        """Nearest chunks in a scope, tags filtered in SQL."""
        return await self._db.read(self._ops.search.vector_search, scope, query, k, model, tags)

    async def vector_leg(self, scope: Scope, query: np.ndarray, k: int, model: str,
                         tags: Sequence[str] = ()) -> tuple[list[tuple[str, float]], str]:
        """The nearest chunks in a scope and what answered (the database's own search)."""
        return await self.vector_search(scope, query, k, model, tags), self.vector_leg_name

    async def fts_search(self, scope: Scope, terms: Sequence[str], k: int,
                         tags: Sequence[str] = (),
                         context_weight: float = 0.5) -> list[tuple[str, float]]:
        """Top chunks by bm25 holding any of the query's terms, inside the scope."""
        return await self._db.read(self._ops.search.fts_search, scope, terms, k, tags,
                                   context_weight)

    async def full_text_leg(self, request: LegRequest) -> FullTextRows:
        """bm25 (or raw syntax) rows, else the LIKE fallback's, which answered, and what
        ran."""
        return await self._db.read(self._ops.search.full_text_leg, request)

    async def run_legs(self, request: LegRequest, *, full_text: bool) -> LegRows:
        """Both legs and their chunks in one hop on one reader (a session's query)."""
        run_legs = functools.partial(self._ops.search.run_legs, full_text=full_text)
        return await self._db.read(run_legs, request)

    async def namespace_legs(self, request: LegRequest, *, full_text: bool,
                             query_vector: Awaitable[np.ndarray | None] | None,
                             ) -> LegRows:
        """Both legs at once, then the chunks they found (:func:`legs_then_fetch`)."""
        return await legs_then_fetch(self, request, full_text=full_text,
                                     query_vector=query_vector)

    async def fetch_chunks(self, chunk_ids: Sequence[str]) -> dict[str, ChunkRow]:
        """Chunk rows by id."""
        return await self._db.read(self._ops.search.fetch_chunks, chunk_ids)

    async def append_logs(self, rows: list[LogRow]) -> None:
        """Record queries in the retrieval log, in one transaction."""
        await self._db.write(self._ops.logbook.append_logs, rows)

    async def read_log(self, limit: int = 50, caller: str | None = None,
                       scope_kind: str | None = None, scope_value: str | None = None,
                       log_id: int | None = None) -> list[LogEntry]:
        """Retrieval log entries, newest first."""
        return await self._db.read(self._ops.logbook.read_log, limit, caller, scope_kind,
                                   scope_value, log_id)

    async def set_judgment(self, scope_kind: str, scope_value: str, query: str, chunk_id: str,
                           grade: int, now: str) -> None:
        """Record how relevant a chunk is to a query."""
        self.require_writable()
        await self._db.write(self._ops.logbook.set_judgment, scope_kind, scope_value, query,
                             chunk_id, grade, now)

    async def read_judgments(self, scope_kind: str, scope_value: str,
                             query: str) -> dict[str, int]:
        """chunk_id -> grade for a query."""
        return await self._db.read(self._ops.logbook.read_judgments, scope_kind, scope_value, query)

    async def read_scope_judgments(self, scope_kind: str,
                                   scope_value: str) -> dict[str, dict[str, int]]:
        """query -> {chunk_id: grade} for a scope's judged queries."""
        return await self._db.read(self._ops.logbook.read_scope_judgments, scope_kind,
                                   scope_value)

    async def salient_events(self, session_id: str, threshold: float) -> list[MemoryRecord]:
        """A session's events at or above an importance."""
        records: list[MemoryRecord] = await self._db.read(self._ops.events.salient_events,
                                                          session_id, threshold)
        return records

    async def add_note(self, draft: NoteDraft, now: str) -> Note:
        """Create a note and index it."""
        self.require_writable()
        row: NoteRow = await self._db.write(self._ops.notes.add_note, draft, now)
        return row.note()

    async def write_note(self, namespace: str, ref: NoteRef, changes: NoteChanges,
                         now: str) -> Note:
        """Replace a note's content and fields, indexing it again."""
        self.require_writable()
        row: NoteRow = await self._db.write(self._ops.notes.write_note, namespace, ref, changes,
                                            now)
        return row.note()

    async def rename_note(self, namespace: str, ref: NoteRef, new_name: str,
                          now: str) -> Note:
        """Give a note a new name."""
        self.require_writable()
        row: NoteRow = await self._db.write(self._ops.notes.rename_note, namespace, ref, new_name,
                                            now)
        return row.note()

    async def alias_note(self, namespace: str, ref: NoteRef, alias: str,
                         now: str) -> Note:
        """Bind an alias to a note."""
        self.require_writable()
        row: NoteRow = await self._db.write(self._ops.notes.alias_note, namespace, ref, alias, now)
        return row.note()

    async def unalias_note(self, namespace: str, alias: str, now: str) -> Note:
        """Unbind an alias."""
        self.require_writable()
        row: NoteRow = await self._db.write(self._ops.notes.unalias_note, namespace, alias, now)
        return row.note()

    async def remove_note(self, namespace: str, ref: NoteRef) -> bool:
        """Delete a note and every row that indexes it."""
        self.require_writable()
        return await self._db.write(self._ops.notes.remove_note, namespace, ref)

    async def edit_note(self, namespace: str, ref: NoteRef, new_name: str | None,
                        aliases: Sequence[str] | None, changes: NoteChanges,
                        now: str) -> Note:
        """Rename, re-alias and write a note in one transaction."""
        self.require_writable()
        row: NoteRow = await self._db.write(self._ops.notes.edit_note, namespace, ref, new_name,
                                            aliases, changes, now)
        return row.note()

    async def note_namespaces(self) -> list[str]:
        """Every namespace that holds a note, in order."""
        return await self._db.read(self._ops.notes.namespaces)

    async def read_note(self, namespace: str, ref: NoteRef) -> Note | None:
        """The note a reference names in a namespace."""
        row: NoteRow | None = await self._db.read(self._ops.notes.read_note, namespace, ref)
        return None if row is None else row.note()

    async def list_notes(self, query: NoteQuery,
                         ) -> tuple[list[Note], int, bool, str | None]:
        """A page of filtered notes, the total and whether it is exact, and how the text
        filter matched."""
        rows: list[NoteRow]
        rows, total, exact, matched = await self._db.read(self._ops.note_listing.list_notes,
                                                          query)
        return [row.note() for row in rows], total, exact, matched

    async def note_names(self, namespace: str, category: str | None = None) -> list[str]:
        """A namespace's note names, in order."""
        return await self._db.read(self._ops.notes.note_names, namespace, category)

    async def notes_by_ids(self, namespace: str,
                           note_ids: Sequence[str]) -> dict[str, Note]:
        """The namespace's notes among these ids."""
        rows: dict[str, NoteRow] = await self._db.read(self._ops.notes.notes_by_ids, namespace,
                                                       note_ids)
        return {note_id: row.note() for note_id, row in rows.items()}

    async def all_notes(self, namespace: str) -> list[Note]:
        """Every note of a namespace, by name."""
        rows: list[NoteRow] = await self._db.read(self._ops.notes.all_notes, namespace)
        return [row.note() for row in rows]

    async def notes_under(self, namespace: str, source: str, prefix: str, *,
                          children_only: bool = False,
                          limit: int | None = None) -> list[Note]:
        """A source's notes of a namespace under a name prefix, by note id."""
        rows: list[NoteRow] = await self._db.read(self._ops.notes.notes_under, namespace,
                                                  source, prefix, children_only, limit)
        return [row.note() for row in rows]

    async def import_notes(self, namespace: str, drafts: Sequence[NoteDraft],
                           overwrite: bool, now: str,
                           new_id: Callable[[], str]) -> NoteImportOutcome:
        """Apply imported notes in one transaction, or report the collisions."""
        self.require_writable()
        return await self._db.write(self._ops.notes.import_notes, namespace, drafts, overwrite, now,
                                    new_id)

    async def upsert_fact(self, namespace: str, category: str, key: str, value: str,
                          source: str, now: str) -> Fact:
        """Insert or replace a fact."""
        self.require_writable()
        return Fact(**await self._db.write(self._ops.facts.upsert_fact, namespace, category, key,
                                           value, source, now))

    async def read_fact(self, namespace: str, category: str,
                        key: str) -> Fact | None:
        """One fact."""
        row = await self._db.read(self._ops.facts.read_fact, namespace, category, key)
        return None if row is None else Fact(**row)

    async def list_facts(self, namespace: str,
                         category: str | None = None) -> list[Fact]:
        """A namespace's facts."""
        rows = await self._db.read(self._ops.facts.list_facts, namespace, category)
        return [Fact(**row) for row in rows]

    async def delete_fact(self, namespace: str, category: str, key: str) -> bool:
        """Delete a fact."""
        self.require_writable()
        return await self._db.write(self._ops.facts.delete_fact, namespace, category, key)

    async def read_scratchpad(self, session_id: str) -> ScratchpadState | None:
        """A session's scratchpad field."""
        return await self._db.read(self._ops.scratchpad.read_scratchpad, session_id)

    async def write_scratchpad(self, session_id: str, agent_identity: str,
                               items: Sequence[str], now: str,
                               bound: bool = False) -> ScratchpadState:
        """Replace a session's scratchpad (``bound``: only in a session of that agent)."""
        self.require_writable()
        return await self._db.write(self._ops.scratchpad.write_scratchpad, session_id,
                                    agent_identity, items, now, bound)

    async def clear_scratchpad(self, session_id: str, now: str,
                               agent_identity: str | None = None) -> bool:
        """Remove a session's scratchpad (with ``agent_identity``: only in its sessions)."""
        self.require_writable()
        return await self._db.write(self._ops.scratchpad.clear_scratchpad, session_id, now,
                                    agent_identity)

    async def scratchpad_sessions(self, limit: int) -> list[ScratchpadState]:
        """The sessions that have a scratchpad, most recently written first."""
        return await self._db.read(self._ops.scratchpad.scratchpad_sessions, limit)

    async def copy_tables(self) -> list[str]:
        """The tables a whole memory is copied by, parents first."""
        return await self._db.read(self._ops.copying.copy_tables)

    async def count_rows(self, table: str) -> int:
        """How many rows ``table`` holds."""
        return await self._db.read(self._ops.copying.count_rows, table)

    async def read_rows(self, table: str, after: Sequence[Any] | None,
                        limit: int) -> RowPage:
        """A page of ``table`` in key order, and the key to read the next page after."""
        return await self._db.read(self._ops.copying.read_rows, table, after, limit)

    async def write_rows(self, table: str, rows: Sequence[dict[str, Any]], *,
                         mark: tuple[str, str] | None = None) -> WriteResult:
        """Insert a page of ``table`` (rows already there left as they are) and set the
        memory_meta entry ``mark``, in one transaction."""
        self.require_writable()
        return await self._db.write(self._ops.copying.write_rows, table, rows, mark)
