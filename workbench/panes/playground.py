"""The Search pane (being built)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.widgets import Static

from workbench.panes.base import Pane


class PlaygroundPane(Pane):
    """The Search pane."""

    pane_title = "Search"

    def compose(self) -> ComposeResult:
        yield Static("Search", id="playground-empty")

    def reload(self) -> None:
        pass
