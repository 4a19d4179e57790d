"""Exporting conversations: one session, or every session of a namespace, as JSONL or
markdown.

**JSONL** is exactly what :mod:`core.importers.jsonl` reads, one line per event, sessions
in id order and each session's events by sequence::

    {"session_id": "trip", "sequence": 1, "created_at": "2024-05-01T12:00:00.000Z",
     "message": {"role": "user", "content": "Hike in June?"}}

so importing the file into another memory file recreates the sessions with the same ids,
sequences and payloads (the import stamps new times). A namespace export is one file.

**Markdown** is pynchy's conversation-archive format, as compaction writes it
(:func:`core.summary.archive_files.render`): ``# <session id>``, a blank line, then the body:
one line saying what the conversation is, and one section per message, headed
``## #<sequence> · <role> (<name or tool>) · <created_at>``, holding its text and its tool
calls. One file per session: a session export writes ``out`` (or ``out/<session>.md`` when
``out`` is a folder); a namespace export writes ``out/<session>.md`` for each session, with
names made safe as archive files' are.

Notes are not part of either: a namespace's notes export whole, with every field, through
``Engine.export_notes`` (JSON). Every file is written atomically (a temporary file in the
same folder, fsynced, renamed over the target).
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.errors import InvalidInput, NotFound
from core.storage.vocabulary import MEMORY_PREFIX
from core.summary.archive_files import render, safe_name, write_atomically
from core.types import MemoryRecord

if TYPE_CHECKING:
    from core.engine import Engine

EXPORT_FORMATS = ("jsonl", "markdown")


@dataclass(frozen=True)
class ExportResult:
    """What an export wrote: its scope, how many sessions and messages, which files."""

    scope: str  # "session" or "namespace"
    name: str   # the session id or the namespace
    format: str
    sessions: int
    messages: int
    paths: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """The result as a JSON-ready dict."""
        return {"scope": self.scope, "name": self.name, "format": self.format,
                "sessions": self.sessions, "messages": self.messages,
                "paths": list(self.paths)}


# -- JSONL ---------------------------------------------------------------------------------


def jsonl_line(record: MemoryRecord) -> str:
    """One event as a JSONL line."""
    return json.dumps({"session_id": record.session_id, "sequence": record.sequence,
                       "created_at": record.created_at, "message": record.payload},
                      ensure_ascii=False)


def jsonl_text(records: list[MemoryRecord]) -> str:
    """Events as a JSONL document (empty for none)."""
    return "".join(jsonl_line(record) + "\n" for record in records)


# -- markdown ------------------------------------------------------------------------------


def message_text(payload: dict[str, Any]) -> str:
    """A message's text for people: its content, non-text parts as ``[type]``, then each
    tool call as ``→ name(arguments)``."""
    pieces: list[str] = []
    content = payload.get("content")
    if isinstance(content, str):
        pieces.append(content)
    elif isinstance(content, list):
        for part in content:
            if not isinstance(part, dict):
                continue
            if part.get("type") == "text" and isinstance(part.get("text"), str):
                pieces.append(part["text"])
            else:
                pieces.append(f"[{part.get('type')}]")
    for call in payload.get("tool_calls") or []:
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict):
            arguments = function.get("arguments", "")
            if not isinstance(arguments, str):
                arguments = json.dumps(arguments, ensure_ascii=False)
            pieces.append(f"→ {function.get('name')}({arguments})")
    text = "\n\n".join(piece.strip() for piece in pieces if piece.strip())
    return text or "(no text)"


def markdown_document(session_id: str, agent: str | None, records: list[MemoryRecord]) -> str:
    """One session in pynchy's archive format (see the module docstring)."""
    if records:
        first, last = records[0], records[-1]
        header = (f"Conversation {session_id} (namespace {agent!r}): {len(records)} messages, "
                  f"#{first.sequence}-#{last.sequence}, {first.created_at} to "
                  f"{last.created_at}.")
    else:
        header = f"Conversation {session_id} (namespace {agent!r}): no messages."
    sections = [header]
    for record in records:
        payload = record.payload
        role = payload.get("role", "?")
        who = payload.get("name") or payload.get("tool_name")
        heading = f"## #{record.sequence} · {role}" + (f" ({who})" if who else "")
        sections.append(f"{heading} · {record.created_at}\n\n{message_text(payload)}")
    return render(session_id, "\n\n".join(sections))


# -- writing -------------------------------------------------------------------------------


async def _write(path: Path, text: str) -> None:
    try:
        await asyncio.to_thread(write_atomically, path, text)
    except OSError as exc:
        raise InvalidInput(f"cannot write {path}: {exc.strerror or exc}") from None


def _check_format(export_format: str) -> None:
    if export_format not in EXPORT_FORMATS:
        raise InvalidInput(f"export format must be one of {', '.join(EXPORT_FORMATS)}; got "
                           f"{export_format!r}")


def _suffix(export_format: str) -> str:
    return ".jsonl" if export_format == "jsonl" else ".md"


def _file_in(out: Path, stem: str, export_format: str) -> Path:
    """``out`` itself, or a file named after ``stem`` inside it when it is a folder."""
    return out / f"{safe_name(stem)}{_suffix(export_format)}" if out.is_dir() else out


async def _session_records(engine: Engine, session_id: str) -> list[MemoryRecord]:
    """A conversation session's events; ``NotFound`` when there is no such session."""
    if session_id.startswith(MEMORY_PREFIX):
        raise InvalidInput(f"session {session_id!r} holds a namespace's notes; export notes "
                           "with Engine.export_notes")
    await engine.session_state(session_id)  # NotFound when there is no such session
    return await engine.recall(session_id)


async def _session_agent(engine: Engine, session_id: str) -> str | None:
    return next((s.agent_identity for s in await engine.list_sessions()
                 if s.session_id == session_id), None)


async def export_session(engine: Engine, session_id: str, out: str | Path,
                         export_format: str) -> ExportResult:
    """Write one session as JSONL or markdown to ``out`` (a file, or a folder to put
    ``<session>.jsonl``/``.md`` in)."""
    _check_format(export_format)
    records = await _session_records(engine, session_id)
    target = _file_in(Path(out).expanduser(), session_id, export_format)
    if export_format == "jsonl":
        text = jsonl_text(records)
    else:
        agent = await _session_agent(engine, session_id)
        text = markdown_document(session_id, agent, records)
    await _write(target, text)
    return ExportResult("session", session_id, export_format, 1, len(records), [str(target)])


async def export_namespace(engine: Engine, namespace: str, out: str | Path,
                           export_format: str) -> ExportResult:
    """Write every conversation session of ``namespace``: JSONL to one file (``out``, or
    ``out/<namespace>.jsonl`` when it is a folder), markdown to one file per session in
    the folder ``out`` (made when missing)."""
    _check_format(export_format)
    sessions = sorted(s.session_id for s in await engine.list_sessions(agent=namespace)
                      if not s.session_id.startswith(MEMORY_PREFIX))
    if not sessions:
        raise NotFound(f"namespace {namespace!r} has no conversation sessions in "
                       f"{engine.location}")
    target = Path(out).expanduser()
    if export_format == "jsonl":
        records = [r for session_id in sessions for r in await engine.recall(session_id)]
        path = _file_in(target, namespace, export_format)
        await _write(path, jsonl_text(records))
        return ExportResult("namespace", namespace, export_format, len(sessions),
                            len(records), [str(path)])
    if target.exists() and not target.is_dir():
        raise InvalidInput(f"{target} is a file; a namespace's markdown export is a folder "
                           "with one file per session")
    paths: list[str] = []
    messages = 0
    for session_id in sessions:
        records = await engine.recall(session_id)
        path = target / f"{safe_name(session_id)}.md"
        await _write(path, markdown_document(session_id, namespace, records))
        paths.append(str(path))
        messages += len(records)
    return ExportResult("namespace", namespace, export_format, len(sessions), messages, paths)
