"""The working-memory scratchpad (oxydra): a short list an agent keeps per session.

It holds the current goals, the steps done and the steps pending during a long run, so
the agent does not drift. A write replaces the whole list; a list over the limits (32
items of 240 characters by default, ``[scratchpad]`` in the config) is refused whole, with
a message naming the limit, and the scratchpad keeps what it had. It is stored in the
session's ``session_state`` (:mod:`core.storage.sqlite.scratchpad`), so it lasts as long as the
session and goes with it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from core import inputs
from core.clock import utc_now
from core.conversations import require_session_in
from core.errors import InvalidInput
from core.inputs import clean_namespace, shown
from core.storage.vocabulary import MEMORY_PREFIX
from core.types import ScratchpadState

if TYPE_CHECKING:
    from core.config import ScratchpadConfig
    from core.storage.backend import Backend


def check_items(items: Any, max_items: int, max_chars: int) -> list[str]:
    """The items as a list of strings within the limits, or InvalidInput naming the limit."""
    if isinstance(items, str | bytes) or not isinstance(items, Sequence):
        raise InvalidInput(f"a scratchpad is a list of strings, got {type(items).__name__}")
    if len(items) > max_items:
        raise InvalidInput(f"a scratchpad holds at most {max_items} items; {len(items)} were "
                           "given, and the scratchpad was left as it was")
    for index, item in enumerate(items, 1):  # numbered as a person counts them
        if not isinstance(item, str):
            raise InvalidInput(f"scratchpad item {index} is a {type(item).__name__}; items "
                               "must be strings, and the scratchpad was left as it was")
        if len(item) > max_chars:
            raise InvalidInput(f"scratchpad item {index} is {len(item)} characters; the limit "
                               f"is {max_chars} per item, and the scratchpad was left as it was")
        try:
            item.encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidInput(f"scratchpad item {index} is not valid UTF-8 text; the "
                               "scratchpad was left as it was") from None
        if "\x00" in item:  # PostgreSQL's jsonb cannot hold it: refused on both backends
            raise InvalidInput(f"scratchpad item {index} holds a NUL character (U+0000), which "
                               "a scratchpad cannot store; the scratchpad was left as it was")
    return list(items)


def _session(session_id: Any) -> str:
    """A session id to read or clear by: any non-blank text, so a session named before the
    identifier rule can still be reached (a write holds it to the rule)."""
    if not isinstance(session_id, str) or not session_id.strip():
        raise InvalidInput(f"session_id must be a non-empty string, got {shown(session_id)}")
    if len(session_id) > inputs.MAX_SESSION_ID_CHARS:
        raise InvalidInput(f"session_id {shown(session_id)} is {len(session_id):,} characters; "
                           f"no session id is longer than {inputs.MAX_SESSION_ID_CHARS:,}")
    return session_id


class Scratchpad:
    """Read, write (whole-replace) and clear a session's scratchpad."""

    def __init__(self, backend: Backend, limits: ScratchpadConfig, agent: str) -> None:
        self._backend = backend
        self._limits = limits
        self._agent = agent

    async def read(self, session_id: str, *,
                   namespace: str | None = None) -> ScratchpadState | None:
        """The session's scratchpad, or None when it has none (``namespace``: refused with
        ``OutOfNamespace`` when the session is another namespace's)."""
        session_id = _session(session_id)
        if namespace is not None:
            await require_session_in(self._backend, session_id, namespace)
        return await self._backend.read_scratchpad(session_id)

    async def write(self, session_id: str, items: Sequence[str], *, agent: str | None = None,
                    namespace: str | None = None) -> ScratchpadState:
        """Replace the session's scratchpad with ``items`` (the session is made if new).

        ``namespace``: the session must be that namespace's (or new, and made in it); another
        namespace's is refused with ``OutOfNamespace`` and nothing is written.
        """
        session_id = inputs.session_id(session_id)
        if session_id.startswith(MEMORY_PREFIX):
            raise InvalidInput(f"session {shown(session_id)} holds a namespace's notes; a "
                               "scratchpad belongs to a conversation's session")
        checked = check_items(items, self._limits.max_items, self._limits.max_item_chars)
        # An empty namespace is refused, never read as "the configured agent".
        owner = (clean_namespace(namespace) if namespace is not None
                 else agent or self._agent)
        return await self._backend.write_scratchpad(session_id, owner, checked, utc_now(),
                                                    namespace is not None)

    async def clear(self, session_id: str, *, namespace: str | None = None) -> bool:
        """Empty the session's scratchpad; False when it had none (``namespace``: refused
        with ``OutOfNamespace`` when the session is another namespace's)."""
        session_id = _session(session_id)
        if namespace is not None:
            await require_session_in(self._backend, session_id, namespace)
        return await self._backend.clear_scratchpad(session_id, utc_now(), namespace)

    async def sessions(self, limit: int = 200) -> list[ScratchpadState]:
        """The sessions that have a scratchpad, most recently written first."""
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise InvalidInput(f"limit must be a positive integer, got {shown(limit)}")
        return await self._backend.scratchpad_sessions(limit)
