"""The OpenAI Agents SDK session's storage operations, as both backends run them: each is
one function of a connection in the backend's ``agent_items`` module
(:mod:`core.storage.sqlite.agent_items`, :mod:`core.storage.pg.agent_items`), run as one read or
one write transaction. The promises are stated in :class:`core.storage.backend.Backend`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from core.storage.messages import PreparedMessage
    from core.storage.operations import OperationModules


class AgentItemsOperations:
    """The ``agent_items_`` delegations both backends share."""

    _db: Any
    _ops: ClassVar[OperationModules]

    def require_writable(self) -> None:  # pragma: no cover - SharedOperations' is used
        raise NotImplementedError

    async def agent_items_add(self, session_id: str, agent_identity: str, now: str,
                              prepared: Sequence[PreparedMessage], raw_json: Sequence[str],
                              replace: bool, context_messages: int,
                              context_chars: int) -> list[int]:
        """Store items as the session's next events with their raw JSON, in one
        transaction."""
        self.require_writable()
        return await self._db.write(self._ops.agent_items.add_items, session_id,
                                    agent_identity, now, prepared, raw_json, replace,
                                    context_messages, context_chars)

    async def agent_items_get(self, agent_identity: str, session_id: str,
                              limit: int | None) -> list[str]:
        """The JSON of the session's items not removed, oldest first (the latest ``limit``)."""
        return await self._db.read(self._ops.agent_items.live_items, agent_identity,
                                   session_id, limit)

    async def agent_items_pop(self, session_id: str, agent_identity: str,
                              now: str) -> str | None:
        """Mark the session's latest item removed, in one transaction; its JSON."""
        self.require_writable()
        return await self._db.write(self._ops.agent_items.pop_item, session_id,
                                    agent_identity, now)

    async def agent_items_clear(self, session_id: str, agent_identity: str, now: str) -> int:
        """Mark every item of the session removed, in one transaction; how many."""
        self.require_writable()
        return await self._db.write(self._ops.agent_items.clear_items, session_id,
                                    agent_identity, now)
