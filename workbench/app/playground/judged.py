"""The playground's judged box: recall@k and nDCG@k of the shown ranking (and of A's), and
over every judged query of the scope with 95% intervals, B - A paired, and a plain warning
when the judged set is too small to tell settings apart.

The scores are recomputed from the kept legs every time the ranking moves, so they follow
the sliders; with nothing judged relevant the box says how to judge.
"""

from __future__ import annotations

from textual.content import Content
from textual.widgets import Static

from core.evaluation.judged import JudgedScore, SetScore, score_ranking
from core.evaluation.stats import Interval
from core.retrieval.search import SearchResult
from workbench.app.playground.bars import metric_bar
from workbench.app.playground.plot import NDCG, RECALL

HOW_TO_JUDGE = ("space marks the highlighted result relevant, + and - grade it (0-3); "
                "recall@k and nDCG@k follow the sliders.")


class JudgedBox(Static):
    """How the ranking does against the judgments of its query."""

    DEFAULT_CSS = """
    JudgedBox {
        height: auto; border: round $foreground 20%; border-title-color: $text-muted;
        padding: 0 1;
    }
    """

    def show(self, found: SearchResult | None, judgments: dict[str, int],
             pinned: SearchResult | None = None, tri_hybrid: bool = False,
             judged_set: SetScore | None = None, difference: Interval | None = None) -> None:
        if tri_hybrid:
            self.update(Content.styled("Judgments grade fused rankings; tri-hybrid has none.",
                                       "$text-muted"))
            return
        if found is None:
            self.update(Content.styled("Run a query, then mark what is relevant.",
                                       "$text-muted"))
            return
        score = score_ranking(found, judgments)
        lines = [Content.styled(HOW_TO_JUDGE, "$text-muted")] if score is None else [
            metric_bar(f"recall@{score.k}", score.recall, 22, RECALL),
            metric_bar(f"nDCG@{score.k}", score.ndcg, 22, NDCG),
            Content.styled(f"{score.found} of {score.relevant} judged relevant in the "
                           f"top {score.k}", "$text-muted")]
        pinned_score = None if pinned is None else score_ranking(pinned, judgments)
        if pinned_score is not None:
            lines.append(_pinned_line(pinned_score))
        if judged_set is not None:
            lines += _set_lines(judged_set, difference)
        self.update(Content("\n").join(lines))


def _set_lines(score: SetScore, difference: Interval | None) -> list[Content]:
    """The judged set: its size, recall@k and nDCG@k with intervals, B - A, the warning."""
    plural = "query" if score.queries == 1 else "queries"
    lines = [Content.styled(f"── all {score.queries} judged {plural} here, 95% ──",
                            "$text-muted"),
             Content.assemble((f"recall@{score.k} ", RECALL), score.recall.shown()),
             Content.assemble((f"nDCG@{score.k}   ", NDCG), score.ndcg.shown())]
    if difference is not None:
        lines.append(Content.assemble(("B − A ", "bold $accent"),
                                      f"recall@{score.k} {difference.shown(signed=True)}"))
        lines.append(Content.styled(_verdict(difference), "$text-muted"))
    warning = score.warning
    if warning is not None:
        lines.append(Content.styled(f"⚠ {warning}", "$warning"))
    return lines


def _pinned_line(score: JudgedScore) -> Content:
    return Content.assemble(("A ", "bold $accent"),
                            (f"recall@{score.k} {score.recall:.2f}", RECALL), " · ",
                            (f"nDCG@{score.k} {score.ndcg:.2f}", NDCG))


def _verdict(difference: Interval) -> str:
    if difference.low > 0:
        return "beyond noise: B is better"
    if difference.high < 0:
        return "beyond noise: A is better"
    return "within noise: A and B cannot be told apart"
