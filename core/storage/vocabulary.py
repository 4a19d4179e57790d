"""The values the storage contract speaks in, whatever the backend.

:class:`core.storage.backend.Backend` takes and returns these: a note as written
(:class:`NoteDraft`, :class:`NoteChanges`, :class:`NoteRef`), a query's scope and legs
(:class:`Scope`, :class:`LegRequest`, :class:`LegRows`, :class:`FullTextRows`), a listing
(:class:`NoteQuery`), a compaction (:class:`CompactionPlan`), a rolling summary
(:class:`SummaryDraft`), a schedule as made and as edited (:class:`ScheduleDraft`,
:class:`ScheduleChanges`), a copied page (:class:`RowPage`, :class:`WriteResult`), and the
names both backends give the same things (a namespace's memory session, the tokens marking a
scope's chunks, the model identity key).
Services above storage import them from here, never from one backend's modules; the row
shapes both backends share are in :mod:`core.storage.rows`.
"""

from __future__ import annotations

import enum
import hashlib
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, Final, NamedTuple

import numpy as np

from core.inputs import shown

if TYPE_CHECKING:
    from core.storage.executed import Executed
    from core.storage.messages import PreparedChunk
    from core.storage.rows import ChunkRow


VECTOR_IDENTITY_KEY = "embedding_fingerprint"
"""The shared memory_meta key holding the identity (name, size, fingerprint) of the model
the vectors were made by, beside ``embedding_model`` and ``embedding_dimension``."""


SESSION_VECTOR_LEG = "session rows of the namespace matrix (numpy, exact)"
"""What answers a session's vector leg from the derived matrix."""


# -- notes -------------------------------------------------------------------------------------


MEMORY_PREFIX = "memory:"


def memory_session_id(namespace: str) -> str:
    """The session that holds a namespace's notes."""
    return MEMORY_PREFIX + namespace


@dataclass(frozen=True)
class NoteRef:
    """How a caller named a note: by its id, or by a name or alias."""

    note_id: str | None = None
    name: str | None = None

    def describe(self) -> str:
        """The reference in words, for messages."""
        # A reference may be any text (only names are held to a length), so it is cut.
        return f"note {self.note_id}" if self.note_id is not None else f"note {shown(self.name)}"


@dataclass(frozen=True)
class NoteDraft:
    """A new note, validated and chunked above storage."""

    note_id: str
    namespace: str
    name: str
    aliases: tuple[str, ...]
    content: str
    kind: str
    category: str
    tags: tuple[str, ...]
    source: str
    importance: float
    chunks: tuple[PreparedChunk, ...]
    schema_version: int = 1
    created_at: str | None = None  # an import keeps the exported times; None: now
    updated_at: str | None = None


@dataclass(frozen=True)
class NoteChanges:
    """What a write changes; None keeps the note's value."""

    content: str | None = None
    chunks: tuple[PreparedChunk, ...] | None = None
    kind: str | None = None
    category: str | None = None
    tags: tuple[str, ...] | None = None
    source: str | None = None
    importance: float | None = None


@dataclass(frozen=True)
class NoteQuery:
    """A listing's filters and page; every filter is applied in SQL."""

    namespace: str
    category: str | None = None
    kind: str | None = None
    tags: tuple[str, ...] = ()
    text: str | None = None
    order: str = "name"  # "name" or "updated" (most recent first)
    limit: int = 50
    offset: int = 0


# -- queries -----------------------------------------------------------------------------------


def scope_token_for(session_id: str) -> str:
    """The token indexed with a session's chunks in chunks_fts and ANDed into its queries."""
    return "s" + hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()[:24]


def agent_token_for(agent_identity: str | None) -> str:
    """The token indexed with every chunk of an agent's sessions (its namespace)."""
    return "a" + hashlib.sha256((agent_identity or "").encode("utf-8", "surrogatepass")
                                ).hexdigest()[:24]


def chunk_scope_token(session_id: str, agent_identity: str | None) -> str:
    """What a chunk's ``scope_token`` column holds: its session's token and its agent's."""
    return f"{scope_token_for(session_id)} {agent_token_for(agent_identity)}"


@dataclass(frozen=True)
class Scope:
    """What a query searches: one session, or every session of one agent identity."""

    session_id: str | None = None
    namespace: str | None = None

    def __post_init__(self) -> None:
        if (self.session_id is None) == (self.namespace is None):
            raise ValueError("a scope is a session_id or a namespace, not both or neither")

    @property
    def kind(self) -> str:
        """"session" or "namespace", as the retrieval log and judgments record it."""
        return "session" if self.session_id is not None else "namespace"

    @property
    def value(self) -> str:
        """The session id or the namespace."""
        return self.session_id if self.session_id is not None else self.namespace or ""

    @property
    def token(self) -> str:
        """The FTS token that marks this scope's chunks."""
        if self.session_id is not None:
            return scope_token_for(self.session_id)
        return agent_token_for(self.namespace)

    def describe(self) -> str:
        """The scope in words, for explanations."""
        if self.session_id is not None:
            return f"session {shown(self.session_id)}"
        return f"namespace {shown(self.namespace)}"


@dataclass(frozen=True)
class LegRequest:
    """What one query asks of the legs: which run, with what, how deep, in which scope."""

    scope: Scope
    depth: int
    tags: tuple[str, ...] = ()
    terms: tuple[str, ...] = ()  # typed query words, ORed (full-text leg)
    raw_expression: str | None = None  # FTS5 syntax as written (raw mode), instead of terms
    like_text: str | None = None  # the LIKE fallback's text when full text finds nothing
    context_weight: float = 0.5
    query_vector: np.ndarray | None = None  # None: no vector leg
    model: str = ""


@dataclass
class LegRows:
    """The legs' raw rows, the chunks they name, and what each step cost (ms)."""

    fts: list[tuple[str, float]]
    fts_fallback: str | None
    vector: list[tuple[str, float]]
    chunks: dict[str, ChunkRow]
    timings_ms: dict[str, float]
    vector_path: str | None = None  # what answered the vector leg (None: the backend's own)
    fts_ran: list[Executed] = field(default_factory=list)  # the full-text leg, as it ran


class FullTextRows(NamedTuple):
    """The full-text leg's rows, which answered (None: the database's full text, "like":
    the fallback, "derived": a derived index, equal to the database's ranking), and every
    statement it ran, in order."""

    rows: list[tuple[str, float]]
    answered: str | None
    ran: list[Executed]


def derived_answers(request: LegRequest) -> bool:
    """Whether the derived index may answer: a namespace's typed words, without tags (a
    tag filter and FTS5 syntax stay in SQL)."""
    return (request.scope.namespace is not None and not request.tags
            and request.raw_expression is None)


# -- summaries, schedules and copies -----------------------------------------------------------


@dataclass(frozen=True)
class SummaryDraft:
    """A rolling summary to write (:meth:`core.storage.backend.Backend.write_summary_state`),
    checked above storage: its text covers every message up to ``upper_sequence``; storage
    adds the epoch and the time."""

    text: str
    upper_sequence: int
    summarizer: str  # who wrote it: the summarizer's name, or "caller"

    def stored(self, epoch: int, now: str) -> dict[str, Any]:
        """The ``summary_state`` object a session's state holds for it."""
        return {"text": self.text, "upper_sequence": self.upper_sequence,
                "summarizer": self.summarizer, "epoch": epoch, "updated_at": now}


@dataclass(frozen=True)
class ScheduleDraft:
    """A new schedule, checked above storage (:mod:`core.schedules.store`); its fields are
    the schedules columns it sets (the others take their defaults)."""

    schedule_id: str
    user_id: str
    name: str | None
    goal: str
    cadence_json: str  # core.schedules.cadence.Cadence.to_json()
    notification_policy: str
    status: str
    created_at: str
    updated_at: str
    next_run_at: str | None
    consecutive_failures: int
    channel_id: str | None
    channel_context_id: str | None

    def columns(self) -> dict[str, Any]:
        """The row to insert: column -> value."""
        return {column.name: getattr(self, column.name) for column in fields(self)}


class Keep(enum.Enum):
    """The type of :data:`KEEP`."""

    KEEP = "keep"


KEEP: Final = Keep.KEEP
"""A change that leaves a column as it is (where None is a value the column may take)."""


@dataclass(frozen=True)
class ScheduleChanges:
    """What an edit changes of a schedule, checked above storage; its fields are the
    editable schedules columns, and one left at ``KEEP`` keeps its stored value (``updated_at``
    is always set)."""

    name: str | None | Keep = KEEP
    goal: str | Keep = KEEP
    cadence_json: str | Keep = KEEP
    notification_policy: str | Keep = KEEP
    status: str | Keep = KEEP
    status_reason: str | None | Keep = KEEP
    next_run_at: str | None | Keep = KEEP
    consecutive_failures: int | Keep = KEEP
    channel_id: str | None | Keep = KEEP
    channel_context_id: str | None | Keep = KEEP

    def columns(self) -> dict[str, Any]:
        """The columns to set: column -> value, those left at ``KEEP`` aside."""
        return {column.name: value for column in fields(self)
                if (value := getattr(self, column.name)) is not KEEP}


@dataclass(frozen=True)
class CompactionPlan:
    """What a compaction read and summarised; committed only if the session still matches."""

    session_id: str
    expected_epoch: int
    expected_last: int       # the session's last sequence when it was read
    first_sequence: int      # the folded prefix: first_sequence..expected_last
    message_count: int
    summarizer: str
    marker: dict[str, Any]   # the marker event's payload, without the sequence


@dataclass
class RowPage:
    """A page of rows and the key to read the next page after (None: the table is done).

    A page may hold fewer rows than asked, even none, before the table is done (a page of
    chunks of which none has a vector)."""

    rows: list[dict[str, Any]]
    after: list[Any] | None


@dataclass
class WriteResult:
    """What a page's write did: rows stored now, rows already there, and rows refused with
    the reason (the destination cannot hold them as they are)."""

    written: int = 0
    present: int = 0
    refused: list[tuple[list[Any], str]] = field(default_factory=list)
