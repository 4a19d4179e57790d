"""Warnings about the retrieval log, at most one a minute.

A role bound to a namespace (row-level security) has every log entry scoped outside it
refused; an agent that queries such a scope on every turn would otherwise add one warning
to the log per query. The first is said at once, the rest are counted and said with the
next one due.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

WARNING_INTERVAL_S = 60.0


class ThrottledWarning:
    """``warn(message)`` logs the message at most once per ``interval_s``; the warnings held
    back in between are counted into the next one logged."""

    def __init__(self, log: logging.Logger, interval_s: float = WARNING_INTERVAL_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._log = log
        self._interval_s = interval_s
        self._clock = clock
        self._last: float | None = None
        self.held_back = 0

    def warn(self, message: str, *args: object) -> None:
        now = self._clock()
        if self._last is not None and now - self._last < self._interval_s:
            self.held_back += 1
            return
        if self.held_back:
            message += f" (and {self.held_back} more like it since the last said)"
        self._log.warning(message, *args)
        self._last, self.held_back = now, 0
