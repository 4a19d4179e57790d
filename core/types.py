"""The engine's request and result types: plain frozen dataclasses, no behaviour.

They mirror oxydra's ``MemoryRecord``, ``MemoryHybridQueryResult`` and friends, with
the additions the workbench needs (counts, explanations). Each has ``to_dict()`` so the
CLI's ``--json`` output and the MCP server serialise them the same way.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any


class _AsDict:
    def to_dict(self) -> dict[str, Any]:
        """The record as a JSON-ready dict."""
        return dataclasses.asdict(self)  # type: ignore[call-overload]


@dataclass(frozen=True)
class MemoryRecord(_AsDict):
    """One stored conversation event (oxydra ``MemoryRecord``)."""

    session_id: str
    sequence: int
    payload: dict[str, Any]
    created_at: str
    importance: float = 0.5


@dataclass(frozen=True)
class SessionInfo(_AsDict):
    """A session with its activity and sizes, for listings."""

    session_id: str
    agent_identity: str | None
    created_at: str
    updated_at: str
    event_count: int
    chunk_count: int
    last_sequence: int | None


@dataclass(frozen=True)
class StoreResult(_AsDict):
    """What one store did: chunks inserted and chunks deduplicated into existing ones."""

    session_id: str
    sequence: int
    chunks_inserted: int
    chunks_deduplicated: int


@dataclass(frozen=True)
class Rejected(_AsDict):
    """A message the bulk path refused, by its position in the input, and why."""

    index: int
    session_id: str
    sequence: int | None
    reason: str


@dataclass(frozen=True)
class BulkStoreResult(_AsDict):
    """What a bulk store did; rejected messages are listed, never skipped silently."""

    stored: int
    chunks_inserted: int
    chunks_deduplicated: int
    rejected: list[Rejected] = field(default_factory=list)


@dataclass(frozen=True)
class RestoreResult(_AsDict):
    """The messages of a session that fit a token budget, oldest first (oxydra restore)."""

    session_id: str
    messages: list[dict[str, Any]]
    sequences: list[int | None]  # None for the injected rolling summary
    tokens_used: int
    token_budget: int
    dropped: int
    token_counting: str
    summarized_through: int | None = None  # the rolling summary covers sequences up to this
    marker_sequence: int | None = None     # replay started at this compact marker
    last_sequence: int | None = None       # the session's last sequence; store() goes above it


@dataclass(frozen=True)
class ScoreParts(_AsDict):
    """What a ranked chunk's score is made of, each part named: the fusion of the legs and
    what each re-ranking boost added on top (:mod:`core.retrieval.boosts`).

    ``score`` is their sum: a person reading a score of 1.242 beside weights 0.3 / 0.7
    sees that 0.745 came from the legs and the rest from boosts, not from a wrong formula.
    """

    fused: float
    speaker: float = 0.0
    date: float = 0.0
    neighbour: float = 0.0

    @property
    def boosted(self) -> dict[str, float]:
        """The boosts that added something, by name, in the order they are applied."""
        return {name: value for name, value in (
            ("speaker", self.speaker), ("date", self.date), ("neighbour", self.neighbour))
            if value}


@dataclass(frozen=True)
class HybridQueryResult(_AsDict):
    """One ranked chunk of a hybrid query (oxydra ``MemoryHybridQueryResult``).

    ``score`` is ``parts.fused`` plus each boost in ``parts``; ``vector_score`` and
    ``fts_score`` are the normalised leg scores the fusion used (0 when the leg did not
    return the chunk: its ``*_rank`` is then None, which tells a miss from a hit that
    min-max put at 0).
    """

    chunk_id: str
    session_id: str
    text: str
    score: float
    vector_score: float
    fts_score: float
    sequence_start: int
    sequence_end: int
    metadata: dict[str, Any]
    vector_raw: float | None = None
    fts_raw: float | None = None
    vector_rank: int | None = None
    fts_rank: int | None = None
    context: str = ""  # the earlier messages it was indexed with (chunking.context_messages)
    # How ``score`` adds up; None only for a result made outside ranking (a test's stand-in).
    parts: ScoreParts | None = None


@dataclass(frozen=True)
class EmbeddingStatus(_AsDict):
    """The embedding side of a file: model, size, backlog and failures."""

    model: str
    dimension: int
    backlog: int
    failed: int
    embedded: int
    other_models: dict[str, int]
    fell_back: bool
    warning: str | None


@dataclass(frozen=True)
class Pulse(_AsDict):
    """What a front end polls to stay live: the file's change counter and the backlog."""

    data_version: int  # moves whenever any connection or process commits to the file
    backlog: int
    failed: int
    model: str
    model_loaded: bool
    fell_back: bool
    warning: str | None
    storage_error: str | None = None  # why the embedding worker's last save was refused
    model_error: str | None = None  # why a model loading in the background did not load
    vectors_off: str | None = None  # why the file's vectors are not the running model's, short


@dataclass(frozen=True)
class ContextItem(_AsDict):
    """One event in a tri-hybrid context, and which strategies chose it (aidaemon)."""

    record: MemoryRecord
    reasons: list[str]
    similarity: float | None = None


@dataclass(frozen=True)
class ContextResult(_AsDict):
    """aidaemon's ``get_context``: recency + salience + relevance, deduplicated, in order."""

    session_id: str
    items: list[ContextItem]
    counts: dict[str, int]


@dataclass(frozen=True)
class Note(_AsDict):
    """A note in a namespace (oxydra "Note Metadata", crabtalk entries, pynchy memories).

    ``name`` and every alias resolve to the note; only ``content`` and ``name`` are searched.
    ``session_id`` is the namespace's memory session, whose chunks index the note, so
    ``hybrid_query(session_id=note.session_id, ...)`` searches the namespace's notes.
    """

    note_id: str
    namespace: str
    name: str
    aliases: list[str]
    content: str
    kind: str
    category: str
    tags: list[str]
    source: str
    importance: float
    created_at: str
    updated_at: str
    schema_version: int
    session_id: str


@dataclass(frozen=True)
class NotePage(_AsDict):
    """One page of a filtered note listing, with how many notes the filters match in all.

    ``text_match`` says how a text filter matched: "fts" (words, as prefixes), "like" (seed
    002's substring fallback, used when the words matched nothing) or None (no text filter).
    ``total_exact`` is False when words found in very many notes were counted only some way
    past the page: ``total`` is then a lower bound ("at least").
    """

    notes: list[Note]
    total: int
    offset: int
    limit: int
    text_match: str | None = None
    total_exact: bool = True


@dataclass(frozen=True)
class MemoryHit(_AsDict):
    """One memory found by ``recall_memories`` (pynchy), best first.

    ``score`` is the best bm25 of the note's chunks (higher is better), or 1.0 when the LIKE
    fallback found it (``matched_by`` "like").
    """

    key: str
    content: str
    category: str
    score: float
    matched_by: str
    note_id: str


@dataclass(frozen=True)
class NoteHit(_AsDict):
    """One note found by ``memory_search`` (oxydra), best first: the note and the chunk
    of it that ranked best, with the fused and per-leg scores that chunk got and the named
    parts its score adds up from."""

    note_id: str
    name: str
    content: str
    tags: list[str]
    source: str
    updated_at: str
    chunk_id: str
    text: str
    score: float
    vector_score: float
    fts_score: float
    parts: ScoreParts


@dataclass(frozen=True)
class NameCollision(_AsDict):
    """A name an imported note claims that already names a note in the namespace."""

    name: str
    imported_note: str
    existing_note_id: str
    existing_note: str
    bound_as: str  # "name" or "alias": how the existing note holds it


@dataclass(frozen=True)
class NoteImportResult(_AsDict):
    """What an import did: notes added, notes replaced in place, notes removed by overwrite."""

    added: int
    replaced: int
    removed: list[str]
    collisions: list[NameCollision]


@dataclass(frozen=True)
class NoteExportResult(_AsDict):
    """Where a namespace's notes were written, and how many."""

    path: str
    namespace: str
    notes: int


@dataclass(frozen=True)
class Fact(_AsDict):
    """A fact (aidaemon): ``key`` is unique within its ``category`` and namespace."""

    id: int
    category: str
    key: str
    value: str
    source: str
    created_at: str
    updated_at: str
    namespace: str


@dataclass(frozen=True)
class ScratchpadState(_AsDict):
    """A session's scratchpad (oxydra "Working-Memory Scratchpad"), as last written."""

    session_id: str
    items: list[str]
    updated_at: str


@dataclass(frozen=True)
class SummaryState(_AsDict):
    """A session's rolling summary (oxydra): its text covers every message up to
    ``upper_sequence``; ``epoch`` counts the writes, for compare-and-swap."""

    session_id: str
    text: str
    upper_sequence: int
    epoch: int
    updated_at: str | None
    summarizer: str | None = None
    last_error: str | None = None


@dataclass(frozen=True)
class SummaryOutcome(_AsDict):
    """What one rolling-summary check did, and why."""

    session_id: str
    triggered: bool
    applied: bool           # False when not triggered, when it failed, or lost the race
    reason: str
    tokens_before: int
    tokens_after: int
    token_budget: int
    condensed: int = 0      # messages folded into the summary
    upper_sequence: int | None = None
    epoch: int | None = None
    error: str | None = None


@dataclass(frozen=True)
class CompactionResult(_AsDict):
    """One compaction (crabtalk): the archive note, the marker, the markdown file."""

    session_id: str
    archive_name: str
    note_id: str
    archived_at: str
    marker_sequence: int
    first_sequence: int
    last_sequence: int
    compacted: int
    file_path: str | None
    file_error: str | None = None


@dataclass(frozen=True)
class Archive(_AsDict):
    """A compaction's archive row (crabtalk): the archive note holding the folded messages,
    the compact marker, and where its markdown file went (or why it could not be written)."""

    session_id: str
    marker_sequence: int
    archive_name: str
    namespace: str
    note_id: str
    first_sequence: int
    last_sequence: int
    message_count: int
    archived_at: str
    summarizer: str
    file_path: str | None
    file_error: str | None


@dataclass(frozen=True)
class ConsolidationReport(_AsDict):
    """One consolidation pass over idle conversations (aidaemon)."""

    started_at: str
    finished_at: str
    idle_before: str
    compacted: list[CompactionResult] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)   # session -> why
    failed: dict[str, str] = field(default_factory=dict)    # session -> error
    files_repaired: int = 0


@dataclass(frozen=True)
class ScheduleDefinition(_AsDict):
    """A durable schedule (oxydra ``ScheduleDefinition``); times are engine UTC text."""

    schedule_id: str
    user_id: str
    name: str | None
    goal: str
    cadence: dict[str, str]          # {"kind", "value", "timezone"} (core.schedules.cadence)
    notification_policy: str         # "always" | "on_failure" | "never"
    status: str                      # "active" | "paused" | "completed"
    created_at: str
    updated_at: str
    next_run_at: str | None
    last_run_at: str | None
    last_run_status: str | None
    consecutive_failures: int
    channel_id: str | None
    channel_context_id: str | None
    status_reason: str | None = None  # why it is paused or completed, in words


@dataclass(frozen=True)
class ScheduleRun(_AsDict):
    """One execution of a schedule (oxydra ``ScheduleRunRecord``)."""

    run_id: str
    schedule_id: str
    started_at: str
    finished_at: str
    status: str                      # "ok" | "failed" | "timeout"
    output_summary: str              # the first 500 characters of the output
    output: str
    turn_count: int = 0
    cost: float = 0.0
    notified: bool = False


@dataclass(frozen=True)
class ScheduleSearchResult(_AsDict):
    """One page of a schedule search, with the total it was cut from."""

    total: int
    schedules: list[ScheduleDefinition]


@dataclass(frozen=True)
class SessionExportResult(_AsDict):
    """Where a session was written as JSON, and what the file holds."""

    path: str
    session_id: str
    events: int
    has_summary: bool
    scratchpad_items: int  # 0 when the session has no scratchpad
