"""The weight sweep drawn as a bar plot: recall@k and nDCG@k at each vector weight.

Each of the eleven weights (0.0 … 1.0, full text ``1 - v``) gets a pair of bars drawn in
eighth blocks; a star marks the best weight and a triangle the current one, so the person
sees where the slider sits against what the judgments prefer. Swept over a judged set, each
weight also gets its band: a thin line beside the bars over recall's 95% interval.
"""

from __future__ import annotations

from textual.content import Content
from textual.reactive import reactive
from textual.widget import Widget

from core.evaluation.judged import SweepPoint, best_point

RECALL = "$success"
NDCG = "$secondary"
BAND = "$text-muted"
BARS_HEIGHT = 6
AXIS = 4  # the y axis labels' width ("1.0┤")
STRIDE = 3  # cells per weight: a recall bar, an nDCG bar, a gap
_LEVELS = " ▁▂▃▄▅▆▇█"


class SweepPlot(Widget):
    """recall@k and nDCG@k against the vector weight, or what to do to get them."""

    DEFAULT_CSS = """
    SweepPlot {
        height: 14;
        border: round $foreground 20%;
        border-title-color: $text-muted;
        padding: 0 1;
    }
    """

    points: reactive[tuple[SweepPoint, ...]] = reactive(())
    best: reactive[int | None] = reactive(None)
    current: reactive[float] = reactive(0.0)
    message: reactive[str] = reactive("")
    """Shown instead of the plot when there is no sweep to draw."""

    def show_sweep(self, points: list[SweepPoint] | None, current: float, *,
                   message: str = "", stale: bool = False) -> None:
        """Draw ``points`` with the current vector weight marked, or ``message`` when there
        are none; a ``stale`` sweep (made under other settings) says so."""
        self.current = current
        self.points = tuple(points or ())
        self.best = best_point(self.points)
        self.message = message
        self.border_subtitle = "settings changed · w again" if stale and points else ""

    def render(self) -> Content:
        if not self.points:
            return Content.styled(self.message, "$text-muted")
        points = self.points
        k = points[0].score.k
        legend: list[tuple[str, str] | str] = [
            ("▆", RECALL), (f" recall@{k}   ", "$text-muted"), ("▆", NDCG),
            (f" nDCG@{k}", "$text-muted")]
        if points[0].band is not None:
            legend += [("   │", BAND), (" recall 95%", "$text-muted")]
        lines = [Content.assemble(*legend)]
        lines.append(self._marker_row("★", self.best, "bold $warning"))
        for row in range(BARS_HEIGHT):
            lines.append(self._bar_row(row))
        lines.append(Content.styled("   └" + "─" * (STRIDE * len(points)), "$text-muted"))
        lines.append(Content.styled(self._weight_labels(len(points)), "$text-muted"))
        lines.append(self._current_row())
        lines.append(self._summary())
        return Content("\n").join(lines)

    def _bar_row(self, row: int) -> Content:
        """One text row of the bars, ``row`` 0 at the top."""
        level_floor = (BARS_HEIGHT - 1 - row) * 8
        label = "1.0┤" if row == 0 else "0.5┤" if row == BARS_HEIGHT // 2 else "   │"
        parts: list[tuple[str, str] | str] = [(label, "$text-muted")]
        for point in self.points:
            for value, style in ((point.score.recall, RECALL), (point.score.ndcg, NDCG)):
                eighths = round(value * BARS_HEIGHT * 8) - level_floor
                parts.append((_LEVELS[min(8, max(0, eighths))], style))
            parts.append((_band_cell(point, row), BAND))
        return Content.assemble(*parts)

    def _marker_row(self, mark: str, index: int | None, style: str) -> Content:
        if index is None:
            return Content("")
        return Content.assemble(" " * (AXIS + STRIDE * index), (mark, style))

    @staticmethod
    def _weight_labels(count: int) -> str:
        cells = [" "] * (AXIS + STRIDE * count + 2)
        for index in range(0, count, 2):
            label = "0" if index == 0 else "1" if index == count - 1 else f".{index}"
            start = AXIS + STRIDE * index
            cells[start:start + len(label)] = label
        return "".join(cells).rstrip() + "  vector"

    def _current_row(self) -> Content:
        column = AXIS + round(self.current * 10 * STRIDE)
        return Content.assemble(" " * column, ("▲", "bold $accent"),
                                (f" now {self.current:.2f}", "$accent"))

    def _summary(self) -> Content:
        if self.best is None:
            return Content("")
        best = self.points[self.best]
        head = Content.assemble(
            ("★", "bold $warning"), f" best {best.vector_weight:.1f}/{best.fts_weight:.1f}: ")
        if best.band is not None:  # the interval takes nDCG's room
            return head + Content.styled(
                f"recall {best.score.recall:.2f} [{best.band.low:.2f},{best.band.high:.2f}]",
                RECALL)
        return head + Content.assemble((f"recall {best.score.recall:.2f}", RECALL), " · ",
                                       (f"nDCG {best.score.ndcg:.2f}", NDCG))


def _band_cell(point: SweepPoint, row: int) -> str:
    """The band's character in text row ``row`` (0 at the top): a line where recall's
    interval reaches into the row's span of values, else a gap."""
    if point.band is None:
        return " "
    top = (BARS_HEIGHT - row) / BARS_HEIGHT
    bottom = (BARS_HEIGHT - 1 - row) / BARS_HEIGHT
    return "│" if point.band.low <= top and point.band.high >= bottom else " "
