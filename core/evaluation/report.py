"""The text tables ``workbench eval`` prints: one evaluation, or a sweep's grid."""

from __future__ import annotations

from collections.abc import Mapping

from core.evaluation.metrics import KS, METRICS
from core.evaluation.runner import EvalReport, SweepResult

_LABELS = {"mrr": "MRR", **{f"ndcg@{k}": f"nDCG@{k}" for k in KS}}


def _label(metric: str) -> str:
    return _LABELS.get(metric, metric)


def report_lines(report: EvalReport, category_names: Mapping[str, str] | None = None,
                 ) -> list[str]:
    """Settings, then a table: a row per metric, a column for all and for each category."""
    excluded = [c for c in report.categories if c in report.excluded]
    lines = [
        f"model       {report.model}",
        f"settings    fusion {report.fusion}, vector weight {report.vector_weight:g}, "
        f"fts weight {report.fts_weight:g}, {report.top_k_chunks} chunks a query",
    ]
    columns = [("all", report.overall)]
    columns += [(f"{c}*" if c in excluded else c, s) for c, s in report.categories.items()]
    width = max(7, *(len(name) + 2 for name, _ in columns))
    lines.append("")
    lines.append(f"{'':<11}" + "".join(f"{name:>{width}}" for name, _ in columns))
    lines.append(f"{'queries':<11}" + "".join(f"{s.queries:>{width}}" for _, s in columns))
    for metric in METRICS:
        lines.append(f"{_label(metric):<11}"
                     + "".join(f"{s.metrics[metric]:>{width}.3f}" for _, s in columns))
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


def sweep_lines(result: SweepResult) -> list[str]:
    """One line per (fusion, vector weight) with recall@5/10/25 and MRR; the best marked *."""
    shown = ("recall@5", "recall@10", "recall@25", "mrr")
    lines = [f"model  {result.model}", "",
             f"{'fusion':<8}{'vector':>7}{'fts':>6}"
             + "".join(f"{_label(m):>11}" for m in shown)]
    for index, run in enumerate(result.runs):
        mark = "  *" if index == result.best else ""
        lines.append(f"{run.fusion:<8}{run.vector_weight:>7.1f}{run.fts_weight:>6.1f}"
                     + "".join(f"{run.overall.metrics[m]:>11.3f}" for m in shown) + mark)
    if result.runs:
        best = result.runs[result.best]
        lines.append("")
        lines.append(f"* best by recall@10: {best.fusion}, vector weight "
                     f"{best.vector_weight:g}, fts weight {best.fts_weight:g}")
    return lines
