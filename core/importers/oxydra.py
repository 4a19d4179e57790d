"""A seed-001 SQLite/libSQL memory file: sessions, events, session state, notes.

What each source record maps to:

- ``conversation_events`` of a conversation session: an event of the session of the same
  id and sequence, in the namespace (whatever ``sessions.agent_identity`` said; the report
  names the identities it found), at the event's ``created_at`` (SQLite's
  ``CURRENT_TIMESTAMP``, UTC, normalised to the engine's RFC 3339; none: the time it is
  stored). The payload is the event's Message with ``metadata.imported = {"from":
  "oxydra", "created_at": ...}`` added, the time as the source wrote it.
- ``conversation_events`` of a ``memory:{user}`` session: a note of the namespace (oxydra
  stores each note as such an event, its ``note_id`` in the chunks' metadata). The note
  keeps its ``note-{uuid}`` (unless a note of the target has it), its tags and source,
  and its times; it is named, as ``memory_save`` names notes, by its first words and the
  id's first eight hex digits.
- ``session_state.state_json``: its ``scratchpad`` (a list of items, or ``{"items": [...]}``)
  becomes the session's scratchpad, and its ``summary_state`` (``text`` or ``summary``,
  ``upper_sequence``) the session's rolling summary. Either is skipped, not overwritten,
  when the target session has another one.
- ``chunks`` and ``chunks_vec``: not copied; they are derived. The engine chunks the
  imported messages itself and embeds them with its own model, so vectors are always right
  for the model the file is searched with (a libSQL ``F32_BLOB`` of 512 padded dimensions
  would not be, even from the same model). The report says what the source held.
- ``files``, ``schedules``: listed as skipped, each with the reason. ``schedule_runs``
  are counted in a remark.

Rows the engine refuses (a payload that is not a Message, a ``created_at`` that is not a
timestamp, a scratchpad over its limits) are skipped with the reason; importing the same
file again adds nothing.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core import indexing
from core.errors import InvalidInput, NotFound
from core.importers.conversations import (
    PlannedMessage,
    land_messages,
    session_owners,
    source_time,
)
from core.importers.notes import PlannedNote, land_notes
from core.importers.report import ImportReport, Progress
from core.importers.source import SourceDatabase, engine_time, open_source
from core.notes.fields import generated_name, is_note_id
from core.storage.vocabulary import MEMORY_PREFIX

if TYPE_CHECKING:
    from core.engine import Engine

FORMAT = "oxydra"
SHAPE = "an oxydra SQLite/libSQL file"
NOTE_SOURCE = "import:oxydra"
EVENT_COLUMNS = ("session_id", "sequence", "payload_json", "created_at")
_NOTE_NAMESPACE = uuid.UUID("6f1c2d0e-5a43-4b8e-9a77-2d1f0c9b8e31")  # ids for notes without one


def _json_object(text: Any, what: str) -> dict[str, Any]:
    try:
        value = json.loads(text) if isinstance(text, str | bytes) else text
    except (ValueError, RecursionError) as exc:
        raise InvalidInput(f"{what} is not JSON ({exc})") from None
    if not isinstance(value, dict):
        raise InvalidInput(f"{what} is not a JSON object")
    return value


def event_payload(row: dict[str, Any]) -> dict[str, Any]:
    """A conversation event as a validated Message, its source time in its metadata."""
    payload = _json_object(row["payload_json"], "payload_json")
    metadata = payload.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        raise InvalidInput("the message's metadata is not an object")
    payload["metadata"] = {**(metadata or {}),
                           "imported": {"from": FORMAT, "created_at": row["created_at"]}}
    return indexing.validate_message(payload)


def plan_note(row: dict[str, Any], metadata: dict[str, Any]) -> PlannedNote:
    """A ``memory:{user}`` event (and its chunks' metadata) as a planned note;
    ``InvalidInput`` when its payload is not a JSON object."""
    where = f"conversation_events ({row['session_id']!r}, #{row['sequence']})"
    payload = _json_object(row["payload_json"], "payload_json")
    note_id = payload.get("note_id") or metadata.get("note_id")
    if not isinstance(note_id, str) or not is_note_id(note_id):
        seed = f"{row['session_id']}#{row['sequence']}"
        note_id = f"note-{uuid.uuid5(_NOTE_NAMESPACE, seed)}"
    content = payload.get("content")
    if not isinstance(content, str):
        content = indexing.extract_indexable_text(payload)
    tags = payload.get("tags", metadata.get("tags"))
    source = payload.get("source") or metadata.get("source") or NOTE_SOURCE
    created = engine_time(metadata.get("created_at")) or engine_time(row["created_at"])
    updated = engine_time(metadata.get("updated_at")) or created
    return PlannedNote(where=f"{where} {note_id}", name=generated_name(content, note_id),
                       content=content, tags=tags if isinstance(tags, list) else None,
                       source=source if isinstance(source, str) else NOTE_SOURCE,
                       note_id=note_id, created_at=created, updated_at=updated)


def _chunk_metadata(source: SourceDatabase,
                    report: ImportReport) -> dict[tuple[str, int], dict[str, Any]]:
    """Each notes-session event's chunk metadata, by (session, sequence); how many chunks'
    metadata could not be read goes to the report (their notes come from the event)."""
    if "chunks" not in source.tables or "metadata_json" not in source.columns("chunks"):
        return {}
    found: dict[tuple[str, int], dict[str, Any]] = {}
    unreadable = 0
    for row in source.rows("SELECT session_id, sequence_start, metadata_json FROM chunks "
                           "WHERE session_id LIKE 'memory:%' ORDER BY rowid"):
        try:
            metadata = _json_object(row["metadata_json"], "metadata_json")
        except InvalidInput:
            unreadable += 1
            continue
        found.setdefault((row["session_id"], row["sequence_start"]), metadata)
    if unreadable:
        report.remark(f"chunks: the metadata of {unreadable:,} note chunks is not a JSON "
                      "object; those notes were imported from their event alone (its tags, "
                      "times and source, where it has them)")
    return found


def plan_events(source: SourceDatabase, report: ImportReport,
                ) -> tuple[list[PlannedMessage], list[PlannedNote]]:
    """Every event as a planned message or note; unreadable messages go to the report."""
    source.require("sessions", ("session_id",), SHAPE)
    source.require("conversation_events", EVENT_COLUMNS, SHAPE)
    if "agent_identity" in source.columns("sessions"):
        agents = sorted({str(row["agent_identity"]) for row in source.rows(
            "SELECT DISTINCT agent_identity FROM sessions WHERE agent_identity IS NOT NULL")})
        if agents:
            report.remark(f"sessions: the source's agent identities "
                          f"({', '.join(map(repr, agents))}) all go to namespace "
                          f"{report.namespace!r}")
    rows = source.rows("SELECT session_id, sequence, payload_json, created_at "
                       "FROM conversation_events ORDER BY session_id, sequence")
    note_metadata = _chunk_metadata(source, report)
    messages: list[PlannedMessage] = []
    notes: list[PlannedNote] = []
    for row in rows:
        session_id, sequence = row["session_id"], row["sequence"]
        if isinstance(session_id, str) and session_id.startswith(MEMORY_PREFIX):
            try:
                notes.append(plan_note(row, note_metadata.get((session_id, sequence), {})))
            except InvalidInput as exc:
                report.skip("notes", f"conversation_events ({session_id!r}, #{sequence})",
                            str(exc))
            continue
        where = f"conversation_events ({session_id!r}, #{sequence})"
        if isinstance(sequence, bool) or not isinstance(sequence, int):
            report.skip("messages", where, f"sequence {sequence!r} is not an integer")
            continue
        try:
            payload = event_payload(row)
            created_at = source_time(row["created_at"])
        except InvalidInput as exc:
            report.skip("messages", where, str(exc))
            continue
        messages.append(PlannedMessage(session_id, sequence, payload, where, created_at))
    return messages, notes


def _scratchpad_items(state: dict[str, Any]) -> Any:
    pad = state.get("scratchpad")
    return pad.get("items") if isinstance(pad, dict) else pad


def _summary(state: dict[str, Any]) -> tuple[str, int] | None:
    """(text, upper_sequence) of a state's rolling summary, None when it has none."""
    summary = state.get("summary_state")
    if not isinstance(summary, dict):
        return None
    text = next((summary[k] for k in ("text", "summary", "summary_text")
                 if isinstance(summary.get(k), str)), "")
    if not text.strip():
        return None
    upper = summary.get("upper_sequence", 0)
    if isinstance(upper, bool) or not isinstance(upper, int) or upper < 0:
        raise InvalidInput(f"summary_state.upper_sequence {upper!r} is not a sequence")
    return text, upper


async def import_states(engine: Engine, source: SourceDatabase, report: ImportReport,
                        namespace: str) -> int:
    """Each conversation session's scratchpad and rolling summary; how many state rows."""
    if "session_state" not in source.tables:
        return 0
    source.require("session_state", ("session_id", "state_json"), SHAPE)
    report.kind("scratchpads")
    report.kind("summaries")
    rows = source.rows("SELECT session_id, state_json FROM session_state "
                       "WHERE session_id NOT LIKE 'memory:%' ORDER BY session_id")
    owners = await session_owners(engine)
    for row in rows:
        session_id = row["session_id"]
        where = f"session_state {session_id!r}"
        try:
            state = _json_object(row["state_json"], "state_json")
            items = _scratchpad_items(state)
            summary = _summary(state)
        except InvalidInput as exc:
            report.skip("session states", where, str(exc))
            continue
        if (items or summary) and owners.get(session_id, namespace) != namespace:
            for kind, present in (("scratchpads", items), ("summaries", summary)):
                if present:
                    report.skip(kind, where, f"session {session_id!r} belongs to another "
                                f"namespace in the target, not to {namespace!r}")
            continue
        if items:
            await _import_scratchpad(engine, session_id, items, where, report, namespace)
        if summary:
            await _import_summary(engine, session_id, summary, where, report)
    return len(rows)


async def _import_scratchpad(engine: Engine, session_id: str, items: Any, where: str,
                             report: ImportReport, namespace: str) -> None:
    held = await engine.read_scratchpad(session_id)
    if held is not None and held.items:
        if held.items == items:
            report.already("scratchpads")
        else:
            report.skip("scratchpads", where, f"session {session_id!r} already has another "
                        "scratchpad; an import does not overwrite it")
        return
    try:
        await engine.write_scratchpad(session_id, items, agent=namespace)
    except InvalidInput as exc:
        report.skip("scratchpads", where, str(exc))
        return
    report.added("scratchpads")


async def _import_summary(engine: Engine, session_id: str, summary: tuple[str, int],
                          where: str, report: ImportReport) -> None:
    text, upper = summary
    try:
        held = await engine.summary_state(session_id)
    except NotFound:
        report.skip("summaries", where, f"session {session_id!r} has no messages in the "
                    "target, so its rolling summary has nothing to summarise")
        return
    if held.text:
        if (held.text, held.upper_sequence) == (text, upper):
            report.already("summaries")
        else:
            report.skip("summaries", where, f"session {session_id!r} already has another "
                        "rolling summary; an import does not overwrite it")
        return
    if await engine.write_summary_state(session_id, text, upper, held.epoch):
        report.added("summaries")
    else:
        report.skip("summaries", where, "another writer changed the session's summary "
                    "during the import; run the import again")


def report_derived(engine: Engine, source: SourceDatabase, report: ImportReport) -> None:
    """What the import does not copy: chunks and vectors (remarks), files and schedules
    (skips, one per row), schedule runs (a remark)."""
    chunks = source.scalar("SELECT count(*) FROM chunks") if "chunks" in source.tables else 0
    if chunks:
        report.remark(f"chunks: the source's {chunks:,} chunks are not copied; the engine "
                      "chunks the imported messages and notes itself")
    if "chunks_vec" in source.tables and {"embedding_blob", "embedding_model"} <= set(
            source.columns("chunks_vec")):
        groups = source.rows("SELECT embedding_model AS model, length(embedding_blob) / 4 "
                             "AS dimension, count(*) AS vectors FROM chunks_vec "
                             "GROUP BY 1, 2 ORDER BY 3 DESC")
        if groups:
            held = "; ".join(f"{g['vectors']:,} of {g['dimension']} dimensions from "
                             f"{g['model']!r}" for g in groups)
            embedder = engine.embedder
            report.remark(f"vectors: re-embedded with {embedder.name} ({embedder.dimension} "
                          f"dimensions); the source had {held}")
    if "files" in source.tables:
        for row in source.rows("SELECT * FROM files ORDER BY rowid"):
            report.skip("files", f"files row {row.get('file_id')!r} "
                        f"({row.get('source_uri')!r})", "an oxydra file row holds only a "
                        "document's URI and hash, not its text; index the document again")
    if "schedules" in source.tables:
        for row in source.rows("SELECT * FROM schedules ORDER BY rowid"):
            report.skip("schedules", f"schedules row {row.get('schedule_id')!r} "
                        f"({row.get('name') or row.get('goal')!r})", "schedules are not "
                        "imported; add it again with `workbench schedules add`")
    runs = (source.scalar("SELECT count(*) FROM schedule_runs")
            if "schedule_runs" in source.tables else 0)
    if runs:
        report.remark(f"schedule_runs: the source's {runs:,} rows (the skipped schedules' "
                      "run history) are not imported")


def check(path: str | Path) -> None:
    """Refuse a file that is not seed-001 shaped (``InvalidInput``), touching no memory
    file."""
    with open_source(path) as source:
        source.require("sessions", ("session_id",), SHAPE)
        source.require("conversation_events", EVENT_COLUMNS, SHAPE)


async def import_oxydra(engine: Engine, path: str | Path, *, namespace: str | None = None,
                         progress: Progress | None = None) -> ImportReport:
    """Import a seed-001 SQLite/libSQL file (see the module docstring) into ``namespace``
    (default: the engine's agent)."""
    namespace = engine.notes.namespace(namespace)
    report = ImportReport(str(path), FORMAT, str(engine.location), namespace)
    with open_source(path) as source:
        messages, notes = plan_events(source, report)
        states = (source.scalar("SELECT count(*) FROM session_state WHERE session_id NOT "
                                "LIKE 'memory:%'") if "session_state" in source.tables else 0)
        unreadable = len(report.skipped)  # events already skipped while reading them
        total = unreadable + len(messages) + len(notes) + int(states or 0)
        done = await land_messages(engine, messages, report, namespace=namespace,
                                   progress=progress, done=unreadable, total=total)
        report.kind("notes")
        if notes:
            await land_notes(engine, notes, report, namespace=namespace, kind="notes")
        done += len(notes)
        if progress is not None:
            progress(done, total)
        await import_states(engine, source, report, namespace)
        report_derived(engine, source, report)
    if progress is not None:
        progress(total, total)
    return report
