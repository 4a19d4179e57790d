"""An engine on an event loop of its own, for a program that has none.

The engine is async; a framework's sync entry points (LangGraph's ``graph.invoke``, which
calls the checkpointer's sync ``put``/``get_tuple``/``list``) run in a thread with no event
loop. :func:`open_engine_in_background` opens the engine on a loop running in a daemon
thread, so those sync calls hand their work to it and wait::

    with open_engine_in_background("memory.db") as opened:
        saver = WorkbenchSaver(opened.engine, loop=opened.loop)
        graph = builder.compile(checkpointer=saver)
        graph.invoke({"messages": [...]}, {"configurable": {"thread_id": "chat-1"}})
        opened.run(opened.engine.drain())        # any engine call, from this thread
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from core.engine import ConfigSource, Engine

T = TypeVar("T")


class BackgroundEngine:
    """An engine opened on a loop in a daemon thread; ``close()`` (or leaving the ``with``)
    closes the engine and stops the loop."""

    def __init__(self, path: str | os.PathLike[str], config: ConfigSource = None,
                 **options: Any) -> None:
        from core.engine import Engine

        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever,
                                        name="workbench-engine-loop", daemon=True)
        self._thread.start()
        async def open_engine() -> Engine:
            return await Engine.open(path, config, **options)

        try:
            self.engine: Engine = self.run(open_engine())
        except BaseException:
            self._stop()
            raise

    def run(self, call: Coroutine[Any, Any, T]) -> T:
        """Run ``call`` on the engine's loop and wait for its result (from any other
        thread)."""
        return asyncio.run_coroutine_threadsafe(call, self.loop).result()

    def close(self) -> None:
        """Close the engine (its pending work finished) and stop the loop."""
        if self.loop.is_closed():
            return
        try:
            self.run(self.engine.close())
        finally:
            self._stop()

    def _stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join()
        self.loop.close()

    def __enter__(self) -> BackgroundEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_engine_in_background(path: str | os.PathLike[str], config: ConfigSource = None,
                              **options: Any) -> BackgroundEngine:
    """Open the memory at ``path`` (as :meth:`core.engine.Engine.open` takes it) on an event
    loop running in a daemon thread."""
    return BackgroundEngine(path, config, **options)
