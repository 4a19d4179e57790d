"""Storing Agents SDK items as a session's events and items, in one transaction: what
:class:`~core.integrations.openai_agents.session.WorkbenchSession` and the SQLiteSession
importer (:mod:`core.importers.openai_agents_session`) both do. No SDK import.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from core import inputs
from core.errors import InvalidInput
from core.integrations.openai_agents.items import to_message
from core.storage.messages import PreparedMessage

if TYPE_CHECKING:
    from core.engine import Engine


def item_json(item: Any, index: int) -> str:
    """The item as the SDK's SQLiteSession stores it (``json.dumps`` with its defaults), or
    a refusal naming the item."""
    if not isinstance(item, dict):
        raise InvalidInput(f"item {index} of add_items must be a dict (a Responses input "
                           f"item); got {type(item).__name__}; nothing was stored")
    try:
        return json.dumps(item)
    except (TypeError, ValueError, RecursionError) as error:
        raise InvalidInput(f"item {index} of add_items is not JSON ({inputs.shown(str(error))});"
                           " nothing was stored") from None


async def store_items(engine: Engine, session_id: str, namespace: str, now: str,
                      items: Sequence[Any], raw_json: Sequence[str],
                      times: Sequence[str] | None = None, *, replace: bool = False) -> list[int]:
    """Store ``items`` (whose JSON text is ``raw_json``, kept as given) as the session's
    next events with their items, at ``times`` (default: ``now``), in one transaction; with
    ``replace`` the items the session held are marked removed first. The new events'
    sequences. A refused item (``InvalidInput``) stores none of them."""
    prepared: list[PreparedMessage] = []
    for index, item in enumerate(items):
        try:
            prepared.append(engine.conversations.prepare_message(
                session_id, None, to_message(item), namespace,
                now if times is None else times[index], bound=True))
        except InvalidInput as error:
            raise type(error)(f"item {index} of add_items was refused: {error}; "
                              "nothing was stored") from None
    chunking = engine.config.chunking
    sequences = await engine.backend.agent_items_add(
        session_id, namespace, now, prepared, raw_json, replace, chunking.context_messages,
        chunking.context_chars)
    if sequences:
        # What a store does after its transaction: the embedding worker and the index upkeep
        # woken, the working memory's copy of the session let go, the summary check run.
        engine.working_memory.drop(session_id)
        engine.model.wake()
        engine.upkeep.wrote()
        for message, sequence in zip(prepared, sequences, strict=True):
            engine.summaries.after_store(session_id, message.payload_json, sequence)
    return sequences
