"""The Scratchpad pane (being built)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.widgets import Static

from workbench.panes.base import Pane


class ScratchpadPane(Pane):
    """The Scratchpad pane."""

    pane_title = "Scratchpad"

    def compose(self) -> ComposeResult:
        yield Static("Scratchpad", id="scratchpad-empty")

    def reload(self) -> None:
        pass
