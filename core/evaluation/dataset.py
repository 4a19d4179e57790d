"""The evaluation dataset: messages with stable ids and queries naming the relevant ones.

See :mod:`core.evaluation` for the JSONL format. Reading checks every line and names the
line number of the first problem, so a hand-edited file fails with a message to act on.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core import inputs
from core.errors import InvalidInput


@dataclass(frozen=True)
class DatasetMessage:
    """One message to store: its session, stable id, sequence, Message dict and, when the
    source says when it was written, its time (the engine's UTC text)."""

    session_id: str
    message_id: str
    sequence: int
    message: dict[str, Any]
    created_at: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSONL record."""
        record = {"type": "message", "session_id": self.session_id,
                  "message_id": self.message_id, "sequence": self.sequence,
                  "message": self.message}
        if self.created_at is not None:
            record["created_at"] = self.created_at
        return record


@dataclass(frozen=True)
class DatasetQuery:
    """One query over a session and the message ids that answer it."""

    query_id: str
    session_id: str
    query: str
    relevant: tuple[str, ...]
    category: str | None = None
    answer: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSONL record."""
        record: dict[str, Any] = {
            "type": "query", "query_id": self.query_id, "session_id": self.session_id,
            "query": self.query, "relevant": list(self.relevant), "category": self.category}
        if self.answer is not None:
            record["answer"] = self.answer
        return record


@dataclass
class Dataset:
    """Messages grouped by session (in sequence order) and the queries over them."""

    messages: dict[str, list[DatasetMessage]] = field(default_factory=dict)
    queries: list[DatasetQuery] = field(default_factory=list)

    @property
    def message_count(self) -> int:
        """Messages over all sessions."""
        return sum(len(ms) for ms in self.messages.values())

    def turn_ids(self, session_id: str) -> dict[int, str]:
        """The session's sequence -> message id map, for expanding results to turns."""
        return {m.sequence: m.message_id for m in self.messages.get(session_id, [])}

    def extend(self, other: Dataset) -> None:
        """Add another dataset's sessions and queries (their session ids must be new)."""
        for session_id, messages in other.messages.items():
            if session_id in self.messages:
                raise InvalidInput(f"session {session_id!r} appears twice; each conversation "
                                   "needs its own session id")
            self.messages[session_id] = list(messages)
        self.queries.extend(other.queries)

    def records(self) -> Iterable[dict[str, Any]]:
        """The JSONL records: each session's messages, then the queries."""
        for messages in self.messages.values():
            for message in messages:
                yield message.to_dict()
        for query in self.queries:
            yield query.to_dict()


def write_dataset(dataset: Dataset, path: str | os.PathLike[str]) -> None:
    """Write the dataset as JSONL, replacing the file whole (written aside, then renamed)."""
    target = Path(path)
    partial = target.with_name(target.name + ".partial")
    with partial.open("w", encoding="utf-8") as out:
        for record in dataset.records():
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
    partial.replace(target)


def read_dataset(path: str | os.PathLike[str]) -> Dataset:
    """Read and check a JSONL dataset; ``InvalidInput`` names the first bad line."""
    dataset = Dataset()
    seen_ids: dict[str, set[str]] = {}
    pending: list[tuple[int, DatasetQuery]] = []
    with Path(path).open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            where = f"{path}:{number}"
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InvalidInput(f"{where}: not JSON ({exc.msg})") from None
            if not isinstance(record, dict):
                raise InvalidInput(f"{where}: each line must be a JSON object")
            kind = record.get("type")
            if kind == "message":
                message = _message(record, where)
                ids = seen_ids.setdefault(message.session_id, set())
                session = dataset.messages.setdefault(message.session_id, [])
                if message.message_id in ids:
                    raise InvalidInput(f"{where}: message_id {message.message_id!r} repeats "
                                       f"in session {message.session_id!r}")
                if session and message.sequence <= session[-1].sequence:
                    raise InvalidInput(f"{where}: sequence {message.sequence} is not above "
                                       f"the session's previous {session[-1].sequence}")
                ids.add(message.message_id)
                session.append(message)
            elif kind == "query":
                pending.append((number, _query(record, where)))
            else:
                raise InvalidInput(f"{where}: type must be 'message' or 'query', got {kind!r}")
    # Queries may come before the messages they name, so they are checked at the end.
    for number, query in pending:
        unknown = [m for m in query.relevant if m not in seen_ids.get(query.session_id, ())]
        if unknown:
            raise InvalidInput(f"{path}:{number}: query {query.query_id!r} names messages not "
                               f"in session {query.session_id!r}: {', '.join(unknown)}")
        dataset.queries.append(query)
    return dataset


def _message(record: dict[str, Any], where: str) -> DatasetMessage:
    session_id = _string(record, "session_id", where)
    message_id = _string(record, "message_id", where)
    sequence = record.get("sequence")
    if isinstance(sequence, bool) or not isinstance(sequence, int) or sequence < 1:
        raise InvalidInput(f"{where}: sequence must be a positive integer, got {sequence!r}")
    message = record.get("message")
    if not isinstance(message, dict):
        raise InvalidInput(f"{where}: message must be a Message object")
    try:
        created_at = inputs.message_time(record.get("created_at"))
    except InvalidInput as exc:
        raise InvalidInput(f"{where}: {exc}") from None
    return DatasetMessage(session_id, message_id, sequence, message, created_at)


def _query(record: dict[str, Any], where: str) -> DatasetQuery:
    relevant = record.get("relevant")
    if (not isinstance(relevant, list) or not relevant
            or not all(isinstance(r, str) for r in relevant)):
        raise InvalidInput(f"{where}: relevant must be a non-empty list of message ids")
    category = record.get("category")
    if category is not None and not isinstance(category, str):
        raise InvalidInput(f"{where}: category must be a string or null, got {category!r}")
    answer = record.get("answer")
    return DatasetQuery(
        query_id=_string(record, "query_id", where),
        session_id=_string(record, "session_id", where),
        query=_string(record, "query", where), relevant=tuple(dict.fromkeys(relevant)),
        category=category, answer=answer if isinstance(answer, str) else None)


def _string(record: dict[str, Any], key: str, where: str) -> str:
    value = record.get(key)
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(f"{where}: {key} must be a non-empty string, got {value!r}")
    return value
