"""The storage contract: every operation the engine, its services and the front ends ask of a
storage backend, and the promise each one keeps.

:class:`core.storage.sqlite.sqlite_backend.SqliteBackend` implements it today (mypy checks that it
does); a PostgreSQL backend with pgvector is to implement the same protocol, and
``tests/backend/`` runs one contract suite against every backend. What may differ between
backends is declared in :class:`BackendFeatures`, never found out by branching on the class.

Promises every operation keeps unless its docstring says otherwise:

- **Writes** are each one transaction: all of it is committed or none of it. A backend
  opened read-only refuses them with ``ReadOnlyDatabase`` and writes nothing; a disk that
  fills mid-write raises ``StorageFull`` with that write rolled back whole; text the driver
  cannot store (a lone surrogate) is refused with ``InvalidInput``.
- **Concurrent writers** (another process writing the same memory) are serialised: a
  check and the write that depends on it (a sequence, a name, an epoch, a claim) happen in
  the same transaction, so no other writer can slip between them.
- **Reads** see only committed data, and never block a writer. A read of one statement is
  one snapshot; a read that takes several statements may see another process's commit
  land between them, unless its docstring says it is read in one transaction.
- Text that reaches a read and cannot be bound is refused with ``InvalidInput``.

What an operation returns is typed: the engine's own dataclasses (:mod:`core.types`: events,
sessions, notes, facts, scratchpads, schedules, runs, archives) where one exists, else the
storage layer's (:mod:`core.storage.rows`, :mod:`core.storage.log_rows`), whose fields keep
the column names of oxydra's schema and of the workbench's own tables; what a write takes
is typed the same way (:mod:`core.storage.vocabulary`). Dicts remain where the data has no
fixed shape: a session's state (the stored JSON object, free-form by design) and the rows a
whole memory is copied by (:meth:`Backend.read_rows`, :meth:`Backend.write_rows`: one
generic path for every table).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import numpy as np

    from core.locations import Location
    from core.storage.langgraph_types import (
        CheckpointPut,
        CheckpointQuery,
        StoredCheckpoint,
        StoredItem,
        WriteRow,
    )
    from core.storage.log_rows import LogEntry, LogRow
    from core.storage.messages import PreparedMessage, WriteOutcome
    from core.storage.rows import (
        ChunkRow,
        CommittedCompaction,
        EmbeddingCounts,
        NoteImportOutcome,
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


@dataclass(frozen=True)
class BackendFeatures:
    """What a backend can do where backends differ (Django's ``BaseDatabaseFeatures``).

    Code and tests that care read these flags instead of asking which backend they have.
    """

    exact_vector_search: bool
    """A vector leg returns the true nearest neighbours (a scan of the scope's vectors),
    not an approximate index's (HNSW, IVF) answer that may miss some."""
    full_text_ranking: str
    """The ranking function behind the full-text leg's scores (``"bm25"`` for FTS5's), so
    an explanation can name what a raw full-text score is."""
    raw_full_text_syntax: str
    """The query language a person's raw full-text expression is written in (``"fts5"``:
    FTS5 MATCH syntax); the playground's raw mode passes it through as written."""
    change_counter: bool
    """:meth:`Backend.pulse` carries a counter that moves whenever any connection (in any
    process) commits, so a front end can refresh live by polling it."""
    single_writer: bool
    """Writes, from every process, take turns on one lock over the whole memory; a slow
    write delays every other writer (SQLite's), rather than only those touching its rows."""
    can_cap_size: bool
    """:meth:`Backend.cap_size` can cap the store's size, so a full disk can be staged."""


class Backend(Protocol):
    """Async storage operations over one memory (a file, or a database server)."""

    location: Location
    """Where the memory is stored: a file, or a server's URL (``str()`` shows it without
    its password)."""
    read_only: bool
    """True when writes are refused (asked for, or forced: see ``read_only_reason``)."""
    read_only_reason: str | None
    """Why the memory is read-only when nobody asked for it (None otherwise)."""
    warnings: list[str]
    """What opening it found that a person should know (read-only, an old schema)."""
    schema_version: int
    """The schema version the memory holds."""
    features: BackendFeatures
    """What this backend can do where backends differ."""
    vector_leg_name: str
    """What answers a vector leg in the database itself (``"sqlite-vec"``, ``"pgvector"``)."""

    async def close(self) -> None:
        """Close every connection; the backend is not used again."""

    def require_writable(self) -> None:
        """Raise ``ReadOnlyDatabase`` (saying why) when the memory is open read-only."""

    # -- sessions and events -----------------------------------------------------------------

    async def write_messages(self, messages: Sequence[PreparedMessage], *,
                             all_or_nothing: bool, vectors: np.ndarray | None = None,
                             vector_model: str | None = None, context_messages: int = 0,
                             context_chars: int = 400) -> list[WriteOutcome]:
        """One transaction: session upserts, sequence checks, events, chunks (a content
        already in the session is deduplicated, not stored twice), full-text rows and, when
        given, vectors. A sequence not above the session's last (checked in the same
        transaction, so two writers never store the same one) is ``SequenceError``: with
        ``all_or_nothing`` it raises and nothing is written, otherwise it is reported in its
        message's outcome and the rest are stored. A bound message to another agent's
        session raises ``OutOfNamespace`` and nothing is written."""

    async def session_tails(self, session_ids: Sequence[str],
                            count: int) -> dict[str, list[str]]:
        """Each session's last ``count`` messages' first-chunk text, oldest first (an empty
        list for a session with none)."""

    async def read_events(self, session_id: str, limit: int | None = None,
                          after_sequence: int | None = None) -> list[MemoryRecord]:
        """A session's events oldest first (with ``limit``, the most recent ``limit``); one
        statement, so one snapshot."""

    async def last_sequence(self, session_id: str) -> int | None:
        """The session's highest stored sequence (None: no events)."""

    async def list_sessions(self, agent_identity: str | None = None, limit: int | None = None,
                            offset: int = 0) -> list[SessionInfo]:
        """Sessions, most recently active first, with their event and chunk counts."""

    async def delete_session(self, session_id: str) -> bool:
        """One transaction: the session and every row under it (events, chunks, full-text
        rows, vectors, state); False when there was no such session."""

    async def session_agent(self, session_id: str) -> str | None:
        """The agent identity the session was created under ('' for none; None: no such
        session)."""

    # A dict by design: the state is a JSON object the agent owns, free-form.
    async def read_session_state(self, session_id: str) -> dict[str, Any] | None:
        """The session's state object (None: no state row)."""

    async def read_session_snapshot(self, session_id: str) -> SessionSnapshot | None:
        """The session's row, events and state read in one transaction, so a concurrent
        writer's commit is seen whole or not at all (None: no such session)."""

    async def salient_events(self, session_id: str, threshold: float) -> list[MemoryRecord]:
        """A session's events whose importance is at or above ``threshold``."""

    async def session_row_counts(self, session_id: str) -> dict[str, int]:
        """Rows the session owns in each table (what forgetting it must bring to zero)."""

    # -- chunks and vectors ------------------------------------------------------------------

    async def vector_meta(self) -> tuple[int | None, str | None]:
        """(dimension, model) the vector index was made for; (None, None) before one is."""

    async def vector_identity(self) -> str | None:
        """The recorded identity of the model the vectors were made by
        (:mod:`core.embeddings.identity`), or None when none is recorded."""

    async def ensure_vector_table(self, dimension: int, model: str,
                                  identity: str | None = None) -> None:
        """Create the vector index for ``dimension``, or raise ``DimensionMismatch`` for a
        memory made for another size; records ``model`` and its ``identity`` when the memory
        has none yet (a role that may not write the shared keys records nothing); does
        nothing when read-only (reads still work)."""

    async def reset_vectors(self, dimension: int, model: str, identity: str | None = None) -> int:
        """One transaction: drop every vector, remake the index for ``dimension`` and queue
        every chunk for ``model`` (whose ``identity`` is recorded) again; how many chunks
        were queued."""

    async def pending_chunks(self, limit: int, after_rowid: int = 0,
                             ) -> list[tuple[str, str, str, int, str, str]]:
        """Chunks waiting for a vector after ``after_rowid``, in insertion order:
        (chunk_id, session_id, text, rowid, agent_identity, context). Where several workers
        may embed one memory, those handed to one are held from the others until saved,
        failed or their lease runs out, and at once again when the holder is closed or its
        process is gone."""

    async def save_vectors(self, rows: Sequence[tuple[str, str, str]], matrix: np.ndarray,
                           model: str) -> int:
        """One transaction: store a vector per (chunk_id, session_id, agent_identity) row and
        mark those chunks embedded; a chunk deleted meanwhile (by any writer) is skipped, so
        no vector outlives its chunk. How many were stored."""

    async def record_embedding_failure(self, chunk_ids: Sequence[str], error: str,
                                       max_attempts: int) -> int:
        """One transaction: count a failed attempt on each chunk, with the error; a chunk at
        ``max_attempts`` leaves the backlog as failed. How many chunks are failed now."""

    async def embedding_counts(self) -> EmbeddingCounts:
        """Backlog, failures, embedded chunks and vectors per model."""

    async def backlog_count(self) -> int:
        """Chunks waiting for a vector."""

    async def fetch_chunks(self, chunk_ids: Sequence[str]) -> dict[str, ChunkRow]:
        """Chunk rows by id (text, session, sequence range, metadata, context, time), as the
        search legs' candidates are kept; ids with no chunk are left out."""

    # -- full text and the search legs -------------------------------------------------------

    async def fts_search(self, scope: Scope, terms: Sequence[str], k: int,
                         tags: Sequence[str] = (),
                         context_weight: float = 0.5) -> list[tuple[str, float]]:
        """The top ``k`` chunks of the scope holding any of ``terms`` (and every tag), as
        (chunk_id, score), higher better; the terms are words, never query syntax."""

    async def full_text_leg(self, request: LegRequest) -> FullTextRows:
        """The full-text leg: ranked rows for the terms (or for the raw expression, whose
        syntax error is refused as ``InvalidInput``), else, when the terms find nothing and
        ``like_text`` is set, substring matches (pynchy's fallback); which answered (None:
        full text, "like": the fallback, "derived": full text ranked by a derived in-memory
        index, equal to the database's ranking); and every statement it ran, as it ran it
        (:class:`core.storage.executed.Executed`), which ``explain`` shows."""

    async def vector_search(self, scope: Scope, query: np.ndarray, k: int, model: str,
                            tags: Sequence[str] = ()) -> list[tuple[str, float]]:
        """The ``k`` chunks of the scope nearest ``query`` by cosine distance, as (chunk_id,
        distance), nearest first; tags filter before the cut, never after."""

    async def vector_leg(self, scope: Scope, query: np.ndarray, k: int, model: str,
                         tags: Sequence[str] = ()) -> tuple[list[tuple[str, float]], str]:
        """:meth:`vector_search`'s rows, and what answered them: the database's own search,
        or an index derived from it (a namespace's matrix in memory), named for
        explanations."""

    async def namespace_legs(self, request: LegRequest, *, full_text: bool,
                             query_vector: Awaitable[np.ndarray | None] | None) -> LegRows:
        """A namespace's full-text leg (when ``full_text``) and vector leg (when
        ``query_vector`` is given: the leg runs once it yields a vector; None skips it) at
        once, and the chunks they found, with what answered the vector leg in
        ``vector_path``; each leg is one snapshot, the two may straddle a commit."""

    def derived_origins(self, namespace: str) -> dict[str, str]:
        """How each index derived for ``namespace`` came to be (loaded from a saved copy and
        caught up, or built), by index name, for explanations; empty when none is held."""

    async def run_legs(self, request: LegRequest, *, full_text: bool) -> LegRows:
        """The request's vector leg, full-text leg (when ``full_text``) and the chunks they
        found, in one call; each leg is one snapshot, the two may straddle a commit."""

    # -- notes -------------------------------------------------------------------------------

    async def add_note(self, draft: NoteDraft, now: str) -> Note:
        """One transaction: the note, its names, tags, event and chunks; ``NameTaken`` when
        its name or an alias is bound in the namespace (checked in the same transaction)."""

    async def write_note(self, namespace: str, ref: NoteRef, changes: NoteChanges,
                         now: str) -> Note:
        """One transaction: replace a note's content and fields and index it again (id,
        names and created_at kept); ``NotFound`` when ``ref`` names no note there."""

    async def rename_note(self, namespace: str, ref: NoteRef, new_name: str,
                          now: str) -> Note:
        """One transaction: give the note a new name (its old one released); ``NameTaken``
        when another note holds it, ``NotFound`` when ``ref`` names no note."""

    async def alias_note(self, namespace: str, ref: NoteRef, alias: str,
                         now: str) -> Note:
        """One transaction: bind one more name to the note (aliases resolve, never add search
        tokens); ``NameTaken`` when another note holds it, ``NotFound`` for no note."""

    async def unalias_note(self, namespace: str, alias: str, now: str) -> Note:
        """One transaction: unbind an alias; ``NotFound`` when it is bound to nothing,
        ``InvalidInput`` when it is a note's own name."""

    async def remove_note(self, namespace: str, ref: NoteRef) -> bool:
        """One transaction: the note with its names, tags, event, chunks and vectors; False
        when ``ref`` names no note."""

    async def edit_note(self, namespace: str, ref: NoteRef, new_name: str | None,
                        aliases: Sequence[str] | None, changes: NoteChanges,
                        now: str) -> Note:
        """One transaction: rename, set the aliases and write the fields; any refusal
        (``NameTaken``, ``NotFound``) leaves the note exactly as it was."""

    async def import_notes(self, namespace: str, drafts: Sequence[NoteDraft],
                           overwrite: bool, now: str,
                           new_id: Callable[[], str]) -> NoteImportOutcome:
        """One transaction: apply every draft, or (names already bound, without
        ``overwrite``) apply none and report each collision."""

    async def note_namespaces(self) -> list[str]:
        """Every namespace that holds a note, in order."""

    async def read_note(self, namespace: str, ref: NoteRef) -> Note | None:
        """The note ``ref`` (id, name or alias) names in the namespace (None: none there)."""

    async def list_notes(self, query: NoteQuery,
                         ) -> tuple[list[Note], int, bool, str | None]:
        """A page of the namespace's notes matching every filter, the total and whether it
        is exact, and how the text filter matched ("fts", "like" or None)."""

    async def note_names(self, namespace: str, category: str | None = None) -> list[str]:
        """The namespace's note names (of one category), in order."""

    async def notes_by_ids(self, namespace: str,
                           note_ids: Sequence[str]) -> dict[str, Note]:
        """The namespace's notes among these ids; another namespace's ids find nothing."""

    async def all_notes(self, namespace: str) -> list[Note]:
        """Every note of the namespace, by name."""

    async def notes_under(self, namespace: str, source: str, prefix: str, *,
                          children_only: bool = False,
                          limit: int | None = None) -> list[Note]:
        """The namespace's notes written by ``source`` whose names start with ``prefix``
        (``children_only``: no ``/`` follows it in the name), by note id, at most ``limit``;
        one snapshot. A framework's store items are such notes (:mod:`core.notes.store_items`)."""

    # -- facts -------------------------------------------------------------------------------

    async def upsert_fact(self, namespace: str, category: str, key: str, value: str,
                          source: str, now: str) -> Fact:
        """One transaction: insert the fact or replace its value and source (created_at
        kept), the row as stored; of two concurrent writers of one key the later wins whole."""

    async def read_fact(self, namespace: str, category: str,
                        key: str) -> Fact | None:
        """The fact under (category, key) in the namespace (None: none)."""

    async def list_facts(self, namespace: str,
                         category: str | None = None) -> list[Fact]:
        """The namespace's facts (of one category) by category, then key."""

    async def delete_fact(self, namespace: str, category: str, key: str) -> bool:
        """Delete a fact; False when there was none."""

    # -- scratchpad --------------------------------------------------------------------------

    async def read_scratchpad(self, session_id: str) -> ScratchpadState | None:
        """The session's scratchpad field (None: it has none)."""

    async def write_scratchpad(self, session_id: str, agent_identity: str,
                               items: Sequence[str], now: str,
                               bound: bool = False) -> ScratchpadState:
        """One transaction: replace the whole scratchpad (creating the session if new); with
        ``bound``, another agent's session is ``OutOfNamespace`` and nothing is written."""

    async def clear_scratchpad(self, session_id: str, now: str,
                               agent_identity: str | None = None) -> bool:
        """One transaction: remove the scratchpad; False when there was none (or, with
        ``agent_identity``, when the session is another agent's)."""

    async def scratchpad_sessions(self, limit: int) -> list[ScratchpadState]:
        """Sessions that have a scratchpad, most recently written first, with their items."""

    # -- summaries and compaction ------------------------------------------------------------

    async def write_summary_state(self, session_id: str, summary: SummaryDraft,
                                  expected_epoch: int, now: str) -> int | None:
        """Compare-and-swap in one transaction: written with epoch ``expected_epoch + 1``
        when the stored epoch is still ``expected_epoch``, else None and nothing written
        (of two writers that read one epoch, exactly one wins); ``NotFound`` for no session,
        ``InvalidInput`` for an ``upper_sequence`` outside the history."""

    async def record_summary_error(self, session_id: str, error: str | None, now: str) -> None:
        """Keep the session's last summarizer failure (None clears it)."""

    async def commit_compaction(self, plan: CompactionPlan, archive: NoteDraft,
                                now: str) -> CommittedCompaction:
        """One transaction: archive note, compact marker, folded events, reset summary and
        archive row; ``SummaryConflict`` and nothing written when the session's last
        sequence or summary epoch moved since ``plan`` read them."""

    async def archive_count(self, session_id: str) -> int:
        """How many compactions the session has had."""

    async def list_archives(self, session_id: str | None = None) -> list[Archive]:
        """A session's compaction archives (every session's without one), oldest first."""

    async def unwritten_archives(self) -> list[UnwrittenArchive]:
        """Archives whose markdown file is still to be written, with their note's content."""

    async def record_archive_file(self, session_id: str, marker_sequence: int,
                                  file_path: str | None, error: str | None) -> None:
        """Record where an archive's markdown went, or why it could not be written."""

    async def idle_sessions(self, idle_before: str) -> list[str]:
        """Conversations last active before ``idle_before`` holding events not yet folded
        into an archive, least recently active first (note sessions never)."""

    # -- schedules ---------------------------------------------------------------------------

    async def insert_schedule(self, draft: ScheduleDraft) -> ScheduleDefinition:
        """Store a new, already checked schedule; the row as stored."""

    async def get_schedule(self, schedule_id: str) -> ScheduleDefinition:
        """One schedule by id; ``NotFound`` when there is none."""

    async def schedules_named(self, name: str, user_id: str | None) -> list[ScheduleDefinition]:
        """Schedules with this name (of one user, or of all), oldest first."""

    async def search_schedules(self, user_id: str | None, status: str | None,
                               name: str | None, text: str | None, limit: int,
                               offset: int) -> tuple[int, list[ScheduleDefinition]]:
        """(total, page) of schedules matching every filter given, newest first; ``text``
        is a case-insensitive substring of name or goal, its wildcards literal."""

    async def count_schedules(self, user_id: str) -> int:
        """How many schedules a user has."""

    async def delete_schedule(self, schedule_id: str) -> bool:
        """One transaction: the schedule and its runs; False when there was none."""

    async def update_schedule(self, schedule_id: str, changes: ScheduleChanges,
                              now: str) -> ScheduleDefinition:
        """One transaction: apply checked changes to editable columns; ``NotFound`` when
        there is no such schedule. The row as stored."""

    async def due_schedules(self, now: str, limit: int) -> list[ScheduleDefinition]:
        """Active schedules whose next run is at or before ``now``, soonest first."""

    async def claim_due(self, now: str, runner: str, until: str,
                        limit: int) -> list[ScheduleDefinition]:
        """One transaction: claim up to ``limit`` due schedules no live claim holds, for
        ``runner`` until ``until``; two runners (in any processes) never get the same one."""

    async def release_claim(self, schedule_id: str, runner: str) -> None:
        """Give back ``runner``'s claim without recording a run (another's is left alone)."""

    async def record_run_and_reschedule(self, run: ScheduleRun, next_run_at: str | None,
                                        status: str | None, status_reason: str | None,
                                        failure_limit: int, keep: int,
                                        now: str) -> ScheduleDefinition:
        """One transaction: the run row, the schedule's last run, failure count (paused with
        a reason at ``failure_limit``), next run, status and released claim, and the history
        pruned to ``keep``: a run is never recorded without its reschedule."""

    async def prune_run_history(self, schedule_id: str, keep: int) -> int:
        """Delete all but the newest ``keep`` runs of a schedule; how many went."""

    async def run_history(self, schedule_id: str, limit: int) -> list[ScheduleRun]:
        """A schedule's runs, newest first."""

    async def count_runs(self, schedule_id: str) -> int:
        """How many runs of a schedule its history holds."""

    async def get_run(self, run_id: str) -> ScheduleRun:
        """One run; ``NotFound`` when there is none."""

    # -- retrieval log and judgments ---------------------------------------------------------

    async def append_logs(self, rows: list[LogRow]) -> None:
        """Record queries in the retrieval log, in order, in one transaction (rows made by
        :func:`core.storage.log_rows.log_row`)."""

    async def read_log(self, limit: int = 50, caller: str | None = None,
                       scope_kind: str | None = None, scope_value: str | None = None,
                       log_id: int | None = None) -> list[LogEntry]:
        """Retrieval log entries, newest first, by caller, scope or id when given."""

    async def set_judgment(self, scope_kind: str, scope_value: str, query: str, chunk_id: str,
                           grade: int, now: str) -> None:
        """Record (or change) how relevant a chunk is to a query in a scope, grade 0 to 3."""

    async def read_judgments(self, scope_kind: str, scope_value: str,
                             query: str) -> dict[str, int]:
        """chunk_id -> grade for one query in one scope."""

    async def read_scope_judgments(self, scope_kind: str,
                                   scope_value: str) -> dict[str, dict[str, int]]:
        """query -> {chunk_id: grade} for every judged query of one scope."""

    # -- LangGraph checkpoints (core/integrations/langgraph) ---------------------------------
    # A thread is a session of ``agent_identity``: a write makes it when new and refuses
    # (``OutOfNamespace``) another agent's; a read finds only that namespace's threads.

    async def langgraph_put(self, put: CheckpointPut) -> list[int]:
        """One transaction: the thread's session (made when new), the checkpoint (replacing
        one of the same id), the messages of it the session does not hold yet as its next
        events (checked under the writer's lock, so of concurrent writers none stores a
        message twice) and the removal marks; the new events' sequences."""

    async def langgraph_put_writes(self, session_id: str, agent_identity: str, now: str,
                                   rows: Sequence[WriteRow], replace: bool) -> None:
        """One transaction: a task's pending writes, replacing those at the same (task,
        index) when ``replace``, else keeping the first."""

    async def langgraph_get(self, agent_identity: str, session_id: str, checkpoint_ns: str,
                            checkpoint_id: str | None) -> StoredCheckpoint | None:
        """The checkpoint (the checkpoint namespace's latest when no id) with its pending
        writes in LangGraph's order, read in one snapshot (None: no such checkpoint)."""

    async def langgraph_list(self, query: CheckpointQuery) -> list[StoredCheckpoint]:
        """The checkpoints ``query`` names, newest first, with their pending writes, read in
        one snapshot."""

    async def langgraph_delete_for_runs(self, agent_identity: str,
                                        run_ids: Sequence[str]) -> int:
        """One transaction: the namespace's checkpoints whose metadata names one of these
        runs, with their writes (events stay); how many checkpoints went."""

    async def langgraph_prune(self, agent_identity: str, session_ids: Sequence[str],
                              keep_latest: bool) -> int:
        """One transaction: these threads' checkpoints and writes, all of them or all but
        each checkpoint namespace's latest (events stay); how many checkpoints went."""

    async def langgraph_items(self, agent_identity: str, session_id: str) -> list[StoredItem]:
        """The thread's LangGraph items with their events, in sequence order."""

    async def langgraph_copy_thread(self, agent_identity: str, source_id: str, target_id: str,
                                    now: str,
                                    items: Sequence[tuple[StoredItem, PreparedMessage]],
                                    context_messages: int, context_chars: int) -> None:
        """One transaction: the source thread's checkpoints and writes under the target's id
        (those the target holds kept), and ``items`` the target does not hold as its next
        events, removal marks kept."""

    # -- OpenAI Agents SDK sessions (core/integrations/openai_agents) -----------------------
    # A session is of ``agent_identity``: a write makes it when new and refuses
    # (``OutOfNamespace``) another agent's; a read finds only that namespace's sessions.

    async def agent_items_add(self, session_id: str, agent_identity: str, now: str,
                              prepared: Sequence[PreparedMessage], raw_json: Sequence[str],
                              replace: bool, context_messages: int,
                              context_chars: int) -> list[int]:
        """One transaction, all or nothing: the session (made when new), with ``replace``
        every item it held marked removed at ``now``, then ``prepared`` as its next events,
        each with a ``framework_items`` row holding the item's ``raw_json`` (the writer
        holds the session's lock, so concurrent writers never share a sequence); the new
        events' sequences."""

    async def agent_items_get(self, agent_identity: str, session_id: str,
                              limit: int | None) -> list[str]:
        """The ``raw_json`` of the session's items not marked removed, oldest first: the
        latest ``limit`` (None or negative: all; 0: none)."""

    async def agent_items_pop(self, session_id: str, agent_identity: str,
                              now: str) -> str | None:
        """One transaction: the session's latest item not removed marked removed at ``now``
        (its event stays); its ``raw_json``, None when there is none."""

    async def agent_items_clear(self, session_id: str, agent_identity: str, now: str) -> int:
        """One transaction: every item of the session not removed marked removed at ``now``
        (the events stay); how many."""

    async def removed_sequences(self, session_id: str) -> list[int]:
        """The sequences of the session's events whose framework item (any framework's) was
        removed: what the Sessions pane marks."""

    # -- meta and maintenance ----------------------------------------------------------------

    async def read_meta(self, key: str) -> str | None:
        """A value of the memory's own key-value settings (None: unset)."""

    async def write_meta(self, key: str, value: str) -> None:
        """Set a value of the memory's own key-value settings."""

    async def pulse(self) -> tuple[int, int, int]:
        """(change counter, backlog, failed chunks): the counter moves whenever any
        connection in any process commits (see ``features.change_counter``)."""

    async def table_counts(self) -> dict[str, int]:
        """Row counts of the main tables."""

    async def versions(self) -> dict[str, str]:
        """The storage engine's component versions by name, for diagnostics."""

    async def integrity_check(self) -> list[str]:
        """The store's own consistency checks, full-text index included; ``["ok"]`` when
        sound, else one line per problem."""

    async def bulk_writes(self, importing: bool, *, large: bool = False) -> None:
        """Tune the full-text index for an import's large transactions (``importing``) or
        back for single writes; either way every write stays durable and found as before
        (SQLite: FTS5's automerge off during the import, its segments merged later).
        Called again with ``large`` once the import is long enough to keep the derived
        indexes in step as it writes (SQLite: :mod:`core.storage.sqlite.index_follower`)."""

    async def checkpoint_log(self) -> int:
        """Copy the write-ahead log into the store as far as no reader needs it, waiting for
        nobody (SQLite: a passive checkpoint; PostgreSQL: nothing, the server does it); the
        log's frames left uncopied (0: all of them). The upkeep runs it once writes pause,
        so no write pays for it."""

    async def merge_full_text(self) -> bool:
        """One bounded step of tidying the full-text index (SQLite: merging FTS5 segments,
        :mod:`core.storage.sqlite.fts_segments`); False when nothing is left to do."""

    async def cap_size(self, extra_pages: int | None) -> int:
        """Cap the store at its size plus ``extra_pages`` pages (None lifts the cap), so a
        write that needs more fails as on a full disk; the cap in pages. Only where
        ``features.can_cap_size``."""

    # -- copying a whole memory --------------------------------------------------------------

    async def copy_tables(self) -> list[str]:
        """The tables a whole memory is copied by (``workbench migrate``), parents first;
        each has the same name and columns on every backend (core/storage/rows.py)."""

    async def count_rows(self, table: str) -> int:
        """How many rows ``table`` (one of :meth:`copy_tables`) holds."""

    async def read_rows(self, table: str, after: Sequence[Any] | None,
                        limit: int) -> RowPage:
        """Up to ``limit`` rows of ``table`` whose key comes after ``after`` (None: from the
        start) in key order, as dicts of portable values (text as stored, a vector as its
        float32 bytes), and the key to read the next page after (None when done). Read in
        one snapshot."""

    # Dicts by design: one generic path copies every table (COPY_TABLES), column by column.
    async def write_rows(self, table: str, rows: Sequence[dict[str, Any]], *,
                         mark: tuple[str, str] | None = None) -> WriteResult:
        """Insert rows read by :meth:`read_rows` in one transaction, leaving rows whose key
        is already there as they are (sending a page twice stores it once), and set the
        memory_meta entry ``mark`` (key, value) in the same transaction. What the
        backend derives from a row (its full-text entry) is made with it; a row it cannot
        hold is reported in ``refused`` with the reason, never dropped silently. Ids the
        backend numbers itself continue after the largest copied. Vectors need
        :meth:`ensure_vector_table` first."""
