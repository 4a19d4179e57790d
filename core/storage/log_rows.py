"""A retrieval log entry as both backends store it, its JSON encoded when the query is logged,
and as both read it back (:class:`LogEntry`).

Encoding at log time costs each query ~20 µs on the thread that ran it, where encoding a
batch at write time held the GIL on the writer thread for milliseconds while the next query's
reader waited for it.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple


class LogRow(NamedTuple):
    """One ``retrieval_log`` row, in its columns' order (``log_id`` aside)."""

    created_at: str
    caller: str
    scope_kind: str
    scope_value: str
    query: str
    params_json: str
    results_json: str
    timings_json: str


def log_row(entry: dict[str, Any]) -> LogRow:
    """The row of an entry with ``created_at``, ``caller``, ``scope_kind``, ``scope_value``,
    ``query``, and ``params``, ``results``, ``timings_ms`` to encode as JSON."""
    return LogRow(entry["created_at"], entry["caller"], entry["scope_kind"],
                  entry["scope_value"], entry["query"], json.dumps(entry["params"]),
                  json.dumps(entry["results"]), json.dumps(entry["timings_ms"]))


@dataclass(frozen=True)
class LogEntry:
    """One ``retrieval_log`` row as read back, its JSON decoded."""

    log_id: int
    created_at: str
    caller: str
    scope_kind: str
    scope_value: str
    query: str
    params: dict[str, Any]
    results: list[Any]
    timings_ms: dict[str, float]

    def to_dict(self) -> dict[str, Any]:
        """The entry as a JSON-ready dict, keys in field order."""
        return dataclasses.asdict(self)


def log_entry(row: Sequence[Any]) -> LogEntry:
    """A row read as (log_id, created_at, caller, scope_kind, scope_value, query,
    params_json, results_json, timings_json)."""
    (log_id, created_at, caller, scope_kind, scope_value, query, params_json, results_json,
     timings_json) = row
    return LogEntry(log_id, created_at, caller, scope_kind, scope_value, query,
                    json.loads(params_json), json.loads(results_json), json.loads(timings_json))
