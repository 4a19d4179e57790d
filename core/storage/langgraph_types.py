"""The rows LangGraph's checkpointer keeps, as both backends take and return them.

A thread is one of our sessions (``session_id`` is the thread id). A checkpoint and a
pending write are stored as LangGraph's own serializer made them (a type tag and bytes), so
they come back exactly; the messages of a checkpoint's ``messages`` channel are also stored
as the session's events, each once, through the ordinary message write path
(:class:`CheckpointPut`). :mod:`core.storage.sqlite.langgraph_rows` (SQLite) and
:mod:`core.storage.pg.langgraph_rows` (PostgreSQL) hold the SQL.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from core.storage.messages import PreparedMessage

FRAMEWORK = "langgraph"
"""The ``framework_items.framework`` of the rows this saver writes (and the only ones it
touches)."""


@dataclass(frozen=True)
class CheckpointRow:
    """One checkpoint of a thread's namespace, serialized by the framework."""

    session_id: str
    checkpoint_ns: str
    checkpoint_id: str
    parent_checkpoint_id: str | None
    checkpoint_type: str
    checkpoint: bytes
    metadata_json: str
    created_at: str


@dataclass(frozen=True)
class WriteRow:
    """One pending write of a checkpoint's task, serialized by the framework."""

    session_id: str
    checkpoint_ns: str
    checkpoint_id: str
    task_id: str
    task_path: str
    idx: int
    channel: str
    value_type: str
    value: bytes


@dataclass(frozen=True)
class StoredCheckpoint:
    """A checkpoint with its pending writes, read in one snapshot."""

    row: CheckpointRow
    writes: list[WriteRow]


@dataclass(frozen=True)
class CheckpointPut:
    """Everything one ``put`` stores, in one transaction.

    ``message_keys`` are the keys (:func:`core.integrations.langgraph.messages.message_key`)
    of the checkpoint's messages in channel order, None when the checkpoint has no
    ``messages`` channel (nothing about messages changes then). Those the session does not
    hold yet are asked of ``prepare`` (by position) inside the transaction, which checks
    which are held, and stored as its next events. ``removed_keys`` are the messages the
    parent checkpoint held and this one does not: their items are marked removed (their
    events kept); a key held again is unmarked.
    """

    row: CheckpointRow
    agent_identity: str
    now: str
    message_keys: Sequence[str] | None = None
    removed_keys: Sequence[str] = ()
    prepare: Callable[[Sequence[int]], list[PreparedMessage]] | None = None
    context_messages: int = 0
    context_chars: int = 400


@dataclass(frozen=True)
class CheckpointQuery:
    """Which checkpoints ``list`` returns, newest first: one thread's (or every thread's in
    the namespace when ``session_id`` is None), of one checkpoint namespace, one id, before
    an id, whose metadata holds every ``metadata_filter`` pair, at most ``limit``."""

    agent_identity: str
    session_id: str | None = None
    checkpoint_ns: str | None = None
    checkpoint_id: str | None = None
    before_id: str | None = None
    metadata_filter: Mapping[str, Any] = field(default_factory=dict)
    limit: int | None = None


@dataclass(frozen=True)
class StoredItem:
    """A framework item of a session with the event it became."""

    item_key: str
    sequence: int
    removed_at: str | None
    payload_json: str
    created_at: str


def metadata_matches(metadata_json: str, wanted: Mapping[str, Any]) -> bool:
    """Whether the checkpoint's metadata holds every wanted key with an equal value (as
    LangGraph's in-memory saver compares them)."""
    if not wanted:
        return True
    metadata = json.loads(metadata_json)
    return all(metadata.get(key) == value for key, value in wanted.items())


def checkpoint_row(values: Sequence[Any]) -> CheckpointRow:
    """A checkpoint row from its columns in table order (a blob as bytes, whatever buffer
    the driver gave)."""
    return CheckpointRow(str(values[0]), str(values[1]), str(values[2]),
                         None if values[3] is None else str(values[3]), str(values[4]),
                         bytes(values[5]), str(values[6]), str(values[7]))


def write_row(values: Sequence[Any]) -> WriteRow:
    """A pending write row from its columns in table order."""
    return WriteRow(str(values[0]), str(values[1]), str(values[2]), str(values[3]),
                    str(values[4]), int(values[5]), str(values[6]), str(values[7]),
                    bytes(values[8]))


def metadata_text(metadata: dict[str, Any]) -> str:
    """Checkpoint metadata as stored: JSON, NUL characters dropped (PostgreSQL text holds
    none, and LangGraph's own savers drop them too)."""
    return json.dumps(metadata, ensure_ascii=False).replace("\\u0000", "")
