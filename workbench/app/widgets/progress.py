"""The strip that shows long work (import, reindex, consolidation, sweep) and cancels it."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.message import Message
from textual.widgets import Label, ProgressBar


class WorkProgress(Message):
    """Progress of the long job (coalesced: only the newest waiting one is handled)."""

    def __init__(self, done: int, total: int | None, label: str | None = None) -> None:
        super().__init__()
        self.done, self.total, self.label = done, total, label

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, WorkProgress)


class ProgressStrip(Horizontal):
    """Hidden until a long job runs; shows its label, a bar and how to cancel it."""

    DEFAULT_CSS = """
    ProgressStrip { dock: bottom; height: 1; display: none; background: $panel; }
    ProgressStrip.-running { display: block; }
    ProgressStrip #work-label { width: auto; padding: 0 1; }
    ProgressStrip ProgressBar { width: 1fr; }
    ProgressStrip #work-cancel { width: auto; padding: 0 1; color: $text-muted; }
    """

    def compose(self) -> ComposeResult:
        yield Label("", id="work-label")
        yield ProgressBar(total=None, show_eta=False, id="work-bar")
        yield Label("ctrl+x cancels", id="work-cancel")

    def start(self, label: str) -> None:
        self.query_one("#work-label", Label).update(label)
        self.query_one(ProgressBar).update(total=None, progress=0)
        self.add_class("-running")

    def advance(self, done: int, total: int | None, label: str | None) -> None:
        if label:
            self.query_one("#work-label", Label).update(label)
        self.query_one(ProgressBar).update(total=total, progress=done)

    def stop(self) -> None:
        self.remove_class("-running")
