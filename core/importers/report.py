"""What an import did: per kind, rows added, rows already there, rows skipped and why.

Every record an importer reads from its source ends in exactly one of three places: it
landed (``added``), the target held it already (``already``, which is what a second import
of the same file reports for everything), or it is listed in ``skipped`` with where it was
in the source and why it did not land. ``remarks`` say what the import did beside rows
(vectors re-embedded, timestamps kept in metadata, derived tables not copied).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

Progress = Callable[[int, int], None]
"""``progress(done, total)``: records handled so far, out of the source's records."""


@dataclass(frozen=True)
class Skip:
    """One source record that did not land: its kind, where it is in the source, why."""

    kind: str
    where: str
    reason: str

    def to_dict(self) -> dict[str, str]:
        """The skip as a JSON-ready dict."""
        return {"kind": self.kind, "where": self.where, "reason": self.reason}


@dataclass
class KindCounts:
    """Records of one kind: added, already in the target, skipped."""

    added: int = 0
    already: int = 0
    skipped: int = 0

    @property
    def total(self) -> int:
        """Every record of this kind the source held."""
        return self.added + self.already + self.skipped


@dataclass
class ImportReport:
    """An import's outcome, built up as it runs (see the module docstring)."""

    source: str
    source_format: str
    target: str
    namespace: str
    counts: dict[str, KindCounts] = field(default_factory=dict)
    skipped: list[Skip] = field(default_factory=list)
    remarks: list[str] = field(default_factory=list)

    def kind(self, kind: str) -> KindCounts:
        """The counts of one kind, made when first asked for (so a kind shows with zeros)."""
        return self.counts.setdefault(kind, KindCounts())

    def added(self, kind: str, count: int = 1) -> None:
        """Record ``count`` records of ``kind`` that landed."""
        self.kind(kind).added += count

    def already(self, kind: str, count: int = 1) -> None:
        """Record ``count`` records of ``kind`` the target held already."""
        self.kind(kind).already += count

    def skip(self, kind: str, where: str, reason: str) -> None:
        """Record one record of ``kind`` that did not land, with where it is and why."""
        self.kind(kind).skipped += 1
        self.skipped.append(Skip(kind, where, reason))

    def remark(self, text: str) -> None:
        """Say something about the import as a whole."""
        self.remarks.append(text)

    @property
    def total_added(self) -> int:
        """Records that landed, of every kind."""
        return sum(c.added for c in self.counts.values())

    def to_dict(self) -> dict[str, Any]:
        """The report as a JSON-ready dict."""
        return {
            "source": self.source, "format": self.source_format, "target": self.target,
            "namespace": self.namespace,
            "counts": {kind: {"added": c.added, "already": c.already, "skipped": c.skipped}
                       for kind, c in self.counts.items()},
            "skipped": [s.to_dict() for s in self.skipped],
            "remarks": list(self.remarks),
        }

    def lines(self, max_groups: int = 20) -> list[str]:
        """The report for people: one line per kind, the skips grouped by kind and reason
        (the first ``max_groups`` groups; ``--json`` lists every skip), then the remarks."""
        out = [f"imported {self.source} ({self.source_format}) into {self.target}, "
               f"namespace {self.namespace!r}"]
        width = max((len(kind) for kind in self.counts), default=0)
        for kind, c in self.counts.items():
            out.append(f"{kind:<{width}}  {c.added:,} added, {c.already:,} already there, "
                       f"{c.skipped:,} skipped")
        groups: dict[tuple[str, str], list[str]] = {}
        for skip in self.skipped:
            groups.setdefault((skip.kind, skip.reason), []).append(skip.where)
        for (kind, reason), places in list(groups.items())[:max_groups]:
            counted = f"{len(places):,} {kind}" if len(places) > 1 else kind
            out.append(f"skipped {counted} ({_places(places)}): {reason}")
        if len(groups) > max_groups:
            rest = sum(len(places) for places in list(groups.values())[max_groups:])
            out.append(f"... and {rest:,} more skipped for {len(groups) - max_groups:,} other "
                       "reasons (--json lists them all)")
        out.extend(f"note: {remark}" for remark in self.remarks)
        return out


def _places(places: list[str], shown: int = 3) -> str:
    """Where the skipped records are: all of a few, else the first ones and how many more."""
    if len(places) <= shown:
        return "; ".join(places)
    return f"{'; '.join(places[:shown])}; and {len(places) - shown:,} more"
