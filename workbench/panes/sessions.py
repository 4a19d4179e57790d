"""The Sessions pane (being built)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.widgets import Static

from workbench.panes.base import Pane


class SessionsPane(Pane):
    """The Sessions pane."""

    pane_title = "Sessions"

    def compose(self) -> ComposeResult:
        yield Static("Sessions", id="sessions-empty")

    def reload(self) -> None:
        pass
