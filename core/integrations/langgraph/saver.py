"""WorkbenchSaver: LangGraph's checkpointer on the engine, so a graph's threads are the
memory's sessions.

Checkpoints and pending writes are stored as LangGraph's serializer made them (one row
each, like its own SQLite saver), in the memory file or database, one transaction per
call. The messages of a root checkpoint's ``messages`` channel also become the thread's
session's events (:mod:`core.integrations.langgraph.messages`), each once however many
checkpoints repeat it, in the checkpoint's own transaction: the Sessions pane shows the
conversation as it runs, retrieval searches it, summaries and restore work on it. A message
the parent checkpoint held and this one does not (``RemoveMessage``) is marked removed; its
event stays. Subgraph checkpoints (a non-empty ``checkpoint_ns``) store no messages: the
root graph's channel carries the conversation.

The async methods run on the engine's event loop. The sync ones (what ``graph.invoke``
calls) hand the call to that loop from another thread and wait, as LangGraph's own async
savers do; called on the loop's own thread they would wait for themselves forever, so they
refuse. A program with no event loop of its own opens the engine on a background one:
:func:`core.integrations.background.open_engine_in_background`.
"""

from __future__ import annotations

import asyncio
import json
import random
from collections import OrderedDict
from collections.abc import AsyncIterator, Coroutine, Iterator, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    SerializerProtocol,
    get_checkpoint_id,
    get_checkpoint_metadata,
)

from core import inputs
from core.clock import utc_now
from core.errors import InvalidInput, OutOfNamespace
from core.inputs import clean_namespace
from core.integrations.langgraph.messages import as_messages, keys_of, to_message
from core.storage.langgraph_types import (
    CheckpointPut,
    CheckpointQuery,
    CheckpointRow,
    StoredCheckpoint,
    WriteRow,
    metadata_text,
)
from core.storage.messages import PreparedMessage, out_of_namespace

if TYPE_CHECKING:
    from core.engine import Engine

T = TypeVar("T")

MESSAGES_CHANNEL = "messages"
"""The state channel whose messages become the session's events (LangGraph's
``MessagesState`` and ``add_messages`` convention)."""

_PARENT_CACHE = 256  # checkpoints whose message keys are kept to tell what the next removed


class WorkbenchSaver(BaseCheckpointSaver[str]):
    """A LangGraph checkpointer keeping its threads as the engine's sessions.

    ``namespace``: the agent namespace the threads' sessions belong to (default: the
    engine's configured agent); another namespace's thread is refused, not read or
    written. ``loop``: the event loop the engine runs on (default: the running one).
    """

    def __init__(self, engine: Engine, *, namespace: str | None = None,
                 loop: asyncio.AbstractEventLoop | None = None,
                 serde: SerializerProtocol | None = None) -> None:
        super().__init__(serde=serde)
        if loop is None:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                raise InvalidInput(
                    "WorkbenchSaver needs the event loop the engine runs on: make it inside "
                    "that loop, pass loop=, or open the engine with core.integrations."
                    "background.open_engine_in_background") from None
        self.loop = loop
        self.engine = engine
        self.namespace = clean_namespace(engine.config.agent if namespace is None else namespace)
        self._message_keys: OrderedDict[tuple[str, str], tuple[str, ...]] = OrderedDict()

    # -- async ---------------------------------------------------------------------------

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint ``config`` names (the thread's latest without an id), with its
        pending writes; None when there is none."""
        configurable = config["configurable"]
        thread_id = _thread_id(configurable)
        stored = await self.engine.backend.langgraph_get(
            self.namespace, thread_id, str(configurable.get("checkpoint_ns", "")),
            get_checkpoint_id(config))
        return None if stored is None else self._tuple(stored)

    async def alist(self, config: RunnableConfig | None, *,
                    filter: dict[str, Any] | None = None,  # noqa: A002 (LangGraph's name)
                    before: RunnableConfig | None = None,
                    limit: int | None = None) -> AsyncIterator[CheckpointTuple]:
        """Checkpoints newest first: of one thread (every thread of the namespace when
        ``config`` is None), of one checkpoint namespace when it names one, before
        ``before``, whose metadata holds every ``filter`` pair, at most ``limit``."""
        for found in await self._list(config, filter, before, limit):
            yield found

    async def _list(self, config: RunnableConfig | None, metadata_filter: dict[str, Any] | None,
                    before: RunnableConfig | None, limit: int | None) -> list[CheckpointTuple]:
        configurable = (config or {}).get("configurable") or {}
        thread = configurable.get("thread_id")
        checkpoint_ns = configurable.get("checkpoint_ns")
        query = CheckpointQuery(
            agent_identity=self.namespace,
            session_id=None if thread is None else _thread_id(configurable),
            checkpoint_ns=None if checkpoint_ns is None else str(checkpoint_ns),
            checkpoint_id=configurable.get("checkpoint_id"),
            before_id=None if before is None else get_checkpoint_id(before),
            metadata_filter=dict(metadata_filter or {}), limit=limit)
        return [self._tuple(stored) for stored in await self.engine.backend.langgraph_list(query)]

    async def aput(self, config: RunnableConfig, checkpoint: Checkpoint,
                   metadata: CheckpointMetadata, new_versions: ChannelVersions,
                   ) -> RunnableConfig:
        """Store a checkpoint and, for a root checkpoint, its new messages as the thread's
        events (removed ones marked), in one transaction; the config naming it."""
        configurable = config["configurable"]
        thread_id = _thread_id(configurable)
        checkpoint_ns = str(configurable.get("checkpoint_ns", ""))
        parent_id = configurable.get("checkpoint_id")
        type_, blob = self.serde.dumps_typed(checkpoint)
        created_at = inputs.message_time(checkpoint.get("ts")) or utc_now()
        row = CheckpointRow(thread_id, checkpoint_ns, checkpoint["id"], parent_id, type_, blob,
                            metadata_text(dict(get_checkpoint_metadata(config, metadata))),
                            created_at)
        put = CheckpointPut(row, self.namespace, utc_now())
        prepared: list[PreparedMessage] = []  # what the put's transaction stored last
        messages = (as_messages(checkpoint["channel_values"].get(MESSAGES_CHANNEL))
                    if checkpoint_ns == "" and MESSAGES_CHANNEL in checkpoint["channel_values"]
                    else None)
        if messages is not None:
            keys = keys_of(messages)
            parent_keys = (await self._keys_of(thread_id, parent_id)
                           if parent_id is not None else ())
            now_held = set(keys)
            chunking = self.engine.config.chunking

            def prepare(positions: Sequence[int]) -> list[Any]:
                prepared[:] = [self.engine.conversations.prepare_message(
                    thread_id, None, to_message(messages[position]), self.namespace,
                    created_at, bound=True) for position in positions]
                return prepared

            put = CheckpointPut(
                row, self.namespace, put.now, keys,
                [key for key in parent_keys if key not in now_held], prepare,
                chunking.context_messages, chunking.context_chars)
            self._remember(thread_id, checkpoint["id"], tuple(keys))
        sequences = await self.engine.backend.langgraph_put(put)
        if sequences:
            self._wrote(thread_id)
            for message, sequence in zip(prepared, sequences, strict=True):
                self.engine.summaries.after_store(thread_id, message.payload_json, sequence)
        return {"configurable": {"thread_id": thread_id, "checkpoint_ns": checkpoint_ns,
                                 "checkpoint_id": checkpoint["id"]}}

    async def aput_writes(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]],
                          task_id: str, task_path: str = "") -> None:
        """Store a task's pending writes of a checkpoint in one transaction."""
        configurable = config["configurable"]
        thread_id = _thread_id(configurable)
        checkpoint_ns = str(configurable.get("checkpoint_ns", ""))
        checkpoint_id = str(configurable["checkpoint_id"])
        rows = [WriteRow(thread_id, checkpoint_ns, checkpoint_id, task_id, task_path,
                         WRITES_IDX_MAP.get(channel, idx), channel,
                         *self.serde.dumps_typed(value))
                for idx, (channel, value) in enumerate(writes)]
        await self.engine.backend.langgraph_put_writes(
            thread_id, self.namespace, utc_now(), rows,
            all(channel in WRITES_IDX_MAP for channel, _ in writes))

    async def adelete_thread(self, thread_id: str) -> None:
        """Forget the thread: its session and everything it holds (checkpoints, writes,
        events), as :meth:`core.engine.Engine.forget` does; another namespace's thread is
        refused."""
        session_id = _thread_id({"thread_id": thread_id})
        owner = await self.engine.backend.session_agent(session_id)
        if owner is None:
            return
        if owner != self.namespace:
            raise OutOfNamespace(out_of_namespace(session_id, self.namespace))
        self._forget_keys(session_id)
        await self.engine.forget(session_id)

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Delete the checkpoints (and their writes) these runs made; events stay."""
        await self.engine.backend.langgraph_delete_for_runs(self.namespace,
                                                            [str(r) for r in run_ids])

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Delete the threads' checkpoints: all but each checkpoint namespace's latest
        (``keep_latest``) or all (``delete``); the conversations stay."""
        if strategy not in ("keep_latest", "delete"):
            raise InvalidInput(f"prune strategy must be 'keep_latest' or 'delete'; got "
                               f"{inputs.shown(strategy)}")
        await self.engine.backend.langgraph_prune(
            self.namespace, [_thread_id({"thread_id": t}) for t in thread_ids],
            strategy == "keep_latest")

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy a thread's checkpoints, writes and messages to another thread (the
        messages read from the source first, then everything written in one transaction)."""
        source = _thread_id({"thread_id": source_thread_id})
        target = _thread_id({"thread_id": target_thread_id})
        items = await self.engine.backend.langgraph_items(self.namespace, source)
        prepared = [(item, self.engine.conversations.prepare_message(
            target, None, json.loads(item.payload_json), self.namespace, item.created_at,
            bound=True)) for item in items]
        chunking = self.engine.config.chunking
        await self.engine.backend.langgraph_copy_thread(
            self.namespace, source, target, utc_now(), prepared, chunking.context_messages,
            chunking.context_chars)
        if prepared:
            self._wrote(target)

    def get_next_version(self, current: str | None, channel: None) -> str:
        """A channel's next version: increasing, with a random tail (as LangGraph's SQLite
        and PostgreSQL savers make them)."""
        if current is None:
            number = 0
        elif isinstance(current, int):
            number = current
        else:
            number = int(current.split(".")[0])
        return f"{number + 1:032}.{random.random():016}"

    # -- sync: the same calls, run on the engine's loop ------------------------------------

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """:meth:`aget_tuple`, from a thread other than the engine's loop's."""
        return self._run(self.aget_tuple(config))

    def list(self, config: RunnableConfig | None, *,
             filter: dict[str, Any] | None = None,  # noqa: A002 (LangGraph's name)
             before: RunnableConfig | None = None,
             limit: int | None = None) -> Iterator[CheckpointTuple]:
        """:meth:`alist`, from a thread other than the engine's loop's."""
        yield from self._run(self._list(config, filter, before, limit))

    def put(self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata,
            new_versions: ChannelVersions) -> RunnableConfig:
        """:meth:`aput`, from a thread other than the engine's loop's."""
        return self._run(self.aput(config, checkpoint, metadata, new_versions))

    def put_writes(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]],
                   task_id: str, task_path: str = "") -> None:
        """:meth:`aput_writes`, from a thread other than the engine's loop's."""
        self._run(self.aput_writes(config, writes, task_id, task_path))

    def delete_thread(self, thread_id: str) -> None:
        """:meth:`adelete_thread`, from a thread other than the engine's loop's."""
        self._run(self.adelete_thread(thread_id))

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """:meth:`adelete_for_runs`, from a thread other than the engine's loop's."""
        self._run(self.adelete_for_runs(run_ids))

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """:meth:`acopy_thread`, from a thread other than the engine's loop's."""
        self._run(self.acopy_thread(source_thread_id, target_thread_id))

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """:meth:`aprune`, from a thread other than the engine's loop's."""
        self._run(self.aprune(thread_ids, strategy=strategy))

    def _run(self, call: Coroutine[Any, Any, T]) -> T:
        """Run ``call`` on the engine's loop and wait for it; refused on that loop's thread,
        where waiting would block the loop that has to run it."""
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self.loop:
            call.close()
            raise asyncio.InvalidStateError(
                "a sync WorkbenchSaver call was made on the engine's event loop thread, where "
                "it would wait for itself; use the async method (await saver.aput(...), "
                "graph.ainvoke(...)) or call it from another thread")
        if self.loop.is_closed():
            call.close()
            raise RuntimeError("the engine's event loop is closed; open the engine again")
        return asyncio.run_coroutine_threadsafe(call, self.loop).result()

    # -- helpers ---------------------------------------------------------------------------

    def _tuple(self, stored: StoredCheckpoint) -> CheckpointTuple:
        row = stored.row
        config: RunnableConfig = {"configurable": {
            "thread_id": row.session_id, "checkpoint_ns": row.checkpoint_ns,
            "checkpoint_id": row.checkpoint_id}}
        parent: RunnableConfig | None = None
        if row.parent_checkpoint_id:
            parent = {"configurable": {
                "thread_id": row.session_id, "checkpoint_ns": row.checkpoint_ns,
                "checkpoint_id": row.parent_checkpoint_id}}
        return CheckpointTuple(
            config, self.serde.loads_typed((row.checkpoint_type, row.checkpoint)),
            json.loads(row.metadata_json), parent,
            [(write.task_id, write.channel, self.serde.loads_typed((write.value_type,
                                                                     write.value)))
             for write in stored.writes])

    async def _keys_of(self, thread_id: str, checkpoint_id: str) -> tuple[str, ...]:
        """The message keys of a root checkpoint of the thread (remembered, else read)."""
        cached = self._message_keys.get((thread_id, checkpoint_id))
        if cached is not None:
            return cached
        stored = await self.engine.backend.langgraph_get(self.namespace, thread_id, "",
                                                         checkpoint_id)
        keys: tuple[str, ...] = ()
        if stored is not None:
            checkpoint = self.serde.loads_typed((stored.row.checkpoint_type,
                                                 stored.row.checkpoint))
            messages = as_messages(checkpoint["channel_values"].get(MESSAGES_CHANNEL))
            keys = tuple(keys_of(messages or []))
        self._remember(thread_id, checkpoint_id, keys)
        return keys

    def _remember(self, thread_id: str, checkpoint_id: str, keys: tuple[str, ...]) -> None:
        self._message_keys[(thread_id, checkpoint_id)] = keys
        self._message_keys.move_to_end((thread_id, checkpoint_id))
        while len(self._message_keys) > _PARENT_CACHE:
            self._message_keys.popitem(last=False)

    def _forget_keys(self, thread_id: str) -> None:
        for key in [k for k in self._message_keys if k[0] == thread_id]:
            del self._message_keys[key]

    def _wrote(self, thread_id: str) -> None:
        """What a store does after its transaction: the embedding worker and the index
        upkeep woken, the working memory's copy of the session let go."""
        self.engine.working_memory.drop(thread_id)
        self.engine.model.wake()
        self.engine.upkeep.wrote()


def _thread_id(configurable: dict[str, Any] | Any) -> str:
    """The thread id as a session id (``InvalidInput`` for one that cannot be)."""
    value = configurable.get("thread_id")
    if value is None:
        raise InvalidInput("the config has no configurable.thread_id; LangGraph needs one to "
                           "checkpoint a thread: pass {'configurable': {'thread_id': ...}}")
    session_id = str(value)
    inputs.session_id(session_id)
    return session_id
