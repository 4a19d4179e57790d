"""An OpenAI Agents SDK ``SQLiteSession`` file: tables ``agent_sessions`` and
``agent_messages`` (``id``, ``session_id``, ``message_data``, ``created_at``).

Every SDK session becomes a session of the namespace (same id), and each of its messages
(an item's JSON) one item of it, as
:class:`~core.integrations.openai_agents.session.WorkbenchSession` stores one: an event
(the item as a Message dict) and a ``framework_items`` row holding the item's JSON text as
the file held it, so a WorkbenchSession over the imported memory gives back the same items
SQLiteSession gave. A session's items are stored in one transaction, in the file's order
(``id``), each at its ``created_at`` (the SDK writes UTC).

Counted: ``items``. A row whose data is not a JSON object is skipped (SQLiteSession skips it
too); a session whose id cannot be a session id, that belongs to another namespace, or
whose items the engine refuses is skipped whole, with why. Importing the file again adds
nothing: items the target session holds already (the first ones, the same JSON text) are
"already"; a session holding other items is skipped. The file is opened read-only, plain
SQLite (no SDK needed).
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core import inputs
from core.clock import utc_now
from core.errors import InvalidInput
from core.importers.report import ImportReport, Progress
from core.importers.source import open_source

if TYPE_CHECKING:
    from core.engine import Engine

FORMAT = "openai-agents-session"
SHAPE = "an OpenAI Agents SDK SQLiteSession file"
MESSAGE_COLUMNS = ("id", "session_id", "message_data", "created_at")


def check(source: str | Path) -> None:
    """Refuse a file that is not a SQLiteSession's (``InvalidInput``)."""
    with open_source(source) as database:
        database.require("agent_messages", MESSAGE_COLUMNS, SHAPE)


async def import_openai_agents_session(engine: Engine, source: str | Path, *,
                                       namespace: str | None = None,
                                       progress: Progress | None = None) -> ImportReport:
    """Import an SQLiteSession file (see the module docstring) into ``namespace``
    (default: the engine's agent)."""
    from core.integrations.openai_agents.storing import store_items

    namespace = engine.notes.namespace(namespace)
    report = ImportReport(str(source), FORMAT, str(engine.location), namespace)
    report.kind("items")
    sessions = _read(source, report)
    total, done = sum(len(rows) for rows in sessions.values()), 0
    for session_id, rows in sessions.items():
        refusal = await _refusal(engine, session_id, namespace)
        held: list[str] = []
        if refusal is None:
            held = await engine.backend.agent_items_get(namespace, session_id, None)
            if held != [raw for _, raw, _, _ in rows[:len(held)]]:
                refusal = "the target's session of this id holds other items"
        if refusal is None and len(rows) > len(held):
            fresh = rows[len(held):]
            try:
                await store_items(engine, session_id, namespace, utc_now(),
                                  [item for _, _, item, _ in fresh],
                                  [raw for _, raw, _, _ in fresh],
                                  [time for _, _, _, time in fresh])
            except InvalidInput as exc:
                refusal = str(exc)
        if refusal is not None:
            for where, _, _, _ in rows:
                report.skip("items", where, refusal)
        else:
            report.already("items", len(held))
            report.added("items", len(rows) - len(held))
        done += len(rows)
        if progress is not None:
            progress(done, total)
    if progress is not None and total == 0:
        progress(0, 0)
    return report


def _read(source: str | Path,
          report: ImportReport) -> dict[str, list[tuple[str, str, Any, str]]]:
    """The file's items by session: (where, JSON text, item, time), in ``id`` order."""
    sessions: dict[str, list[tuple[str, str, Any, str]]] = defaultdict(list)
    with open_source(source) as database:
        database.require("agent_messages", MESSAGE_COLUMNS, SHAPE)
        for row in database.rows("SELECT id, session_id, message_data, created_at"
                                 " FROM agent_messages ORDER BY session_id, id"):
            session_id = str(row["session_id"])
            where = f"session {inputs.shown(session_id)} message {row['id']}"
            raw = row["message_data"]
            try:
                item = json.loads(raw) if isinstance(raw, str) else None
            except ValueError:
                item = None
            if not isinstance(item, dict):
                report.skip("items", where, "its message_data is not a JSON object")
                continue
            try:
                time = _time(row["created_at"])
            except InvalidInput as exc:
                report.skip("items", where, str(exc))
                continue
            sessions[session_id].append((where, raw, item, time))
    return sessions


def _time(value: Any) -> str:
    """SQLite's ``CURRENT_TIMESTAMP`` (UTC, no zone written) as the engine's time."""
    text = str(value or "").strip()
    if not text:
        return utc_now()
    if "T" not in text:
        text = text.replace(" ", "T", 1)
    if not text.endswith("Z") and "+" not in text[10:] and "-" not in text[10:]:
        text += "+00:00"
    stamped = inputs.message_time(text)
    return stamped if stamped is not None else utc_now()


async def _refusal(engine: Engine, session_id: str, namespace: str) -> str | None:
    """Why a session cannot land (None: it can)."""
    try:
        inputs.session_id(session_id)
    except InvalidInput as exc:
        return f"its session id cannot be a session id here ({exc})"
    owner = await engine.backend.session_agent(session_id)
    if owner is not None and owner != namespace:
        return (f"session {inputs.shown(session_id)} belongs to another namespace in the "
                f"target, not to {namespace!r}")
    return None
