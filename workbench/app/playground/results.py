"""The playground's result lists: one ranked chunk (or tri-hybrid event) per option.

A result is two lines: its rank, how it moved, the final score, each leg's normalised score
and rank as a bar in the leg's colour, where it lives and its grade; then, when a boost
added to the score, what the score is made of (``fused 0.807 + neighbour 0.209 │``), and
its text with the query's terms highlighted. The compact form fits half the width for A | B.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from textual.binding import Binding
from textual.content import Content
from textual.message import Message
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from core.types import ContextItem, HybridQueryResult, ScoreParts
from workbench.app.playground.bars import (
    FTS,
    VECTOR,
    grade_mark,
    highlighted,
    leg_cell,
    movement,
)

REASON_STYLES = {"recency": "$primary", "salience": "$warning", "relevance": "$success"}


@dataclass(frozen=True)
class RowMarks:
    """What a row shows besides the result: its move, its grade, whether it left."""

    move: int | None = 0
    compared: bool = False
    """Whether there is a ranking to compare with (else no move is shown)."""
    grade: int | None = None
    left: bool = False
    """In A's list: B no longer holds it."""
    vectors_off: bool = False
    """The file's vectors are another model's: the vector leg did not run (the status
    line says why)."""


def location(result: HybridQueryResult, with_session: bool = True) -> str:
    """Where a chunk lives: ``session #8`` or ``session #3–5`` for a chunk over messages."""
    span = (f"#{result.sequence_start}" if result.sequence_start == result.sequence_end
            else f"#{result.sequence_start}–{result.sequence_end}")
    return f"{result.session_id} {span}" if with_session else span


FULL_ROW_FROM = 88
"""A list this wide (cells inside its border) shows the full rows; a narrower one shows
both legs' numbers with shorter bars."""


SHORT_BOOST_NAMES = {"speaker": "spk", "date": "date", "neighbour": "nbr"}
"""The boosts' names in the half-width rows of A | B, where the full ones would hide the text."""


def score_parts(result: HybridQueryResult, *, compact: bool = False) -> Content:
    """What a boosted score adds up from, named as the explain view names it: ``fused 0.807
    + neighbour 0.209 │ `` (empty when no boost added anything: the score is the fusion),
    so a score above the weights' sum reads as fusion plus boosts, not a formula gone wrong."""
    parts = result.parts or ScoreParts(fused=result.score)
    boosted = parts.boosted
    if not boosted:
        return Content("")
    pieces: list[Content | tuple[str, str] | str] = [("fused ", "$text-muted"),
                                                      f"{parts.fused:.3f}"]
    for name, value in boosted.items():
        shown = SHORT_BOOST_NAMES[name] if compact else name
        pieces += [(f" + {shown} ", "$text-muted"), (f"{value:.3f}", "$accent")]
    return Content.assemble(*pieces, (" │ ", "$text-muted"))


def result_prompt(rank: int, result: HybridQueryResult, terms: list[str], marks: RowMarks,
                  *, compact: bool = False, bar_width: int = 12) -> Content:
    """The two lines of one ranked chunk; ``bar_width`` is each leg's bar (12 in a wide
    list, 6 in a narrow one)."""
    move = (Content.styled("out ", "bold $error") if marks.left
            else movement(marks.move, marks.compared))
    head: list[Content | tuple[str, str] | str] = [
        (f"{rank:>3} ", "bold"), move, (f" {result.score:6.3f}", "bold"), "  "]
    if compact:
        head += [_off(10) if marks.vectors_off else
                 leg_cell(result.vector_score, result.vector_rank, 6, VECTOR, numbers=False),
                 " ", leg_cell(result.fts_score, result.fts_rank, 6, FTS, numbers=False),
                 (f" {location(result, False):<7}", "$text-muted"), grade_mark(marks.grade)]
        limit = 96
    else:
        # The vector cell is "vec " + the bar + " 0.00" + " #n ": as wide off as on.
        head += [_off(bar_width + 13) if marks.vectors_off else
                 leg_cell(result.vector_score, result.vector_rank, bar_width, VECTOR, "vec"),
                 "  ", leg_cell(result.fts_score, result.fts_rank, bar_width, FTS, "fts"), "  ",
                 grade_mark(marks.grade), (f"  {location(result)}", "$text-muted")]
        limit = 200
    text = highlighted(result.text, terms, limit) or Content.styled("(no text)", "$text-muted")
    return Content.assemble(*head, "\n", " " * 5, score_parts(result, compact=compact), text)


def _off(width: int) -> Content:
    """The vector cell of a row while the vector leg is off."""
    return Content.styled("vec off".ljust(width), "bold $error")


def payload_text(payload: Mapping[str, Any]) -> str:
    """What a message says: its content, else the tools it calls."""
    content = payload.get("content")
    if isinstance(content, str) and content.strip():
        return content
    calls = payload.get("tool_calls") or []
    if calls:
        return "; ".join(f"→ {call.get('function', {}).get('name', '?')}"
                         f"({call.get('function', {}).get('arguments', '')})" for call in calls)
    return json.dumps(content, ensure_ascii=False) if content else "(empty)"


def context_prompt(item: ContextItem, terms: list[str]) -> Content:
    """One tri-hybrid event: its sequence and role, the strategies that chose it, its text."""
    record = item.record
    badges: list[Content | str] = []
    for reason in item.reasons:
        label = reason
        if reason == "relevance" and item.similarity is not None:
            label = f"relevance {item.similarity:.3f}"
        colour = REASON_STYLES.get(reason, "$accent")
        badges += [Content.styled(f" {label} ", f"bold $background on {colour}"), " "]
    role = str(record.payload.get("role", "?"))
    head = Content.assemble((f"#{record.sequence:<4}", "bold"), (f"{role:<10}", "$text-muted"),
                            *badges, (f"  importance {record.importance:.2f}", "$text-muted"))
    text = highlighted(payload_text(record.payload), terms, 200)
    return Content.assemble(head, "\n", " " * 5, text)


class ResultsList(OptionList):
    """Ranked chunks; ``+`` and ``-`` grade the highlighted one up and down (0-3), enter
    explains it. Digits are left to the app, where they switch panes."""

    DEFAULT_CSS = """
    ResultsList {
        height: 1fr;
        text-wrap: nowrap;
        text-overflow: ellipsis;
        border: round $foreground 20%;
        border-title-color: $text-muted;
        padding: 0;
        & > .option-list--option-highlighted {
            background: $primary 22%;
            color: $foreground;
            text-style: none;
        }
        &:focus {
            border: round $primary;
            border-title-color: $primary;
            & > .option-list--option-highlighted {
                background: $primary 30%;
                color: $foreground;
                text-style: none;
            }
        }
    }
    """
    BINDINGS = [
        Binding("plus,equals_sign", "grade(1)", "Grade up/down", key_display="+/-",
                id="results.grade_up"),
        Binding("minus", "grade(-1)", "Grade down", show=False, id="results.grade_down"),
    ]

    @dataclass
    class Graded(Message):
        """A grade key was pressed on the highlighted result: ``step`` up or down."""

        results: ResultsList
        step: int

        @property
        def control(self) -> ResultsList:
            return self.results

    class Resized(Message):
        """The list's own size changed. Its view draws rows for its width, and a resize of
        the list alone (a side panel folding away) sends the view no resize of its own."""

    def on_resize(self) -> None:
        self.post_message(self.Resized())

    def action_grade(self, step: int) -> None:
        if self.highlighted_option is not None:
            self.post_message(self.Graded(self, step))

    @property
    def highlighted_id(self) -> str | None:
        option = self.highlighted_option
        return None if option is None else option.id

    def show(self, options: list[Option], keep: str | None) -> None:
        """Replace the options, keeping ``keep`` (an option id) highlighted if it is still
        there, else the same place."""
        place = self.highlighted
        self.set_options(_with_dividers(options))
        ids = [option.id for option in self.options]
        if keep is not None and keep in ids:
            self.highlighted = ids.index(keep)
        elif self.options:
            self.highlighted = min(place or 0, len(self.options) - 1)


def _with_dividers(options: list[Option]) -> list[Option | None]:
    """Options with a rule between each two (``None`` is OptionList's divider)."""
    spaced: list[Option | None] = []
    for index, option in enumerate(options):
        if index:
            spaced.append(None)
        spaced.append(option)
    return spaced
