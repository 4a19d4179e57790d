"""The memory tools an agent calls over MCP, each bound to one namespace.

Every tool is an argument model (its JSON schema is what ``tools/list`` shows; unknown
arguments are refused, so a misspelt one never silently does nothing) and a handler over
the engine. The namespace is fixed when the server starts and no argument names it:

- notes and memories (pynchy ``save_memory``…, oxydra ``memory_save``…) work in the
  namespace's notes, and another namespace's note id is "not found";
- conversation and scratchpad tools take a session id; a session another namespace made
  is refused (``OutOfNamespace``) and a new one is made in this namespace;
- schedules belong to the namespace as their ``user_id``; another's is "not found".

Every search a tool runs is logged with the caller ``agent``, so the developer sees the
agent's queries in the app's playground beside their own.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from core.errors import InvalidInput
from core.notes.fields import is_note_id

if TYPE_CHECKING:
    from core.engine import Engine

CALLER = "agent"
"""How every search served over MCP is marked in the retrieval log."""

Text = Annotated[str, Field(min_length=1)]
SessionId = Annotated[str, Field(min_length=1, max_length=200,
                                 description="The conversation's session id.")]
NoteId = Annotated[str, Field(description="The note's id, note-<uuid>, as memory_save or "
                                          "memory_search returned it.")]
Tags = Annotated[list[Annotated[str, Field(max_length=64)]],
                 Field(max_length=16, description="Tags (trimmed, lower-cased, deduplicated;"
                                                  " at most 16 of at most 64 characters).")]
Category = Literal["core", "daily", "conversation"]


class Args(BaseModel):
    """A tool's arguments: unknown keys refused, nothing coerced from the wrong type."""

    model_config = ConfigDict(extra="forbid", strict=True)


# -- pynchy ------------------------------------------------------------------------------

class SaveMemoryArgs(Args):
    key: Annotated[str, Field(min_length=1, max_length=200,
                              description="The memory's key: saving again under it replaces "
                                          "its content.")]
    content: Annotated[str, Field(min_length=1, description="What to remember.")]
    category: Annotated[Category | None, Field(
        description="core: permanent facts (default for a new key); daily: context for the "
                    "current work; conversation: archived conversation summaries.")] = None


class RecallMemoriesArgs(Args):
    query: Annotated[str, Field(description="Words to search the memories for (BM25; a "
                                            "substring match when no word matches).")]
    limit: Annotated[int, Field(ge=1, le=100, description="At most this many.")] = 10


class KeyArgs(Args):
    key: Annotated[str, Field(min_length=1, max_length=200, description="The memory's key.")]


class ListMemoriesArgs(Args):
    category: Annotated[Category | None, Field(description="Only this category.")] = None
    limit: Annotated[int, Field(ge=1, le=1000, description="At most this many keys.")] = 200
    offset: Annotated[int, Field(ge=0, description="Keys to pass over first (next_offset of "
                                                   "the page before).")] = 0


# -- oxydra notes ------------------------------------------------------------------------

class MemorySaveArgs(Args):
    content: Annotated[str, Field(min_length=1, description="The note's text.")]
    tags: Tags = []


class MemorySearchArgs(Args):
    query: Annotated[str, Field(description="What to look for (meaning and words).")]
    tags: Annotated[Tags | None, Field(description="Only notes carrying every one of these "
                                                   "tags.")] = None
    top_k: Annotated[int, Field(ge=1, le=100, description="At most this many notes.")] = 10


class MemoryUpdateArgs(Args):
    note_id: NoteId
    content: Annotated[str, Field(min_length=1, description="The note's new text (replaces "
                                                            "the old).")]
    tags: Annotated[Tags | None, Field(description="New tags; omitted keeps the note's.")] = None


class NoteIdArgs(Args):
    note_id: NoteId


# -- scratchpad ----------------------------------------------------------------------------

class SessionArgs(Args):
    session_id: SessionId


class ScratchpadWriteArgs(Args):
    session_id: SessionId
    items: Annotated[list[str], Field(
        description="The whole scratchpad (it replaces what was there): current goals, steps "
                    "done, steps pending; at most 32 items of at most 240 characters.")]


# -- conversation --------------------------------------------------------------------------

class ConversationAppendArgs(Args):
    session_id: SessionId
    role: Literal["user", "assistant", "tool", "system"]
    content: Annotated[str | None, Field(description="The message text.")] = None
    tool_calls: Annotated[list[dict[str, Any]] | None, Field(
        description="Tool calls of an assistant message: [{id, type: function, function: "
                    "{name, arguments}}].")] = None
    tool_call_id: Annotated[str | None, Field(
        description="The call a tool message answers.")] = None
    tool_name: Annotated[str | None, Field(description="The tool a tool message is from.")] = None
    importance: Annotated[float | None, Field(
        ge=0, le=1, description="0-1; default by role (user/assistant 0.5, tool 0.3, system "
                                "0.1); 0.85 or more is always recalled.")] = None
    metadata: Annotated[dict[str, Any] | None, Field(
        description="Free metadata kept with the message and its search chunks.")] = None
    created_at: Annotated[str | None, Field(
        max_length=64, description="When the message was written, ISO-8601 with a UTC offset "
                                   "(2024-05-01T14:00:00+02:00); default: now. Questions that "
                                   "name a date find it by this time.")] = None


class GetContextArgs(Args):
    session_id: SessionId
    query: Annotated[str, Field(description="What the agent is about to answer; picks the "
                                            "relevant older messages. May be empty.")] = ""


# -- schedules -----------------------------------------------------------------------------

CadenceKind = Literal["cron", "once", "interval"]
_CADENCE = ('cron: a cron expression ("0 9 * * mon-fri"); once: a local time ("2030-01-31 '
            '09:00"); interval: a duration ("30m", "1h30m").')


class ScheduleCreateArgs(Args):
    goal: Annotated[str, Field(min_length=1, description="What the schedule is to do.")]
    cadence_kind: CadenceKind
    cadence_value: Annotated[str, Field(min_length=1, description=_CADENCE)]
    timezone: Annotated[str, Field(description="IANA time zone the cadence is read in.")] = "UTC"
    name: Annotated[str | None, Field(description="A name to find it by.")] = None
    notification_policy: Literal["always", "on_failure", "never"] = "always"


class ScheduleListArgs(Args):
    status: Literal["active", "paused", "completed"] | None = None
    limit: Annotated[int, Field(ge=1, le=200)] = 50


class ScheduleRefArgs(Args):
    schedule: Annotated[str, Field(min_length=1, description="The schedule's id or name.")]


class ScheduleUpdateArgs(Args):
    schedule: Annotated[str, Field(min_length=1, description="The schedule's id or name.")]
    goal: str | None = None
    name: str | None = None
    cadence_kind: CadenceKind | None = None
    cadence_value: Annotated[str | None, Field(description=_CADENCE)] = None
    timezone: str | None = None
    notification_policy: Literal["always", "on_failure", "never"] | None = None
    status: Annotated[Literal["active", "paused"] | None, Field(
        description="paused stops it firing; active resumes it.")] = None


# -- the handlers --------------------------------------------------------------------------

@dataclass(frozen=True)
class Tool:
    """One tool: its name, what it does, its arguments, and what runs it."""

    name: str
    description: str
    args: type[Args]
    run: Callable[[MemoryTools, Any], Awaitable[dict[str, Any]]]

    def input_schema(self) -> dict[str, Any]:
        return self.args.model_json_schema()


class MemoryTools:
    """The tools' handlers over one engine, in one namespace."""

    def __init__(self, engine: Engine, namespace: str) -> None:
        self.engine = engine
        self.namespace = namespace

    # pynchy's and oxydra's tools map onto the engine's one note API (``remove_note``,
    # ``write_note``) and onto the notes service, where the rules their shapes add live:
    # a key's note written or added, a name made for a note saved by content alone, hits
    # one per note.

    # pynchy

    async def save_memory(self, a: SaveMemoryArgs) -> dict[str, Any]:
        note = await self.engine.notes.save_memory(a.key, a.content, a.category,
                                                   namespace=self.namespace)
        return {"key": note.name, "category": note.category, "note_id": note.note_id,
                "updated_at": note.updated_at}

    async def recall_memories(self, a: RecallMemoriesArgs) -> dict[str, Any]:
        hits = await self.engine.notes.recall_memories(a.query, namespace=self.namespace,
                                                       limit=a.limit, caller=CALLER)
        return {"memories": [hit.to_dict() for hit in hits]}

    async def forget_memory(self, a: KeyArgs) -> dict[str, Any]:
        return {"key": a.key,
                "forgotten": await self.engine.remove_note(a.key, namespace=self.namespace)}

    async def list_memories(self, a: ListMemoriesArgs) -> dict[str, Any]:
        # A page, so a namespace of many memories never floods the agent's context.
        keys = await self.engine.notes.list_memories(namespace=self.namespace,
                                                     category=a.category)
        end = a.offset + a.limit
        return {"keys": keys[a.offset:end], "total": len(keys),
                "next_offset": end if end < len(keys) else None}

    # oxydra notes

    async def memory_save(self, a: MemorySaveArgs) -> dict[str, Any]:
        note = await self.engine.notes.memory_save(a.content, tags=a.tags,
                                                   namespace=self.namespace)
        return _note(note)

    async def memory_search(self, a: MemorySearchArgs) -> dict[str, Any]:
        hits = await self.engine.notes.memory_search(a.query, tags=a.tags, top_k=a.top_k,
                                                     namespace=self.namespace, caller=CALLER)
        return {"results": [hit.to_dict() for hit in hits]}

    async def memory_update(self, a: MemoryUpdateArgs) -> dict[str, Any]:
        note = await self.engine.write_note(_note_id(a.note_id), a.content, tags=a.tags,
                                            namespace=self.namespace)
        return _note(note)

    async def memory_delete(self, a: NoteIdArgs) -> dict[str, Any]:
        deleted = await self.engine.remove_note(_note_id(a.note_id), namespace=self.namespace)
        return {"note_id": a.note_id, "deleted": deleted}

    # scratchpad

    async def scratchpad_read(self, a: SessionArgs) -> dict[str, Any]:
        state = await self.engine.read_scratchpad(a.session_id, namespace=self.namespace)
        if state is None:
            return {"session_id": a.session_id, "items": [], "updated_at": None}
        return state.to_dict()

    async def scratchpad_write(self, a: ScratchpadWriteArgs) -> dict[str, Any]:
        state = await self.engine.write_scratchpad(a.session_id, a.items,
                                                   namespace=self.namespace)
        return state.to_dict()

    async def scratchpad_clear(self, a: SessionArgs) -> dict[str, Any]:
        cleared = await self.engine.clear_scratchpad(a.session_id, namespace=self.namespace)
        return {"session_id": a.session_id, "cleared": cleared}

    # conversation

    async def conversation_append(self, a: ConversationAppendArgs) -> dict[str, Any]:
        message = a.model_dump(exclude={"session_id", "created_at"}, exclude_none=True)
        message.setdefault("content", None)
        stored = await self.engine.append(a.session_id, message, a.created_at,
                                          namespace=self.namespace)
        return stored.to_dict()

    async def conversation_get_context(self, a: GetContextArgs) -> dict[str, Any]:
        found = await self.engine.get_context(a.session_id, a.query, namespace=self.namespace,
                                              caller=CALLER)
        return {"session_id": found.session_id, "counts": found.counts, "messages": [
            {"sequence": item.record.sequence, "created_at": item.record.created_at,
             "importance": item.record.importance, "reasons": item.reasons,
             "similarity": item.similarity, "message": item.record.payload}
            for item in found.items]}

    # schedules

    async def schedule_create(self, a: ScheduleCreateArgs) -> dict[str, Any]:
        schedule = await self.engine.schedules.create_schedule(
            self.namespace, a.goal,
            {"kind": a.cadence_kind, "value": a.cadence_value, "timezone": a.timezone},
            name=a.name, notification_policy=a.notification_policy)
        return _schedule(schedule)

    async def schedule_list(self, a: ScheduleListArgs) -> dict[str, Any]:
        found = await self.engine.schedules.search_schedules(self.namespace, status=a.status,
                                                             limit=a.limit)
        return {"total": found.total, "schedules": [_schedule(s) for s in found.schedules]}

    async def schedule_update(self, a: ScheduleUpdateArgs) -> dict[str, Any]:
        current = await self._own_schedule(a.schedule)
        patch = a.model_dump(include={"goal", "name", "notification_policy"}, exclude_none=True)
        if a.cadence_kind is not None or a.cadence_value is not None or a.timezone is not None:
            if (a.cadence_kind is None) != (a.cadence_value is None):
                raise InvalidInput("give cadence_kind and cadence_value together")
            old = current.cadence
            patch["cadence"] = {"kind": a.cadence_kind or old["kind"],
                                "value": a.cadence_value or old["value"],
                                "timezone": a.timezone or old.get("timezone") or "UTC"}
        store = self.engine.schedules
        if a.status is None and not patch:
            raise InvalidInput("nothing to change: give goal, name, cadence_kind and "
                               "cadence_value, timezone, notification_policy or status")
        schedule = current
        if patch:
            schedule = await store.update_schedule(current.schedule_id, **patch)
        if a.status == "paused" and schedule.status != "paused":
            schedule = await store.pause_schedule(current.schedule_id, "paused by the agent")
        elif a.status == "active" and schedule.status != "active":
            schedule = await store.resume_schedule(current.schedule_id)
        return _schedule(schedule)

    async def schedule_delete(self, a: ScheduleRefArgs) -> dict[str, Any]:
        current = await self._own_schedule(a.schedule)
        deleted = await self.engine.schedules.delete_schedule(current.schedule_id)
        return {"schedule_id": current.schedule_id, "deleted": deleted}

    async def _own_schedule(self, ref: str) -> Any:
        """The namespace's schedule of that id or name; another namespace's is not found
        (the store scopes ids and names alike to the user given)."""
        return await self.engine.schedules.get_schedule(ref, self.namespace)


def _note_id(value: str) -> str:
    if not is_note_id(value):
        raise InvalidInput(f"note_id {value!r} is not a note id (note-<uuid>, as memory_save "
                           "or memory_search returned it)")
    return value


def _note(note: Any) -> dict[str, Any]:
    return {"note_id": note.note_id, "name": note.name, "content": note.content,
            "tags": note.tags, "source": note.source, "created_at": note.created_at,
            "updated_at": note.updated_at}


def _schedule(schedule: Any) -> dict[str, Any]:
    from core.schedules.drafts import schedule_preview

    return schedule_preview(schedule)


TOOLS: tuple[Tool, ...] = (
    Tool("save_memory", "Save content under a key (as pynchy does). Saving again under the same "
         "key replaces the content.", SaveMemoryArgs, MemoryTools.save_memory),
    Tool("recall_memories", "Search the saved memories by keyword: BM25 full-text ranking, "
         "and a substring match when no word matches. score: the note's best bm25 (higher "
         "is better), 1.0 for a substring match.", RecallMemoriesArgs,
         MemoryTools.recall_memories),
    Tool("forget_memory", "Remove the memory saved under a key.", KeyArgs,
         MemoryTools.forget_memory),
    Tool("list_memories", "List the saved memory keys, optionally of one category, a page "
         "at a time (200 by default; total and next_offset say what is left).",
         ListMemoriesArgs, MemoryTools.list_memories),
    Tool("memory_save", "Store a note (as oxydra does) with optional tags; returns its note_id.",
         MemorySaveArgs, MemoryTools.memory_save),
    Tool("memory_search", "Search notes by meaning and words (hybrid vector + full-text), "
         "optionally only those carrying every given tag; one result per note, best first. "
         "score = parts.fused (the weighted sum of the normalised legs vector_score and "
         "fts_score) + parts.speaker + parts.date + parts.neighbour (re-ranking boosts).",
         MemorySearchArgs, MemoryTools.memory_search),
    Tool("memory_update", "Replace a note's content (and tags, when given); its note_id "
         "stays.", MemoryUpdateArgs, MemoryTools.memory_update),
    Tool("memory_delete", "Delete a note by note_id.", NoteIdArgs, MemoryTools.memory_delete),
    Tool("scratchpad_read", "Read a session's scratchpad (empty when it has none).",
         SessionArgs, MemoryTools.scratchpad_read),
    Tool("scratchpad_write", "Replace a session's whole scratchpad: current goals, steps "
         "done, steps pending. Over 32 items or 240 characters an item, it is refused whole.",
         ScratchpadWriteArgs, MemoryTools.scratchpad_write),
    Tool("scratchpad_clear", "Empty a session's scratchpad.", SessionArgs,
         MemoryTools.scratchpad_clear),
    Tool("conversation_append", "Append a message to a conversation at its next sequence; "
         "it is searchable at once by words and, once embedded, by meaning.",
         ConversationAppendArgs, MemoryTools.conversation_append),
    Tool("conversation_get_context", "The context to answer from: the last 10 messages, "
         "every message of importance 0.85 or more, and up to 5 older messages relevant to "
         "the query, each once, in order, with why it was chosen.", GetContextArgs,
         MemoryTools.conversation_get_context),
    Tool("schedule_create", "Create a schedule: a goal and a cadence (cron, once or interval) "
         "in a time zone; refused, saying why, when it is in the past or fires too often. "
         "Returns its next run times.", ScheduleCreateArgs, MemoryTools.schedule_create),
    Tool("schedule_list", "List this agent's schedules, newest first.", ScheduleListArgs,
         MemoryTools.schedule_list),
    Tool("schedule_update", "Change a schedule's goal, name, cadence, time zone or "
         "notification policy, or pause or resume it; checked as a new one is.",
         ScheduleUpdateArgs, MemoryTools.schedule_update),
    Tool("schedule_delete", "Delete a schedule and its run history.", ScheduleRefArgs,
         MemoryTools.schedule_delete),
)
TOOLS_BY_NAME = {tool.name: tool for tool in TOOLS}
