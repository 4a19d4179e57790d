"""The Sessions pane: every session, newest activity first, and the selected one's timeline.

The left column lists the conversations (the sessions that hold a namespace's notes are
left to the Notes pane) with a filter; the right (:mod:`workbench.app.widgets.session_detail`)
shows the highlighted session: its rolling summary, a restore preview for a token budget
the user sets (which events would be handed back, ● in and ○ out), and its events folded
to a few lines each. Highlighting a session selects it for the whole app (Scratchpad and
Search follow it).
"""

from __future__ import annotations

import re
from typing import ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.widget import Widget
from textual.widgets import DataTable, Input, Static

from core.errors import NotFound, WorkbenchError
from core.export_paths import export_root, in_export_root
from core.storage.vocabulary import MEMORY_PREFIX
from core.summary.compaction import archive_name
from core.types import (
    MemoryRecord,
    RestoreResult,
    ScratchpadState,
    SessionInfo,
    SummaryState,
)
from workbench.app.layout import WidthClass, width_class
from workbench.app.panes.base import Pane
from workbench.app.screens.confirm import ConfirmScreen
from workbench.app.screens.prompt import PromptScreen
from workbench.app.widgets.cells import fit
from workbench.app.widgets.lists import RowTable
from workbench.app.widgets.session_detail import SessionDetail
from workbench.app.widgets.timeline import Timeline, compact_marker, short_time
from workbench.text import count

COLUMNS: dict[WidthClass, tuple[tuple[str, str, int], ...]] = {
    "wide": (("session", "Session", 24), ("agent", "Agent", 10), ("events", "Events", 6),
             ("updated", "Last activity", 16)),
    "medium": (("session", "Session", 20), ("agent", "Agent", 10), ("events", "Events", 6)),
    "narrow": (("session", "Session", 18), ("events", "Events", 6)),
}
"""The list's columns (key, label, width) at each screen width: narrower screens drop the
last activity, then the agent (the detail beside the list shows both)."""
PAGE = 200
"""Events loaded at a time: the latest ``PAGE``, then ``PAGE`` more per "load earlier"."""
EMPTY = ("No sessions yet. An agent writes them with engine.store() (or engine.append()); "
         "or run `workbench demo` for a database to explore.")


def matches(info: SessionInfo, words: list[str]) -> bool:
    """Whether every word of the filter is in the session's id or agent (any case)."""
    haystack = f"{info.session_id} {info.agent_identity or ''}".lower()
    return all(word in haystack for word in words)


def export_file_name(session_id: str) -> str:
    """A file name for a session's export: ``<session>.json``, unsafe characters as ``_``."""
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", session_id).strip("._")
    return f"{stem or 'session'}.json"


def delete_question(session_id: str, info: SessionInfo | None,
                    scratchpad: ScratchpadState | None, summary: SummaryState) -> str:
    """What deleting a session removes, in words, for the confirmation."""
    goes = [count(info.event_count, "event") if info else "its events",
            (count(info.chunk_count, "chunk") if info else "their chunks")
            + " (with their search index and vectors)"]
    if scratchpad is not None:
        goes.append(f"the scratchpad ({count(len(scratchpad.items), 'item')})")
    if summary.text:
        goes.append(f"the rolling summary (epoch {summary.epoch})")
    listed = ", ".join(goes[:-1]) + " and " + goes[-1]
    return (f"Delete session “{session_id}” for good?\n\nThis removes {listed}. "
            "Archive notes made by compaction stay in the Notes pane.")


def compact_question(session_id: str, info: SessionInfo | None, records: list[MemoryRecord],
                     summary: SummaryState, archive: str) -> str | None:
    """What compacting a session does, in words, for the confirmation; None when there is
    nothing since its last compact marker. ``records`` are its latest events, back to that
    marker at least (or all of them)."""
    marker = max((r.sequence for r in records if compact_marker(r)), default=None)
    folded = [r for r in records if marker is None or r.sequence > marker]
    if not folded:
        return None
    first, last = folded[0].sequence, folded[-1].sequence
    since = "since its last compact marker " if marker is not None else ""
    namespace = f" in namespace {info.agent_identity!r}" if info and info.agent_identity else ""
    summary_goes = (f" The rolling summary (epoch {summary.epoch}) starts over."
                    if summary.text else "")
    return (f"Compact session “{session_id}” now?\n\nIts {count(len(folded), 'message')} "
            f"{since}(#{first}–#{last}) are folded into a new Archive note “{archive}”"
            f"{namespace}, and a compact marker naming it is appended: a restore then starts "
            f"at the marker instead of handing them back.{summary_goes} The events stay in "
            "the file, marked archived (search still finds them). This cannot be undone.")


class SessionsPane(Pane):
    """Sessions, a filter, and the selected session's summary, restore preview and events."""

    pane_title = "Sessions"

    SCOPED_CSS = False  # its rules also start at the screen's size class
    DEFAULT_CSS = """
    SessionsPane { layout: horizontal; }
    SessionsPane #sessions-side { width: 66; height: 1fr; }
    .-medium SessionsPane #sessions-side { width: 44; }
    .-narrow SessionsPane #sessions-side { width: 30; }
    SessionsPane #sessions-filter { margin: 0 0 1 0; }
    .-short SessionsPane #sessions-filter { border: none; height: 1; padding: 0 1; margin: 0; }
    SessionsPane #sessions-table { height: 1fr; }
    SessionsPane #sessions-count { color: $text-muted; padding: 0 1; }
    SessionsPane #sessions-empty { width: 1fr; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("d", "delete", "Delete session", id="sessions.delete"),
        Binding("s", "summarize", "Summarize now", id="sessions.summarize"),
        Binding("a", "compact", "Compact (archive)", id="sessions.compact"),
        Binding("e", "export", "Export JSON", id="sessions.export"),
        Binding("c", "copy_event", "Copy event", id="sessions.copy_event"),
        Binding("space", "toggle_fold", "Fold/unfold event", id="sessions.fold", show=False),
        Binding("l", "load_earlier", "Load earlier events", id="sessions.earlier", show=False),
        Binding("slash", "focus_filter", "Filter sessions", id="sessions.filter",
                key_display="/", show=False),
        Binding("b", "focus_budget", "Restore budget", id="sessions.budget", show=False),
        Binding("r", "refresh", "Refresh", id="sessions.refresh", show=False),
    ]

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.sessions: list[SessionInfo] = []
        """The listed sessions, newest activity first (note stores left out)."""
        self.note_sessions = 0
        self.selected: str | None = None
        self.summary: SummaryState | None = None
        self.restore_result: RestoreResult | None = None
        self._shown_rows: tuple[tuple[object, ...], ...] = ()
        self._columns: WidthClass | None = None
        self._limit = PAGE

    # -- layout ----------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        with Vertical(id="sessions-side"):
            yield Input(placeholder="Filter by session or agent  (/)", id="sessions-filter")
            yield RowTable(id="sessions-table", cursor_type="row", zebra_stripes=True)
            yield Static(id="sessions-count")
        yield SessionDetail(id="session-detail")
        yield Static(EMPTY, id="sessions-empty", classes="empty-state")

    def on_mount(self) -> None:
        # Pane.on_mount runs as well (Textual calls each class's handler): it subscribes to
        # "memory changed". Here the table gets its columns and the pane follows a session
        # that another pane selects.
        self._set_columns(width_class(self.app.size.width))
        self.query_one("#sessions-empty").display = False
        self.detail.display = False
        self.watch(self.app, "current_session", self._follow_session, init=False)

    def on_resize(self) -> None:
        self._set_columns(width_class(self.app.size.width))

    def _set_columns(self, width: WidthClass) -> None:
        """Give the list the columns that fit ``width``, its rows drawn again to match."""
        if width == self._columns:
            return
        self._columns = width
        table = self.table
        table.clear(columns=True)
        for key, label, size in COLUMNS[width]:
            table.add_column(label, key=key, width=size)
        rows, self._shown_rows = self._shown_rows, ()
        if rows:
            self._fill_table(rows)

    @property
    def table(self) -> DataTable[object]:
        return self.query_one("#sessions-table", DataTable)

    @property
    def detail(self) -> SessionDetail:
        return self.query_one(SessionDetail)

    @property
    def timeline(self) -> Timeline:
        return self.detail.timeline

    def focus_target(self) -> Widget | None:
        """The list, unless it is hidden (an empty file)."""
        return self.table if self.query_one("#sessions-side").display else None

    # -- the list --------------------------------------------------------------------------

    def reload(self) -> None:
        self._load_sessions()

    @work(exclusive=True, group="sessions", exit_on_error=False)
    async def _load_sessions(self) -> None:
        listed = await self.engine.list_sessions()
        self.sessions = [s for s in listed if not s.session_id.startswith(MEMORY_PREFIX)]
        self.note_sessions = len(listed) - len(self.sessions)
        before = self.selected
        self._show_sessions()
        if before is not None and self.selected == before:
            self._load_detail(before, keep_place=True)

    def _show_sessions(self) -> None:
        """Fill the table from ``self.sessions`` and the filter, keeping the selection and
        the scroll; then select what the cursor is on."""
        has_any = bool(self.sessions)
        self.query_one("#sessions-empty").display = not has_any
        self.query_one("#sessions-side").display = has_any
        focused = self.screen.focused
        if not has_any and focused is not None and self in focused.ancestors:
            self.screen.set_focus(None)  # nothing to type into or move through
        elif has_any and self.is_shown:
            self._take_focus()
        words = self.query_one("#sessions-filter", Input).value.lower().split()
        visible = [s for s in self.sessions if matches(s, words)]
        rows = tuple((s.session_id, s.agent_identity or "", s.event_count,
                      short_time(s.updated_at)) for s in visible)
        if rows != self._shown_rows:
            self._fill_table(rows)
        shown = count(len(self.sessions), "session")
        if len(visible) != len(self.sessions):
            shown = f"{len(visible):,} of {shown}"
        if self.note_sessions:
            shown += f" · {count(self.note_sessions, 'note store')} hidden (Notes pane)"
        self.query_one("#sessions-count", Static).update(shown)
        self._select(self._cursor_session())

    def _fill_table(self, rows: tuple[tuple[object, ...], ...]) -> None:
        table = self.table
        scroll_y, cursor = table.scroll_y, table.cursor_row
        table.clear()
        columns = COLUMNS[self._columns or "wide"]
        for session_id, agent, events, updated in rows:
            cells: dict[str, str | Text] = {
                "session": str(session_id), "agent": str(agent),
                "events": Text(f"{events:,}", justify="right"), "updated": str(updated)}
            table.add_row(*(fit(cells[key], size) for key, _, size in columns),
                          key=str(session_id))
        self._shown_rows = rows
        ids = [row[0] for row in rows]
        if not ids:
            return
        wanted = self.selected or self.workbench.current_session
        row = ids.index(wanted) if wanted in ids else max(0, min(cursor, len(ids) - 1))
        table.move_cursor(row=row, scroll=False)
        # The new rows are measured on the next refresh: scroll back, then show the cursor.
        table.call_after_refresh(table.scroll_to, y=scroll_y, animate=False)
        table.call_after_refresh(table.move_cursor, row=row)

    def _cursor_session(self) -> str | None:
        table = self.table
        if not table.row_count:
            return None
        row_key, _ = table.coordinate_to_cell_key(table.cursor_coordinate)
        return row_key.value

    def _info(self, session_id: str) -> SessionInfo | None:
        return next((s for s in self.sessions if s.session_id == session_id), None)

    def _select(self, session_id: str | None) -> None:
        """Make ``session_id`` the selected session (for the app too) and load it."""
        self.detail.display = session_id is not None or bool(self.sessions)
        if session_id == self.selected:
            return
        self.selected = session_id
        self._limit = PAGE
        self.summary = self.restore_result = None
        if session_id is None:
            self.detail.show_no_match(self.query_one("#sessions-filter", Input).value.strip())
            return
        self.workbench.show_session(session_id)
        self._load_detail(session_id, keep_place=False)

    def _follow_session(self, session_id: str | None) -> None:
        """Another pane selected a session: move the cursor to it when it is listed."""
        if session_id is None or session_id == self.selected:
            return
        ids = [row[0] for row in self._shown_rows]
        if session_id in ids:
            self.table.move_cursor(row=ids.index(session_id))

    # -- the selected session --------------------------------------------------------------

    @work(exclusive=True, group="sessions-detail", exit_on_error=False)
    async def _load_detail(self, session_id: str, *, keep_place: bool,
                           highlight_before: int | None = None) -> None:
        """Read the session's latest events and summary; then preview the restore."""
        engine = self.engine
        try:
            records = await engine.recall(session_id, limit=self._limit)
            summary = await engine.summary_state(session_id)
            removed = frozenset(await engine.backend.removed_sequences(session_id))
        except NotFound:
            return  # deleted meanwhile: the list's reload moves the selection on
        if session_id != self.selected:
            return
        info = self._info(session_id)
        self.summary = summary
        self.detail.show_session(session_id, info, summary)
        self.detail.show_events(
            records, max(info.event_count if info else 0, len(records)),
            summary.upper_sequence if summary.text else 0, keep_place=keep_place,
            highlight_before=highlight_before, removed=removed)
        self._preview_restore()

    def _preview_restore(self) -> None:
        budget = self.detail.budget
        if budget is None:
            self.restore_result = None
            self.detail.show_restore_note("enter a token budget: a whole number, 0 or more",
                                          "$error")
        elif self.selected is not None:
            if not self.engine.model_loaded:
                self.detail.show_restore_note("waiting for the model to count tokens…")
            self._restore(self.selected, budget)

    @work(exclusive=True, group="sessions-restore", exit_on_error=False)
    async def _restore(self, session_id: str, budget: int) -> None:
        result = await self.engine.restore(session_id, budget)
        if session_id == self.selected:
            self.restore_result = result
            self.detail.show_restore(result, bool(self.summary and self.summary.text))

    # -- events from the widgets -----------------------------------------------------------

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        # Read the cursor, not the message: a rebuilt table posts a highlight for its first
        # row before the cursor goes back to the selected one.
        session = self._cursor_session()
        if session is not None:
            self._select(session)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.timeline.focus()

    @on(Input.Changed, "#sessions-filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        event.stop()
        self._show_sessions()

    @on(Input.Submitted, "#sessions-filter")
    def _filter_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.table.focus()

    @on(Input.Changed, "#restore-budget")
    def _budget_changed(self, event: Input.Changed) -> None:
        event.stop()
        if self.selected is not None:
            self._preview_restore()

    def on_timeline_load_earlier(self, event: Timeline.LoadEarlier) -> None:
        event.stop()
        self.action_load_earlier()

    # -- actions ---------------------------------------------------------------------------

    def _need_session(self) -> str | None:
        if self.selected is None:
            self.notify("Select a session first.", severity="warning")
        return self.selected

    def _written(self) -> None:
        """This pane wrote to the file: reload it now and tell the others."""
        self.workbench.memory_written()
        self._stale = False
        self.reload()

    def action_refresh(self) -> None:
        if self.engine_open:
            self._stale = False
            self.reload()

    def action_focus_filter(self) -> None:
        self.query_one("#sessions-filter", Input).focus()

    def action_focus_budget(self) -> None:
        self.detail.focus_budget()

    def action_toggle_fold(self) -> None:
        if not self.timeline.toggle_fold():
            self.notify("Highlight a tool call, a tool result or a long message in the "
                        "timeline to unfold it.", severity="warning")

    def action_load_earlier(self) -> None:
        timeline = self.timeline
        if self.selected is None or not timeline.earlier:
            self.notify("Every event of this session is loaded.")
            return
        first = timeline.records[0].sequence if timeline.records else None
        self._limit += PAGE
        self._load_detail(self.selected, keep_place=True, highlight_before=first)

    def action_copy_event(self) -> None:
        record = self.timeline.highlighted_record
        if record is None:
            self.notify("Highlight an event in the timeline to copy it.", severity="warning")
            return
        self.copy_json(record.to_dict(), f"event #{record.sequence}")

    def action_delete(self) -> None:
        if (session_id := self._need_session()) is not None:
            self._ask_delete(session_id)

    @work(exclusive=True, group="sessions-action", exit_on_error=False)
    async def _ask_delete(self, session_id: str) -> None:
        """Count what goes, then ask (the answer comes back to :meth:`_forget`)."""
        scratchpad = await self.engine.read_scratchpad(session_id)
        try:
            summary = await self.engine.summary_state(session_id)
        except NotFound:
            self.notify(f"Session {session_id!r} is already gone.")
            return
        question = delete_question(session_id, self._info(session_id), scratchpad, summary)

        def answered(confirmed: bool | None) -> None:
            if confirmed:
                self._forget(session_id)

        self.app.push_screen(ConfirmScreen(question, "Delete"), answered)

    @work(exclusive=True, group="sessions-action", exit_on_error=False)
    async def _forget(self, session_id: str) -> None:
        try:
            deleted = await self.engine.forget(session_id)
        except WorkbenchError as exc:
            self.notify(str(exc), severity="error")
            return
        self.notify(f"Deleted session {session_id!r}." if deleted
                    else f"Session {session_id!r} was already gone.")
        self._written()

    def action_summarize(self) -> None:
        if (session_id := self._need_session()) is None:
            return

        async def job(report: object) -> str:
            outcome = await self.engine.summarize(session_id)
            self._written()
            if outcome.error:
                raise WorkbenchError(f"{outcome.reason}: {outcome.error}")
            if outcome.applied:
                return (f"Summarized {count(outcome.condensed, 'message')} (epoch "
                        f"{outcome.epoch}): {outcome.reason}")
            return f"No summary written: {outcome.reason}"

        self.workbench.run_long(f"Summarize {session_id}", job)

    def action_compact(self) -> None:
        if (session_id := self._need_session()) is not None:
            self._ask_compact(session_id)

    @work(exclusive=True, group="sessions-action", exit_on_error=False)
    async def _ask_compact(self, session_id: str) -> None:
        """Read what a compaction would fold, then ask (the answer starts :meth:`_compact`)."""
        engine = self.engine
        timeline = self.timeline
        records = timeline.records if session_id == self.selected else []
        if not records or (timeline.earlier and not any(map(compact_marker, records))):
            records = await engine.recall(session_id)  # the marker may be further back
        try:
            summary = await engine.summary_state(session_id)
        except NotFound:
            self.notify(f"Session {session_id!r} is already gone.")
            return
        archives = len(await engine.list_archives(session_id))
        question = compact_question(session_id, self._info(session_id), records, summary,
                                    archive_name(session_id, archives + 1))
        if question is None:
            self.notify(f"Nothing to compact in {session_id!r}: no messages since its last "
                        "compact marker.")
            return

        def answered(confirmed: bool | None) -> None:
            if confirmed:
                self._compact(session_id)

        self.app.push_screen(ConfirmScreen(question, "Compact"), answered)

    def _compact(self, session_id: str) -> None:
        async def job(report: object) -> str:
            result = await self.engine.compact(session_id)
            self._written()
            where = (f"; markdown at {result.file_path}" if result.file_path
                     else f"; the markdown copy failed: {result.file_error}")
            return (f"Compacted {count(result.compacted, 'message')} (#{result.first_sequence}"
                    f"–#{result.last_sequence}) into “{result.archive_name}”{where}")

        self.workbench.run_long(f"Compact {session_id}", job)

    def action_export(self) -> None:
        if (session_id := self._need_session()) is None:
            return

        location = self.engine.location

        def answered(path: str | None) -> None:
            if path is not None:
                self._export(session_id, path)

        self.app.push_screen(PromptScreen(
            f"Export “{session_id}” (events, summary, scratchpad) as JSON to (a relative path "
            f"is inside {export_root(location)}):", "a path, e.g. session.json",
            str(export_root(location) / export_file_name(session_id))), answered)

    @work(exclusive=True, group="sessions-action", exit_on_error=False)
    async def _export(self, session_id: str, path: str) -> None:
        try:
            target = in_export_root(self.engine.location, path)
            result = await self.engine.export_session(session_id, target)
        except WorkbenchError as exc:
            self.notify(str(exc), severity="error")
            return
        except OSError as exc:  # the exports folder could not be made
            self.notify(f"cannot write {path}: {exc.strerror or exc}", severity="error")
            return
        extras = []
        if result.has_summary:
            extras.append("the summary")
        if result.scratchpad_items:
            extras.append(count(result.scratchpad_items, "scratchpad item"))
        more = f" with {' and '.join(extras)}" if extras else ""
        self.notify(f"Exported {count(result.events, 'event')}{more} to {result.path}")
