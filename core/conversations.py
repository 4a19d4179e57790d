"""Conversations: storing messages, reading them back, forgetting sessions.

A message is validated and turned into rows (text, chunks, hashes, metadata) off the
writer's lock, then stored in one transaction (oxydra's nine steps, see
:meth:`core.storage.backend.Backend.write_messages`). Embedding happens after,
in the embedding worker, which a store wakes. The working memory keeps the recent tail of
live sessions, always checked against the file so another process's writes are never
missed.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from core import inputs
from core.clock import utc_now
from core.errors import InvalidInput, NotFound, OutOfNamespace
from core.inputs import clean_namespace
from core.prepare import prepare_message
from core.storage.messages import (
    PreparedMessage,
    out_of_namespace,
)
from core.types import MemoryRecord, SessionInfo, StoreResult

if TYPE_CHECKING:
    from core.config import Config
    from core.storage.backend import Backend
    from core.working_memory import WorkingMemory


class SessionWatcher(Protocol):
    """What the conversations tell the rolling summaries (``core.summary.service.Summaries``,
    above them) of each store and each forgotten session."""

    def after_store(self, session_id: str, payload_json: str, sequence: int) -> None: ...

    def forget(self, session_id: str) -> None: ...


async def require_session_in(backend: Backend, session_id: str, namespace: str) -> None:
    """Refuse (``OutOfNamespace``) a session that exists and is not ``namespace``'s; a
    session that does not exist yet passes (it holds nothing to reach)."""
    namespace = clean_namespace(namespace)
    owner = await backend.session_agent(inputs.utf8_text(session_id, "session_id"))
    if owner is not None and owner != namespace:
        raise OutOfNamespace(out_of_namespace(session_id, namespace))


class Conversations:
    """Store, append, recall and forget the messages of sessions."""

    def __init__(self, backend: Backend, config: Config, working_memory: WorkingMemory,
                 wake: Callable[[], None], summaries: SessionWatcher) -> None:
        self._backend = backend
        self._config = config
        self._working_memory = working_memory
        self._wake = wake
        self._summaries = summaries

    def prepare_message(self, session_id: str, sequence: int | None, payload: object,
                        agent: str | None, created_at: str,
                        bound: bool = False) -> PreparedMessage:
        """Validate a message and compute its rows (text, chunks, hashes, metadata), off-lock.

        ``bound``: the write is refused (``OutOfNamespace``) unless the session is ``agent``'s
        or new. Raises ``InvalidInput`` (``InvalidMessage`` for a bad payload); writes nothing.
        """
        return prepare_message(self._config, session_id, sequence, payload, agent, created_at,
                               bound)

    async def store(self, session_id: str, sequence: int, payload: Any, agent: str | None,
                    namespace: str | None, created_at: object = None) -> StoreResult:
        """Store one message durably (oxydra's nine steps, one transaction).

        Raises ``InvalidMessage`` for a payload that is not a Message, ``SequenceError`` when
        ``sequence`` is not above the session's last, ``InvalidInput`` for a ``created_at``
        that :func:`core.inputs.message_time` refuses; in each case nothing is written.
        ``created_at`` is the message's own time (None: now). ``namespace`` binds the call:
        the session must be that namespace's (or new, and made in it), else
        ``OutOfNamespace`` and nothing is written.
        """
        if sequence is None:
            raise InvalidInput("sequence is required; use append() to allocate the next one")
        return await self._store_one(session_id, sequence, payload, agent, namespace,
                                     created_at)

    async def append(self, session_id: str, message: Any, agent: str | None,
                     namespace: str | None, created_at: object = None) -> StoreResult:
        """Store a message at the session's next sequence (allocated in the transaction);
        ``created_at`` and ``namespace`` as :meth:`store` takes them."""
        return await self._store_one(session_id, None, message, agent, namespace, created_at)

    async def _store_one(self, session_id: str, sequence: int | None, payload: Any,
                         agent: str | None, namespace: str | None,
                         created_at: object) -> StoreResult:
        if namespace is not None:
            agent = clean_namespace(namespace)
        prepared = self.prepare_message(
            session_id, sequence, payload, agent,
            inputs.message_time(created_at) or utc_now(), bound=namespace is not None)
        chunking = self._config.chunking
        (outcome,) = await self._backend.write_messages(
            [prepared], all_or_nothing=True, context_messages=chunking.context_messages,
            context_chars=chunking.context_chars)
        assert outcome.sequence is not None
        self._remember(prepared, outcome.sequence)
        if outcome.inserted:
            self._wake()
        self._summaries.after_store(session_id, prepared.payload_json, outcome.sequence)
        return StoreResult(session_id, outcome.sequence, outcome.inserted, outcome.deduplicated)

    def _remember(self, prepared: PreparedMessage, sequence: int) -> None:
        """Keep the working memory in step with a store, when it holds the session."""
        held = self._working_memory.get(prepared.session_id)
        if held is None:
            return
        if held and held[-1].sequence >= sequence:
            self._working_memory.drop(prepared.session_id)
            return
        self._working_memory.append(prepared.session_id, MemoryRecord(
            prepared.session_id, sequence, json.loads(prepared.payload_json),
            prepared.created_at, prepared.importance))

    async def recall(self, session_id: str, limit: int | None = None) -> list[MemoryRecord]:
        """A session's stored events, oldest first; with ``limit``, its latest ``limit``.

        Served from working memory when it holds the session's tail (checked against the
        file's last sequence, so another process's writes are never missed).
        """
        inputs.utf8_text(session_id, "session_id")
        if limit is not None and inputs.int64(limit, "limit") < 0:
            raise InvalidInput(f"limit must not be negative, got {limit}")
        held = self._working_memory.get(session_id)
        if held is not None and limit is not None and len(held) >= limit:
            last = await self._backend.last_sequence(session_id)
            if held and held[-1].sequence == last:
                return list(held[len(held) - limit:]) if limit else []
        rows = await self._backend.read_events(session_id, limit)
        records = rows
        if limit is None or limit >= self._config.short_term.max_history_turns:
            self._working_memory.load(session_id, records)
        return records

    async def list_sessions(self, agent: str | None = None, limit: int | None = None,
                            offset: int = 0) -> list[SessionInfo]:
        """Sessions, most recently active first, with event and chunk counts."""
        rows = await self._backend.list_sessions(agent, limit, offset)
        return rows

    async def forget(self, session_id: str) -> bool:
        """Delete a session and everything under it; False when there was no such session."""
        inputs.utf8_text(session_id, "session_id")
        self._working_memory.drop(session_id)
        self._summaries.forget(session_id)
        return await self._backend.delete_session(session_id)

    async def session_state(self, session_id: str) -> dict[str, Any]:
        """The session's state (last_sequence, summary_state, scratchpad)."""
        state = await self._backend.read_session_state(session_id)
        if state is None:
            raise NotFound(f"no session {inputs.shown(session_id)}")
        return state
