"""Stopping background tasks for sure, and telling upkeep's reads apart.

On Python 3.11, ``asyncio.wait_for`` drops a cancellation that arrives just as the awaited
thing completes (CPython gh-86296, fixed in 3.12); drivers wait that way (psycopg's pool
hands over a connection through it). A background loop cancelled at that instant goes on
to its next sleep as if nothing happened, and whoever awaits it waits for ever. So a task
is cancelled again until it has stopped.
"""

from __future__ import annotations

import asyncio
from contextvars import ContextVar
from typing import Any

RECANCEL_EVERY_S = 0.2
_UPKEEP: ContextVar[bool] = ContextVar("workbench_upkeep", default=False)


async def cancel_and_wait(*tasks: asyncio.Task[Any]) -> list[BaseException | None]:
    """Cancel ``tasks`` and wait until each has finished, cancelling again any that let a
    cancellation go; each one's exception (None when it returned or was cancelled)."""
    pending = {task for task in tasks if not task.done()}
    while pending:
        for task in pending:
            task.cancel()
        _, pending = await asyncio.wait(pending, timeout=RECANCEL_EVERY_S)
    return [None if task.cancelled() else task.exception() for task in tasks]


def mark_as_upkeep() -> None:
    """Mark the running task (and the tasks and threads it starts) as background upkeep.

    A SQLite file's reader connections open as reads overlap
    (:mod:`core.storage.sqlite.connection`); an upkeep read takes an idle one or waits for
    one, and never opens one. Right after an open, the embedding worker's backlog read
    and the consolidation loop's first read landed beside the first query, and opening two
    connections for them (threads, connections, schema reads) took its median at 100k
    chunks from 9 to 13 ms on two cores.
    """
    _UPKEEP.set(True)


def in_upkeep() -> bool:
    """Whether the running task was marked by :func:`mark_as_upkeep`."""
    return _UPKEEP.get()
