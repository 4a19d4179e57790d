"""Running a dataset through an Engine: storing its messages, querying, scoring, sweeping.

Everything goes through the engine's public methods (``recall``, ``store_many``,
``search``), so an evaluation measures exactly what an agent gets. A sweep searches each
query once and re-ranks the kept legs at every grid point, as the playground does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from core.errors import InvalidInput
from core.evaluation.dataset import Dataset
from core.evaluation.metrics import (
    METRICS,
    QueryScore,
    Summary,
    expand_turns,
    score_query,
    summarize,
)
from core.evaluation.stats import LEVEL, RESAMPLES, Interval, intervals_dict, metric_intervals
from core.retrieval.fusion import FUSIONS

if TYPE_CHECKING:
    from core.bulk import BulkItem
    from core.engine import Engine
    from core.retrieval.search import SearchResult

# LoCoMo's adversarial questions ask about things never said; their "evidence" is a
# decoy, so they are scored and shown on their own but kept out of the overall figures.
EXCLUDED_CATEGORIES = ("5",)
DEFAULT_TOP_K_CHUNKS = 50  # twice the deepest cut (25 turns), for turns split over chunks
SWEEP_WEIGHTS = tuple(i / 10 for i in range(11))


@dataclass(frozen=True)
class SessionImport:
    """What storing one dataset session did."""

    session_id: str
    messages: int
    stored: int
    already: int


@dataclass(frozen=True)
class StoreReport:
    """What storing a dataset did, per session."""

    sessions: list[SessionImport]
    chunks_inserted: int

    @property
    def stored(self) -> int:
        """Messages newly stored."""
        return sum(s.stored for s in self.sessions)

    @property
    def already(self) -> int:
        """Messages the file held already."""
        return sum(s.already for s in self.sessions)


async def held_sequences(engine: Engine, dataset: Dataset) -> dict[str, set[int]]:
    """For each dataset session, the sequences the engine holds of it.

    Raises ``InvalidInput`` when a stored event's ``metadata.message_id`` differs from the
    dataset's message at that sequence: the file holds another conversation under that id.
    """
    held: dict[str, set[int]] = {}
    for session_id, messages in dataset.messages.items():
        expected = {m.sequence: m.message_id for m in messages}
        sequences: set[int] = set()
        for record in await engine.recall(session_id):
            want = expected.get(record.sequence)
            got = (record.payload.get("metadata") or {}).get("message_id")
            if want is not None and got != want:
                raise InvalidInput(
                    f"session {session_id!r} in {engine.location} holds other messages (sequence "
                    f"{record.sequence} is {got!r}, the dataset's is {want!r}); use another "
                    "file or forget that session first")
            sequences.add(record.sequence)
        held[session_id] = sequences & expected.keys()
    return held


async def store_dataset(engine: Engine, dataset: Dataset) -> StoreReport:
    """Store the dataset's messages not yet in the file: importing twice adds nothing.

    An import that stopped part way resumes after the last stored message.
    """
    held = await held_sequences(engine, dataset)
    items: list[BulkItem] = []
    sessions = []
    for session_id, messages in dataset.messages.items():
        have = held[session_id]
        missing = [m for m in messages if m.sequence not in have]
        if have and missing and missing[0].sequence < max(have):
            raise InvalidInput(
                f"session {session_id!r} in {engine.location} has gaps (message "
                f"{missing[0].message_id} is missing), which sequences cannot fill; forget the "
                "session and import again")
        items.extend((session_id, m.sequence, m.message, m.created_at) for m in missing)
        sessions.append(SessionImport(session_id, len(messages), len(missing), len(have)))
    inserted = 0
    if items:
        result = await engine.store_many(items)
        inserted = result.chunks_inserted
        if result.rejected:
            first = result.rejected[0]
            raise InvalidInput(f"{len(result.rejected)} messages were refused, the first "
                               f"({first.session_id} sequence {first.sequence}): {first.reason}")
    return StoreReport(sessions, inserted)


async def check_engine_holds(engine: Engine, dataset: Dataset) -> None:
    """Refuse to evaluate a file that lacks some of the dataset's messages."""
    held = await held_sequences(engine, dataset)
    for session_id, messages in dataset.messages.items():
        missing = len(messages) - len(held[session_id])
        if missing:
            raise InvalidInput(f"{engine.location} lacks {missing} of the {len(messages)} "
                               f"messages of session {session_id!r}; import the dataset's "
                               "source first")


@dataclass(frozen=True)
class EvalReport:
    """One evaluation: settings, per-query scores, overall and per-category means."""

    model: str
    fusion: str
    vector_weight: float
    fts_weight: float
    top_k_chunks: int
    excluded: tuple[str, ...]
    scores: list[QueryScore]
    overall: Summary
    categories: dict[str, Summary] = field(default_factory=dict)

    @cached_property
    def intervals(self) -> dict[str, dict[str, Interval]]:
        """Each metric's 95% bootstrap interval over queries: ``"all"`` (the overall
        figures' queries) and each category, resampled within it."""
        groups: dict[str, list[QueryScore]] = {
            "all": [s for s in self.scores if s.category not in self.excluded]}
        for category in self.categories:
            groups[category] = [s for s in self.scores if s.category == category]
        return {name: metric_intervals([s.metrics for s in members], METRICS)
                for name, members in groups.items()}

    def to_dict(self, with_queries: bool = True) -> dict[str, Any]:
        """The report as a JSON-ready dict (per-query scores unless told otherwise)."""
        report: dict[str, Any] = {
            "model": self.model, "fusion": self.fusion, "vector_weight": self.vector_weight,
            "fts_weight": self.fts_weight, "top_k_chunks": self.top_k_chunks,
            "excluded_categories": list(self.excluded), "overall": self.overall.to_dict(),
            "categories": {c: s.to_dict() for c, s in self.categories.items()},
            "intervals": {name: intervals_dict(group)
                          for name, group in self.intervals.items()},
            "interval_level": LEVEL, "resamples": RESAMPLES}
        if with_queries:
            report["queries"] = [s.to_dict() for s in self.scores]
        return report


async def evaluate(engine: Engine, dataset: Dataset, *,
                   top_k_chunks: int = DEFAULT_TOP_K_CHUNKS,
                   vector_weight: float | None = None, fts_weight: float | None = None,
                   fusion: str | None = None,
                   excluded: Sequence[str] = EXCLUDED_CATEGORIES,
                   check: bool = True) -> EvalReport:
    """Run every query through ``engine.search`` and score it against its turns.

    ``None`` settings take the engine's configured ones. The overall figures leave out the
    ``excluded`` categories, which still get their own rows. Queries are logged (when the
    engine logs) as caller "eval".
    """
    if check:
        await check_engine_holds(engine, dataset)
    found = await search_all(engine, dataset, top_k_chunks, vector_weight, fts_weight, fusion)
    return report_of(engine, dataset, found, top_k_chunks, excluded)


async def search_all(engine: Engine, dataset: Dataset, top_k_chunks: int,
                     vector_weight: float | None = None, fts_weight: float | None = None,
                     fusion: str | None = None) -> list[SearchResult]:
    """Every query's search, legs kept: other weights and fusions re-rank them without I/O."""
    return [await engine.search(session_id=query.session_id, query=query.query,
                                top_k=top_k_chunks, vector_weight=vector_weight,
                                fts_weight=fts_weight, fusion=fusion, caller="eval")
            for query in dataset.queries]


def report_of(engine: Engine, dataset: Dataset, found: Sequence[SearchResult],
              top_k_chunks: int, excluded: Sequence[str]) -> EvalReport:
    """Score each query's ranking against its evidence turns; means overall and by category."""
    turn_ids = {session_id: dataset.turn_ids(session_id) for session_id in dataset.messages}
    scores = []
    for query, result in zip(dataset.queries, found, strict=True):
        ranked = expand_turns(((r.sequence_start, r.sequence_end) for r in result.results),
                              turn_ids.get(query.session_id, {}))
        scores.append(score_query(query.query_id, query.category, ranked, query.relevant))
    by_category: dict[str, list[QueryScore]] = {}
    for score in scores:
        if score.category is not None:
            by_category.setdefault(score.category, []).append(score)
    ranking = found[0].ranking if found else None
    retrieval = engine.config.retrieval
    return EvalReport(
        model=engine.embedder.name,
        fusion=ranking.fusion if ranking else retrieval.fusion,
        vector_weight=ranking.vector_weight if ranking else retrieval.vector_weight,
        fts_weight=ranking.fts_weight if ranking else retrieval.fts_weight,
        top_k_chunks=top_k_chunks, excluded=tuple(excluded), scores=scores,
        overall=summarize([s for s in scores if s.category not in excluded]),
        categories={c: summarize(by_category[c])
                    for c in sorted(by_category, key=_category_order)})


def _category_order(category: str) -> tuple[int, str]:
    """Numeric categories in numeric order, then the rest by name."""
    return (int(category), "") if category.isdigit() else (1 << 30, category)


@dataclass(frozen=True)
class SweepRun:
    """One point of a sweep: the fusion, the weights and the overall means."""

    fusion: str
    vector_weight: float
    fts_weight: float
    overall: Summary

    def to_dict(self) -> dict[str, Any]:
        """The run as a JSON-ready dict."""
        return {"fusion": self.fusion, "vector_weight": self.vector_weight,
                "fts_weight": self.fts_weight, **self.overall.to_dict()}


@dataclass(frozen=True)
class SweepResult:
    """Every sweep point, in order, and which is best by overall recall@10 (then MRR)."""

    model: str
    runs: list[SweepRun]
    best: int

    def to_dict(self) -> dict[str, Any]:
        """The sweep as a JSON-ready dict."""
        return {"model": self.model, "runs": [r.to_dict() for r in self.runs],
                "best": self.runs[self.best].to_dict() if self.runs else None}


async def sweep(engine: Engine, dataset: Dataset, *, fusions: Sequence[str] = FUSIONS,
                weights: Sequence[float] = SWEEP_WEIGHTS,
                top_k_chunks: int = DEFAULT_TOP_K_CHUNKS,
                excluded: Sequence[str] = EXCLUDED_CATEGORIES,
                progress: Callable[[int, int], None] | None = None) -> SweepResult:
    """Evaluate every fusion at every vector weight (full-text weight 1 - vector weight)."""
    await check_engine_holds(engine, dataset)
    searched = await search_all(engine, dataset, top_k_chunks)  # the only database work
    runs: list[SweepRun] = []
    total = len(fusions) * len(weights)
    for fusion in fusions:
        for vector_weight in weights:
            fts_weight = round(1.0 - vector_weight, 6)
            reranked = [found.rerank(fusion=fusion, vector_weight=vector_weight,
                                     fts_weight=fts_weight) for found in searched]
            report = report_of(engine, dataset, reranked, top_k_chunks, excluded)
            runs.append(SweepRun(fusion, vector_weight, fts_weight, report.overall))
            if progress is not None:
                progress(len(runs), total)
    # max() keeps the first of equals, so ties go to the earlier grid point.
    best = max(range(len(runs)), key=lambda i: (runs[i].overall.metrics["recall@10"],
                                                runs[i].overall.metrics["mrr"]), default=0)
    return SweepResult(engine.embedder.name, runs, best)
