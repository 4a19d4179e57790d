"""``workbench sessions …``: list, read, append to, export and remove conversations without
the app, and show the context an agent would get from one.

A session whose id starts with ``memory:`` is not a conversation: it holds the notes of the
namespace named after the prefix (``memory:default`` holds namespace ``default``'s notes),
one event per note. ``sessions list`` shows those too, marked ``notes``, so a listing says
everything the file holds; ``workbench notes …`` is the way to read and change notes, and
``sessions rm`` on such a session removes every note of its namespace (it says so before
asking).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from core.indexing import ROLES
from core.locations import Location
from workbench.cli.notes import read_text_input
from workbench.command_line import db_option, echo_json, json_option, model_option, on_engine
from workbench.text import (
    call_signature,
    count,
    one_line,
    short_time,
    table,
    text_content,
    tool_names,
)

if TYPE_CHECKING:
    from core.engine import Engine

_SESSION = click.argument("session_id", metavar="SESSION")
TOOL_LINE_CHARS = 100
"""A tool call's arguments and a tool's result are cut to this many characters on one line."""


def notes_namespace(session_id: str) -> str | None:
    """The namespace whose notes a session holds, or None for a conversation."""
    from core.storage.vocabulary import MEMORY_PREFIX

    return session_id[len(MEMORY_PREFIX):] if session_id.startswith(MEMORY_PREFIX) else None


def _kind(session_id: str) -> str:
    return "conversation" if notes_namespace(session_id) is None else "notes"


def _call_line(call: Any) -> str:
    """``→ name(key=value, …)``, on one line."""
    function = call.get("function") if isinstance(call, dict) else None
    return "→ " + one_line(call_signature(function if isinstance(function, dict) else {}),
                           TOOL_LINE_CHARS)


def _message_lines(record: Any, names: dict[str, str]) -> list[str]:
    """One event as text: a header, its text in full, tool calls and results on one line."""
    payload = record.payload
    metadata = payload.get("metadata")
    marker = metadata.get("compact_marker") if isinstance(metadata, dict) else None
    role = "compact marker" if isinstance(marker, dict) else str(payload.get("role") or "?")
    named = f" ({payload['name']})" if payload.get("name") else ""
    lines = [f"#{record.sequence:<5} {short_time(record.created_at)}  {role}{named}"]
    text = text_content(payload)
    if payload.get("role") == "tool":
        tool = (names.get(str(payload.get("tool_call_id"))) or payload.get("tool_name")
                or payload.get("tool_call_id") or "tool")
        lines.append("  ← " + one_line(f"{tool}: {text}", TOOL_LINE_CHARS))
        return lines
    lines.extend(f"  {line}" for line in text.splitlines() if text.strip())
    lines.extend(f"  {_call_line(call)}" for call in payload.get("tool_calls") or ())
    if len(lines) == 1:
        lines.append("  (no content)")
    return lines


@click.group("sessions")
def sessions_group() -> None:
    """List, read, append to, export and remove sessions (conversations, and the notes'
    sessions), and show the context an agent gets from one."""


@sessions_group.command("list")
@db_option
@click.option("--agent", default=None, help="Only sessions of this agent identity.")
@click.option("--limit", default=50, show_default=True, type=click.IntRange(min=1),
              help="Sessions to list, most recently active first.")
@click.option("--offset", default=0, show_default=True, type=click.IntRange(min=0),
              help="Sessions to skip first.")
@json_option
@click.pass_context
def list_command(ctx: click.Context, db: Location | None, agent: str | None, limit: int,
                 offset: int, as_json: bool) -> None:
    """List sessions: agent, kind (conversation or notes), events, last sequence, activity."""
    sessions = on_engine(ctx, db, lambda engine: engine.list_sessions(agent, limit, offset),
                         writes=False, warn=False)
    if as_json:
        echo_json({"offset": offset, "limit": limit, "sessions": [
            {**s.to_dict(), "kind": _kind(s.session_id),
             "notes_namespace": notes_namespace(s.session_id)} for s in sessions]})
        return
    rows = [(s.session_id, s.agent_identity or "-", _kind(s.session_id), f"{s.event_count:,}",
             "-" if s.last_sequence is None else f"#{s.last_sequence}",
             short_time(s.updated_at)) for s in sessions]
    if sessions:
        header = ("id", "agent", "kind", "events", "last", "updated")
        for line in table(header, rows):
            click.echo(line)
        more = "; --offset shows more" if len(sessions) == limit else ""
        click.echo(f"sessions {offset + 1}-{offset + len(sessions)}, most recently active "
                   f"first{more}")
    else:
        click.echo("no sessions" + (f" of agent {agent!r}" if agent else "")
                   + (f" past the first {offset}" if offset else ""))
    if any(row[2] == "notes" for row in rows):
        click.echo("kind notes: the session holds a namespace's notes (workbench notes list)")


@sessions_group.command("show")
@_SESSION
@db_option
@click.option("--limit", default=50, show_default=True, type=click.IntRange(min=1),
              help="Show the latest this many messages.")
@click.option("--all", "show_all", is_flag=True, help="Show every message (overrides --limit).")
@json_option
@click.pass_context
def show_command(ctx: click.Context, session_id: str, db: Location | None, limit: int,
                 show_all: bool, as_json: bool) -> None:
    """Show a session: its rolling summary, its scratchpad and its latest messages, oldest
    first (tool calls and results on one line each; --json has them whole)."""

    async def work(engine: Engine) -> tuple[Any, Any, list[Any]]:
        summary = await engine.summary_state(session_id)  # NotFound when there is none
        scratchpad = await engine.read_scratchpad(session_id)
        records = await engine.recall(session_id, None if show_all else limit)
        return summary, scratchpad, records

    summary, scratchpad, records = on_engine(ctx, db, work, writes=False, warn=False)
    last = records[-1].sequence if records else None
    if as_json:
        echo_json({"session_id": session_id, "kind": _kind(session_id),
                   "notes_namespace": notes_namespace(session_id), "last_sequence": last,
                   "limit": None if show_all else limit, "summary": summary.to_dict(),
                   "scratchpad": scratchpad.to_dict() if scratchpad else None,
                   "messages": [record.to_dict() for record in records]})
        return
    click.echo(f"session     {session_id} ({_kind(session_id)})")
    if summary.text:
        click.echo(f"summary     covers up to #{summary.upper_sequence} (epoch {summary.epoch}"
                   f", {summary.summarizer or 'unknown summarizer'})")
        click.echo("\n".join(f"  {line}" for line in summary.text.splitlines()))
    else:
        click.echo("summary     none")
    if summary.last_error:
        click.echo(f"  last summarizer error: {one_line(summary.last_error, 200)}")
    if scratchpad is None:
        click.echo("scratchpad  none")
    else:
        click.echo(f"scratchpad  {count(len(scratchpad.items), 'item')}, written "
                   f"{short_time(scratchpad.updated_at)}")
        for number, item in enumerate(scratchpad.items, 1):
            click.echo(f"  {number}. {item}")
    if not records:
        click.echo("messages    none")
        return
    cut = not show_all and len(records) == limit and records[0].sequence > 1
    click.echo(f"messages    {count(len(records), 'message')}, #{records[0].sequence}-#{last}"
               + (" (the latest; --all shows every one)" if cut else ""))
    names = tool_names(records)
    for record in records:
        for line in _message_lines(record, names):
            click.echo(line)


@sessions_group.command("export")
@_SESSION
@db_option
@click.option("--out", "out_path", default=None,
              type=click.Path(dir_okay=False, writable=True, path_type=Path),
              help="The JSON file to write (replaced if it exists, atomically; default: "
                   "exports/<session>.json beside the memory file).")
@json_option
@click.pass_context
def export_command(ctx: click.Context, session_id: str, db: Location | None,
                   out_path: Path | None, as_json: bool) -> None:
    """Write a session's messages, rolling summary and scratchpad to one JSON file."""
    from core.export_paths import default_export_path

    def work(engine: Engine) -> Any:
        out = out_path or default_export_path(engine.location, session_id, ".json")
        return engine.export_session(session_id, out)

    result = on_engine(ctx, db, work, writes=False, warn=False)
    written = os.path.abspath(result.path)
    if as_json:
        echo_json({**result.to_dict(), "path": written})
        return
    scratchpad = count(result.scratchpad_items, "scratchpad item")
    click.echo(f"wrote {session_id} to {written}: {count(result.events, 'message')}, "
               f"{'a' if result.has_summary else 'no'} rolling summary, {scratchpad}")


@sessions_group.command("rm")
@_SESSION
@db_option
@click.option("--yes", is_flag=True, help="Remove without asking.")
@json_option
@click.pass_context
def rm_command(ctx: click.Context, session_id: str, db: Location | None, yes: bool,
               as_json: bool) -> None:
    """Remove a session and everything under it: messages, chunks, summary, scratchpad
    (exit 1 when there is no such session)."""

    async def work(engine: Engine) -> dict[str, Any]:
        state = await engine.session_state(session_id)  # NotFound when there is none
        namespace = notes_namespace(session_id)
        if not yes:
            what = (f"every note of namespace {namespace!r}" if namespace is not None else
                    "its messages, summary and scratchpad")
            click.confirm(f"remove session {session_id!r} and {what}?", abort=True, err=True)
        await engine.forget(session_id)
        return {"removed": session_id, "kind": _kind(session_id),
                "notes_namespace": namespace, "last_sequence": state.get("last_sequence")}

    removed = on_engine(ctx, db, work, writes=True, warn=False, start_worker=False)
    if as_json:
        echo_json(removed)
    else:
        click.echo(f"removed session {session_id}")


def _metadata(ctx: click.Context, param: click.Parameter, value: str | None) -> Any:
    """``--metadata`` as a dict: anything but a JSON object is a usage error (exit 2)."""
    if value is None:
        return None
    try:
        metadata = json.loads(value)
    except (ValueError, RecursionError) as exc:
        raise click.BadParameter(f"not JSON: {exc}") from None
    if not isinstance(metadata, dict):
        raise click.BadParameter(f"must be a JSON object ({{...}}), got "
                                 f"{type(metadata).__name__}")
    return metadata


def _created_at(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """``--created-at`` as the engine stores times: one it would refuse is a usage error
    (exit 2) before the memory is opened."""
    from core import inputs
    from core.errors import InvalidInput

    try:
        return inputs.message_time(value, "time")
    except InvalidInput as exc:
        raise click.BadParameter(str(exc)) from None


def _message(role: str, text: str, tool_name: str | None, tool_call_id: str | None,
             importance: float | None, metadata: dict[str, Any] | None) -> dict[str, Any]:
    """The Message dict the options describe; options not given are left out."""
    message: dict[str, Any] = {"role": role, "content": text}
    for key, value in (("tool_name", tool_name), ("tool_call_id", tool_call_id),
                       ("importance", importance), ("metadata", metadata)):
        if value is not None:
            message[key] = value
    return message


@sessions_group.command("append")
@_SESSION
@db_option
@model_option
@click.option("--role", required=True, type=click.Choice(ROLES),
              help="Who speaks: user, assistant, tool or system.")
@click.option("--content", default=None, help="The message's text.")
@click.option("--file", "file_path", default=None,
              type=click.Path(exists=True, dir_okay=False, allow_dash=True, path_type=Path),
              help="Read the message's text from this UTF-8 file ('-': standard input).")
@click.option("--tool-name", default=None, help="The tool a tool message is from.")
@click.option("--tool-call-id", default=None, help="The call a tool message answers.")
@click.option("--importance", type=click.FloatRange(0.0, 1.0), default=None,
              help="From 0 to 1 (default by role: user and assistant 0.5, tool 0.3, system "
                   "0.1); 0.85 or more is always in the context.")
@click.option("--metadata", default=None, callback=_metadata,
              help="A JSON object kept with the message and its search chunks.")
@click.option("--agent", default=None,
              help="The agent identity a new session is made for (default: the configured "
                   "agent).")
@click.option("--created-at", "created_at", default=None, metavar="TIME", callback=_created_at,
              help="When the message was written, ISO-8601 with a UTC offset "
                   "(2024-05-01T14:00:00+02:00, or Z); default: now.")
@json_option
@click.pass_context
def append_command(ctx: click.Context, session_id: str, db: Location | None, model: str | None,
                   role: str,
                   content: str | None, file_path: Path | None, tool_name: str | None,
                   tool_call_id: str | None, importance: float | None,
                   metadata: dict[str, Any] | None, agent: str | None, created_at: str | None,
                   as_json: bool) -> None:
    """Store a message at the session's next sequence (a new session is made and said so);
    returns once its chunks are embedded. A message the engine refuses: exit 1, nothing
    written."""
    if content is not None and file_path is not None:
        raise click.UsageError("give --content or --file, not both")
    if content is None and file_path is None:
        raise click.UsageError("give the message's text: --content TEXT, --file PATH or "
                               "--file -")
    text = content if content is not None else read_text_input(Path(str(file_path)))
    message = _message(role, text, tool_name, tool_call_id, importance, metadata)

    async def work(engine: Engine) -> tuple[Any, bool]:
        from core.errors import NotFound

        try:
            await engine.session_state(session_id)
            made = False
        except NotFound:
            made = True
        stored = await engine.append(session_id, message, created_at, agent=agent)
        await engine.drain()  # so search and context find it by both legs straight after
        return stored, made

    stored, made = on_engine(ctx, db, work, writes=True, adds=True, model=model)
    if as_json:
        echo_json({**stored.to_dict(), "new_session": made})
    else:
        click.echo(f"appended #{stored.sequence} ({role}) to {session_id}"
                   + (" (a new session)" if made else ""))


CONTEXT_TEXT_CHARS = 80
"""A message is cut to this many characters on one line in ``sessions context``."""


def _reasons(item: Any) -> str:
    """``recency, relevance 0.71``: the strategies that chose an event, with its similarity."""
    return ", ".join(f"{reason} {item.similarity:.2f}"
                     if reason == "relevance" and item.similarity is not None else reason
                     for reason in item.reasons)


def _echo_context(found: Any, query: str) -> None:
    rows = [(f"#{item.record.sequence}", str(item.record.payload.get("role") or "?"),
             _reasons(item), _gist(item.record.payload)) for item in found.items]
    if rows:
        for line in table(("seq", "role", "chosen by", "text"), rows):
            click.echo(line)
    counts = ", ".join(f"{found.counts.get(reason, 0)} by {reason}"
                       for reason in ("recency", "salience", "relevance"))
    asked = f" for {query!r}" if query.strip() else " (no query: no relevance)"
    click.echo(f"{count(len(rows), 'event')}{asked}: {counts}")


def _echo_restore(restored: Any) -> None:
    rows = []
    for payload, sequence in zip(restored.messages, restored.sequences, strict=True):
        if sequence is None:
            shown, role = "summary", "system"
        else:
            shown = f"#{sequence}"
            role = ("compact marker" if sequence == restored.marker_sequence
                    else str(payload.get("role") or "?"))
        rows.append((shown, role, _gist(payload)))
    if rows:
        for line in table(("seq", "role", "text"), rows):
            click.echo(line)
    click.echo(f"{count(len(rows), 'message')} in {restored.tokens_used:,} of "
               f"{restored.token_budget:,} tokens ({restored.token_counting}); "
               f"{restored.dropped:,} older dropped")
    if restored.summarized_through is not None:
        injected = None in restored.sequences
        click.echo(f"rolling summary through #{restored.summarized_through} "
                   + ("injected" if injected else "did not fit the budget"))


@sessions_group.command("context")
@_SESSION
@db_option
@model_option
@click.option("--query", default=None,
              help="What the agent is about to answer: picks the relevant older messages "
                   "(not with --budget).")
@click.option("--budget", type=click.IntRange(min=1), default=None,
              help="Instead: the messages a new run restores within this many tokens "
                   "(rolling summary and compact marker first).")
@json_option
@click.pass_context
def context_command(ctx: click.Context, session_id: str, db: Location | None, model: str | None,
                    query: str | None,
                    budget: int | None, as_json: bool) -> None:
    """The context an agent gets: by default aidaemon's tri-hybrid one (recent, salient and
    relevant events, each with why it was chosen); with --budget, what restore replays
    within that many tokens. Exit 1 when there is no such session."""
    if budget is not None and query is not None:
        raise click.UsageError("--query picks the tri-hybrid context; --budget restores "
                               "within a budget: give one of them")

    async def work(engine: Engine) -> Any:
        await engine.session_state(session_id)  # NotFound when there is none
        if budget is not None:
            return await engine.restore(session_id, budget)
        return await engine.get_context(session_id, query or "", caller="cli")

    result = on_engine(ctx, db, work, writes=False, model=model)
    if budget is not None:
        if as_json:
            echo_json(result.to_dict())
        else:
            _echo_restore(result)
        return
    if as_json:
        echo_json({"session_id": result.session_id, "query": query or "",
                   "counts": result.counts, "messages": [
                       {"sequence": item.record.sequence, "created_at": item.record.created_at,
                        "importance": item.record.importance, "reasons": item.reasons,
                        "similarity": item.similarity, "message": item.record.payload}
                       for item in result.items]})
    else:
        _echo_context(result, query or "")


def _gist(payload: dict[str, Any]) -> str:
    """A message on one line: its text, else its first tool call (``→ name(args)``)."""
    text = one_line(text_content(payload), CONTEXT_TEXT_CHARS)
    if text:
        return text
    calls = payload.get("tool_calls") or ()
    return one_line(_call_line(calls[0]), CONTEXT_TEXT_CHARS) if calls else "-"
