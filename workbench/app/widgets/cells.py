"""Table cells that say when they are cut: a text wider than its column ends in ``…``.

Textual's DataTable crops a cell at its column's edge with no sign that anything is
missing; a session id or a tag list cut that way reads as a whole, different value.
"""

from __future__ import annotations

from rich.cells import cell_len, set_cell_size
from rich.text import Text


def fit(value: object, width: int, *, justify: str = "left") -> Text:
    """``value`` as one line of at most ``width`` cells, its end replaced by ``…`` when
    it is longer (a Rich ``Text`` keeps its styles)."""
    text = value.copy() if isinstance(value, Text) else Text(str(value))
    text.no_wrap = True
    text.justify = justify  # type: ignore[assignment]
    if width >= 1 and cell_len(text.plain) > width:
        text.truncate(width, overflow="ellipsis")
    return text


def cut(value: str, width: int) -> str:
    """A plain string cut to ``width`` cells with ``…`` at the end when it is longer."""
    if width < 1 or cell_len(value) <= width:
        return value
    return set_cell_size(value, width - 1).rstrip() + "…"
