"""Counting cases and finding leaks: the victim's markers in what an attack got back.

Every attack is one *case*: an entry point, an operation and the crafted input. Its answer
(a result, a refusal's message, a command's output, a written file) is turned into text and
searched for the victim's markers: its secret words in any letter case, its ids and names
exactly (an attacker's own session may be named ``VICNS-CHAT``). A marker the input itself
holds is not a leak (a refusal may quote what it was given). A call that fails with anything but the
engine's own refusals (:class:`core.errors.WorkbenchError`) is a *crash*: not a leak, but a
finding, since a crash message may carry data. Writes are followed by a snapshot of the
victim's rows; any difference from the planted state is a leak too.
"""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Finding:
    """One leak or crash: where, with what input, and what was found."""

    entry: str
    operation: str
    given: str
    found: str

    def line(self) -> str:
        return f"{self.entry} {self.operation}({self.given}): {self.found}"


def shown(value: Any, limit: int = 60) -> str:
    """An input as a short, printable repr."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def as_text(value: Any) -> str:
    """Anything an attack got back (results, dataclasses, dicts, exceptions) as text."""
    if isinstance(value, str):
        return value
    if isinstance(value, BaseException):
        return f"{type(value).__name__}: {value}"
    return json.dumps(_plain(value), ensure_ascii=False, default=repr)


def _plain(value: Any) -> Any:
    if hasattr(value, "explain") and hasattr(value, "results"):  # a SearchResult
        return value.explain()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_plain(v) for v in value]
    return value


@dataclass
class Probe:
    """The tally of one run: cases per entry point, leaks and crashes, and the checks."""

    words: Mapping[str, str]  # secret words, matched in any letter case -> what they are
    ids: Mapping[str, str]  # the victim's ids and names, matched exactly -> what they are
    snapshot: Callable[[], Any]  # the victim's rows and files, now
    baseline: Any = None
    cases: Counter[str] = field(default_factory=Counter)
    leaks: list[Finding] = field(default_factory=list)
    crashes: list[Finding] = field(default_factory=list)

    def arm(self) -> None:
        """Take the planted state every later snapshot is compared with."""
        self.baseline = self.snapshot()

    def check(self, entry: str, operation: str, given: Iterable[Any], output: str) -> None:
        """Count one case and record a leak when ``output`` holds a marker ``given`` does not."""
        self.cases[entry] += 1
        inputs = " ".join(_inputs(given))
        lowered, lowered_inputs = output.lower(), inputs.lower()
        found = [label for word, label in self.words.items()
                 if word in lowered and word not in lowered_inputs]
        found += [label for name, label in self.ids.items()
                  if name in output and name not in inputs]
        if found:
            self.leaks.append(Finding(entry, operation, shown(list(given)),
                                      "holds " + ", ".join(sorted(set(found)))))

    def crash(self, entry: str, operation: str, given: Iterable[Any], error: str) -> None:
        self.crashes.append(Finding(entry, operation, shown(list(given)), error[:200]))

    def unchanged(self, entry: str, operation: str, given: Iterable[Any]) -> None:
        """Record a leak when the victim's rows or files differ from the planted state."""
        now = self.snapshot()
        if now != self.baseline:
            changed = sorted(key for key in self.baseline
                             if self.baseline[key] != now.get(key))
            self.leaks.append(Finding(entry, operation, shown(list(given)),
                                      "changed the victim's " + ", ".join(changed)))
            self.baseline = now  # report each change once

    async def call(self, entry: str, operation: str, given: Iterable[Any],
                   run: Callable[[], Awaitable[Any]], *, writes: bool = False,
                   before_snapshot: Callable[[], Awaitable[None]] | None = None) -> Any:
        """Run one engine call as a case: its result or refusal is checked for markers."""
        from core.errors import WorkbenchError

        given = list(given)
        result: Any = None
        try:
            result = await run()
            text = as_text(result)
        except WorkbenchError as refusal:
            text = as_text(refusal)
        except Exception as error:  # noqa: BLE001 - a crash is a finding, not the end
            text = as_text(error)
            self.crash(entry, operation, given, text)
        self.check(entry, operation, given, text)
        if writes:
            if before_snapshot is not None:
                await before_snapshot()
            self.unchanged(entry, operation, given)
        return result


def _inputs(given: Iterable[Any]) -> list[str]:
    """Every string an attack was given, however nested."""
    found: list[str] = []
    for item in given:
        if isinstance(item, str):
            found.append(item)
        elif isinstance(item, Mapping):
            found += _inputs(item.values())
        elif isinstance(item, Iterable):
            found += _inputs(item)
    return found
