"""A seed-000 SQLite file: its ``messages`` and ``facts`` tables.

What each row maps to:

- ``messages`` row: an event of the session of the same id, in the namespace, at the
  row's ``created_at`` (RFC 3339, normalised to the engine's UTC milliseconds). aidaemon
  has no sequences, so a session's rows are ordered by ``created_at`` then ``id`` and
  numbered 1, 2, 3 (the same file always gives the same numbers; rows added later, with
  later times, continue the count). The payload is ``role``, ``content``,
  ``tool_call_id``, ``tool_name``, ``tool_calls`` (parsed from ``tool_calls_json``) and
  ``importance`` (so aidaemon's salience carries over), plus ``metadata.imported`` =
  ``{"from": "aidaemon", "id", "created_at", "consolidated_at"}``: the row's uuid and times
  as the source wrote them, kept with the event.
- ``embedding`` / ``embedding_error``: not copied. The engine embeds the imported text
  with its own model (aidaemon's came from AllMiniLML6V2, whose vectors mean nothing to
  another model); the report says how many there were and of what size.
- ``facts`` row: a fact (category, key, value, source) of the namespace. A source that is
  empty (aidaemon's default) is stored as "agent"; the report counts them. The fact's times
  are the import's.

A row the engine refuses (an unknown role, ``tool_calls_json`` that is not JSON, an
importance outside 0-1, a ``created_at`` that is not a timestamp, a fact key over 200
characters) is skipped with the reason. A fact whose (category, key) already holds another
value is skipped, not overwritten.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core import indexing
from core.errors import InvalidInput, NotFound
from core.importers.conversations import PlannedMessage, land_messages, source_time
from core.importers.report import ImportReport, Progress
from core.importers.source import SourceDatabase, open_source

if TYPE_CHECKING:
    from core.embeddings import Embedder
    from core.engine import Engine

FORMAT = "aidaemon"
SHAPE = "an aidaemon SQLite file"
MESSAGE_COLUMNS = ("id", "session_id", "role", "content", "created_at")
OPTIONAL_COLUMNS = ("tool_call_id", "tool_name", "tool_calls_json", "importance", "embedding",
                    "embedding_error", "consolidated_at")
FACT_COLUMNS = ("category", "key", "value")


def message_payload(row: dict[str, Any]) -> dict[str, Any]:
    """A ``messages`` row as a validated Message; ``InvalidInput`` says why it cannot be."""
    payload: dict[str, Any] = {"role": row["role"], "content": row["content"]}
    for key in ("tool_call_id", "tool_name"):
        if row.get(key) is not None:
            payload[key] = row[key]
    calls = row.get("tool_calls_json")
    if calls is not None and str(calls).strip():
        try:
            payload["tool_calls"] = json.loads(calls)
        except (ValueError, TypeError, RecursionError) as exc:
            raise InvalidInput(f"tool_calls_json is not JSON ({exc})") from None
    if row.get("importance") is not None:
        payload["importance"] = row["importance"]
    imported = {"from": FORMAT, "id": row["id"], "created_at": row["created_at"]}
    if row.get("consolidated_at") is not None:
        imported["consolidated_at"] = row["consolidated_at"]
    payload["metadata"] = {"imported": imported}
    return indexing.validate_message(payload)


def plan_messages(source: SourceDatabase, report: ImportReport,
                  embedder: Embedder) -> list[PlannedMessage]:
    """Every readable message row as a planned event; unreadable ones go to the report,
    and what the source's vectors were to its remarks."""
    source.require("messages", MESSAGE_COLUMNS, SHAPE)
    present = set(source.columns("messages"))
    columns = [*MESSAGE_COLUMNS, *(c for c in OPTIONAL_COLUMNS if c in present)]
    rows = source.rows(f"SELECT {', '.join(columns)} FROM messages "
                       "ORDER BY session_id, created_at, id")
    planned: list[PlannedMessage] = []
    numbers: dict[str, int] = {}
    vectors: dict[int, int] = {}
    errors = 0
    for row in rows:
        where = f"messages row {row['id']!r}"
        _count_vector(row.get("embedding"), vectors)
        errors += row.get("embedding_error") is not None
        session_id = row["session_id"]
        if not isinstance(session_id, str) or not session_id.strip():
            report.skip("messages", where, f"session_id {session_id!r} is not a session id")
            continue
        try:
            payload = message_payload(row)
            created_at = source_time(row["created_at"])
        except InvalidInput as exc:
            report.skip("messages", where, str(exc))
            continue
        numbers[session_id] = numbers.get(session_id, 0) + 1
        planned.append(PlannedMessage(session_id, numbers[session_id], payload, where,
                                      created_at))
    if vectors or errors:
        sizes = ", ".join(f"{n:,} of {d} dimensions" for d, n in sorted(vectors.items()))
        report.remark(f"vectors: re-embedded with {embedder.name} ({embedder.dimension} "
                      f"dimensions); the source had {sizes or 'none readable'} from an "
                      "unnamed model (aidaemon uses AllMiniLML6V2)"
                      + (f", and {errors:,} rows with an embedding error" if errors else ""))
    return planned


def _count_vector(value: Any, sizes: dict[int, int]) -> None:
    """Count a seed-000 embedding (JSON text of floats) by its dimension."""
    if value is None:
        return
    try:
        vector = json.loads(value)
    except (ValueError, TypeError, RecursionError):
        return
    if isinstance(vector, list) and vector:
        sizes[len(vector)] = sizes.get(len(vector), 0) + 1


def check(path: str | Path) -> None:
    """Refuse a file that is not seed-000 shaped (``InvalidInput``), touching no memory
    file."""
    with open_source(path) as source:
        source.require("messages", MESSAGE_COLUMNS, SHAPE)
        if "facts" in source.tables:
            source.require("facts", FACT_COLUMNS, SHAPE)


async def import_facts(engine: Engine, source: SourceDatabase, report: ImportReport,
                       namespace: str) -> None:
    """Every ``facts`` row as a fact of the namespace (the table is optional)."""
    if "facts" not in source.tables:
        return
    source.require("facts", FACT_COLUMNS, SHAPE)
    report.kind("facts")
    has_source = "source" in source.columns("facts")
    rows = source.rows("SELECT rowid AS row_number, category, key, value"
                       + (", source" if has_source else "") + " FROM facts ORDER BY rowid")
    defaulted = 0
    for row in rows:
        where = f"facts row {row['row_number']} ({row['category']!r}, {row['key']!r})"
        origin = row.get("source") or ""
        if origin == "":
            origin, defaulted = "agent", defaulted + 1
        try:
            held = await engine.get_fact(row["category"], row["key"], namespace=namespace)
        except NotFound:
            held = None
        except InvalidInput as exc:
            report.skip("facts", where, str(exc))
            continue
        if held is not None:
            if held.value == row["value"]:
                report.already("facts")
            else:
                report.skip("facts", where, "the namespace already holds this fact with "
                            "another value; an import does not overwrite it")
            continue
        try:
            await engine.upsert_fact(row["category"], row["key"], row["value"], source=origin,
                                     namespace=namespace)
        except InvalidInput as exc:
            report.skip("facts", where, str(exc))
            continue
        report.added("facts")
    if defaulted:
        report.remark(f"facts: {defaulted:,} had no source; they are stored as 'agent'")


async def import_aidaemon(engine: Engine, path: str | Path, *, namespace: str | None = None,
                         progress: Progress | None = None) -> ImportReport:
    """Import a seed-000 SQLite file (see the module docstring) into ``namespace``
    (default: the engine's agent)."""
    namespace = engine.notes.namespace(namespace)
    report = ImportReport(str(path), FORMAT, str(engine.location), namespace)
    with open_source(path) as source:
        planned = plan_messages(source, report, engine.embedder)
        facts = source.scalar("SELECT count(*) FROM facts") if "facts" in source.tables else 0
        unreadable = len(report.skipped)  # rows already skipped while reading them
        total = unreadable + len(planned) + int(facts or 0)
        await land_messages(engine, planned, report, namespace=namespace, progress=progress,
                            done=unreadable, total=total)
        await import_facts(engine, source, report, namespace)
    if progress is not None:
        progress(total, total)
    return report
