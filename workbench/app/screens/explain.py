"""Why a result ranked where it did: the explain view of one result, or of a whole query.

Everything comes from the kept legs (``SearchResult.explain_result`` and ``explain``):
each leg's raw score, normalised score and rank, how the weights add them up to the final
score, the query terms the text and its context matched, the query's notes (settings that
can never return a chunk), the legs' timings and every candidate cut, with the reason.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Static

from core.retrieval.search import SearchResult, answering_statement
from core.types import HybridQueryResult
from workbench.app.playground.bars import FTS, VECTOR, bar, highlighted

if TYPE_CHECKING:
    from workbench.app.host import WorkbenchHost

CUT_SHOWN = 12


class ExplainScreen(ModalScreen[None]):
    """The explanation of one result (or of the query when ``result`` is None)."""

    DEFAULT_CSS = """
    ExplainScreen { align: center middle; }
    ExplainScreen > VerticalScroll {
        width: 116; max-width: 95%; height: auto; max-height: 92%;
        border: thick $primary; background: $surface; padding: 0 2;
        border-title-color: $primary; border-title-style: bold;
        border-subtitle-color: $text-muted;
    }
    ExplainScreen .section { margin-top: 1; }
    ExplainScreen .heading { color: $primary; text-style: bold; margin-top: 1; }
    /* A narrow or short screen gives the explanation all of itself: the legs' table
       (70 cells) fits inside 80 columns without wrapping. */
    ExplainScreen.-narrow > VerticalScroll { max-width: 100%; padding: 0 1; }
    ExplainScreen.-short > VerticalScroll { max-height: 100%; }
    """
    BINDINGS = [Binding("escape,q,e", "close", "Close", id="explain.close"),
                Binding("c", "copy", "Copy JSON", id="explain.copy")]

    def __init__(self, found: SearchResult, result: HybridQueryResult | None = None,
                 rank: int | None = None) -> None:
        super().__init__()
        self.found = found
        self.result = result
        self.rank = rank
        # The query's parts only, unless the query is what is shown: one result's screen
        # needs no explanation of the others.
        self.query_explained = found.explain(with_results=result is None)
        self.result_explained = None if result is None else found.explain_result(result)

    def compose(self) -> ComposeResult:
        with VerticalScroll() as body:
            if self.result is not None:
                body.border_title = f"Why #{self.rank} ranked here"
                yield Static(self._score_line(), classes="section")
                yield from self._section("Legs", self._legs())
                yield from self._section("Text", self._text())
                yield from self._section("Terms", self._terms())
            else:
                body.border_title = f"Why {len(self.found.results)} results"
            yield from self._section("Query", self._query())
            yield from self._section("Notes", self._notes())
            yield from self._section("Timings", self._timings())
            yield from self._section("Cut", self._cut())
            body.border_subtitle = "escape closes · c copies as JSON"

    @staticmethod
    def _section(title: str, content: Content) -> ComposeResult:
        yield Static(title, classes="heading")
        yield Static(content)

    def _weights(self) -> tuple[float, float]:
        """The weights the ranking really applied (a mode switches a leg off)."""
        return self.found.ranking.applied_weights(self.found.legs.mode)

    def _score_line(self) -> Content:
        result = self.result
        assert result is not None
        vector_weight, fts_weight = self._weights()
        # What the boosts (a named speaker, a named period, nearby matches) added on top.
        boosts = self.found.boosts.get(result.chunk_id, {})
        added = "".join(f"  +  {name} {value:.3f}" for name, value in boosts.items() if value)
        return Content.assemble(
            ("score ", "bold"), (f"{result.score:.3f}", "bold $accent"), " = ",
            f"{vector_weight:.2f} × ", (f"vector {result.vector_score:.3f}", VECTOR), "  +  ",
            f"{fts_weight:.2f} × ", (f"full text {result.fts_score:.3f}", FTS), added,
            (f"    ({self.found.ranking.fusion} fusion, {self.found.legs.mode} mode)",
             "$text-muted"))

    def _legs(self) -> Content:
        explained = self.result_explained
        assert explained is not None
        weights = dict(zip(("vector", "fts"), self._weights(), strict=True))
        lines = [Content.styled(f"{'leg':<10}{'raw':>10}   {'normalised':<23}{'rank':>6}"
                                f"{'weight':>9}{'adds':>9}", "$text-muted")]
        for leg, style in (("vector", VECTOR), ("fts", FTS)):
            info = explained[leg]
            if info["rank"] is None:
                lines.append(Content.assemble((f"{leg:<10}", style), (
                    f"{'—':>10}   this leg did not return the chunk (it adds 0)",
                    "$text-muted")))
                continue
            adds = weights[leg] * info["normalised"]
            lines.append(Content.assemble(
                (f"{leg:<10}", f"bold {style}"), f"{info['raw']:>10.4f}   ",
                bar(info["normalised"], 14, style), (f" {info['normalised']:.3f}   ", style),
                f"{'#' + str(info['rank']):>6}{weights[leg]:>9.2f}",
                (f"{adds:>9.3f}", "bold")))
        return Content("\n").join(lines)

    def _text(self) -> Content:
        explained = self.result_explained
        assert explained is not None and self.result is not None
        terms = self.found.legs.terms
        where = (f"{explained['session_id']} · sequence {explained['sequence_start']}"
                 + (f"–{explained['sequence_end']}"
                    if explained["sequence_end"] != explained["sequence_start"] else "")
                 + f" · {explained['chunk_id']}")
        parts = [Content.styled(where, "$text-muted"),
                 highlighted(self.result.text, terms, 2000)]
        if self.result.context.strip():
            parts.append(Content.assemble(("indexed with its context: ", "$text-muted"),
                                          highlighted(self.result.context, terms, 600)))
        return Content("\n").join(parts)

    def _terms(self) -> Content:
        explained = self.result_explained
        assert explained is not None
        matched, in_context = explained["matched_terms"], explained["context_terms"]
        missing = [t for t in self.found.legs.terms if t not in matched and t not in in_context]
        return Content.assemble(
            ("matched in the text   ", "$text-muted"),
            (", ".join(matched), "bold $fts-leg") if matched else ("none", "$text-muted"),
            "\n", ("only in its context   ", "$text-muted"),
            ", ".join(in_context) or Content.styled("none", "$text-muted"),
            "\n", ("not found             ", "$text-muted"),
            ", ".join(missing) or Content.styled("none", "$text-muted"))

    def _query(self) -> Content:
        query, ranking, legs = self.query_explained, self.found.ranking, self.found.legs
        min_score = "none" if ranking.min_score is None else f"{ranking.min_score:g}"
        rows = [
            ("query", repr(legs.query)),
            ("scope", f"{legs.scope} · {legs.mode} mode"),
            ("terms", ", ".join(legs.terms) or "(no words)"),
            ("full text", query["fts_expression"] or "(no expression: no words to match)"),
            *self._earlier_statements(),
            ("ranking", f"{ranking.fusion} fusion · vector {ranking.vector_weight:.2f} · "
                        f"full text {ranking.fts_weight:.2f} · top_k {ranking.top_k} · "
                        f"min_score {min_score}"
                        + (f" · rrf_k {ranking.rrf_k}" if ranking.fusion == "rrf" else "")),
            ("legs", f"vector {len(legs.vector)} · full text {len(legs.fts)}"
                     + (" (LIKE fallback)" if legs.fts_fallback == "like" else "")
                     + f" · {len(self.found.results)} returned · {len(self.found.cut)} cut · "
                     f"depth {legs.depth}"),
            ("answered by", self._paths()),
            *([("indexes", " · ".join(f"{name} {how}" for name, how in origins.items()))]
              if (origins := self.query_explained["legs"].get("derived_indexes")) else []),
        ]
        return Content("\n").join(Content.assemble((f"{name:<12}", "$text-muted"), value)
                                  for name, value in rows)

    def _earlier_statements(self) -> list[tuple[str, str]]:
        """The other full-text statements the backend ran, in order, each with the rows it
        found: a namespace's MaxScore rounds before the last, the LIKE fallback after."""
        ran = self.found.legs.fts_ran
        answered = answering_statement(ran)
        return [("also ran", f"{step.describe()} → {step.rows} rows")
                for step in ran if step is not answered]

    def _paths(self) -> Content:
        """What answered each leg (the database, or an index derived from it), and whether
        the answer is exact: a namespace's legs may come from memory, or be approximate."""
        legs = self.found.legs
        ran = self.query_explained["legs"]
        vector = ran["vector_path"] or "did not run"
        fts = "did not run" if legs.mode == "vector" else ran["fts_path"]
        exactness = (Content.styled(f"approximate: {legs.vector_approximate}", "$warning")
                     if legs.vector_approximate else Content("exact"))
        return Content.assemble(("vector ", VECTOR), vector, " · ", ("full text ", FTS), fts,
                                " · ", exactness)

    def _notes(self) -> Content:
        notes = self.query_explained["notes"]
        if not notes:
            return Content.styled("none: nothing in these settings keeps a found chunk out",
                                  "$text-muted")
        return Content("\n").join(Content.assemble(("• ", "$warning"), note) for note in notes)

    def _timings(self) -> Content:
        timings = self.found.legs.timings_ms
        if not timings:
            return Content.styled("no leg ran", "$text-muted")
        return Content(" · ".join(f"{name} {ms:.2f} ms" for name, ms in timings.items()))

    def _cut(self) -> Content:
        cut = self.found.cut
        if not cut:
            return Content.styled("nothing: every candidate the legs found is returned",
                                  "$text-muted")
        lines = []
        for item in cut[:CUT_SHOWN]:
            chunk = self.found.legs.chunks.get(item["chunk_id"])
            lines.append(Content.assemble(
                (f"{item['score']:.3f}  ", "bold"), (f"{item['reason']:<28}", "$warning"), "  ",
                highlighted(item["chunk_id"] if chunk is None else chunk.text,
                            self.found.legs.terms, 60)))
        if len(cut) > CUT_SHOWN:
            lines.append(Content.styled(f"… and {len(cut) - CUT_SHOWN} more (c copies them "
                                        "all)", "$text-muted"))
        return Content("\n").join(lines)

    def explanation(self) -> dict[str, Any]:
        """What ``c`` copies: the result's explanation with the query's, or the query's."""
        if self.result_explained is None:
            return self.query_explained
        return {"rank": self.rank, **self.result_explained, "query": dict(self.query_explained)}

    def action_copy(self) -> None:
        what = f"the explanation of #{self.rank}" if self.rank else "the query's explanation"
        cast("WorkbenchHost", self.app).copy_json(self.explanation(), what)

    def action_close(self) -> None:
        self.dismiss(None)
