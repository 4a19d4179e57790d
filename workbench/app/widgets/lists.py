"""Tables and lists whose ``home`` and ``end`` move the cursor to the first and last row.

Textual's ``DataTable`` with a row cursor reads ``home``/``end`` as "scroll to the left or
right edge", and ``ListView`` scrolls without moving its cursor: either way the highlighted
row, which every pane acts on, stays where it was. Every table and list in the app is one
of these.
"""

from __future__ import annotations

from typing import Any

from textual.binding import Binding
from textual.widgets import DataTable, ListView


class RowTable(DataTable[Any]):
    """A row-cursor table: ``home`` and ``end`` go to the first and the last row."""

    def action_scroll_home(self) -> None:
        if self.cursor_type == "row" and self.row_count:
            self.move_cursor(row=0)
        else:
            super().action_scroll_home()

    def action_scroll_end(self) -> None:
        if self.cursor_type == "row" and self.row_count:
            self.move_cursor(row=self.row_count - 1)
        else:
            super().action_scroll_end()


class ItemList(ListView):
    """A list view whose ``home`` and ``end`` go to the first and the last item."""

    BINDINGS = [Binding("home", "first", "First", show=False),
                Binding("end", "last", "Last", show=False)]

    def action_first(self) -> None:
        if len(self):
            self.index = 0

    def action_last(self) -> None:
        if len(self):
            self.index = len(self) - 1
