"""What ``Engine.open(...)`` returns: awaited, or used as ``async with`` (closed on exit)."""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Generator
from typing import Any, Generic, Protocol, TypeVar


class _Closable(Protocol):
    async def close(self) -> None: ...


_Opened = TypeVar("_Opened", bound=_Closable)


class Opening(Generic[_Opened]):
    """``await opening`` gives the opened object; ``async with opening as x`` also closes it."""

    def __init__(self, opener: Callable[[], Coroutine[Any, Any, _Opened]]) -> None:
        self._opener = opener
        self._opened: _Opened | None = None

    def __await__(self) -> Generator[Any, None, _Opened]:
        return self._opener().__await__()

    async def __aenter__(self) -> _Opened:
        self._opened = await self
        return self._opened

    async def __aexit__(self, *exc_info: object) -> None:
        if self._opened is not None:
            await self._opened.close()
