"""The playground's answer area: a status line over one ranked list, or A | B side by side,
or tri-hybrid's events, or what to do when there is nothing to show.

It draws what the pane hands it and says which result the cursor is on; it never queries.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.widgets import Static
from textual.widgets.option_list import Option

from core.retrieval.compare import RankingDiff, diff_rankings
from core.retrieval.search import Ranking, SearchResult
from core.types import ContextResult, HybridQueryResult
from workbench.app.playground.results import (
    FULL_ROW_FROM,
    ResultsList,
    RowMarks,
    context_prompt,
    result_prompt,
)

NO_RESULTS = "No results — press e: the explain view says why."
NO_EVENTS = "No events: the session is empty."


def ranking_ids(found: SearchResult | None) -> list[str]:
    """A ranking's chunk ids, best first."""
    return [] if found is None else [r.chunk_id for r in found.results]


def score_scale(ranking: Ranking, mode: str) -> str:
    """The results' title: how a score is made under this fusion and mode, and the scale
    each leg is on, so 1.016 beside weights 0.50 / 0.70 can be read."""
    vector_weight, fts_weight = ranking.applied_weights(mode)
    if ranking.fusion == "rrf":
        scale = f"each leg 1/({ranking.rrf_k}+rank)"
    elif ranking.fusion == "dbsf":
        scale = "each leg 0–1 by mean ± 3σ"
    else:
        scale = "each leg 0–1: its lowest hit 0"
    return (f"score = fused ({vector_weight:.2f} × vec + {fts_weight:.2f} × fts; {scale})"
            " + boosts")


def ranking_title(name: str, ranking: Ranking) -> str:
    """A list's title: which settings ranked it."""
    min_score = "" if ranking.min_score is None else f" · min {ranking.min_score:g}"
    return (f"{name}  vector {ranking.vector_weight:.2f} · fts {ranking.fts_weight:.2f} · "
            f"{ranking.fusion} · top {ranking.top_k}{min_score}")


class RankingView(Vertical):
    """Status, the result list(s), and the empty state that replaces them."""

    DEFAULT_CSS = """
    RankingView { width: 1fr; }
    RankingView #pg-status { height: 1; padding: 0 1; color: $text-muted; }
    RankingView #pg-lists { height: 1fr; }
    RankingView #pg-a { display: none; width: 1fr; margin-right: 1; }
    RankingView #pg-lists.-compare #pg-a { display: block; }
    RankingView #pg-empty { display: none; height: 1fr; }
    RankingView.-empty #pg-empty { display: block; }
    RankingView.-empty #pg-lists { display: none; }
    """

    def __init__(self, empty_message: str, *, id: str | None = None) -> None:
        super().__init__(id=id, classes="-empty")
        self.empty_message = empty_message
        self._shown: tuple[SearchResult, SearchResult | None, list[str] | None,
                           dict[str, int], str | None, str | None] | None = None
        """The last ranking shown, to draw again when the list's width changes its rows."""
        self._bar_width = 0

    def _row_bar_width(self) -> int:
        """Each leg's bar in a full row: 12 cells when the list is wide enough, else 6."""
        return 12 if self.results.content_size.width >= FULL_ROW_FROM else 6

    def on_resize(self) -> None:
        hint = "" if self.screen.has_class("-wide") else "l: judged · sweep · log"
        self.results.border_subtitle = hint
        if self._shown is not None and self._row_bar_width() != self._bar_width:
            self.show_found(*self._shown)

    def on_results_list_resized(self, event: ResultsList.Resized) -> None:
        event.stop()
        if self._shown is not None and self._row_bar_width() != self._bar_width:
            self.show_found(*self._shown)

    def compose(self) -> ComposeResult:
        yield Static("", id="pg-status")
        with Horizontal(id="pg-lists"):
            yield ResultsList(id="pg-a")
            yield ResultsList(id="pg-results")
        yield Static(self.empty_message, id="pg-empty", classes="empty-state")

    @property
    def results(self) -> ResultsList:
        """B's list (the only one unless A is pinned)."""
        return self.query_one("#pg-results", ResultsList)

    @property
    def a_list(self) -> ResultsList:
        return self.query_one("#pg-a", ResultsList)

    @property
    def showing(self) -> bool:
        """Whether a list (not the empty state) is shown."""
        return not self.has_class("-empty")

    def status(self, content: Content | str) -> None:
        self.query_one("#pg-status", Static).update(content)

    def show_empty(self, message: str) -> None:
        """No answer to show: say what to do instead."""
        self.add_class("-empty")
        self._shown = None
        self.query_one("#pg-empty", Static).update(message)
        self.status("")

    def show_found(self, found: SearchResult, pinned: SearchResult | None,
                   previous: list[str] | None, judgments: dict[str, int],
                   warning: str | None = None, vectors_off: str | None = None) -> None:
        """A ranking, with how each row moved since ``previous`` (or, with A pinned, B's
        list beside A's and how B differs); ``warning`` leads the status line, and
        ``vectors_off`` (why the vector leg is off) marks every row's vector cell."""
        off = vectors_off is not None
        self.remove_class("-empty")
        self._shown = (found, pinned, previous, judgments, warning, vectors_off)
        self._bar_width = bar_width = self._row_bar_width()
        self.query_one("#pg-lists").set_class(pinned is not None, "-compare")
        terms, ids = found.legs.terms, ranking_ids(found)
        results = self.results
        if pinned is not None:
            diff = diff_rankings(ranking_ids(pinned), ids)
            compared = True
            a_list = self.a_list
            a_list.border_title = ranking_title("A", pinned.ranking)
            a_list.show([Option(result_prompt(n, r, terms, RowMarks(
                grade=judgments.get(r.chunk_id), left=r.chunk_id in diff.left, vectors_off=off),
                compact=True), id=r.chunk_id) for n, r in enumerate(pinned.results, 1)],
                a_list.highlighted_id)
            results.border_title = ranking_title("B", found.ranking)
        else:
            diff = diff_rankings(previous or [], ids)
            compared = previous is not None
            results.border_title = f"Results · {score_scale(found.ranking, found.legs.mode)}"
        rows = [Option(result_prompt(n, r, terms, RowMarks(
            diff.moves.get(r.chunk_id), compared, judgments.get(r.chunk_id), vectors_off=off),
            compact=pinned is not None, bar_width=bar_width), id=r.chunk_id)
            for n, r in enumerate(found.results, 1)]
        # No results is still a list, so e (explain the query) works from it.
        results.show(rows or [Option(Content.styled(NO_RESULTS, "$text-muted"), id="none")],
                     results.highlighted_id)
        status = _found_status(found, diff if compared else None, pinned is not None)
        if vectors_off is not None:  # the legend of the rows' "vec off"
            status = Content.assemble((f"vec off = {vectors_off}", "bold $error"), " · ", status)
        self.status(status if warning is None
                    else Content.assemble((warning, "bold $warning"), " · ", status))

    def show_context(self, context: ContextResult, terms: list[str]) -> None:
        """Tri-hybrid's events in sequence order, each with the strategies that chose it."""
        self.remove_class("-empty")
        self._shown = None
        self.query_one("#pg-lists").remove_class("-compare")
        results = self.results
        results.border_title = "Tri-hybrid context (get_context)"
        rows = [Option(context_prompt(item, terms), id=f"seq-{item.record.sequence}")
                for item in context.items]
        results.show(rows or [Option(Content.styled(NO_EVENTS, "$text-muted"), id="none")],
                     results.highlighted_id)
        counts = context.counts
        self.status(Content.assemble(
            (f"{len(context.items)} events", "bold $foreground"),
            f" · {context.session_id} · {counts.get('recency', 0)} recent · "
            f"{counts.get('salience', 0)} salient · {counts.get('relevance', 0)} relevant · "
            "in sequence order; weights do not apply"))

    def pointed(self, found: SearchResult | None, pinned: SearchResult | None,
                ) -> tuple[SearchResult, HybridQueryResult, int] | None:
        """The result under the cursor (in A's list when that has focus), with its rank."""
        a_focused = self.a_list.has_focus and pinned is not None
        ranking = pinned if a_focused else found
        chunk_id = (self.a_list if a_focused else self.results).highlighted_id
        if ranking is None or chunk_id is None:
            return None
        for place, result in enumerate(ranking.results, 1):
            if result.chunk_id == chunk_id:
                return ranking, result, place
        return None

    def focus_results(self) -> bool:
        """Put the cursor in the results, when there are any; True if it went there."""
        if self.showing and self.results.option_count:
            self.results.focus()
            return True
        return False


def _found_status(found: SearchResult, diff: RankingDiff | None, compare: bool) -> Content:
    legs = found.legs
    timing = sum(legs.timings_ms.values())
    parts: list[Content | tuple[str, str] | str] = [
        (f"{len(found.results)} results", "bold $foreground"),
        f" · {len(found.cut)} cut · legs: vector {len(legs.vector)} · fts {len(legs.fts)}"
        + (" (LIKE fallback)" if legs.fts_fallback == "like" else "")
        + f" · {timing:.1f} ms"]
    if diff is not None and not diff.unchanged:
        label = "B vs A" if compare else "last change"
        parts += ["   ", (f"{label}: ", "bold $accent"),
                  f"{len(diff.moved)} moved · {len(diff.entered)} new · {len(diff.left)} out"]
    elif diff is not None and compare:
        parts += ["   ", ("A and B rank the same", "$accent")]
    return Content.assemble(*parts)
