"""How sure a mean over queries is: percentile bootstrap intervals, alone and paired.

A metric's figure is a mean over queries, and the queries are a sample: another set of
questions about the same conversations would give another mean. The bootstrap redraws the
queries with replacement many times and reads the interval off the spread of the redrawn
means. Comparing two settings on the same queries, the *paired* bootstrap redraws each
query once for both, so what varies between queries (easy ones, hard ones) cancels and the
interval is that of the difference itself. Everything is vectorised: one
``(resamples x queries)`` count matrix, one matrix product per set of columns.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

RESAMPLES = 2000
SEED = 20240607  # fixed: the same figures on every run and every machine
LEVEL = 0.95

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Interval:
    """An estimate (the plain mean) and its percentile bootstrap interval."""

    estimate: float
    low: float
    high: float

    @property
    def width(self) -> float:
        """How far apart the two ends are."""
        return self.high - self.low

    def excludes_zero(self) -> bool:
        """Whether the interval lies wholly on one side of 0 (a difference beyond noise)."""
        return self.low > 0.0 or self.high < 0.0

    def to_dict(self) -> dict[str, float]:
        """The interval as a JSON-ready dict."""
        return {"estimate": self.estimate, "low": self.low, "high": self.high}

    def shown(self, signed: bool = False) -> str:
        """``0.770 [0.716, 0.822]``, or with ``signed`` ``+0.031 [+0.012, +0.050]``."""
        form = "+.3f" if signed else ".3f"
        return f"{self.estimate:{form}} [{self.low:{form}}, {self.high:{form}}]"


def resample_counts(queries: int, resamples: int = RESAMPLES, seed: int = SEED,
                    ) -> FloatArray:
    """How often each query is drawn in each resample: a ``(resamples, queries)`` matrix
    whose rows each sum to ``queries``. Shared by every metric of one report, so all are
    read off the same redraws."""
    rng = np.random.default_rng(seed)
    if queries == 0:
        return np.zeros((resamples, 0))
    drawn = rng.integers(0, queries, size=(resamples, queries))
    # One bincount over row-offset indices counts every row at once (5x a multinomial).
    offsets = np.arange(resamples)[:, None] * queries
    counts = np.bincount((drawn + offsets).ravel(), minlength=resamples * queries)
    return counts.reshape(resamples, queries).astype(np.float64)


def _percentiles(means: FloatArray, level: float) -> tuple[FloatArray, FloatArray]:
    tail = (1.0 - level) / 2.0
    low, high = np.quantile(means, [tail, 1.0 - tail], axis=0)
    return low, high


def mean_intervals(values: FloatArray, counts: FloatArray | None = None,
                   level: float = LEVEL) -> list[Interval]:
    """One interval per column of ``values`` (queries x columns) for the column's mean.

    No queries: every interval is 0 [0, 0]."""
    values = np.asarray(values, dtype=np.float64)
    if values.ndim == 1:
        values = values[:, None]
    queries = values.shape[0]
    if queries == 0:
        return [Interval(0.0, 0.0, 0.0) for _ in range(values.shape[1])]
    if counts is None:
        counts = resample_counts(queries)
    means = counts @ values / queries
    low, high = _percentiles(means, level)
    estimate = values.mean(axis=0)
    return [Interval(float(e), float(lo), float(hi))
            for e, lo, hi in zip(estimate, low, high, strict=True)]


def mean_interval(values: Sequence[float] | FloatArray, counts: FloatArray | None = None,
                  level: float = LEVEL) -> Interval:
    """The mean of ``values`` and its percentile bootstrap interval."""
    return mean_intervals(np.asarray(values, dtype=np.float64)[:, None], counts, level)[0]


def paired_difference(first: Sequence[float] | FloatArray,
                      second: Sequence[float] | FloatArray,
                      counts: FloatArray | None = None, level: float = LEVEL) -> Interval:
    """``mean(second) - mean(first)`` over the same queries, with the paired bootstrap
    interval: each resample draws the same queries for both sides."""
    a = np.asarray(first, dtype=np.float64)
    b = np.asarray(second, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError(f"paired scores need the same queries: {a.shape} against {b.shape}")
    return mean_interval(b - a, counts, level)


def metric_intervals(rows: Sequence[Mapping[str, float]], metrics: Sequence[str],
                     counts: FloatArray | None = None) -> dict[str, Interval]:
    """For per-query metric dicts, each metric's mean with its interval (same redraws)."""
    values = np.array([[row[m] for m in metrics] for row in rows], dtype=np.float64)
    values = values.reshape(len(rows), len(metrics))
    return dict(zip(metrics, mean_intervals(values, counts), strict=True))


def intervals_dict(intervals: Mapping[str, Interval]) -> dict[str, Any]:
    """Metric -> ``{"estimate", "low", "high"}``, for JSON output."""
    return {name: interval.to_dict() for name, interval in intervals.items()}
