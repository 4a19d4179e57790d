"""WorkbenchSession: the OpenAI Agents SDK's session on the engine, so an agent's
conversation is one of the memory's sessions.

Each item ``add_items`` gets is stored twice over in one transaction: as the session's next
event (the Message dict :mod:`core.integrations.openai_agents.items` maps it to: the Sessions
pane shows the conversation as it runs, retrieval searches it, summaries work on it) and as a
``framework_items`` row holding ``json.dumps(item)``, exactly what the SDK's SQLiteSession
stores. ``get_items`` gives back ``json.loads`` of those rows, so an item round-trips as
SQLiteSession's does, byte for byte.

``pop_item`` and ``clear_session`` mark items removed instead of deleting them: the SDK no
longer gets them back (as from SQLiteSession), while their events stay in the memory, shown
as removed. That keeps what the agent said searchable, and a compaction that clears the
session and adds its compacted items (the SDK's ``OpenAIResponsesCompactionSession`` wrapping
this one) keeps the history it replaced. :meth:`WorkbenchSession.forget` deletes the session
for good.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

from agents.items import TResponseInputItem
from agents.memory import SessionABC, SessionSettings
from agents.memory.session_settings import resolve_session_limit

from core import inputs
from core.clock import utc_now
from core.errors import OutOfNamespace
from core.inputs import clean_namespace
from core.integrations.openai_agents.storing import item_json, store_items
from core.storage.messages import out_of_namespace

if TYPE_CHECKING:
    from core.engine import Engine


class WorkbenchSession(SessionABC):
    """An Agents SDK session kept as the engine's session ``session_id``.

    ``namespace``: the agent namespace the session belongs to (default: the engine's
    configured agent); another namespace's session is refused for writes and reads as
    empty. ``session_settings``: the SDK's settings (its ``limit`` is ``get_items``'s
    default). Use it on the event loop the engine runs on.
    """

    def __init__(self, session_id: str, engine: Engine, *, namespace: str | None = None,
                 session_settings: SessionSettings | None = None) -> None:
        inputs.session_id(session_id)
        self.session_id = session_id
        self.engine = engine
        self.namespace = clean_namespace(engine.config.agent if namespace is None else namespace)
        self.session_settings = session_settings or SessionSettings()

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """The session's items, oldest first: the latest ``limit`` (default: the settings'
        limit; None: all)."""
        chosen = resolve_session_limit(limit, self.session_settings)
        rows = await self.engine.backend.agent_items_get(self.namespace, self.session_id,
                                                         chosen)
        return [json.loads(row) for row in rows]

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Store the items as the session's next events and items, in one transaction: a
        refused item (not JSON, not a dict, too large) stores none of them."""
        await self._add(items, replace=False)

    async def pop_item(self) -> TResponseInputItem | None:
        """Remove the latest item and give it back (None when there is none); its event
        stays in the memory, marked removed."""
        raw = await self.engine.backend.agent_items_pop(self.session_id, self.namespace,
                                                        utc_now())
        return None if raw is None else json.loads(raw)

    async def clear_session(self) -> None:
        """Remove every item: ``get_items`` gives none back; their events stay in the
        memory, marked removed (:meth:`forget` deletes them)."""
        await self.engine.backend.agent_items_clear(self.session_id, self.namespace, utc_now())

    async def forget(self) -> None:
        """Delete the session and everything it holds, as :meth:`core.engine.Engine.forget`
        does; another namespace's session is refused."""
        owner = await self.engine.backend.session_agent(self.session_id)
        if owner is None:
            return
        if owner != self.namespace:
            raise OutOfNamespace(out_of_namespace(self.session_id, self.namespace))
        await self.engine.forget(self.session_id)

    async def _atomic_replace_items(self, items: list[TResponseInputItem]) -> bool:
        """The SDK compaction session's replacement (clear, then add the compacted items)
        as one transaction: the history is never seen empty, and a refused item keeps it."""
        await self._add(items, replace=True)
        return True

    async def _add(self, items: Sequence[TResponseInputItem], *, replace: bool) -> None:
        if not items and not replace:
            return
        raw = [item_json(item, index) for index, item in enumerate(items)]
        await store_items(self.engine, self.session_id, self.namespace, utc_now(), items, raw,
                          replace=replace)
