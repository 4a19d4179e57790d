"""The row shapes and checks both backends share: what a note, an archive, a schedule, an
Agents SDK item and a copied table look like as rows, what indexing a note writes, the
migration files' naming, and the checks of a stored message that run the same on either.

Each backend's modules (``core/storage/sqlite/``, ``core/storage/pg/``) read and write these
shapes in their own SQL; nothing here touches a connection.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, fields
from importlib import resources
from typing import Any, NamedTuple

from core import indexing
from core.errors import InvalidInput
from core.indexing import CONTEXT_SEPARATOR
from core.storage.messages import PreparedChunk, chunk_id_for
from core.storage.vocabulary import MEMORY_PREFIX, NoteDraft, SummaryDraft, chunk_scope_token
from core.types import (
    Archive,
    MemoryRecord,
    NameCollision,
    Note,
    ScheduleDefinition,
    ScheduleRun,
    ScratchpadState,
)

# -- notes -------------------------------------------------------------------------------------


NOTE_COLUMNS = ("note_id", "namespace", "session_id", "name", "content", "kind", "category",
                "tags_json", "source", "importance", "event_sequence", "created_at",
                "updated_at", "schema_version")


@dataclass(frozen=True)
class NoteRow:
    """A stored note as either backend reads it: the engine's :class:`~core.types.Note` and
    the sequence of the event that indexes it (what rewriting or removing the note deletes).
    The fields follow ``NOTE_COLUMNS``, tags decoded, then the aliases, sorted."""

    note_id: str
    namespace: str
    session_id: str
    name: str
    content: str
    kind: str
    category: str
    tags: list[str]
    source: str
    importance: float
    event_sequence: int | None
    created_at: str
    updated_at: str
    schema_version: int
    aliases: list[str]

    def note(self) -> Note:
        """The note as the engine offers it."""
        return Note(note_id=self.note_id, namespace=self.namespace, name=self.name,
                    aliases=self.aliases, content=self.content, kind=self.kind,
                    category=self.category, tags=self.tags, source=self.source,
                    importance=self.importance, created_at=self.created_at,
                    updated_at=self.updated_at, schema_version=self.schema_version,
                    session_id=self.session_id)

    def values(self) -> tuple[Any, ...]:
        """The note's ``notes`` row, in ``NOTE_COLUMNS`` order (tags as JSON)."""
        return (self.note_id, self.namespace, self.session_id, self.name, self.content,
                self.kind, self.category, json.dumps(self.tags, ensure_ascii=False),
                self.source, self.importance, self.event_sequence, self.created_at,
                self.updated_at, self.schema_version)


def stored_notes(rows: Sequence[Sequence[Any]],
                 alias_rows: Iterable[Sequence[Any]]) -> list[NoteRow]:
    """Note rows (``NOTE_COLUMNS``) with their tags and their aliases, sorted, from
    ``alias_rows`` of (note_id, alias) (either backend's)."""
    aliases: dict[str, list[str]] = {}
    for note_id, name in alias_rows:
        aliases.setdefault(note_id, []).append(name)
    return [NoteRow(note_id, namespace, session_id, name, content, kind, category,
                    json.loads(tags_json), source, importance, event_sequence, created_at,
                    updated_at, schema_version, sorted(aliases.get(note_id, [])))
            for (note_id, namespace, session_id, name, content, kind, category, tags_json,
                 source, importance, event_sequence, created_at, updated_at,
                 schema_version) in rows]


@dataclass(frozen=True)
class NoteImportOutcome:
    """What an import's one transaction did: applied or not (names already bound, without
    overwrite), the collisions it met, notes added, replaced in place, and removed (by
    name)."""

    applied: bool
    collisions: list[NameCollision]
    added: int = 0
    replaced: int = 0
    removed: list[str] = field(default_factory=list)


def import_collisions(claimed: dict[str, NoteDraft],
                      bound: dict[str, tuple[str, bool, str]]) -> list[NameCollision]:
    """The names drafts claim (``claimed``: name -> draft) that are already bound (``bound``:
    name -> (note_id, is_alias, that note's name)), by imported note, then name."""
    collisions = [NameCollision(name=name, imported_note=claimed[name].name,
                                existing_note_id=note_id, existing_note=holder,
                                bound_as="alias" if is_alias else "name")
                  for name, (note_id, is_alias, holder) in bound.items()]
    collisions.sort(key=lambda c: (c.imported_note, c.name))
    return collisions


def name_range(prefix: str) -> tuple[str, str] | None:
    """The (low, high) bounds of the names starting with ``prefix`` (ending in ``/``), as an
    index range in binary order; None for the empty prefix (every name)."""
    if not prefix:
        return None
    return prefix, prefix[:-1] + chr(ord(prefix[-1]) + 1)


def names_of(namespace: str, note_id: str, name: str,
             aliases: Sequence[str]) -> list[tuple[str, str, str, int]]:
    """The note_names rows of a note: its name (is_alias 0) and each alias (1)."""
    return [(namespace, name, note_id, 0), *[(namespace, a, note_id, 1) for a in aliases]]


def new_row(draft: NoteDraft, note_id: str, session_id: str, now: str) -> NoteRow:
    """A new note's row as a backend reads it back (:func:`stored_notes`)."""
    return NoteRow(note_id=note_id, namespace=draft.namespace, session_id=session_id,
                   name=draft.name, content=draft.content, kind=draft.kind,
                   category=draft.category, tags=list(draft.tags), source=draft.source,
                   importance=draft.importance, event_sequence=None,
                   created_at=draft.created_at or now, updated_at=draft.updated_at or now,
                   schema_version=draft.schema_version, aliases=list(draft.aliases))


def note_chunk_id(note_id: str, name: str, content_hash: str) -> str:
    """A note chunk's id: fixed by its note, its context (the name) and its text."""
    digest = hashlib.sha256(f"{note_id}\x00{name}\x00{content_hash}".encode()).hexdigest()
    return f"chk-{digest[:32]}"


def note_rows(note: NoteRow, chunks: Iterable[PreparedChunk], sequence: int,
              now: str) -> tuple[tuple[Any, ...], str, str, list[tuple[str, PreparedChunk]]]:
    """What indexing one note writes, whatever the backend: its event row (session_id,
    sequence, payload_json, created_at, importance, role), its chunks' metadata JSON and
    scope token, and each distinct chunk with its id (a paragraph repeated inside one note
    is indexed once)."""
    note_id, session_id, name = note.note_id, note.session_id, note.name
    payload = {"role": "system", "content": note.content,
               "metadata": {"note_id": note_id, "name": name, "kind": note.kind,
                            "category": note.category, "tags": note.tags}}
    event = (session_id, sequence, json.dumps(payload, ensure_ascii=False), now,
             note.importance, note_id)
    metadata = json.dumps({
        "note_id": note_id, "name": name, "kind": note.kind,
        "category": note.category, "tags": note.tags, "source": note.source,
        "importance": note.importance, "created_at": note.created_at,
        "updated_at": note.updated_at, "schema_version": note.schema_version,
        "sequence": sequence,
    }, ensure_ascii=False)
    distinct: dict[str, PreparedChunk] = {}
    for chunk in chunks:
        distinct.setdefault(chunk.content_hash, chunk)
    return (event, metadata, chunk_scope_token(session_id, note.namespace),
            [(note_chunk_id(note_id, name, h), chunk) for h, chunk in distinct.items()])


# -- chunks and queries ------------------------------------------------------------------------


class ChunkRow(NamedTuple):
    """A chunk as a query reads it (:meth:`core.storage.backend.Backend.fetch_chunks`, the
    candidates of the search legs): what ranking, its boosts and a result need.

    Metadata stays JSON and the context keeps its separators until a result needs them
    (:meth:`metadata`, :meth:`context`): a query reads ~100 candidates and shows ten. A
    named tuple, since a query builds hundreds: as cheap to make as the dict it replaces.
    """

    chunk_id: str
    session_id: str
    text: str
    sequence_start: int
    sequence_end: int
    metadata_json: str | None
    context_text: str
    # The time of the chunk's first message, which the date boost reads when the message's
    # metadata names no date (core/retrieval/dates.py).
    created_at: str | None

    def metadata(self) -> dict[str, Any]:
        """The chunk's metadata object (the event's metadata, role, tags, speaker)."""
        metadata: dict[str, Any] = json.loads(self.metadata_json or "{}")
        return metadata

    def context(self) -> str:
        """The chunk's conversational context, one previous message per line."""
        return self.context_text.replace(CONTEXT_SEPARATOR, "\n")


def memory_record(row: Sequence[Any]) -> MemoryRecord:
    """An event read as (session_id, sequence, payload_json, created_at, importance)."""
    return MemoryRecord(session_id=row[0], sequence=int(row[1]), payload=json.loads(row[2]),
                        created_at=row[3], importance=float(row[4]))


@dataclass(frozen=True)
class SessionSnapshot:
    """A session read whole in one transaction: its row, its events (oldest first) and its
    state object (``{}`` when it has no state row)."""

    session_id: str
    agent_identity: str | None
    created_at: str
    updated_at: str
    events: list[MemoryRecord]
    state: dict[str, Any]


def like_pattern(text: str) -> str:
    """A LIKE pattern (with ``ESCAPE '\\'``) for ``text`` anywhere: its wildcards are literal.

    Callers hold ``text`` to :data:`core.inputs.MAX_QUERY_CHARS`, so the pattern stays under
    SQLite's 50,000-byte limit on one ("LIKE or GLOB pattern too complex")."""
    return "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


class EmbeddingCounts(NamedTuple):
    """How a memory's chunks stand with embedding: waiting, given up and embedded, and the
    stored vectors per model name."""

    pending: int
    failed: int
    done: int
    models: dict[str, int]


# -- summaries, schedules, agent items ---------------------------------------------------------


def scratchpad_state(session_id: str, pad: dict[str, Any]) -> ScratchpadState:
    """A session's stored scratchpad field (``{"items", "updated_at"}``) as the engine's
    type."""
    return ScratchpadState(session_id, list(pad["items"]), pad["updated_at"])


MARKER_IMPORTANCE = 0.1  # a system line (aidaemon's importance for system messages)


def epoch_of(state: dict[str, Any]) -> int:
    """The summary epoch recorded in a session state (0 before the first summary)."""
    return int((state.get("summary_state") or {}).get("epoch", 0))


def swapped_summary(state: dict[str, Any], summary: SummaryDraft, expected_epoch: int,
                    now: str) -> dict[str, Any] | None:
    """The summary state to write over ``state`` (the session's): None when its epoch is no
    longer ``expected_epoch`` (another summarizer won); ``InvalidInput`` when the summary
    claims to cover messages past the session's last."""
    if epoch_of(state) != expected_epoch:
        return None
    last = int(state.get("last_sequence") or 0)
    upper = summary.upper_sequence
    if not 0 <= upper <= last:
        raise InvalidInput(f"upper_sequence {upper} is outside the session's history "
                           f"(0 to {last})")
    return summary.stored(expected_epoch + 1, now)


@dataclass(frozen=True)
class CommittedCompaction:
    """What a committed compaction wrote: its compact marker's sequence, the archive note and
    when it was archived."""

    marker_sequence: int
    note: Note
    archived_at: str


ARCHIVE_COLUMNS = tuple(column.name for column in fields(Archive))
"""The archives table's columns, in :class:`~core.types.Archive`'s field order (so a row
read in this order is the Archive's arguments)."""


def archives(rows: Sequence[Sequence[Any]]) -> list[Archive]:
    """Archive rows (``ARCHIVE_COLUMNS``) as the engine's type."""
    return [Archive(*row) for row in rows]


class UnwrittenArchive(NamedTuple):
    """An archive whose markdown file is still to be written, with its note's content."""

    archive: Archive
    content: str


def unwritten(rows: Sequence[Sequence[Any]]) -> list[UnwrittenArchive]:
    """Archive rows (``ARCHIVE_COLUMNS``) each followed by its note's content."""
    return [UnwrittenArchive(Archive(*row[:-1]), row[-1]) for row in rows]


SCHEDULE_COLUMNS = ("schedule_id", "user_id", "name", "goal", "cadence_json",
                    "notification_policy", "status", "created_at", "updated_at", "next_run_at",
                    "last_run_at", "last_run_status", "consecutive_failures", "channel_id",
                    "channel_context_id", "status_reason")


SCHEDULE_RUN_COLUMNS = ("run_id", "schedule_id", "started_at", "finished_at", "status",
                        "output_summary", "output", "turn_count", "cost", "notified")


def schedule_definition(row: Sequence[Any]) -> ScheduleDefinition:
    """A schedules row (``SCHEDULE_COLUMNS``) as the engine's type, its cadence decoded."""
    (schedule_id, user_id, name, goal, cadence_json, notification_policy, status, created_at,
     updated_at, next_run_at, last_run_at, last_run_status, consecutive_failures, channel_id,
     channel_context_id, status_reason) = row
    return ScheduleDefinition(
        schedule_id=schedule_id, user_id=user_id, name=name, goal=goal,
        cadence=json.loads(cadence_json), notification_policy=notification_policy,
        status=status, created_at=created_at, updated_at=updated_at, next_run_at=next_run_at,
        last_run_at=last_run_at, last_run_status=last_run_status,
        consecutive_failures=consecutive_failures, channel_id=channel_id,
        channel_context_id=channel_context_id, status_reason=status_reason)


def schedule_run(row: Sequence[Any]) -> ScheduleRun:
    """A schedule_runs row (``SCHEDULE_RUN_COLUMNS``) as the engine's type."""
    (run_id, schedule_id, started_at, finished_at, status, output_summary, output, turn_count,
     cost, notified) = row
    return ScheduleRun(run_id=run_id, schedule_id=schedule_id, started_at=started_at,
                       finished_at=finished_at, status=status, output_summary=output_summary,
                       output=output, turn_count=turn_count, cost=cost,
                       notified=bool(notified))


def run_values(run: ScheduleRun) -> tuple[Any, ...]:
    """A run's schedule_runs row, in ``SCHEDULE_RUN_COLUMNS`` order (notified as 0 or 1)."""
    return (run.run_id, run.schedule_id, run.started_at, run.finished_at, run.status,
            run.output_summary, run.output, run.turn_count, run.cost, int(run.notified))


def paused_reason(failures: int, run: ScheduleRun) -> str:
    """Why a schedule paused itself after ``failures`` consecutive failed runs, the last
    ``run``."""
    return (f"paused after {failures} consecutive failures; the last "
            f"({run.status}): {(run.output_summary or '').strip()[:200]}")


AGENTS_FRAMEWORK = "openai-agents"
"""The ``framework_items.framework`` of an Agents SDK session's items."""


def item_key(sequence: int) -> str:
    """An item's key in its session: its event's sequence (unique in the session, never
    reused, since a removed item keeps its event)."""
    return str(sequence)


# -- copying -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class CopyTable:
    """One table as ``migrate`` copies it: its key (the page order) and its columns."""

    name: str
    key: tuple[str, ...]
    columns: tuple[str, ...]


COPY_TABLES: tuple[CopyTable, ...] = (
    CopyTable("memory_meta", ("key",), ("key", "value")),
    CopyTable("sessions", ("session_id",),
              ("session_id", "agent_identity", "created_at", "updated_at")),
    CopyTable("conversation_events", ("session_id", "sequence"),
              ("session_id", "sequence", "payload_json", "created_at", "role", "importance",
               "consolidated_at")),
    CopyTable("session_state", ("session_id",), ("session_id", "state_json", "updated_at")),
    CopyTable("files", ("file_id",),
              ("file_id", "session_id", "source_uri", "content_hash", "metadata_json",
               "created_at")),
    CopyTable("chunks", ("fts_rowid",),
              ("chunk_id", "session_id", "chunk_text", "content_hash", "sequence_start",
               "sequence_end", "metadata_json", "fts_rowid", "scope_token", "embedding_status",
               "embedding_error", "embedding_attempts", "created_at", "context_text",
               "note_id")),
    CopyTable("chunks_vec", ("chunk_id",),
              ("chunk_id", "agent_identity", "session_id", "embedding_blob", "embedding_model")),
    CopyTable("notes", ("note_id",),
              ("note_id", "namespace", "session_id", "name", "content", "kind", "category",
               "tags_json", "source", "importance", "event_sequence", "created_at",
               "updated_at", "schema_version")),
    CopyTable("note_names", ("namespace", "name"), ("namespace", "name", "note_id", "is_alias")),
    CopyTable("note_tags", ("note_id", "tag"), ("note_id", "namespace", "tag")),
    CopyTable("facts", ("id",),
              ("id", "category", "key", "value", "source", "created_at", "updated_at",
               "namespace")),
    CopyTable("archives", ("session_id", "marker_sequence"),
              ("session_id", "marker_sequence", "archive_name", "namespace", "note_id",
               "first_sequence", "last_sequence", "message_count", "archived_at", "summarizer",
               "file_path", "file_error")),
    CopyTable("framework_items", ("session_id", "sequence"),
              ("session_id", "sequence", "framework", "item_key", "raw_json", "removed_at")),
    CopyTable("langgraph_checkpoints", ("session_id", "checkpoint_ns", "checkpoint_id"),
              ("session_id", "checkpoint_ns", "checkpoint_id", "parent_checkpoint_id",
               "checkpoint_type", "checkpoint", "metadata_json", "created_at")),
    CopyTable("langgraph_writes", ("session_id", "checkpoint_ns", "checkpoint_id", "task_id",
                                   "idx"),
              ("session_id", "checkpoint_ns", "checkpoint_id", "task_id", "task_path", "idx",
               "channel", "value_type", "value")),
    CopyTable("schedules", ("row_order",),
              ("schedule_id", "user_id", "name", "goal", "cadence_json", "notification_policy",
               "status", "created_at", "updated_at", "next_run_at", "last_run_at",
               "last_run_status", "consecutive_failures", "channel_id", "channel_context_id",
               "claimed_by", "claim_expires_at", "status_reason", "row_order")),
    CopyTable("schedule_runs", ("run_id",),
              ("run_id", "schedule_id", "started_at", "finished_at", "status",
               "output_summary", "output", "turn_count", "cost", "notified")),
    CopyTable("retrieval_log", ("log_id",),
              ("log_id", "created_at", "caller", "scope_kind", "scope_value", "query",
               "params_json", "results_json", "timings_json")),
    CopyTable("relevance_judgments", ("judgment_id",),
              ("judgment_id", "scope_kind", "scope_value", "query", "chunk_id", "grade",
               "created_at", "updated_at")),
)


TABLES_BY_NAME = {table.name: table for table in COPY_TABLES}


def copy_table(name: str) -> CopyTable:
    """The table ``name`` as copied; ``InvalidInput`` for a table that is not copied."""
    try:
        return TABLES_BY_NAME[name]
    except KeyError:
        raise InvalidInput(f"{name!r} is not a table a memory is copied by; the tables are "
                           + ", ".join(TABLES_BY_NAME)) from None


def row_key(table: CopyTable, row: dict[str, Any]) -> list[Any]:
    """The row's key values, in the table's key order."""
    return [row[column] for column in table.key]


def encode_key(after: Sequence[Any] | None) -> str:
    """A resume key as memory_meta stores it."""
    return json.dumps(None if after is None else list(after), ensure_ascii=False)


def decode_key(value: str | None) -> list[Any] | None:
    """A resume key read back from memory_meta."""
    return None if value is None else json.loads(value)


# -- schema versions ---------------------------------------------------------------------------


_MIGRATION_FILE = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")


@dataclass(frozen=True)
class Migration:
    """One schema step: its version number, name and SQL script."""

    version: int
    name: str
    sql: str


def schema_too_new_message(path: object, found: int, known: int) -> str:
    """The one line shown when a file is newer than this code."""
    return (f"{path} has schema version {found}, newer than this workbench understands "
            f"({known}); it is opened read-only. Upgrade memory-workbench to write to it.")


def migrations_in(package: str) -> list[Migration]:
    """Every migration shipped with this code in ``package``'s ``migrations/`` folder (a
    backend's: ``core.storage.sqlite``, ``core.storage.pg``), in version order."""
    found = []
    for entry in resources.files(package).joinpath("migrations").iterdir():
        match = _MIGRATION_FILE.match(entry.name)
        if match:
            found.append(Migration(int(match.group(1)), match.group(2), entry.read_text("utf-8")))
    found.sort(key=lambda m: m.version)
    versions = [m.version for m in found]
    assert versions == list(range(1, len(found) + 1)), f"migration numbering has gaps: {versions}"
    return found


# -- checks ------------------------------------------------------------------------------------


def not_text() -> InvalidInput:
    """The refusal of a value the driver could not bind: text that is not valid UTF-8 (a
    lone surrogate), from any entry point that did not check it first. Nothing was written:
    binding fails before the statement runs, and the transaction rolls back."""
    return InvalidInput("a value given is not valid UTF-8 text (it holds a lone surrogate, "
                        "U+D800-U+DFFF); nothing was read or written")


_SHOWN = 20  # problems kept per kind, each kind still counted in full


@dataclass
class FileFindings:
    """What a file's or a database's check found (:func:`core.storage.sqlite.invariants.check_file`,
    :func:`core.storage.pg.invariants.check_database`); every count but ``pending_chunks``
    must be 0."""

    integrity: list[str] = field(default_factory=list)
    half_stored: list[str] = field(default_factory=list)
    orphans: list[str] = field(default_factory=list)
    half_stored_count: int = 0
    orphan_count: int = 0
    pending_chunks: int = 0  # the embedding backlog the file holds (work to resume, not a fault)
    events: int = 0
    chunks: int = 0

    def _half(self, problem: str) -> None:
        self.half_stored_count += 1
        if len(self.half_stored) < _SHOWN:
            self.half_stored.append(problem)

    def _orphan(self, problem: str) -> None:
        self.orphan_count += 1
        if len(self.orphans) < _SHOWN:
            self.orphans.append(problem)

    @property
    def sound(self) -> bool:
        """True when nothing is broken, half-stored or orphaned."""
        return not self.integrity and not self.half_stored_count and not self.orphan_count


def check_messages(found: FileFindings, events: dict[tuple[str, int], tuple[Any, ...]],
                   chunks: dict[str, tuple[Any, ...]], max_chars: int,
                   overlap_chars: int) -> None:
    """Half-stored messages and orphaned chunks, from the rows of ``events`` ((session,
    sequence) -> (payload_json, consolidated_at)) and ``chunks`` (chunk_id -> (session,
    start, end, full-text rowid, note_id, embedding status)); also used on PostgreSQL."""
    for (session_id, sequence), (payload_json, _) in events.items():
        if session_id.startswith(MEMORY_PREFIX):
            continue  # a note's event: _check_notes
        payload = json.loads(payload_json)
        if "compact_marker" in (payload.get("metadata") or {}):
            continue  # written without chunks: _check_compactions
        text = indexing.normalize_text(indexing.extract_indexable_text(payload))
        for piece in indexing.chunk_text(text, max_chars, overlap_chars):
            chunk = chunks.get(chunk_id_for(session_id, indexing.content_hash(piece)))
            if chunk is None or chunk[4] is not None or not chunk[1] <= sequence <= chunk[2]:
                found._half(f"message {session_id}#{sequence}: a chunk of its text is missing")
                break
    for chunk_id, (session_id, start, _end, _fts, note_id, _status) in chunks.items():
        if note_id is None and (session_id, start) not in events:
            found._orphan(f"chunk {chunk_id}: no event {session_id}#{start}")
