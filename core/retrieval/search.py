"""One query's legs, kept, and every ranking and explanation made from them.

The legs (vector KNN, FTS5 bm25 or its LIKE fallback) are fetched once per query, deep
enough for any ``top_k`` the caller may ask next. :meth:`SearchResult.rerank` fuses the kept
legs again under other weights, fusion, ``top_k`` or threshold without touching the
database: that is what lets the playground move a slider and re-rank at once.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from core.retrieval.boosts import apply_boosts, named_speakers
from core.retrieval.dates import Period, candidate_dates, names_a_time, query_period
from core.retrieval.fusion import FUSIONS, Fused, LegHit, fuse
from core.storage.executed import LIKE, Executed
from core.storage.fts_words import TERM
from core.storage.rows import ChunkRow
from core.types import HybridQueryResult, ScoreParts

MODES = ("keyword", "vector", "hybrid")


@dataclass(frozen=True)
class Ranking:
    """How to turn kept legs into a ranking: the knobs that need no database."""

    vector_weight: float
    fts_weight: float
    fusion: str = "minmax"
    rrf_k: int = 60
    top_k: int = 10
    min_score: float | None = None
    speaker_boost: float = 0.0  # see core.retrieval.boosts
    neighbour_weight: float = 0.0
    neighbour_window: int = 1
    date_boost: float = 0.0

    def applied_weights(self, mode: str) -> tuple[float, float]:
        """The ``(vector, fts)`` weights this ranking really applies in ``mode``: keyword mode
        switches the vector leg off, vector mode the full-text leg."""
        return (0.0 if mode == "keyword" else self.vector_weight,
                0.0 if mode == "vector" else self.fts_weight)


@dataclass
class KeptLegs:
    """What the database answered for one query, kept for re-ranking and explaining."""

    query: str
    scope: str
    mode: str
    terms: list[str]
    fts_expression: str | None  # the statement that answered the full-text leg, as it ran
    tags: list[str]
    vector: list[LegHit] = field(default_factory=list)
    fts: list[LegHit] = field(default_factory=list)
    fts_fallback: str | None = None  # "like" when FTS found nothing and LIKE answered
    fts_derived: bool = False  # bm25 came from the derived in-memory index, not FTS5's SQL
    vector_note: str | None = None  # why the vector leg did not run, when it did not
    # How the vector leg's neighbours may fall short of the exact ones (None: exact).
    vector_approximate: str | None = None
    # What answered the vector leg (the database's search or a derived index); None: no leg.
    vector_path: str | None = None
    # How each derived index that answered came to be ("loaded from disk, caught up 3
    # changes", "built from the file in 1.2 s"), by index name.
    index_origins: dict[str, str] = field(default_factory=dict)
    # Every full-text statement the backend ran, in order (MaxScore rounds, the fallback).
    fts_ran: list[Executed] = field(default_factory=list)
    chunks: dict[str, ChunkRow] = field(default_factory=dict)
    timings_ms: dict[str, float] = field(default_factory=dict)
    depth: int = 0
    raw_fts: bool = False  # the query went to FTS5 as written
    # What the boosts read from the query and the candidates, worked out on the first
    # ranking that needs it: re-ranking then costs no JSON parsing.
    speaker_hits: tuple[list[str], frozenset[str]] | None = None
    period_hits: tuple[Period | None, frozenset[str]] | None = None


def answering_statement(ran: list[Executed]) -> Executed | None:
    """The full-text statement whose rows the leg kept: the last one run before any LIKE
    fallback (a MaxScore search's last round); None when none ran (no words to match)."""
    full_text = [executed for executed in ran if executed.engine != LIKE]
    return full_text[-1] if full_text else None


def matched_terms(terms: list[str], text: str) -> list[str]:
    """The query terms a chunk contains (a term also matches words it is a prefix of); the
    text is split into terms by the query's own rule (:data:`core.storage.fts_words.TERM`)."""
    words = set(TERM.findall(text.lower()))
    # A term found as a whole word needs no scan; a short one can match nothing else.
    return [t for t in terms if t in words
            or (len(t) >= 4 and any(_term_matches(t, w) for w in words))]


def matched_spans(terms: list[str], text: str) -> list[tuple[int, int]]:
    """Where ``text`` holds a word some query term matches, as ``(start, end)`` offsets
    in order, by the same rule as :func:`matched_terms` (for highlighting)."""
    return [match.span() for match in TERM.finditer(text)
            if any(_term_matches(term, match.group().lower()) for term in terms)]


def _term_matches(term: str, word: str) -> bool:
    """A word matches a term it equals; a term of 4+ letters also matches words that start
    with all but its last letter ("peanut" finds "peanuts", "allergy" finds "allergic")."""
    return word == term or (len(term) >= 4 and word.startswith(term[:-1]))


@dataclass
class SearchResult:
    """A ranking of kept legs, with what it cut and why."""

    legs: KeptLegs
    ranking: Ranking
    results: list[HybridQueryResult]
    cut: list[dict[str, Any]]
    speakers: list[str] = field(default_factory=list)  # speaker names the query names
    period: Period | None = None  # the time the query names, when the date boost is on
    # chunk_id -> what each boost added to a result ("speaker", "date", "neighbour")
    boosts: dict[str, dict[str, float]] = field(default_factory=dict)

    def rerank(self, **changes: Any) -> SearchResult:
        """The same legs ranked under other weights, fusion, top_k or min_score; no I/O."""
        return rank(self.legs, dataclasses.replace(self.ranking, **changes))

    def explain(self, *, with_results: bool = True) -> dict[str, Any]:
        """The whole query's explanation, JSON-ready (``workbench search --explain``);
        without ``with_results``, only its query-level parts (no per-result ``results``)."""
        legs, ranking = self.legs, self.ranking
        vector_only_max = ranking.vector_weight * _leg_ceiling(ranking, "vector")
        fts_only_max = ranking.fts_weight * _leg_ceiling(ranking, "fts")
        # The most the boosts can add: a named speaker's share (when the query names one),
        # and the neighbour's share of a neighbour holding both legs' best and that boost.
        both = vector_only_max + fts_only_max
        boosted = (both * ranking.speaker_boost if self.speakers else 0.0) + (
            both * ranking.date_boost if self.period else 0.0)
        extra = boosted + ranking.neighbour_weight * (both + boosted)
        vector_only_max += extra
        fts_only_max += extra
        notes = []
        if ranking.min_score is not None:
            for leg, ceiling in (("vector", vector_only_max), ("full-text", fts_only_max)):
                if ceiling < ranking.min_score:
                    notes.append(
                        f"a chunk found by the {leg} leg alone scores at most {ceiling:.3f} "
                        f"under these weights, below min_score {ranking.min_score}: it can "
                        "never be returned")
        if legs.fts_fallback == "like":
            notes.append("full-text search matched nothing; the LIKE substring fallback "
                         "answered, as pynchy's does")
        if legs.fts_derived:
            notes.append("full-text leg: bm25 ranked by the derived in-memory index (the same "
                         "ranking as the database's, without scoring every matching chunk "
                         "in SQL)")
        if legs.vector_note:
            notes.append(legs.vector_note)
        if legs.vector_approximate:
            notes.append(f"vector leg: {legs.vector_approximate}")
        explained: dict[str, Any] = {
            "query": legs.query, "scope": legs.scope, "mode": legs.mode,
            "parsed_terms": legs.terms, "fts_expression": legs.fts_expression,
            "fts_executed": [executed.as_dict() for executed in legs.fts_ran],
            "raw_fts": legs.raw_fts,
            "filters": {"tags": legs.tags}, "ranking": dataclasses.asdict(ranking),
            "legs": {"vector": len(legs.vector), "fts": len(legs.fts), "depth": legs.depth,
                     "fts_fallback": legs.fts_fallback, "vector_path": legs.vector_path,
                     "fts_path": "derived index" if legs.fts_derived else "database",
                     "derived_indexes": legs.index_origins},
            "boosts": {"speaker_boost": ranking.speaker_boost, "speakers_named": self.speakers,
                       "date_boost": ranking.date_boost,
                       "period": self.period.describe() if self.period else None,
                       "neighbour_weight": ranking.neighbour_weight,
                       "neighbour_window": ranking.neighbour_window},
            "scale": fusion_scale(ranking, legs.mode),
            "timings_ms": legs.timings_ms, "notes": notes,
        }
        if with_results:
            explained["results"] = [self.explain_result(r) for r in self.results]
        explained["cut"] = self.cut
        return explained

    def explain_result(self, result: HybridQueryResult) -> dict[str, Any]:
        """One result's explanation: per leg raw, normalised, rank; matched terms; score
        and the named parts it adds up from."""
        in_text = matched_terms(self.legs.terms, result.text)
        boosts = self.boosts.get(result.chunk_id, {})
        parts = result.parts
        return {
            "chunk_id": result.chunk_id, "score": result.score,
            "parts": None if parts is None else parts.to_dict(),
            "vector": {"raw": result.vector_raw, "normalised": result.vector_score,
                       "rank": result.vector_rank},
            "fts": {"raw": result.fts_raw, "normalised": result.fts_score,
                    "rank": result.fts_rank},
            "boosts": {name: boosts.get(name, 0.0) for name in ("speaker", "date", "neighbour")},
            "matched_terms": in_text,
            "context_terms": [term for term in matched_terms(self.legs.terms, result.context)
                              if term not in in_text],
            "sequence_start": result.sequence_start, "sequence_end": result.sequence_end,
            "session_id": result.session_id, "text": result.text, "context": result.context,
        }


def fusion_scale(ranking: Ranking, mode: str = "hybrid") -> str:
    """In words, what scale a fusion puts each leg and the fused score on, and that boosts
    come on top: what a person needs to read a score beside the weights."""
    vector_weight, fts_weight = ranking.applied_weights(mode)
    if ranking.fusion == "rrf":
        leg = (f"each leg 1/({ranking.rrf_k}+rank): {_leg_ceiling(ranking, 'vector'):.4f} "
               "at rank 1")
    elif ranking.fusion == "dbsf":
        leg = "each leg 0–1 (raw within mean ± 3σ of its hits, clipped)"
    else:
        leg = "each leg 0–1 (its lowest hit 0, its best 1)"
    fused_max = (vector_weight + fts_weight) * _leg_ceiling(ranking, "vector")
    return (f"{ranking.fusion}: {leg}; fused = {vector_weight:.2f} × vector + "
            f"{fts_weight:.2f} × fts (0–{fused_max:.3g}); boosts added on top")


def _leg_ceiling(ranking: Ranking, leg: str) -> float:
    """The most one leg's normalised score can be under this fusion."""
    return 1.0 / (ranking.rrf_k + 1) if ranking.fusion == "rrf" else 1.0


def rank(legs: KeptLegs, ranking: Ranking) -> SearchResult:
    """Fuse kept legs under ``ranking``: results, best first, and the candidates cut."""
    if ranking.fusion not in FUSIONS:
        raise ValueError(f"fusion must be one of {', '.join(FUSIONS)}; got {ranking.fusion!r}")
    vector_weight, fts_weight = ranking.applied_weights(legs.mode)
    recency = {cid: chunk.sequence_end for cid, chunk in legs.chunks.items()}
    fused = fuse(legs.vector, legs.fts, vector_weight=vector_weight, fts_weight=fts_weight,
                 method=ranking.fusion, rrf_k=ranking.rrf_k, recency=recency)
    speakers: list[str] = []
    by_speaker: frozenset[str] = frozenset()
    if ranking.speaker_boost > 0:
        if legs.speaker_hits is None:
            legs.speaker_hits = named_speakers(legs.query, legs.chunks)
        speakers, by_speaker = legs.speaker_hits
    period: Period | None = None
    in_period: frozenset[str] = frozenset()
    if ranking.date_boost > 0:
        if legs.period_hits is None:
            legs.period_hits = _dated(legs)
        period, in_period = legs.period_hits
    # The boost is a share of the most the legs can give together, so it means the same
    # under every fusion and weighting. A ranking asked of one leg alone (a weight of 0, or
    # the keyword and vector modes) stays that leg's order: boosts join a fused hybrid only.
    ceiling = (vector_weight * _leg_ceiling(ranking, "vector")
               + fts_weight * _leg_ceiling(ranking, "fts"))
    hybrid = vector_weight > 0 and fts_weight > 0
    fused = apply_boosts(fused, legs.chunks, by_speaker=by_speaker,
                         speaker_amount=ranking.speaker_boost * ceiling if hybrid else 0.0,
                         in_period=in_period,
                         date_amount=ranking.date_boost * ceiling if hybrid else 0.0,
                         neighbour_weight=ranking.neighbour_weight if hybrid else 0.0,
                         neighbour_window=ranking.neighbour_window)
    vector_by_id = {hit.chunk_id: hit for hit in legs.vector}
    fts_by_id = {hit.chunk_id: hit for hit in legs.fts}
    results: list[HybridQueryResult] = []
    boosts: dict[str, dict[str, float]] = {}  # what each boost added to a result
    cut: list[dict[str, Any]] = []
    below_top_k = f"ranked below top_k {ranking.top_k}"
    for item in fused:
        chunk = legs.chunks.get(item.chunk_id)
        if chunk is None:
            cut.append(_cut(item, "deleted after the legs ran"))
        elif ranking.min_score is not None and item.score < ranking.min_score:
            cut.append(_cut(item, f"score {item.score:.3f} below min_score {ranking.min_score}"))
        elif len(results) >= ranking.top_k:
            cut.append(_cut(item, below_top_k))
        else:
            vh, fh = vector_by_id.get(item.chunk_id), fts_by_id.get(item.chunk_id)
            # Fusion's own sum, recomputed: the boosts were added to it in this order.
            parts = ScoreParts(fused=vector_weight * item.vector + fts_weight * item.fts,
                               speaker=item.speaker, date=item.date, neighbour=item.neighbour)
            if item.speaker or item.date or item.neighbour:
                boosts[item.chunk_id] = {"speaker": item.speaker, "date": item.date,
                                         "neighbour": item.neighbour}
            results.append(HybridQueryResult(
                chunk_id=item.chunk_id, session_id=chunk.session_id, text=chunk.text,
                score=item.score, vector_score=item.vector, fts_score=item.fts,
                sequence_start=chunk.sequence_start, sequence_end=chunk.sequence_end,
                metadata=chunk.metadata(), vector_raw=vh.raw if vh else None,
                fts_raw=fh.raw if fh else None, vector_rank=vh.rank if vh else None,
                fts_rank=fh.rank if fh else None, context=chunk.context(),
                parts=parts))
    return SearchResult(legs, ranking, results, cut, speakers, period, boosts)


def _dated(legs: KeptLegs) -> tuple[Period | None, frozenset[str]]:
    """The period the query names and the candidates dated inside it; relative words count
    from the latest candidate's date (the conversation's "now")."""
    if not names_a_time(legs.query):
        return None, frozenset()
    dates = candidate_dates(legs.chunks)
    if not dates:
        return None, frozenset()
    period = query_period(legs.query, max(dates.values()))
    if period is None:
        return None, frozenset()
    return period, frozenset(chunk_id for chunk_id, day in dates.items() if period.holds(day))


def _cut(item: Fused, reason: str) -> dict[str, Any]:
    return {"chunk_id": item.chunk_id, "score": item.score, "reason": reason}
