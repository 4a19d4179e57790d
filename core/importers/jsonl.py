"""JSONL conversations: one message per line, with its session id.

The line format, as :mod:`core.exporters` writes it::

    {"session_id": "trip", "sequence": 1, "created_at": "2024-05-01T12:00:00.000Z",
     "message": {"role": "user", "content": "Hike in June?"}}

and a shorthand for files written by hand or by other tools, the message's keys on the line
itself::

    {"session_id": "trip", "role": "user", "content": "Hike in June?"}

``message`` is a Message dict (``role``, ``content``, optional ``tool_calls``,
``tool_call_id``, ``tool_name``, ``name``, ``importance``, ``metadata``). ``sequence`` is
optional: within one session either every line gives one or none does, and then the lines
are numbered 1, 2, 3 in file order (so the same file always gives the same sequences, which
is what makes a second import add nothing). ``created_at`` is optional: each event keeps it
as its time (RFC 3339 with ``Z`` or an offset, or ``YYYY-MM-DD HH:MM:SS``; a time without a
zone is UTC), normalised to the engine's ``2024-05-01T12:00:00.000Z``, so an export read back
keeps its times exactly; a line without one is stamped with the time it is stored. Blank
lines are ignored.

What it maps to: each ``session_id`` is a session of the namespace, each line an event at
its sequence (see :mod:`core.importers.conversations` for already-held and refused ones).
This is the project's own format, so the whole file is checked first and any malformed line
(not JSON, not an object, no session id, a message the engine would refuse, a created_at
that is not a timestamp, a sequence given twice) is ``InvalidInput`` naming the file and
line, with nothing written.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core import indexing
from core.errors import InvalidInput
from core.importers.conversations import PlannedMessage, land_messages, source_time
from core.importers.report import ImportReport, Progress
from core.importers.source import read_text
from core.storage.vocabulary import MEMORY_PREFIX

if TYPE_CHECKING:
    from core.engine import Engine

FORMAT = "jsonl"
LINE_KEYS = ("session_id", "sequence", "created_at")


def parse_line(text: str, where: str) -> tuple[str, int | None, dict[str, Any], str | None]:
    """One line as (session id, sequence or None, validated message, created_at in the
    engine's text or None); ``InvalidInput`` prefixed with ``where`` when it is malformed."""
    try:
        line = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise InvalidInput(f"{where}: not JSON ({exc})") from None
    if not isinstance(line, dict):
        raise InvalidInput(f"{where}: a line must be a JSON object, got {type(line).__name__}")
    session_id = line.get("session_id")
    if not isinstance(session_id, str) or not session_id.strip():
        raise InvalidInput(f"{where}: session_id must be a non-empty string, got "
                           f"{session_id!r}")
    if session_id.startswith(MEMORY_PREFIX):
        raise InvalidInput(f"{where}: session {session_id!r} names a namespace's notes "
                           f"session (it begins with {MEMORY_PREFIX!r}); conversations go "
                           "to other sessions")
    sequence = line.get("sequence")
    if sequence is not None and (isinstance(sequence, bool) or not isinstance(sequence, int)):
        raise InvalidInput(f"{where}: sequence must be an integer, got {sequence!r}")
    try:
        created_at = source_time(line.get("created_at"))
    except InvalidInput as exc:
        raise InvalidInput(f"{where}: {exc}") from None
    if "message" in line:
        message = line["message"]
        others = sorted(set(line) - {*LINE_KEYS, "message"})
        if others:
            raise InvalidInput(f"{where}: a line with \"message\" has only session_id, "
                               f"sequence and created_at beside it; got {', '.join(others)}")
    else:
        message = {k: v for k, v in line.items() if k not in LINE_KEYS}
    try:
        payload = indexing.validate_message(message)
    except InvalidInput as exc:
        raise InvalidInput(f"{where}: {exc}") from None
    return session_id, sequence, payload, created_at


def read_jsonl(path: str | Path) -> list[PlannedMessage]:
    """Every message of the file, checked, with its sequence and time; ``InvalidInput``
    names the first malformed line."""
    source = Path(path).expanduser()
    lines: dict[str, list[tuple[int | None, dict[str, Any], str | None, str]]] = {}
    for number, text in enumerate(read_text(source).splitlines(), start=1):
        if not text.strip():
            continue
        where = f"{source} line {number}"
        session_id, sequence, payload, created_at = parse_line(text, where)
        lines.setdefault(session_id, []).append((sequence, payload, created_at,
                                                 f"line {number}"))
    planned: list[PlannedMessage] = []
    for session_id, items in lines.items():
        given = [sequence is not None for sequence, _, _, _ in items]
        if any(given) and not all(given):
            first = items[given.index(not given[0])][3]
            raise InvalidInput(f"{source} {first}: session {session_id!r} has lines with and "
                               "without a sequence; give every line of a session one, or none")
        seen: dict[int, str] = {}
        for position, (sequence, payload, created_at, where) in enumerate(items, start=1):
            number = position if sequence is None else sequence
            if number in seen:
                raise InvalidInput(f"{source} {where}: session {session_id!r} sequence "
                                   f"{number} is also on {seen[number]}")
            seen[number] = where
            planned.append(PlannedMessage(session_id, number, payload, where, created_at))
    return planned


def check(path: str | Path) -> None:
    """Refuse a malformed file (``InvalidInput``) without touching any memory file."""
    read_jsonl(path)


async def import_jsonl(engine: Engine, path: str | Path, *, namespace: str | None = None,
                       progress: Progress | None = None) -> ImportReport:
    """Import a JSONL conversations file (see the module docstring) into ``namespace``
    (default: the engine's agent)."""
    namespace = engine.notes.namespace(namespace)
    planned = read_jsonl(path)
    report = ImportReport(str(path), FORMAT, str(engine.location), namespace)
    await land_messages(engine, planned, report, namespace=namespace, progress=progress)
    return report
