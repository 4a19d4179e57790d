"""One session as a JSON file: its events, its rolling summary and its scratchpad.

The session is read in one transaction (an agent writing meanwhile cannot make the parts
disagree) and written atomically, as notes exports are: a crash leaves the old file or
the new one. The format::

    {"format": "memory-workbench-session", "version": 1, "exported_at": "...",
     "session": {"session_id": "...", "agent_identity": "...", "created_at": "...",
                 "updated_at": "...", "last_sequence": 12},
     "summary_state": {"text": "...", "upper_sequence": 5, "epoch": 2, "updated_at": "...",
                       "summarizer": "...", "last_error": null},
     "scratchpad": {"items": ["..."], "updated_at": "..."} or null,
     "events": [{"sequence": 1, "created_at": "...", "importance": 0.5,
                 "payload": {"role": "user", "content": "..."}}]}
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.clock import utc_now
from core.errors import NotFound
from core.inputs import shown
from core.notes.transfer import write_json_document
from core.summary.service import summary_state_of
from core.types import SessionExportResult

if TYPE_CHECKING:
    from core.storage.backend import Backend
    from core.storage.rows import SessionSnapshot

FORMAT = "memory-workbench-session"
VERSION = 1


def session_document(snapshot: SessionSnapshot) -> dict[str, Any]:
    """The export document of a session snapshot (see the module's docstring)."""
    state = snapshot.state
    events = snapshot.events
    summary = summary_state_of(snapshot.session_id, state).to_dict()
    summary.pop("session_id")
    scratchpad = state.get("scratchpad")
    return {
        "format": FORMAT, "version": VERSION, "exported_at": utc_now(),
        "session": {"session_id": snapshot.session_id,
                    "agent_identity": snapshot.agent_identity,
                    "created_at": snapshot.created_at, "updated_at": snapshot.updated_at,
                    "last_sequence": events[-1].sequence if events else None},
        "summary_state": summary,
        "scratchpad": None if scratchpad is None else {
            "items": list(scratchpad.get("items", [])),
            "updated_at": scratchpad.get("updated_at")},
        "events": [{"sequence": event.sequence, "created_at": event.created_at,
                    "importance": event.importance, "payload": event.payload}
                   for event in events],
    }


async def export_session(backend: Backend, session_id: str,
                         path: str | os.PathLike[str]) -> SessionExportResult:
    """Write ``session_id`` to ``path`` as JSON; ``NotFound`` when there is no such session,
    ``InvalidInput`` when the file cannot be written (nothing is then left behind)."""
    snapshot = await backend.read_session_snapshot(session_id)
    if snapshot is None:
        raise NotFound(f"no session {shown(session_id)}")
    document = session_document(snapshot)
    target = Path(path).expanduser()
    await write_json_document(target, document)
    scratchpad = document["scratchpad"]
    return SessionExportResult(
        path=str(target), session_id=session_id, events=len(document["events"]),
        has_summary=bool(document["summary_state"]["text"]),
        scratchpad_items=len(scratchpad["items"]) if scratchpad else 0)
