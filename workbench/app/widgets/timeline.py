"""A session's timeline: one option per event, oldest first, folded to a few lines.

Tool calls and tool results fold to one line ("→ weather_forecast(place="Cortina", …)")
and long texts to a few; enter unfolds the highlighted event to its full arguments,
result or text. Each event says whether it is in the context a restore would hand back
(● in, ○ left out), and compact markers stand apart from the conversation. A message its
framework removed (a LangGraph RemoveMessage, an Agents SDK pop_item) keeps its place,
tagged "removed".
"""

from __future__ import annotations

import json
import textwrap
from dataclasses import dataclass
from typing import Any

from textual.content import Content
from textual.message import Message
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from core.types import MemoryRecord
from workbench.text import call_signature, one_line, short_time, text_content, tool_names

MUTED = "$foreground-muted"
"""Dim text in ``Content`` ($text-muted is "auto 60%", which only CSS can resolve)."""
SALIENT = 0.85
"""Importance from which an event is marked salient (★)."""
FOLDED_LINE_CHARS = 88
"""A folded tool call or result is cut to this many characters."""
FOLDED_TEXT_LINES = 4
FOLDED_TEXT_CHARS = 320
EARLIER_ID = "earlier"

ROLE_STYLES = {"user": "bold $accent", "assistant": "bold $primary", "tool": "bold $secondary",
               "system": f"bold {MUTED}"}


def compact_marker(record: MemoryRecord) -> dict[str, Any] | None:
    """The compact marker an event carries (written by compaction), or None."""
    metadata = record.payload.get("metadata")
    marker = metadata.get("compact_marker") if isinstance(metadata, dict) else None
    return marker if isinstance(marker, dict) else None


def _one_line(text: str, limit: int = FOLDED_LINE_CHARS) -> str:
    return one_line(text, limit)


def _pretty(text: str) -> str:
    """JSON text indented when it parses, else the text as it is."""
    try:
        return json.dumps(json.loads(text), indent=2, ensure_ascii=False)
    except (ValueError, TypeError, RecursionError):
        return text


@dataclass(frozen=True)
class EventView:
    """How one event shows: folded or not, and where it stands in the restored context."""

    record: MemoryRecord
    unfolded: bool = False
    in_context: bool | None = None   # None: no restore preview yet
    summarized: bool = False         # the rolling summary covers it
    archived: bool = False           # a later compact marker folded it
    tool_name: str | None = None     # for a tool result, the call it answers
    removed: bool = False            # its framework removed it (the event is kept)


def foldable(record: MemoryRecord) -> bool:
    """Whether unfolding would show more than the folded event does."""
    payload = record.payload
    if payload.get("tool_calls") or payload.get("role") == "tool" or compact_marker(record):
        return True
    return long_text(text_content(payload))


def long_text(text: str) -> bool:
    """Whether a message's text is folded to its first lines."""
    return len(text) > FOLDED_TEXT_CHARS or text.count("\n") >= FOLDED_TEXT_LINES


def _block(text: str, indent: str, style: str, width: int | None) -> list[Content]:
    """Each line of ``text`` after ``indent``, wrapped under it (keeping the line's own
    leading spaces, as in indented JSON) when the width is known."""
    lines: list[Content] = []
    for line in text.splitlines() or [""]:
        body = line.lstrip(" ")
        prefix = indent + line[:len(line) - len(body)]
        room = (width - len(prefix)) if width else 0
        pieces = [body]
        if room >= 20 and len(body) > room:
            pieces = textwrap.wrap(body, room, break_on_hyphens=False) or [body]
        lines.extend(Content.styled(prefix + piece, style) for piece in pieces)
    return lines


def render_event(view: EventView, width: int | None = None) -> Content:
    """The option's text for one event: a header line, then its content indented (and
    wrapped under the indent when ``width``, the option's width in cells, is known)."""
    record, payload = view.record, view.record.payload
    role = str(payload.get("role") or "?")
    marker = compact_marker(record)
    gutter = {None: ("  ", ""), True: ("● ", "$success"),
              False: ("○ ", MUTED)}[view.in_context]
    parts: list[str | tuple[str, str]] = [gutter, (f"#{record.sequence:<4} ", "bold"),
                                          (short_time(record.created_at), MUTED), "  "]
    if marker is not None:
        parts.append(("◆ compact marker", "bold $warning"))
    else:
        parts.append((role, ROLE_STYLES.get(role, "bold")))
        if payload.get("name"):
            parts.append((f" ({payload['name']})", MUTED))
    if record.importance >= SALIENT:
        parts.append((f"  ★ {record.importance:.2f}", "bold $warning"))
    else:
        parts.append((f"  {record.importance:.2f}", MUTED))
    if view.summarized:
        parts.append(("  summarized", "italic $accent"))
    if view.archived:
        parts.append(("  archived", f"italic {MUTED}"))
    if view.removed:
        parts.append(("  removed", f"italic {MUTED}"))
    lines = [Content.assemble(*parts)]
    if marker is not None:
        lines.extend(_marker_lines(record, marker, view.unfolded, width))
    else:
        lines.extend(_message_lines(view, MUTED if view.in_context is False else "", width))
    return Content("\n").join(lines)


def _marker_lines(record: MemoryRecord, marker: dict[str, Any], unfolded: bool,
                  width: int | None) -> list[Content]:
    first, last = marker.get("first_sequence"), marker.get("last_sequence")
    count = (last - first + 1) if isinstance(first, int) and isinstance(last, int) else "?"
    arrow = "▾" if unfolded else "▸"
    line = Content.assemble(
        f"  {arrow} ", (f"messages #{first}–#{last} ({count}) archived as "
                        f"“{marker.get('archive_name', '?')}” · "
                        f"{short_time(marker.get('archived_at'))}", "$warning"))
    if not unfolded:
        return [line]
    return [line, *_block(text_content(record.payload), "    ", MUTED, width)]


def _message_lines(view: EventView, style: str, width: int | None) -> list[Content]:
    payload, lines = view.record.payload, []
    text = text_content(payload)
    one_line = max(20, width - 6) if width else FOLDED_LINE_CHARS
    if payload.get("role") == "tool":
        name = view.tool_name or payload.get("tool_name") or payload.get("tool_call_id") or "tool"
        if view.unfolded:
            lines.append(Content.styled(f"  ▾ ← {name}", "$secondary"))
            lines.extend(_block(_pretty(text), "    ", style, width))
        else:
            lines.append(Content.assemble(("  ▸ ← ", "$secondary"),
                                          (_one_line(f"{name}: {text}", one_line), style)))
        return lines
    if text.strip():
        cut = not view.unfolded and long_text(text)
        shown = "\n".join(text.splitlines()[:FOLDED_TEXT_LINES])[:FOLDED_TEXT_CHARS] if cut \
            else text
        lines.extend(_block(shown, "  ", style, width))
        if cut:
            lines.append(Content.styled("  ▸ … (enter shows all)", MUTED))
    for call in payload.get("tool_calls") or ():
        function = call.get("function") if isinstance(call, dict) else None
        function = function if isinstance(function, dict) else {}
        if view.unfolded:
            lines.append(Content.styled(f"  ▾ → {function.get('name') or '?'}", "$secondary"))
            arguments = function.get("arguments")
            raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
            lines.extend(_block(_pretty(raw), "    ", style, width))
        else:
            lines.append(Content.assemble(("  ▸ → ", "$secondary"),
                                          (_one_line(call_signature(function), one_line),
                                           style)))
    if not lines:
        lines.append(Content.styled("  (no content)", f"italic {MUTED}"))
    return lines


class Timeline(OptionList):
    """A session's events as options; enter unfolds or folds the highlighted one."""

    DEFAULT_CSS = """
    Timeline > .option-list--option-highlighted {
        color: $foreground; background: $primary 12%; text-style: none;
    }
    Timeline:focus > .option-list--option-highlighted {
        color: $foreground; background: $primary 28%; text-style: none;
    }
    """

    class LoadEarlier(Message):
        """The user asked for the events before the loaded ones."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.records: list[MemoryRecord] = []
        self.earlier = 0
        self.in_context: set[int] | None = None
        self.summary_upper = 0
        self.removed: frozenset[int] = frozenset()
        """Sequences of the events their framework removed."""
        self._unfolded: set[int] = set()
        self._tool_names: dict[str, str] = {}
        self._last_marker = 0
        self._rendered_width: int | None = None

    # -- what it shows ---------------------------------------------------------------------

    def show(self, records: list[MemoryRecord], earlier: int, summary_upper: int, *,
             highlight: int | None = None, keep_scroll: bool = False,
             keep_folds: bool = False, removed: frozenset[int] = frozenset()) -> None:
        """Show ``records`` (``earlier`` more exist before them) with the event ``highlight``
        highlighted (None: the last one), at the same scroll position when ``keep_scroll``;
        the events of ``removed`` tagged so."""
        scroll_y = self.scroll_y
        if not keep_folds:
            self._unfolded.clear()
            self.in_context = None
        self.records, self.earlier, self.summary_upper = records, earlier, summary_upper
        self.removed = removed
        self._tool_names = tool_names(records)
        self._last_marker = max((r.sequence for r in records if compact_marker(r)), default=0)
        self._rendered_width = self._width
        self.set_options(self._options_for(records))
        if not records:
            return
        index = self.index_of(highlight) if highlight is not None else None
        self.highlighted = self.option_count - 1 if index is None else index
        if keep_scroll and index is not None:
            self.scroll_to(y=scroll_y, animate=False, immediate=True)
            self.scroll_to_highlight()
        self.call_after_refresh(self._keep_tail)

    @property
    def following_tail(self) -> bool:
        """True when the last event is highlighted (a reload then follows new ones)."""
        return self.highlighted is None or self.highlighted == self.option_count - 1

    def mark_context(self, sequences: set[int] | None) -> None:
        """Mark which events a restore would hand back (None: no preview)."""
        self.in_context = sequences
        self._rerender()

    def toggle_fold(self) -> bool:
        """Unfold the highlighted event, or fold it again; False when nothing would change."""
        record = self.highlighted_record
        if record is None or not foldable(record):
            return False
        self._unfolded ^= {record.sequence}
        assert self.highlighted is not None
        self.replace_option_prompt_at_index(self.highlighted, self._prompt(record))
        self.scroll_to_highlight()
        return True

    @property
    def highlighted_record(self) -> MemoryRecord | None:
        index = self.highlighted
        if index is None or index < self._first_event_index:
            return None
        position = index - self._first_event_index
        return self.records[position] if position < len(self.records) else None

    def index_of(self, sequence: int) -> int | None:
        """The option index of the event with ``sequence`` (None when not loaded)."""
        for position, record in enumerate(self.records):
            if record.sequence == sequence:
                return position + self._first_event_index
        return None

    # -- internals -------------------------------------------------------------------------

    @property
    def _width(self) -> int | None:
        """Cells an option has for its text (None before the first layout)."""
        width = self.scrollable_content_region.width - 1
        return width if width > 0 else None

    def _prompt(self, record: MemoryRecord) -> Content:
        return render_event(self._view(record), self._width)

    def on_resize(self) -> None:
        # Texts are wrapped under their indent for the width they had: wrap them again.
        if self._rendered_width != self._width:
            self._rerender()
        self.call_after_refresh(self._keep_tail)

    def _keep_tail(self) -> None:
        """Keep the newest event in view while it is the highlighted one: the timeline
        shrinks when a longer summary loads above it, and the scroll that showed the newest
        event before then leaves it below the view."""
        if self.records and self.following_tail:
            self.scroll_end(animate=False, immediate=True)

    def _rerender(self) -> None:
        self._rendered_width = self._width
        for index, record in enumerate(self.records, self._first_event_index):
            self.replace_option_prompt_at_index(index, self._prompt(record))

    @property
    def _first_event_index(self) -> int:
        return 1 if self.earlier else 0

    def _view(self, record: MemoryRecord) -> EventView:
        marker_after = self._last_marker
        return EventView(
            record, unfolded=record.sequence in self._unfolded,
            in_context=None if self.in_context is None else record.sequence in self.in_context,
            summarized=marker_after < record.sequence <= self.summary_upper,
            archived=record.sequence < marker_after,
            tool_name=self._tool_names.get(str(record.payload.get("tool_call_id"))),
            removed=record.sequence in self.removed)

    def _options_for(self, records: list[MemoryRecord]) -> list[Option | None]:
        options: list[Option | None] = []
        if self.earlier:
            options.append(Option(Content.styled(
                f"▲ {self.earlier:,} earlier event{'s' if self.earlier != 1 else ''} not "
                "loaded — enter (or l) loads more", f"italic {MUTED}"), id=EARLIER_ID))
            options.append(None)
        for record in records:
            options.append(Option(self._prompt(record), id=f"e{record.sequence}"))
            options.append(None)
        return options[:-1] if options else options

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if event.option_id == EARLIER_ID:
            self.post_message(self.LoadEarlier())
        else:
            self.toggle_fold()
