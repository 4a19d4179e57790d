"""In-memory working memory: the recent records of each live session (aidaemon "Working
Memory", nexo-rs ``short_term``).

It spares the database a read for the recent history of active sessions. Each session keeps
at most ``max_history_turns`` records (the oldest drop off; they are already in SQLite), a
session idle longer than ``session_ttl`` is evicted, and when a new session would exceed
``max_sessions`` the oldest-idle one is evicted. Every eviction, but not an explicit
:meth:`WorkingMemory.drop`, calls ``on_expire(session_id, records)``.

Not thread-safe, by design: the engine uses it from its event loop only, where no two calls
interleave, so it takes no locks.
"""

from __future__ import annotations

import time
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class WorkingMemoryStats:
    """A snapshot of the working memory, for ``workbench doctor`` and the status bar."""

    sessions: int
    records: int
    max_history_turns: int
    session_ttl: float
    max_sessions: int
    evicted_idle: int
    evicted_overflow: int
    oldest_idle_seconds: float


class _Session:
    __slots__ = ("records", "touched")

    def __init__(self, records: deque[Any], touched: float) -> None:
        self.records = records
        self.touched = touched


class WorkingMemory:
    """Per-session deques of recent records with idle expiry and a cap on live sessions."""

    def __init__(self, max_history_turns: int = 50, session_ttl: float = 86400.0,
                 max_sessions: int = 10000, clock: Callable[[], float] = time.monotonic,
                 on_expire: Callable[[str, list[Any]], None] | None = None) -> None:
        """Set the caps; ``session_ttl=math.inf`` never expires, ``max_sessions=0`` is unbounded."""
        if max_history_turns < 1:
            raise ValueError(f"max_history_turns must be at least 1, got {max_history_turns}")
        if not session_ttl > 0:
            raise ValueError(f"session_ttl must be positive seconds, got {session_ttl}")
        if max_sessions < 0:
            raise ValueError(f"max_sessions must be 0 (unbounded) or more, got {max_sessions}")
        self.max_history_turns = max_history_turns
        self.session_ttl = float(session_ttl)
        self.max_sessions = max_sessions
        self._clock = clock
        self._on_expire = on_expire
        # Ordered by last touch, oldest first: both the idle sweep and overflow eviction only
        # ever look at the front, and a touch is a move_to_end, so all are O(1) per session.
        self._sessions: OrderedDict[str, _Session] = OrderedDict()
        self._evicted_idle = 0
        self._evicted_overflow = 0

    # -- internals ---------------------------------------------------------------------------

    def _is_idle(self, session: _Session, now: float) -> bool:
        return now - session.touched > self.session_ttl

    def _fire(self, evicted: list[tuple[str, list[Any]]]) -> None:
        """Call on_expire for each eviction once the state is consistent again.

        A failing callback does not stop the others; the first error is re-raised after all.
        """
        if self._on_expire is None:
            return
        error: BaseException | None = None
        for session_id, records in evicted:
            try:
                self._on_expire(session_id, records)
            except Exception as exc:  # re-raised below, after the remaining callbacks ran
                error = error or exc
        if error is not None:
            raise error

    def _pop_idle(self, now: float) -> list[tuple[str, list[Any]]]:
        evicted = []
        while self._sessions:
            session_id, session = next(iter(self._sessions.items()))
            if not self._is_idle(session, now):
                break
            del self._sessions[session_id]
            self._evicted_idle += 1
            evicted.append((session_id, list(session.records)))
        return evicted

    def _touch(self, session_id: str) -> tuple[_Session, list[tuple[str, list[Any]]]]:
        """The live session, created if needed, marked as just used; plus what was evicted."""
        now = self._clock()
        # Sweep before looking up, so a session idle past its TTL is never revived.
        evicted = self._pop_idle(now)
        session = self._sessions.get(session_id)
        if session is None:
            session = _Session(deque(maxlen=self.max_history_turns), now)
            self._sessions[session_id] = session
            # The new session is at the back, so this never evicts it.
            while self.max_sessions and len(self._sessions) > self.max_sessions:
                old_id, old = self._sessions.popitem(last=False)
                self._evicted_overflow += 1
                evicted.append((old_id, list(old.records)))
        else:
            session.touched = now
            self._sessions.move_to_end(session_id)
        return session, evicted

    # -- public API --------------------------------------------------------------------------

    def append(self, session_id: str, record: Any) -> None:
        """Add a record to the session, dropping its oldest beyond ``max_history_turns``."""
        session, evicted = self._touch(session_id)
        session.records.append(record)
        self._fire(evicted)

    def extend(self, session_id: str, records: Iterable[Any]) -> None:
        """Add records in order to the session, keeping only the last ``max_history_turns``."""
        session, evicted = self._touch(session_id)
        session.records.extend(records)
        self._fire(evicted)

    def load(self, session_id: str, records: Iterable[Any]) -> None:
        """Replace the session's records with the last ``max_history_turns`` of ``records``."""
        session, evicted = self._touch(session_id)
        session.records.clear()
        session.records.extend(records)
        self._fire(evicted)

    def get(self, session_id: str) -> list[Any] | None:
        """A copy of the session's records, oldest first, marking it used; None if not held."""
        now = self._clock()
        evicted = self._pop_idle(now)
        session = self._sessions.get(session_id)
        if session is not None:
            session.touched = now
            self._sessions.move_to_end(session_id)
        self._fire(evicted)
        return None if session is None else list(session.records)

    def drop(self, session_id: str) -> bool:
        """Forget the session without calling on_expire; whether it was held."""
        return self._sessions.pop(session_id, None) is not None

    def expire_idle(self) -> list[str]:
        """Evict every session idle longer than ``session_ttl``, firing on_expire; their ids."""
        evicted = self._pop_idle(self._clock())
        self._fire(evicted)
        return [session_id for session_id, _ in evicted]

    def session_ids(self) -> list[str]:
        """The held sessions, oldest-idle first (expired ones not yet swept included)."""
        return list(self._sessions)

    def __len__(self) -> int:
        """The number of sessions held, including idle ones not yet swept."""
        return len(self._sessions)

    def __contains__(self, session_id: object) -> bool:
        """Whether the session is held and not idle past its TTL; does not touch it."""
        if not isinstance(session_id, str):
            return False
        session = self._sessions.get(session_id)
        return session is not None and not self._is_idle(session, self._clock())

    def stats(self) -> WorkingMemoryStats:
        """Counts and caps as they stand, without touching or sweeping anything."""
        oldest = 0.0
        if self._sessions:
            oldest = max(0.0, self._clock() - next(iter(self._sessions.values())).touched)
        return WorkingMemoryStats(
            sessions=len(self._sessions),
            records=sum(len(s.records) for s in self._sessions.values()),
            max_history_turns=self.max_history_turns,
            session_ttl=self.session_ttl,
            max_sessions=self.max_sessions,
            evicted_idle=self._evicted_idle,
            evicted_overflow=self._evicted_overflow,
            oldest_idle_seconds=oldest,
        )

