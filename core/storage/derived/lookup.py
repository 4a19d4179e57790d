"""A mapping read from a saved index's arrays, made a dict only once something changes it.

A loaded index needs its lookup tables (rowid -> slot, rowid -> chunk id) for every write
it follows, but a query asks them for its top ``k`` rows alone. Building the dict at load
was most of a load's Python time (100k entries ~10 ms each, 1M ~100 ms), paid before the
first answer of every new process; :class:`SavedLookup` answers look-ups from the sorted
arrays instead (a binary search each) until the first write, which builds the dict.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, MutableMapping
from typing import Generic, TypeVar

import numpy as np

V = TypeVar("V")


class SavedLookup(MutableMapping[int, V], Generic[V]):
    """``keys[n] -> value(n)`` over sorted, distinct integer ``keys``; a plain dict inside
    from the first change on."""

    def __init__(self, keys: np.ndarray, value: Callable[[int], V],
                 every: Callable[[], list[V]], values: np.ndarray | None = None) -> None:
        """``value(n)`` is the value of ``keys[n]``; ``every()`` all of them, in order;
        ``values``, when the values are integers, all of them as an array (for
        :meth:`get_many`)."""
        self._values = values
        self._saved = np.asarray(keys, dtype=np.int64)
        self._sorted: tuple[np.ndarray, np.ndarray | None] | None = None  # see _by_key
        self._value = value
        self._every = every
        self._dict: dict[int, V] | None = None

    def _by_key(self) -> tuple[np.ndarray, np.ndarray | None]:
        """The keys sorted, and the order that sorts the saved ones (None: saved sorted).
        Sorted on the first look-up, not at load: a query never looks one up, and a
        load's argsort was 2 ms of the first answer at 100k rows."""
        if self._sorted is None:
            saved, order = self._saved, None
            if len(saved) > 1 and not bool((saved[1:] > saved[:-1]).all()):
                order = np.argsort(saved, kind="stable")  # timsort: nearly sorted
            self._sorted = (saved if order is None else saved[order], order)
        return self._sorted

    def _at(self, key: int) -> int:
        """The position of ``key`` in the saved order, -1 when absent."""
        keys, order = self._by_key()
        where = int(np.searchsorted(keys, key))
        if where < len(keys) and int(keys[where]) == key:
            return where if order is None else int(order[where])
        return -1

    def get_many(self, keys: np.ndarray, missing: int = -1) -> np.ndarray:
        """The integer values of ``keys`` at once, ``missing`` where a key is absent."""
        keys = np.asarray(keys, dtype=np.int64)
        if self._dict is not None or self._values is None or not len(self._saved):
            found = self._dict if self._dict is not None else self.held()
            return np.fromiter((found.get(key, missing) for key in keys.tolist()),
                               dtype=np.int64, count=len(keys))
        held, order = self._by_key()
        where = np.minimum(np.searchsorted(held, keys), len(held) - 1)
        present = held[where] == keys
        at = where if order is None else order[where]
        return np.where(present, self._values[at], missing).astype(np.int64)

    def held(self) -> dict[int, V]:
        """Every entry, as the dict this mapping is from now on."""
        if self._dict is None:
            self._dict = dict(zip(self._saved.tolist(), self._every(), strict=True))
        return self._dict

    def __getitem__(self, key: int) -> V:
        if self._dict is not None:
            return self._dict[key]
        at = self._at(int(key)) if isinstance(key, (int, np.integer)) else -1
        if at < 0:
            raise KeyError(key)
        return self._value(at)

    def __contains__(self, key: object) -> bool:
        if self._dict is not None:
            return key in self._dict
        return isinstance(key, (int, np.integer)) and self._at(int(key)) >= 0

    def __setitem__(self, key: int, value: V) -> None:
        self.held()[key] = value

    def __delitem__(self, key: int) -> None:
        del self.held()[key]

    def __iter__(self) -> Iterator[int]:
        return iter(self.held())

    def __len__(self) -> int:
        return len(self._dict) if self._dict is not None else len(self._saved)
