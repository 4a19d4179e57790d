"""The playground's weight sweep: every judged query of the scope re-ranked at each vector
weight, drawn with recall's band, and a verdict on whether the best beats the current one.

A mixin of :class:`~workbench.app.playground.pane.PlaygroundPane`, kept apart so the pane
reads as its layout and its flows; it uses the pane's state named below.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from core.evaluation.judged import JudgedSet, SweepPoint, best_point, set_sweep, sweep_verdict
from core.evaluation.runner import SWEEP_WEIGHTS
from workbench.app.playground.plot import SweepPlot

if TYPE_CHECKING:
    from core.retrieval.search import SearchResult
    from core.types import ContextResult
    from workbench.app.playground.controls import RankingControls

NO_JUDGMENTS_SWEEP = "mark relevant results to see the sweep"


class SweepActions:
    """``w``: sweep the judged set over the vector weight; the plot follows the controls."""

    found: SearchResult | None
    context: ContextResult | None
    judged_set: JudgedSet | None
    sweep: tuple[tuple[Any, ...], list[SweepPoint]] | None
    if TYPE_CHECKING:
        @property
        def controls(self) -> RankingControls: ...

        query_one: Any
        notify: Any
        workbench: Any

    def _sweep_key(self) -> tuple[Any, ...] | None:
        """What a sweep depends on: the judged set and the settings it keeps."""
        found = self.found
        if found is None or self.context is not None:
            return None
        ranking = found.ranking
        return (id(self.judged_set), ranking.fusion, ranking.top_k, ranking.min_score,
                ranking.rrf_k)

    def _draw_sweep(self) -> None:
        plot, current = self.query_one(SweepPlot), self.controls.vector_weight
        key = self._sweep_key()
        if self.context is not None:
            plot.show_sweep(None, current, message="tri-hybrid has no weights to sweep")
        elif key is None:
            plot.show_sweep(None, current, message="run a query to sweep its weights")
        elif not self.judged_set:
            plot.show_sweep(None, current, message=NO_JUDGMENTS_SWEEP)
        elif self.sweep is None:
            plot.show_sweep(None, current, message="press w to sweep the vector weight from "
                                                   "0 to 1 (fts = 1 − v)")
        else:
            swept_key, points = self.sweep
            plot.show_sweep(points, current, stale=swept_key != key)


    def action_sweep(self) -> None:
        found, key = self.found, self._sweep_key()
        if found is None or key is None:
            self.notify("Run a keyword, vector or hybrid query first.")
            return
        judged = self.judged_set
        if not judged:
            self.notify("Mark relevant results first (space, or + and -): the sweep scores "
                        "each weight against every judged query here.", severity="warning")
            return

        async def job(report: Callable[[int, int | None, str | None], None]) -> str:
            points: list[SweepPoint] = []
            for point in set_sweep(judged, found.ranking):  # one per weight
                points.append(point)
                report(len(points), len(SWEEP_WEIGHTS), None)
                await asyncio.sleep(0)  # a cancel lands between points
            self.sweep = (key, points)
            self._draw_sweep()
            return sweep_verdict(judged, found.ranking, points[best_point(points) or 0])

        self.workbench.run_long("Weight sweep", job)
