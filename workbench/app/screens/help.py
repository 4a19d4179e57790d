"""The help screen: every key of the app and of each pane, from the same bindings the
footer and the command palette use."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

ABOUT = (
    "Memory Workbench opens the SQLite memory your agent reads and writes. Every pane "
    "works on the same engine; when another process writes the file, the pane you look "
    "at reloads within a second. ctrl+p opens the command palette: every action is there."
)


def binding_rows(bindings: list[BindingType]) -> list[tuple[str, str]]:
    """(key, description) for each binding that has a description."""
    rows = []
    for binding in bindings:
        if isinstance(binding, Binding) and binding.description:
            rows.append((binding.key_display or binding.key, binding.description))
    return rows


class HelpScreen(ModalScreen[None]):
    """Keys by section; any of escape, q or ? closes it."""

    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll {
        width: 90; height: 80%; border: thick $primary; background: $surface; padding: 1 2;
    }
    """
    BINDINGS = [Binding("escape,q,question_mark", "close", "Close", id="help.close")]

    def __init__(self, sections: list[tuple[str, list[BindingType]]]) -> None:
        super().__init__()
        self.sections = sections

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(Text(ABOUT))
            for title, bindings in self.sections:
                table = Table(title=title, title_justify="left", show_header=False,
                              box=None, padding=(0, 2))
                table.add_column(style="bold")
                table.add_column()
                for key, description in binding_rows(bindings):
                    table.add_row(key, description)
                yield Static(table)

    def action_close(self) -> None:
        self.dismiss(None)
