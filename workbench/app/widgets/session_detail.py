"""The right side of the Sessions pane: one session's title, rolling summary, restore
preview (a token budget and what fits it) and timeline.

It only shows what the pane hands it; the pane reads the engine.
"""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.widgets import Input, Label, OptionList, Static

from core.types import MemoryRecord, RestoreResult, SessionInfo, SummaryState
from workbench.app.widgets.timeline import MUTED, Timeline, short_time

DEFAULT_BUDGET = 2000
SUMMARY_CHARS = 480
"""The summary is cut to this many characters here (the export holds all of it)."""


def title_content(session_id: str, info: SessionInfo | None) -> Content:
    """The session's id and agent, then its sizes and active period."""
    title = Content.styled(session_id, "bold")
    if info is None:
        return title
    return Content("\n").join([
        Content.assemble(title, ("  agent ", MUTED), info.agent_identity or "—"),
        Content.styled(f"{info.event_count:,} events · {info.chunk_count:,} chunks · "
                       f"{short_time(info.created_at)} → {short_time(info.updated_at)}", MUTED)])


def summary_content(summary: SummaryState) -> Content:
    """The rolling summary: epoch, what it covers, when and by what, its text, its error."""
    head: list[str | tuple[str, str]] = [("Rolling summary", "bold $accent")]
    if summary.text:
        head += [("  ·  epoch ", MUTED), str(summary.epoch),
                 ("  ·  covers up to ", MUTED), f"#{summary.upper_sequence}"]
        if summary.updated_at:
            head += [("  ·  updated ", MUTED), short_time(summary.updated_at)]
        if summary.summarizer:
            head += [("  ·  by ", MUTED), summary.summarizer]
    else:
        head += [("  none yet", MUTED), (f"  (epoch {summary.epoch}; s summarizes now when "
                                         "it is over budget)", MUTED)]
    lines = [Content.assemble(*head)]
    if summary.text:
        text = summary.text
        lines.append(Content(text if len(text) <= SUMMARY_CHARS
                             else text[:SUMMARY_CHARS - 1] + "…"))
    if summary.last_error:
        lines.append(Content.styled(f"last summarizer error: {summary.last_error}", "$error"))
    return Content("\n").join(lines)


def restore_content(result: RestoreResult, has_summary: bool) -> Content:
    """"used / budget tokens · N dropped", and whether the summary made it in."""
    parts: list[str | tuple[str, str]] = [
        (f"{result.tokens_used:,} / {result.token_budget:,} tokens", "bold"), (" · ", MUTED),
        (f"{result.dropped:,} dropped", "$warning" if result.dropped else "$success")]
    if has_summary:
        injected = None in result.sequences
        parts += [(" · ", MUTED), ("summary injected" if injected else "summary left out",
                                   "$accent" if injected else "$warning")]
    return Content.assemble(*parts)


class SessionDetail(Vertical):
    """One session: title, summary, restore preview and timeline."""

    SCOPED_CSS = False  # its rules also start at the screen's size class
    DEFAULT_CSS = """
    SessionDetail { width: 1fr; height: 1fr; padding: 0 0 0 1; }
    SessionDetail #session-title { padding: 0 1; }
    SessionDetail #session-summary {
        max-height: 8; padding: 0 1; margin: 1 0 0 0; border-left: outer $accent;
    }
    SessionDetail #restore-bar { height: 1; margin: 1 0 0 0; padding: 0 1; }
    SessionDetail #restore-bar Label { color: $text-muted; }
    SessionDetail #restore-budget { width: 10; margin: 0 1; }
    SessionDetail #restore-status { width: 1fr; }
    SessionDetail #timeline-legend { color: $text-muted; padding: 0 1; margin: 1 0 0 0; }
    SessionDetail #timeline { height: 1fr; }
    /* A short screen keeps its rows for the timeline: no blank lines between the parts,
       the summary to two lines, the legend to one. */
    .-short SessionDetail #session-summary { max-height: 2; margin: 0; }
    .-short SessionDetail #restore-bar { margin: 0; }
    .-short SessionDetail #timeline-legend {
        margin: 0; height: 1; text-wrap: nowrap; text-overflow: ellipsis;
    }
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._seen_last: int | None = None
        """The newest event the cursor has been on (or was shown at) since the session
        opened; later ones are "new below"."""
        self._shown_count = (0, 0)
        """Events loaded, and in the session."""

    def compose(self) -> ComposeResult:
        yield Static(id="session-title")
        yield Static(id="session-summary")
        with Horizontal(id="restore-bar"):
            yield Label("Restore preview · budget")
            yield Input(str(DEFAULT_BUDGET), type="integer", compact=True,
                        id="restore-budget", tooltip="Tokens a restore may use (b)")
            yield Static(id="restore-status")
        yield Static(id="timeline-legend")
        yield Timeline(id="timeline")

    @property
    def timeline(self) -> Timeline:
        return self.query_one(Timeline)

    @property
    def budget(self) -> int | None:
        """The token budget typed in, or None when it is not a whole number ≥ 0."""
        text = self.query_one("#restore-budget", Input).value.strip()
        try:
            budget = int(text)
        except ValueError:
            return None
        return budget if budget >= 0 else None

    def focus_budget(self) -> None:
        self.query_one("#restore-budget", Input).focus()

    def _static(self, name: str) -> Static:
        return self.query_one(f"#{name}", Static)

    def show_session(self, session_id: str, info: SessionInfo | None,
                     summary: SummaryState) -> None:
        self._static("session-title").update(title_content(session_id, info))
        self._static("session-summary").update(summary_content(summary))

    def show_events(self, records: list[MemoryRecord], total: int, summary_upper: int, *,
                    keep_place: bool, highlight_before: int | None = None,
                    removed: frozenset[int] = frozenset()) -> None:
        """Show the loaded events (the latest of ``total``): a new session at its end; a
        reload keeping the highlighted event and the scroll (or following the tail); after
        "load earlier", the event just before ``highlight_before``, the old first. Events
        that arrive below a cursor left elsewhere are counted in the legend ("new below")
        until the cursor reaches the newest."""
        timeline = self.timeline
        earlier = max(0, total - len(records))
        if highlight_before is not None:
            before = [r.sequence for r in records if r.sequence < highlight_before]
            timeline.show(records, earlier, summary_upper, keep_folds=True,
                          highlight=before[-1] if before else None, removed=removed)
        elif keep_place:
            previous = timeline.highlighted_record
            follow = previous is None or timeline.following_tail
            timeline.show(records, earlier, summary_upper, keep_folds=True,
                          keep_scroll=not follow,
                          highlight=None if previous is None or follow else previous.sequence,
                          removed=removed)
        else:
            self._seen_last = None
            timeline.show(records, earlier, summary_upper, removed=removed)
        if timeline.following_tail or self._seen_last is None:
            self._seen_last = records[-1].sequence if records else 0
        self._shown_count = (len(records), total)
        self._show_legend()

    @property
    def new_below(self) -> int:
        """Events loaded since the cursor left the newest one (0 while it is on it)."""
        seen = self._seen_last
        return 0 if seen is None else sum(r.sequence > seen for r in self.timeline.records)

    def _show_legend(self) -> None:
        loaded, total = self._shown_count
        shown = f"latest {loaded:,} of {total:,}" if total > loaded else f"{loaded:,}"
        parts: list[str | tuple[str, str]] = [("Timeline", "bold"), f"  {shown} events"]
        if new := self.new_below:
            parts.append((f"  ▼ {new:,} new below (end goes there)", "bold $warning"))
        parts.append(("  ·  ● in restored context  ○ left out  ·  enter unfolds", MUTED))
        self._static("timeline-legend").update(Content.assemble(*parts))

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        """The cursor reached the newest event: the new ones below are seen."""
        timeline = self.timeline
        if event.option_list is timeline and timeline.following_tail and self.new_below:
            self._seen_last = timeline.records[-1].sequence
            self._show_legend()

    def show_restore(self, result: RestoreResult, has_summary: bool) -> None:
        self.timeline.mark_context({s for s in result.sequences if s is not None})
        status = self._static("restore-status")
        status.update(restore_content(result, has_summary))
        status.tooltip = f"Tokens counted by {result.token_counting}"

    def show_restore_note(self, text: str, style: str = MUTED) -> None:
        """A word in place of the preview (a bad budget, waiting for the model)."""
        self._static("restore-status").update(Content.styled(text, style))
        if style == "$error":
            self.timeline.mark_context(None)

    def show_no_match(self, query: str) -> None:
        self._static("session-title").update(Content.styled(
            f"No session matches “{query}”. Clear the filter to see them all.", MUTED))
        for name in ("session-summary", "restore-status", "timeline-legend"):
            self._static(name).update("")
        self._seen_last = None
        self.timeline.show([], 0, 0)
