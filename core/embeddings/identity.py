"""Which model a file's vectors were made by, and whether the running model is that model.

A model's name alone does not tell two models apart: a local folder is named by its last
path part, so two folders called alike but holding other weights share a name. The file
therefore records, with the name and dimension, a fingerprint: the model's vectors for a
few fixed probe texts. Two models are the same when their names, sizes and probe vectors
agree; the probe vectors are compared within a tolerance, not by a hash, so the same model
computed on another machine (another BLAS, another summation order) still matches.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

from core.embeddings.base import embed_checked
from core.errors import EmbeddingError

if TYPE_CHECKING:
    from core.embeddings.base import Embedder

# Everyday words, so a small vocabulary still knows some of them.
PROBE_TEXTS = (
    "the meeting moved to tuesday afternoon",
    "database connection pool exhausted after the deploy",
    "I adopted a dog last spring and we walk every morning",
    "what time is it in the city",
)
# Components kept per probe vector: enough to tell models apart, small enough to store.
PROBE_COMPONENTS = 64
# Same model, other arithmetic: differences of 1e-6; other weights: of 1e-1 and more.
PROBE_TOLERANCE = 0.01


@dataclass(frozen=True)
class ModelIdentity:
    """A model as a file records it: what it is called, its size, what to reopen it with,
    and its vectors for the probe texts."""

    name: str
    dimension: int
    source: str | None
    """What ``--model`` reopens it with (a folder path, a hub id), when known."""
    probe: tuple[tuple[float, ...], ...]

    @property
    def fingerprint(self) -> str:
        """A short digest of the probe vectors, for people to compare at a glance."""
        coarse = json.dumps([[round(x, 2) for x in row] for row in self.probe])
        return hashlib.sha256(coarse.encode()).hexdigest()[:8]

    def to_text(self) -> str:
        """The identity as memory_meta stores it."""
        return json.dumps({"name": self.name, "dimension": self.dimension,
                           "source": self.source, "fingerprint": self.fingerprint,
                           "probe": [list(row) for row in self.probe]})

    def same_model(self, other: ModelIdentity) -> bool:
        """True when ``other`` makes the same vectors as this model."""
        if (self.name, self.dimension) != (other.name, other.dimension):
            return False
        if [len(row) for row in self.probe] != [len(row) for row in other.probe]:
            return False
        return all(abs(x - y) <= PROBE_TOLERANCE
                   for a, b in zip(self.probe, other.probe, strict=True)
                   for x, y in zip(a, b, strict=True))

    def reopen_with(self) -> str:
        """How a person reopens the file with this model."""
        return f"--model {_shown(self.source)}" if self.source else self.name


def identify(embedder: Embedder, source: str | None) -> ModelIdentity | None:
    """The running model's identity; None when it cannot embed the probe texts (an HTTP
    endpoint that is down: then only its name and size are compared)."""
    try:
        vectors = embed_checked(embedder, list(PROBE_TEXTS))
    except EmbeddingError:
        return None
    probe = tuple(tuple(round(float(x), 4) for x in row[:PROBE_COMPONENTS]) for row in vectors)
    return ModelIdentity(embedder.name, embedder.dimension, source, probe)


def parse_identity(text: str | None) -> ModelIdentity | None:
    """The identity memory_meta holds, or None when it holds none (or one unreadable)."""
    if not text:
        return None
    try:
        data = json.loads(text)
        return ModelIdentity(str(data["name"]), int(data["dimension"]),
                             None if data.get("source") is None else str(data["source"]),
                             tuple(tuple(float(x) for x in row) for row in data["probe"]))
    except (ValueError, TypeError, KeyError):
        return None


def _shown(text: str, limit: int = 100) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass(frozen=True)
class VectorsOff:
    """Why the file's vectors are not used: the model that made them and the one running.

    Every front end says this for as long as the file is open (DESIGN.md, Storage); its
    advice never replaces real vectors with the deterministic fallback's."""

    made_by: str
    """The model that made the file's vectors (with its fingerprint when names are alike)."""
    reopen: str
    """How to reopen the file with that model."""
    runs: str
    """The model the engine runs (with its fingerprint when names are alike)."""
    replace_with: str
    """What ``reindex --model`` takes to replace the vectors with the running model's."""
    failed_model: str | None = None
    """The configured model that could not load, when the fallback runs instead."""

    @property
    def message(self) -> str:
        """One line: what is wrong and what to do."""
        if self.failed_model is not None:
            return (f"vectors made by {self.made_by}, but the configured model "
                    f"{_shown(self.failed_model)!r} could not load and the deterministic "
                    "fallback runs: the vector leg is off. Fix the model (`workbench doctor` "
                    f"says why) or reopen with {self.reopen}; do not reindex, which would "
                    "replace the vectors with word matches")
        return (f"vectors made by {self.made_by}, engine runs {self.runs}: reopen with "
                f"{self.reopen}, or `workbench reindex --model {_shown(self.replace_with)}` "
                "to replace them (the vector leg is off until then)")

    @property
    def short(self) -> str:
        """The few words a header has room for."""
        if self.failed_model is not None:
            return f"vectors OFF: made by {self.made_by}; the configured model did not load"
        return f"vectors OFF: made by {self.made_by}, engine runs {self.runs}"


def vectors_off(recorded_name: str, recorded: ModelIdentity | None,
                running: ModelIdentity | None, *, running_name: str, running_source: str,
                failed_model: str | None) -> VectorsOff | None:
    """Why the vectors made by ``recorded_name`` (``recorded``, when the file has its
    identity) cannot serve the running model, or None when they can."""
    if recorded_name == running_name and (recorded is None or running is None
                                          or recorded.same_model(running)):
        return None
    made_by, runs = recorded_name, running_name
    if recorded_name == running_name and recorded is not None and running is not None:
        made_by = f"{recorded_name} (fingerprint {recorded.fingerprint})"
        runs = f"{running_name} (fingerprint {running.fingerprint})"
    reopen = recorded.reopen_with() if recorded is not None else recorded_name
    return VectorsOff(made_by, reopen, runs, running_source, failed_model)
