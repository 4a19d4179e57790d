"""The Notes pane (being built)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.widgets import Static

from workbench.panes.base import Pane


class NotesPane(Pane):
    """The Notes pane."""

    pane_title = "Notes"

    def compose(self) -> ComposeResult:
        yield Static("Notes", id="notes-empty")

    def reload(self) -> None:
        pass
