"""The playground's ranking controls: two weight sliders, fusion, top_k, min_score.

A slider is one line, keyboard first, in steps of 0.05: left/right (or -/+) move it a step,
shift with them five steps, home/end to 0 and 1; a click puts it where the mouse is. Every
change posts a message the playground answers by re-ranking the kept legs at once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.content import Content
from textual.message import Message
from textual.reactive import reactive
from textual.validation import Integer
from textual.widget import Widget
from textual.widgets import Input, Label, Select, Static

from core.retrieval.fusion import FUSIONS
from workbench.app.playground.bars import FTS, VECTOR

STEP = 0.05


class WeightSlider(Widget, can_focus=True):
    """A value from 0 to 1 drawn as a track with a knob, in the leg's colour."""

    DEFAULT_CSS = """
    WeightSlider {
        height: 1;
        width: 32;
        padding: 0 1;
    }
    WeightSlider:focus {
        background: $primary 20%;
    }
    """
    BINDINGS = [
        Binding("left,minus", "step(-1)", "Less", show=False),
        Binding("right,plus,equals_sign", "step(1)", "More", show=False),
        Binding("shift+left", "step(-5)", "Less ×5", show=False),
        Binding("shift+right", "step(5)", "More ×5", show=False),
        Binding("home", "set_to(0)", "Zero", show=False),
        Binding("end", "set_to(1)", "One", show=False),
    ]

    value: reactive[float] = reactive(0.5)

    @dataclass
    class Changed(Message):
        """The slider moved (by a key, a click or the program)."""

        slider: WeightSlider
        value: float

        @property
        def control(self) -> WeightSlider:
            return self.slider

    def __init__(self, label: str, colour: str, value: float = 0.5, *,
                 id: str | None = None) -> None:
        super().__init__(id=id)
        self.label = label
        self.colour = colour
        self.set_reactive(WeightSlider.value, value)

    def validate_value(self, value: float) -> float:
        return round(round(min(1.0, max(0.0, value)) / STEP) * STEP, 2)

    def watch_value(self, value: float) -> None:
        self.post_message(self.Changed(self, value))

    @property
    def track_width(self) -> int:
        return max(4, self.content_size.width - len(self.label) - 7)

    def render(self) -> Content:
        width = self.track_width
        knob = round(self.value * (width - 1))
        label_style = f"bold {self.colour}" if self.has_focus else self.colour
        return Content.assemble(
            (f"{self.label} ", label_style),
            ("━" * knob, self.colour),
            ("●", f"bold {self.colour}"),
            ("─" * (width - 1 - knob), "$foreground 30%"),
            (f" {self.value:.2f}", f"bold {self.colour}"))

    def action_step(self, steps: int) -> None:
        self.value = round(self.value + steps * STEP, 2)

    def action_set_to(self, value: float) -> None:
        self.value = value

    def on_click(self, event: events.Click) -> None:
        start = len(self.label) + 1
        offset = event.x - self.styles.padding.left - start
        if 0 <= offset < self.track_width:
            self.value = offset / (self.track_width - 1)


class RankingControls(Horizontal):
    """The knobs that re-rank kept legs: the two leg weights, fusion, top_k, min_score.

    A change to any of them posts :class:`RankingControls.Changed`; :meth:`show_ranking`
    sets them all without posting (a replayed query's settings).
    """

    SCOPED_CSS = False  # its rules also start at the screen's size class
    DEFAULT_CSS = """
    RankingControls { height: 1; margin-bottom: 1; }
    RankingControls WeightSlider { width: 30; margin-right: 1; }
    RankingControls .pg-label { width: auto; color: $text-muted; padding: 0 1 0 2; }
    RankingControls #pg-fusion { width: 14; }
    RankingControls #pg-topk { width: 7; }
    RankingControls #pg-min { width: 8; }
    RankingControls #pg-pin { width: 1fr; text-align: right; color: $accent; }
    RankingControls > Horizontal { width: auto; height: 1; }
    RankingControls #pg-knobs { width: 1fr; }
    /* Narrow screens: the weights on one row, the other knobs on the next. */
    .-narrow RankingControls { layout: vertical; height: 2; }
    .-narrow RankingControls > Horizontal { width: 1fr; }
    .-narrow RankingControls WeightSlider { width: 1fr; }
    .-medium RankingControls WeightSlider { width: 22; margin-right: 0; }
    .-medium RankingControls .pg-label { padding: 0 1; }
    .-medium RankingControls #pg-fusion { width: 12; }
    """

    @dataclass
    class Changed(Message):
        """A knob moved."""

        controls: RankingControls

        @property
        def control(self) -> RankingControls:
            return self.controls

    def compose(self) -> ComposeResult:
        # Two groups, side by side, or one over the other on a narrow screen.
        with Horizontal(id="pg-weights"):
            yield WeightSlider("vector", VECTOR, 0.3, id="pg-vector")
            yield WeightSlider("fts", FTS, 0.7, id="pg-fts")
        with Horizontal(id="pg-knobs"):
            yield Label("fusion", classes="pg-label")
            yield Select([(f, f) for f in FUSIONS], value="minmax", allow_blank=False,
                         compact=True, id="pg-fusion")
            yield Label("top_k", classes="pg-label")
            yield Input("10", type="integer", compact=True, id="pg-topk",
                        validators=[Integer(minimum=1, maximum=1000)])
            yield Label("min_score", classes="pg-label")
            yield Input("", type="number", compact=True, placeholder="none", id="pg-min",
                        valid_empty=True)
            yield Static("", id="pg-pin")

    @on(WeightSlider.Changed)
    @on(Select.Changed)
    @on(Input.Changed)
    def _knob_moved(self, event: Message) -> None:
        event.stop()
        self.post_message(self.Changed(self))

    @property
    def vector_weight(self) -> float:
        return self.query_one("#pg-vector", WeightSlider).value

    def knobs(self) -> dict[str, Any]:
        """The ranking the controls describe, as ``SearchResult.rerank`` takes it; a
        ``ValueError`` says which field holds no value."""
        try:
            top_k = int(self.query_one("#pg-topk", Input).value)
        except ValueError:
            top_k = 0
        if top_k < 1:
            raise ValueError("top_k must be a whole number from 1")
        min_text = self.query_one("#pg-min", Input).value.strip()
        try:
            min_score = float(min_text) if min_text else None
        except ValueError:
            raise ValueError("min_score must be a number, or empty for none") from None
        return {"vector_weight": self.vector_weight,
                "fts_weight": self.query_one("#pg-fts", WeightSlider).value,
                "fusion": str(self.query_one("#pg-fusion", Select).value),
                "top_k": top_k, "min_score": min_score}

    def show_ranking(self, *, vector_weight: float, fts_weight: float, fusion: str,
                     top_k: int | None = None, min_score: float | None = None) -> None:
        """Set the knobs without posting :class:`Changed` (``top_k`` None keeps it)."""
        with self.prevent(WeightSlider.Changed, Select.Changed, Input.Changed):
            self.query_one("#pg-vector", WeightSlider).value = vector_weight
            self.query_one("#pg-fts", WeightSlider).value = fts_weight
            if fusion in FUSIONS:
                self.query_one("#pg-fusion", Select).value = fusion
            if top_k is not None:
                self.query_one("#pg-topk", Input).value = str(top_k)
                self.query_one("#pg-min", Input).value = ("" if min_score is None
                                                          else f"{min_score:g}")

    def nudge(self, slider_id: str, steps: int) -> None:
        self.query_one(f"#{slider_id}", WeightSlider).action_step(steps)

    def enable(self, enabled: bool) -> None:
        """Tri-hybrid has no weights to move: the knobs go grey."""
        for control in self.query("#pg-weights > *, #pg-knobs > *"):
            control.disabled = not enabled

    def show_pinned(self, pinned: bool) -> None:
        self.query_one("#pg-pin", Static).update("A pinned · p unpins" if pinned else "")
