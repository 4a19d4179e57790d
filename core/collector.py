"""Keeping Python's cyclic garbage collector off the objects that existed before an import.

An import allocates batch after batch of objects that live about a second (a helper's
prepared messages, the writer's rows), so the collector's young passes promote them, and
every few batches that sets off a full pass over every object the process holds: modules,
the caller's data, all of it. In a 100k-message import those full passes took 3.7 s, holding
the GIL that the writer's thread and the event loop need (20 passes of ~190 ms).

:func:`collector_spared` moves what exists when an import starts to the collector's
permanent generation (``gc.freeze``) and back when the last import running ends
(``gc.unfreeze``). Full passes then walk only what the import made: 0.8 s in that import,
which took 15.5 s instead of 17.8. Reference counting still frees everything as usual; a
cycle that became garbage before the import is collected after it.

A process that froze objects itself (``gc.get_freeze_count()`` above 0 when the first import
starts, as a server does before it forks workers) is left as it is: unfreezing would undo
its freeze.
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator

_lock = threading.Lock()
_holders = 0  # imports running under this module's freeze


@contextlib.contextmanager
def collector_spared() -> Iterator[None]:
    """Keep the collector's full passes to the objects made inside the block (see above);
    nests and overlaps across threads and tasks."""
    global _holders
    with _lock:
        ours = _holders > 0 or gc.get_freeze_count() == 0
        if ours:
            if _holders == 0:
                gc.freeze()
            _holders += 1
    try:
        yield
    finally:
        if ours:
            with _lock:
                _holders -= 1
                if _holders == 0:
                    gc.unfreeze()
