"""The Schedules pane (being built)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.widgets import Static

from workbench.panes.base import Pane


class SchedulesPane(Pane):
    """The Schedules pane."""

    pane_title = "Schedules"

    def compose(self) -> ComposeResult:
        yield Static("Schedules", id="schedules-empty")

    def reload(self) -> None:
        pass
