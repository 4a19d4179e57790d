"""The sizes the app reflows at, named once for the CSS and for the code that picks columns.

Every screen carries one class per axis (Textual's breakpoints): ``-narrow`` below 90
columns (an 80×24 terminal), ``-medium`` below 140 (100×30), ``-wide`` from 140 (160×48);
``-short`` below 40 rows, ``-tall`` from 40. Panes stack or collapse their side panels
on them rather than cut; tables pick the columns that fit (:func:`width_class`).
"""

from __future__ import annotations

from typing import Any, Literal

from textual.widget import Widget
from textual.widgets import Input, Select

MEDIUM_FROM = 90
WIDE_FROM = 140
TALL_FROM = 40

HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (MEDIUM_FROM, "-medium"), (WIDE_FROM, "-wide")]
VERTICAL_BREAKPOINTS = [(0, "-short"), (TALL_FROM, "-tall")]

WidthClass = Literal["narrow", "medium", "wide"]


def width_class(width: int) -> WidthClass:
    """Which of the three widths ``width`` columns is (the screen classes, without the dash)."""
    if width < MEDIUM_FROM:
        return "narrow"
    return "medium" if width < WIDE_FROM else "wide"


def borderless_when_short(root: Widget, *fields: Input | Select[Any]) -> None:
    """Textual's compact (borderless, one-row) form for ``fields`` while ``root``'s
    screen is short: a bordered field takes three rows of the 20 an 80×24 pane has."""
    short = root.screen.has_class("-short")
    for field in fields:
        field.compact = short
