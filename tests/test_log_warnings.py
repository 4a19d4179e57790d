"""The retrieval log's failure warning: said at once, then at most once an interval, with the
count of those held back."""

from __future__ import annotations

import logging

import pytest

from core.retrieval.log_warnings import ThrottledWarning


def test_warnings_within_the_interval_are_counted_into_the_next_one(
        caplog: pytest.LogCaptureFixture) -> None:
    now = [0.0]
    warning = ThrottledWarning(logging.getLogger("throttle-test"), interval_s=60,
                               clock=lambda: now[0])
    with caplog.at_level(logging.WARNING, logger="throttle-test"):
        for second in (0, 1, 2, 59):
            now[0] = second
            warning.warn("refused: %s", "x")
        now[0] = 60
        warning.warn("refused: %s", "y")
        now[0] = 61
        warning.warn("refused: %s", "z")
    assert [r.getMessage() for r in caplog.records] == [
        "refused: x", "refused: y (and 3 more like it since the last said)"]
    assert warning.held_back == 1
