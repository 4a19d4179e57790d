"""The LangGraph checkpointer's storage operations, as both backends run them: each is one
function of a connection in the backend's ``langgraph_rows`` module
(:mod:`core.storage.sqlite.langgraph_rows`, :mod:`core.storage.pg.langgraph_rows`), run as one
read or one write transaction. The promises are stated in
:class:`core.storage.backend.Backend`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from core.storage.langgraph_types import (
        CheckpointPut,
        CheckpointQuery,
        StoredCheckpoint,
        StoredItem,
        WriteRow,
    )
    from core.storage.messages import PreparedMessage
    from core.storage.operations import OperationModules


class LangGraphOperations:
    """The ``langgraph_`` delegations both backends share."""

    _db: Any
    _ops: ClassVar[OperationModules]

    def require_writable(self) -> None:  # pragma: no cover - SharedOperations' is used
        raise NotImplementedError

    async def langgraph_put(self, put: CheckpointPut) -> list[int]:
        """Store a checkpoint with its new messages and removal marks in one transaction."""
        self.require_writable()
        return await self._db.write(self._ops.langgraph_rows.put_checkpoint, put)

    async def langgraph_put_writes(self, session_id: str, agent_identity: str, now: str,
                                   rows: Sequence[WriteRow], replace: bool) -> None:
        """Store a task's pending writes in one transaction."""
        self.require_writable()
        await self._db.write(self._ops.langgraph_rows.put_writes, session_id, agent_identity,
                             now, rows, replace)

    async def langgraph_get(self, agent_identity: str, session_id: str, checkpoint_ns: str,
                            checkpoint_id: str | None) -> StoredCheckpoint | None:
        """A checkpoint (the latest when no id) with its pending writes, one snapshot."""
        return await self._db.read(self._ops.langgraph_rows.get_checkpoint, agent_identity,
                                   session_id, checkpoint_ns, checkpoint_id)

    async def langgraph_list(self, query: CheckpointQuery) -> list[StoredCheckpoint]:
        """Checkpoints newest first with their pending writes, one snapshot."""
        return await self._db.read(self._ops.langgraph_rows.list_checkpoints, query)

    async def langgraph_delete_for_runs(self, agent_identity: str,
                                        run_ids: Sequence[str]) -> int:
        """Delete the checkpoints (and writes) these runs made, in one transaction."""
        self.require_writable()
        return await self._db.write(self._ops.langgraph_rows.delete_for_runs, agent_identity,
                                    run_ids)

    async def langgraph_prune(self, agent_identity: str, session_ids: Sequence[str],
                              keep_latest: bool) -> int:
        """Delete threads' checkpoints (all, or all but the latest per checkpoint namespace)."""
        self.require_writable()
        return await self._db.write(self._ops.langgraph_rows.prune, agent_identity,
                                    session_ids, keep_latest)

    async def langgraph_items(self, agent_identity: str, session_id: str) -> list[StoredItem]:
        """A thread's LangGraph items with their events, in sequence order."""
        return await self._db.read(self._ops.langgraph_rows.thread_items, agent_identity,
                                   session_id)

    async def langgraph_copy_thread(self, agent_identity: str, source_id: str, target_id: str,
                                    now: str,
                                    items: Sequence[tuple[StoredItem, PreparedMessage]],
                                    context_messages: int, context_chars: int) -> None:
        """Copy a thread's checkpoints, writes and messages to another, in one transaction."""
        self.require_writable()
        await self._db.write(self._ops.langgraph_rows.copy_thread, agent_identity, source_id,
                             target_id, now, items, context_messages, context_chars)

    async def removed_sequences(self, session_id: str) -> list[int]:
        """The session's events whose framework item was removed, by sequence."""
        return await self._db.read(self._ops.langgraph_rows.removed_sequences, session_id)
