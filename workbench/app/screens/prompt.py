"""Ask for one line of text (a file path, a name) and hand it back."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label

T = TypeVar("T")


def when_given(act: Callable[[T], object]) -> Callable[[T | None], None]:
    """A modal screen's callback: ``act`` on the answer when there is one (a name typed, a
    yes), nothing on an empty or cancelled one; what ``act`` returns (a worker) is dropped."""
    def callback(answer: T | None) -> None:
        if answer:
            act(answer)
    return callback


class PromptScreen(ModalScreen[str | None]):
    """Dismissed with the text entered, or None on escape."""

    DEFAULT_CSS = """
    PromptScreen { align: center middle; }
    PromptScreen > Vertical {
        width: 80; height: auto; padding: 1 2; border: thick $primary; background: $surface;
    }
    """
    BINDINGS = [Binding("escape", "cancel", "Cancel", id="prompt.cancel")]

    def __init__(self, question: str, placeholder: str = "", value: str = "") -> None:
        super().__init__()
        self.question, self.placeholder, self.value = question, placeholder, value

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(self.question)
            yield Input(value=self.value, placeholder=self.placeholder, id="prompt-input")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value.strip() or None)

    def action_cancel(self) -> None:
        self.dismiss(None)
