"""Table cells that say when they are cut: a text wider than its column ends in ``…``.

Textual's DataTable crops a cell at its column's edge with no sign that anything is
missing; a session id or a tag list cut that way reads as a whole, different value.
"""

from __future__ import annotations

from rich.cells import cell_len, set_cell_size
from rich.text import Text


def fit(value: str | Text, width: int) -> str | Text:
    """``value`` as it is when it fits ``width`` cells; else cut to ``width`` with ``…``
    at its end (a Rich ``Text`` keeps its styles; a string stays plain, never markup)."""
    plain = value.plain if isinstance(value, Text) else value
    if width < 1 or cell_len(plain) <= width:
        return value
    text = value.copy() if isinstance(value, Text) else Text(value)
    text.no_wrap = True
    text.truncate(width, overflow="ellipsis")
    return text


def cut(value: str, width: int) -> str:
    """A plain string cut to ``width`` cells with ``…`` at the end when it is longer."""
    if width < 1 or cell_len(value) <= width:
        return value
    return set_cell_size(value, width - 1).rstrip() + "…"
