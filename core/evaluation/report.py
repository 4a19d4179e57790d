"""The text ``workbench eval`` and ``workbench tune`` print: one evaluation, a sweep's grid,
two settings compared, a cross-validation."""

from __future__ import annotations

from collections.abc import Mapping

from core.evaluation.metrics import KS, METRICS
from core.evaluation.runner import EvalReport
from core.evaluation.settings import describe
from core.evaluation.stats import RESAMPLES, Interval
from core.evaluation.tuning import Comparison, CrossValidation

_LABELS = {"mrr": "MRR", **{f"ndcg@{k}": f"nDCG@{k}" for k in KS}}


def _label(metric: str) -> str:
    return _LABELS.get(metric, metric)


def _cell(interval: Interval) -> str:
    """``0.770 [.716,.822]``: the figure, then its interval without leading zeros."""
    return (f"{interval.estimate:.3f} [{_bare(interval.low)},{_bare(interval.high)}]")


def _bare(value: float) -> str:
    return f"{value:.3f}".replace("0.", ".", 1) if value < 1 else "1.00"


def report_lines(report: EvalReport, category_names: Mapping[str, str] | None = None,
                 ) -> list[str]:
    """Settings, then a table: a row per metric, a column for all and for each category."""
    excluded = [c for c in report.categories if c in report.excluded]
    lines = [
        f"model       {report.model}",
        f"settings    fusion {report.fusion}, vector weight {report.vector_weight:g}, "
        f"fts weight {report.fts_weight:g}, {report.top_k_chunks} chunks a query",
    ]
    intervals = report.intervals
    columns = [("all", report.overall, intervals["all"])]
    columns += [(f"{c}*" if c in excluded else c, s, intervals[c])
                for c, s in report.categories.items()]
    width = 18
    lines.append("")
    lines.append(f"{'':<11}" + "".join(f"{name:>{width}}" for name, _, _ in columns))
    lines.append(f"{'queries':<11}" + "".join(f"{s.queries:>{width}}" for _, s, _ in columns))
    for metric in METRICS:
        lines.append(f"{_label(metric):<11}"
                     + "".join(f"{_cell(i[metric]):>{width}}" for _, _, i in columns))
    lines.append("")
    lines.append(f"[low, high]: 95% bootstrap interval over the queries ({RESAMPLES:,} "
                 "resamples)")
    notes = []
    if report.categories:
        names = category_names or {}
        notes.append("categories: " + ", ".join(
            f"{c} {names[c]}" if c in names else c for c in report.categories))
    if excluded:
        notes.append(f"* not in all: {', '.join(excluded)}")
    if notes:
        lines.append("")
        lines.append("; ".join(notes))
    return lines


def comparison_lines(comparison: Comparison, labels: tuple[str, str],
                     category_names: Mapping[str, str] | None = None) -> list[str]:
    """A and B per metric, and B - A with its paired interval; per category for recall@10."""
    first, second = comparison.first, comparison.second
    lines = [f"model       {first.model}", f"A           {labels[0]}", f"B           {labels[1]}",
             "", f"{'':<11}{'A':>18} {'B':>18}   B - A (paired, 95%)"]
    for metric in METRICS:
        lines.append(f"{_label(metric):<11}{_cell(first.intervals['all'][metric]):>18} "
                     f"{_cell(second.intervals['all'][metric]):>18}   "
                     + comparison.differences[metric].shown(signed=True))
    lines.append("")
    names = category_names or {}
    for category, differences in comparison.category_differences.items():
        name = f"{category} {names[category]}" if category in names else category
        star = "*" if category in first.excluded else ""
        lines.append(f"B - A recall@10 in {name}{star} ({first.categories[category].queries} "
                     f"queries) = {differences['recall@10'].shown(signed=True)}")
    verdict = comparison.differences["recall@10"]
    lines.append("")
    lines.append(f"B - A recall@10 = {verdict.shown(signed=True)}: "
                 + (("B is better" if verdict.low > 0 else "A is better")
                    + " beyond noise" if verdict.excludes_zero()
                    else "no difference these queries can tell apart from noise"))
    return lines


def cross_validation_lines(cv: CrossValidation) -> list[str]:
    """The folds (chosen on the others, scored held out), pooled, and the verdict."""
    metric = _label(cv.metric)
    lines = [f"cross-validation: {len(cv.folds)} folds by {cv.grouping}; each fold's setting "
             f"chosen by {metric} on the other folds", "",
             f"{'fold':<6}{'queries':>8}{'current':>9}{'chosen':>9}   chosen setting"]
    for fold in cv.folds:
        lines.append(f"{fold.fold:<6}{fold.queries:>8}{fold.current:>9.3f}{fold.tuned:>9.3f}   "
                     + describe(cv.points[fold.chosen]))
    lines += ["", f"held-out {metric}: current {cv.current.shown()}, tuned {cv.tuned.shown()}",
              f"tuned - current = {cv.gain.shown(signed=True)} (paired, 95%)"]
    best = describe(cv.points[cv.best])
    if cv.beats_current:
        lines.append(f"* best: {best}, which beats the current setting on held-out queries "
                     "beyond noise")
    elif cv.best == 0:
        lines.append("the current setting is the best the grid holds")
    else:
        lines.append(f"best on every query: {best}; it does not beat the current setting "
                     "on held-out queries beyond noise,")
        lines.append("so the current setting is as good as anything this grid can tell")
    return lines


def grid_lines(cv: CrossValidation) -> list[str]:
    """One line per grid point: its metric with the interval, recall@5/25 and MRR; the best
    marked * only when it beats the current setting on held-out folds."""
    shown = list(cv.shown[0])
    labels = [describe(p) for p in cv.points]
    width = max(12, *(len(label) + 2 for label in labels))
    lines = [f"{'setting':<{width}}{_label(cv.metric) + ' [95%]':>18}"
             + "".join(f"{_label(m):>10}" for m in shown)]
    for index, (label, means, interval) in enumerate(
            zip(labels, cv.shown, cv.point_intervals, strict=True)):
        mark = "  *" if cv.beats_current and index == cv.best else ""
        lines.append(f"{label:<{width}}{_cell(interval):>18}"
                     + "".join(f"{means[m]:>10.3f}" for m in shown) + mark)
    return lines
