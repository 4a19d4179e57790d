"""The Search playground: ask the memory what the agent asks it, and see why it answered so.

A query runs its legs once, in a worker (``engine.search``); the result keeps them, so
every control below the query box — the leg weights, the fusion, ``top_k``, ``min_score``
— re-ranks at once with ``SearchResult.rerank``, no database involved, and each row says
how it moved. Judgments (space, + and -) score the ranking with recall@k and nDCG@k as the
sliders move, over the query and over every query judged in the scope (with 95% intervals,
and a warning when they are too few to tell); a sweep draws the judged set's scores over
every vector weight with recall's band. ``p`` pins the
settings as A to compare with what the controls say now (B); the retrieval log replays any
past query, the agent's included. Tri-hybrid mode shows aidaemon's ``get_context``: the
recent, salient and relevant events and why each was chosen.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.widget import Widget
from textual.widgets import Input, Select

from core.errors import WorkbenchError
from core.evaluation.judged import (
    JudgedSearches,
    JudgedSet,
    SweepPoint,
    set_difference,
    set_score,
)
from core.retrieval import query_terms
from core.retrieval.search import Ranking, SearchResult, rank
from core.types import ContextResult
from workbench.app.panes.base import Pane
from workbench.app.playground.ask import TRI_HYBRID, AskBar, Asked
from workbench.app.playground.controls import RankingControls
from workbench.app.playground.judged import JudgedBox
from workbench.app.playground.log import LogList, scope_label
from workbench.app.playground.plot import SweepPlot
from workbench.app.playground.ranking import RankingView, ranking_ids
from workbench.app.playground.results import ResultsList
from workbench.app.playground.sweep import SweepActions
from workbench.app.screens.explain import ExplainScreen

LOG_LIMIT = 100
EMPTY = ("Type a query and press enter; the session selected in Sessions is the scope.\n\n"
         "keyword, vector and hybrid rank chunks and show what each leg scored; tri-hybrid "
         "shows the recent, salient and relevant events get_context gives the agent.\n"
         "The retrieval log on the right replays any past query, the agent's included.")
NO_SESSIONS = ("No sessions yet, so nothing to search. An agent writes them with "
               "engine.store(); or run `workbench demo`.")


class PlaygroundPane(SweepActions, Pane):
    """The Search pane: query, re-rank, explain, judge, sweep, compare, replay."""

    pane_title = "Search"
    SCOPED_CSS = False  # its rules also start at the screen's size class
    DEFAULT_CSS = """
    PlaygroundPane { padding: 0 1; }
    PlaygroundPane #pg-body { height: 1fr; }
    PlaygroundPane #pg-side { width: 50; margin-left: 1; }
    /* Below 140 columns the results take the whole width, so both legs and the text
       fit; the side panels (judged, sweep, log) take their place while the focus is in
       them (l), and give it back when it leaves (escape). */
    .-narrow PlaygroundPane #pg-side, .-medium PlaygroundPane #pg-side {
        display: none; width: 1fr; margin-left: 0;
    }
    .-narrow PlaygroundPane.-side-open #pg-side, .-medium PlaygroundPane.-side-open #pg-side {
        display: block;
    }
    .-narrow PlaygroundPane.-side-open #pg-main, .-medium PlaygroundPane.-side-open #pg-main {
        display: none;
    }
    /* On a short screen the open side panels sit in two columns: judged over the log on
       the left, the sweep beside them. */
    .-short.-narrow PlaygroundPane #pg-side, .-short.-medium PlaygroundPane #pg-side {
        layout: grid; grid-size: 2 2; grid-columns: 1fr 1fr; grid-rows: auto 1fr;
        grid-gutter: 0 1;
    }
    .-short.-narrow PlaygroundPane #pg-sweep, .-short.-medium PlaygroundPane #pg-sweep {
        row-span: 2; height: 1fr;
    }
    .-short PlaygroundPane RankingControls { margin-bottom: 0; }
    """
    BINDINGS = [
        Binding("slash", "focus_query", "Query", id="playground.query", key_display="/"),
        Binding("e", "explain", "Explain", id="playground.explain"),
        Binding("space", "toggle_relevant", "Relevant", id="playground.relevant"),
        Binding("w", "sweep", "Sweep", id="playground.sweep"),
        Binding("p", "pin", "Pin A | B", id="playground.pin"),
        Binding("l", "focus_log", "Log", id="playground.log"),
        Binding("c", "copy", "Copy JSON", id="playground.copy"),
        Binding("r", "run_query", "Run the query again", id="playground.run", show=False),
        Binding("escape", "focus_results", "Leave the query box", id="playground.results",
                show=False),
        Binding("left_square_bracket", "nudge('pg-vector', -1)", "Vector weight −0.05",
                id="playground.vector_down", key_display="[", show=False),
        Binding("right_square_bracket", "nudge('pg-vector', 1)", "Vector weight +0.05",
                id="playground.vector_up", key_display="]", show=False),
        Binding("left_curly_bracket", "nudge('pg-fts', -1)", "FTS weight −0.05",
                id="playground.fts_down", key_display="{", show=False),
        Binding("right_curly_bracket", "nudge('pg-fts', 1)", "FTS weight +0.05",
                id="playground.fts_up", key_display="}", show=False),
    ]

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.asked: Asked | None = None
        """The query the shown answer answers."""
        self.found: SearchResult | None = None
        """The ranking shown (B when A is pinned)."""
        self.context: ContextResult | None = None
        """Tri-hybrid's answer, when that mode asked."""
        self.previous: list[str] | None = None
        """The ranking shown before the last move of a control, for ↑ ↓ new."""
        self.pinned: Ranking | None = None
        """A's settings, once pinned."""
        self.judgments: dict[str, int] = {}
        self.sweep: tuple[tuple[Any, ...], list[SweepPoint]] | None = None
        """The last sweep and the settings it was made under."""
        self.log_entries: list[dict[str, Any]] = []
        self.judged_searches = JudgedSearches()
        self.judged_set: JudgedSet | None = None
        """Every judged query of the shown query's scope, searched once, kept."""
        self._controls_ready = False
        self._judge_lock = asyncio.Lock()
        self._judging = 0
        """Grades shown but not yet written (a reload then keeps the shown ones)."""

    # -- layout ------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield AskBar(id="pg-ask")
        yield RankingControls(id="pg-controls")
        with Horizontal(id="pg-body"):
            yield RankingView(EMPTY, id="pg-main")
            with Vertical(id="pg-side"):
                yield JudgedBox(id="pg-judged")
                yield SweepPlot(id="pg-sweep")
                yield LogList(id="pg-log")

    @property
    def ask_bar(self) -> AskBar:
        return self.query_one(AskBar)

    @property
    def controls(self) -> RankingControls:
        return self.query_one(RankingControls)

    @property
    def view(self) -> RankingView:
        return self.query_one(RankingView)

    def on_mount(self) -> None:
        self.query_one(JudgedBox).border_title = "Judged"
        self.query_one(SweepPlot).border_title = "Weight sweep (w)"
        self.query_one(LogList).border_title = "Retrieval log (l · enter replays)"
        self.watch(self.app, "current_session", self._follow_session)
        self._draw()

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        """Below 140 columns the side panels show while the focus is in them."""
        self.set_class(self.query_one("#pg-side") in event.widget.ancestors_with_self,
                       "-side-open")

    # -- loading (live reloads keep the query, the controls and the selection) -------------

    def focus_target(self) -> Widget | None:
        """The query box: the cursor is there when the pane is first shown."""
        return self.query_one("#pg-query", Input)

    def reload(self) -> None:
        self._load()

    @work(exclusive=True, group="playground", exit_on_error=False)
    async def _load(self) -> None:
        """Sessions for the scope, the retrieval log and the shown query's judgments; the
        query is not run again, so nothing the person looks at moves."""
        engine = self.engine
        asked = self.asked
        sessions = await engine.list_sessions()
        entries = await engine.retrieval_log(limit=LOG_LIMIT)
        judgments = None
        if asked is not None and asked.mode != TRI_HYBRID:
            judgments = await engine.judgments(asked.text, **asked.scope)
        if not self._controls_ready:
            self._init_controls()
        self.ask_bar.show_scopes(sessions, self.workbench.current_session)
        if not sessions and self.found is None and self.context is None:
            self.view.show_empty(NO_SESSIONS)
        self._show_log(entries)
        if judgments is not None and self.asked == asked and not self._judging:
            self.judgments = judgments
            self._draw()

    def _init_controls(self) -> None:
        """The controls start at the engine's configured retrieval settings."""
        retrieval = self.engine.config.retrieval
        self._controls_ready = True
        self.controls.show_ranking(vector_weight=retrieval.vector_weight,
                                   fts_weight=retrieval.fts_weight, fusion=retrieval.fusion)
        self.ask_bar.set_mode(retrieval.default_recall_mode)

    def _show_log(self, entries: list[dict[str, Any]]) -> None:
        self.log_entries = entries
        log = self.query_one(LogList)
        log.show(entries)
        log.border_subtitle = f"{len(entries)} queries" if entries else "no queries yet"

    def _follow_session(self, session_id: str | None) -> None:
        """Sessions selected another session: it becomes the scope of the next query. The
        shown answer stays (and says whose it is): browsing sessions runs nothing here."""
        if session_id is not None and self.ask_bar.follow_session(session_id) \
                and self.found is not None:
            self._draw()

    def _scope_warning(self) -> str | None:
        """Says so when the scope chosen is no longer the one the shown answer answers."""
        asked, scope = self.asked, self.ask_bar.scope
        if asked is None or not isinstance(scope, tuple) \
                or scope == (asked.scope_kind, asked.scope_value):
            return None
        # Short: the status line is one line, and both names must show.
        return (f"results for {scope_label(asked.scope_kind, asked.scope_value)}; r runs it "
                f"in {scope_label(*scope)}")

    # -- asking ------------------------------------------------------------------------------

    def _knobs(self) -> dict[str, Any] | None:
        """The controls' ranking, or None with the reason on the status line."""
        try:
            return self.controls.knobs()
        except ValueError as exc:
            self.view.status(Content.styled(str(exc), "$error"))
            return None

    def action_run_query(self) -> None:
        if not self.engine_open:
            self.notify("The memory file is still opening.", severity="warning")
            return
        try:
            asked = self.ask_bar.asking()
        except ValueError as exc:
            self.view.status(Content.styled(str(exc), "$warning"))
            return
        knobs = self._knobs()
        if knobs is None:
            return
        self.view.status(Content.styled("searching…", "italic $text-muted"))
        self._search(asked, knobs)

    @on(Input.Submitted, "#pg-query")
    def _query_submitted(self) -> None:
        self.action_run_query()

    @work(exclusive=True, group="playground-search", exit_on_error=False)
    async def _search(self, asked: Asked, knobs: dict[str, Any]) -> None:
        engine = self.engine
        try:
            if asked.mode == TRI_HYBRID:
                context = await engine.get_context(asked.scope_value, asked.text)
            else:
                found = await engine.search(query=asked.text, mode=asked.mode,
                                            caller="workbench",
                                            session_id=asked.scope.get("session_id"),
                                            namespace=asked.scope.get("namespace"), **knobs)
                judgments = await engine.judgments(asked.text, **asked.scope)
        except WorkbenchError as exc:
            self.view.status(Content.styled(str(exc), "$error"))
            self.notify(str(exc), severity="error")
            return
        if asked.mode == TRI_HYBRID:
            self.asked, self.found, self.context = asked, None, context
            self.judgments, self.previous, self.sweep = {}, None, None
        else:
            self._show_found(asked, found, judgments)
        self._draw(focus=True)
        self._show_log(await engine.retrieval_log(limit=LOG_LIMIT))

    def _show_found(self, asked: Asked, found: SearchResult, judgments: dict[str, int]) -> None:
        """A new answer, run or replayed: nothing moved yet, a sweep of other legs no longer
        applies, and the scope's judged queries load (the sweep and the intervals need
        them)."""
        if self.asked is None or self.asked.scope != asked.scope:
            self.judged_set = None
        if asked.mode == self.engine.config.retrieval.default_recall_mode:
            self.judged_searches.keep(asked.scope, asked.text, found)
        self.asked, self.found, self.context = asked, found, None
        self.judgments, self.previous, self.sweep = judgments, None, None
        self._load_judged(asked)

    @work(exclusive=True, group="playground-judged", exit_on_error=False)
    async def _load_judged(self, asked: Asked) -> None:
        """The scope's judged queries, for the judged set's intervals and sweep; each query
        is searched once (logged as "judged"), the grades read afresh."""
        top_k = self.found.ranking.top_k if self.found is not None else 10
        try:
            judged = await self.judged_searches.load(self.engine, asked.scope, top_k=top_k)
        except WorkbenchError as exc:
            self.notify(str(exc), severity="error")
            return
        if self.asked is not None and self.asked.scope == asked.scope:
            self.judged_set = judged
            self._draw()

    # -- re-ranking from the kept legs (no database) -----------------------------------------

    @on(RankingControls.Changed)
    def _rerank(self) -> None:
        found = self.found
        if found is None or self.context is not None:
            return
        knobs = self._knobs()
        if knobs is None:
            return
        if knobs["top_k"] > found.legs.depth:  # the legs hold too few: ask the database
            self.action_run_query()
            return
        reranked = found.rerank(**knobs)
        if reranked.ranking == found.ranking:
            return
        self.previous = ranking_ids(found)
        self.found = reranked
        self._draw()

    @on(Select.Changed, "#pg-scope, #pg-mode")
    def _question_changed(self) -> None:
        self.controls.enable(self.ask_bar.mode != TRI_HYBRID)
        if self.asked is not None:
            self.action_run_query()

    def action_nudge(self, slider_id: str, steps: int) -> None:
        self.controls.nudge(slider_id, steps)

    # -- showing -----------------------------------------------------------------------------

    def _pinned_found(self) -> SearchResult | None:
        """A's ranking: the same kept legs under the pinned settings."""
        if self.pinned is None or self.found is None:
            return None
        return rank(self.found.legs, self.pinned)

    def _draw(self, focus: bool = False) -> None:
        """Show the current answer: the list(s), the judged scores, the sweep."""
        view, pinned = self.view, self._pinned_found()
        self.controls.show_pinned(self.pinned is not None)
        if self.context is not None:
            assert self.asked is not None
            view.show_context(self.context, query_terms(self.asked.text))
        elif self.found is not None:
            off = self.engine.model.vectors_off
            view.show_found(self.found, pinned, self.previous, self.judgments,
                            self._scope_warning(), None if off is None else off.short)
        judged, found = self.judged_set, self.found
        scored = None if not judged or found is None else set_score(judged, found.ranking)
        difference = None if not judged or found is None or pinned is None \
            else set_difference(judged, pinned.ranking, found.ranking)
        self.query_one(JudgedBox).show(found, self.judgments, pinned,
                                       tri_hybrid=self.context is not None,
                                       judged_set=scored, difference=difference)
        self._draw_sweep()
        if focus and self.is_shown:  # focus in a hidden tab would switch to it
            view.focus_results()

    # -- actions -----------------------------------------------------------------------------

    def action_focus_query(self) -> None:
        self.query_one("#pg-query", Input).focus()

    def action_focus_results(self) -> None:
        """Leave the query box: for the results, or the retrieval log while there are none
        (before a query has run, or when it found nothing), so the pane's keys work again."""
        if not self.view.focus_results():
            self.query_one(LogList).focus()

    def action_focus_log(self) -> None:
        self.query_one(LogList).focus()

    def action_explain(self) -> None:
        if self.context is not None:
            self.notify("Tri-hybrid events say why they were chosen on their row; explain "
                        "works on keyword, vector and hybrid rankings.")
            return
        if self.found is None:
            self.notify("Run a query first (type it above and press enter).")
            return
        pointed = self.view.pointed(self.found, self._pinned_found())
        if pointed is None:
            self.app.push_screen(ExplainScreen(self.found))
        else:
            self.app.push_screen(ExplainScreen(*pointed))

    def on_option_list_option_selected(self, event: ResultsList.OptionSelected) -> None:
        event.stop()
        if isinstance(event.option_list, LogList):
            self._replay(self.log_entries[event.option_index])
        elif isinstance(event.option_list, ResultsList):
            self.action_explain()

    def action_copy(self) -> None:
        if self.context is not None:
            index = self.view.results.highlighted
            if index is not None and index < len(self.context.items):
                item = self.context.items[index]
                self.copy_json(item.to_dict(), f"event #{item.record.sequence}")
            return
        pointed = self.view.pointed(self.found, self._pinned_found())
        if pointed is None:
            self.notify("No result to copy: run a query and pick a result.")
            return
        found, result, place = pointed
        self.copy_json({"rank": place, **found.explain_result(result)}, f"result #{place}")

    # -- judgments ---------------------------------------------------------------------------

    def action_toggle_relevant(self) -> None:
        self._grade(lambda grade: 0 if (grade or 0) >= 1 else 2)

    def on_results_list_graded(self, event: ResultsList.Graded) -> None:
        """``+`` / ``-``: one grade up or down, from 0 to 3 (``-`` on an ungraded result
        judges it not relevant)."""
        if event.step > 0:
            self._grade(lambda grade: min(3, (grade or 0) + 1))
        else:
            self._grade(lambda grade: max(0, (grade or 0) - 1))

    def _grade(self, choose: Callable[[int | None], int]) -> None:
        """Judge the result under the cursor: ``choose`` turns its grade into the new one."""
        if self.context is not None or self.asked is None:
            self.notify("Judgments grade keyword, vector and hybrid results: run one first.")
            return
        pointed = self.view.pointed(self.found, self._pinned_found())
        if pointed is None:
            return
        # Shown at once, so the next key steps from this grade (+ + + is 3), then written.
        chunk_id = pointed[1].chunk_id
        grade = choose(self.judgments.get(chunk_id))
        self.judgments[chunk_id] = grade
        self._draw()
        self._judging += 1
        self._judge(self.asked, chunk_id, grade)

    @work(group="playground-judge", exit_on_error=False)
    async def _judge(self, asked: Asked, chunk_id: str, grade: int) -> None:
        """Write one grade; the lock keeps the writes in the order the keys were pressed."""
        try:
            async with self._judge_lock:
                await self.engine.judge(asked.text, chunk_id, grade, **asked.scope)
        except WorkbenchError as exc:
            self.notify(str(exc), severity="error")
            if self.asked == asked:  # show what is stored, not what was refused
                self.judgments = await self.engine.judgments(asked.text, **asked.scope)
                self._draw()
            return
        finally:
            self._judging -= 1
        if self.asked == asked:
            self._load_judged(asked)
        self.workbench.memory_written()

    # -- A | B -------------------------------------------------------------------------------

    def action_pin(self) -> None:
        if self.pinned is not None:
            self.pinned = None
            self.notify("A unpinned.")
        elif self.found is None:
            self.notify("Run a query first; p pins its settings as A.")
            return
        else:
            self.pinned = self.found.ranking
            self.notify("These settings are A; move the controls to see B beside them.")
        self.previous = None
        self._draw()

    # -- the retrieval log -------------------------------------------------------------------

    @work(exclusive=True, group="playground-search", exit_on_error=False)
    async def _replay(self, entry: dict[str, Any]) -> None:
        """Run a logged query again as it was asked; the controls take its settings."""
        engine = self.engine
        self.view.status(Content.styled(f"replaying {entry['query']!r}…",
                                        "italic $text-muted"))
        asked = Asked(entry["query"], entry["scope_kind"], entry["scope_value"],
                      str(entry["params"].get("mode", "hybrid")))
        try:
            found = await engine.replay(entry["log_id"])
            judgments = await engine.judgments(asked.text, **asked.scope)
        except WorkbenchError as exc:
            self.view.status(Content.styled(str(exc), "$error"))
            self.notify(str(exc), severity="error")
            return
        self._set_question(asked, found.ranking)
        self._show_found(asked, found, judgments)
        self._draw(focus=True)
        self._show_log(await engine.retrieval_log(limit=LOG_LIMIT))

    def _set_question(self, asked: Asked, ranking: Ranking) -> None:
        """Put a replayed query's question and ranking in the widgets (quietly)."""
        self.ask_bar.show_question(asked)
        self.controls.show_ranking(vector_weight=ranking.vector_weight,
                                   fts_weight=ranking.fts_weight, fusion=ranking.fusion,
                                   top_k=ranking.top_k, min_score=ranking.min_score)
        self.controls.enable(asked.mode != TRI_HYBRID)
