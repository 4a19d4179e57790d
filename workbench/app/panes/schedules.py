"""The Schedules pane: every schedule with its cadence in words and next run on its own
clock, the selected one's run history with full outputs, and an editor that checks as you
type.

The list and the history are read in workers; a reload (the file changed) keeps the
selected schedule and run. The editor is a modal screen holding its own draft, so a reload
never touches an edit in progress.
"""

from __future__ import annotations

from typing import Any, ClassVar

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.coordinate import Coordinate
from textual.markup import escape
from textual.widget import Widget
from textual.widgets import DataTable, Static

from core.schedules.cadence import local_time
from core.schedules.drafts import ScheduleDraft, schedule_preview, upcoming
from core.schedules.wording import in_words
from core.types import ScheduleDefinition, ScheduleRun, ScheduleSearchResult
from workbench.app.panes.base import Pane
from workbench.app.screens.confirm import ConfirmScreen
from workbench.app.screens.prompt import PromptScreen
from workbench.app.screens.schedule_editor import ScheduleEditor
from workbench.app.widgets.lists import RowTable
from workbench.app.widgets.schedule_text import (
    Palette,
    cadence_of,
    empty_runs,
    label,
    run_cells,
    run_detail,
    schedule_cells,
    schedule_detail,
)

EMPTY = ("No schedules. Press n to add one, or an agent creates them "
         "(engine.schedules.create_schedule).")
LIST_LIMIT = 1000
RUN_LIMIT = 100
SCHEDULE_COLUMNS = ("Name", "User", "Cadence", "Next run (its zone)", "Status", "Failures",
                    "Last run")
RUN_COLUMNS = ("Started", "Status", "Took", "Output")


class SchedulesPane(Pane):
    """Schedules, their next runs and their run history; add, edit, pause, resume, delete."""

    pane_title = "Schedules"
    DEFAULT_CSS = """
    SchedulesPane #schedules-summary { height: 1; padding: 0 1; color: $text-muted; }
    SchedulesPane #schedule-table { height: auto; max-height: 45%; }
    SchedulesPane #schedule-lower { height: 1fr; border-top: solid $panel; }
    SchedulesPane #schedule-side { width: 3fr; }
    SchedulesPane #schedule-detail { height: auto; padding: 0 1 1 1; }
    SchedulesPane #runs-title { height: 1; padding: 0 1; color: $text-muted; }
    SchedulesPane #run-table { height: 1fr; }
    SchedulesPane #run-output { width: 2fr; border-left: solid $panel; padding: 0 1; }
    SchedulesPane.-empty #schedule-lower { display: none; }
    SchedulesPane #schedules-empty { display: none; }
    SchedulesPane.-empty #schedules-empty { display: block; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("n", "new_schedule", "New", id="schedules.new"),
        Binding("e", "edit_schedule", "Edit", id="schedules.edit"),
        Binding("p", "pause_schedule", "Pause", id="schedules.pause"),
        Binding("r", "resume_schedule", "Resume", id="schedules.resume"),
        Binding("d,delete", "delete_schedule", "Delete", id="schedules.delete",
                key_display="d"),
        Binding("c", "copy_schedule", "Copy schedule", id="schedules.copy"),
        Binding("C", "copy_run", "Copy run", id="schedules.copy_run", key_display="C"),
    ]

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.found: ScheduleSearchResult | None = None
        self.schedules: dict[str, ScheduleDefinition] = {}
        self.runs: dict[str, ScheduleRun] = {}
        self.selected_id: str | None = None
        """The schedule under the cursor; kept across reloads."""
        self.selected_run_id: str | None = None
        self.runs_of: str | None = None
        """The schedule whose history the run table shows."""

    # -- layout ------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Static(id="schedules-summary")
        # Shown even when empty (just its header), so it holds the focus the keys need.
        yield RowTable(id="schedule-table", cursor_type="row", zebra_stripes=True)
        yield Static(EMPTY, id="schedules-empty", classes="empty-state", markup=False)
        with Horizontal(id="schedule-lower"):
            with Vertical(id="schedule-side"):
                yield Static(id="schedule-detail")
                yield Static(id="runs-title")
                yield RowTable(id="run-table", cursor_type="row")
            with VerticalScroll(id="run-output"):
                yield Static(id="run-output-text")

    def on_mount(self) -> None:
        self.query_one("#schedule-table", DataTable).add_columns(*SCHEDULE_COLUMNS)
        self.query_one("#run-table", DataTable).add_columns(*RUN_COLUMNS)
        self.watch(self.app, "theme", self._recolour, init=False)

    def _recolour(self) -> None:
        """Table cells carry the theme's colours: draw them again from what was read."""
        if self.found is not None:
            self.show_schedules(self.found)
        if self.runs_of is not None and self.runs_of in self.schedules:
            self.show_runs(self.runs_of, list(self.runs.values()))

    @property
    def palette(self) -> Palette:
        return Palette.of(self.app.theme_variables)

    @property
    def selected(self) -> ScheduleDefinition | None:
        return self.schedules.get(self.selected_id or "")

    @property
    def selected_run(self) -> ScheduleRun | None:
        return self.runs.get(self.selected_run_id or "")

    def focus_target(self) -> Widget | None:
        return self.query_one("#schedule-table", DataTable)

    # -- loading -------------------------------------------------------------------------------

    def reload(self) -> None:
        self.load_schedules()

    @work(exclusive=True, group="schedules", exit_on_error=False)
    async def load_schedules(self) -> None:
        found = await self.engine.schedules.search_schedules(limit=LIST_LIMIT)
        self.show_schedules(found)
        if self.selected_id is not None:
            await self._read_runs(self.selected_id)

    @work(exclusive=True, group="schedule-runs", exit_on_error=False)
    async def load_runs(self, schedule_id: str) -> None:
        await self._read_runs(schedule_id)

    async def _read_runs(self, schedule_id: str) -> None:
        runs = await self.engine.schedules.get_run_history(schedule_id, RUN_LIMIT)
        if schedule_id == self.selected_id:  # the cursor may have moved on meanwhile
            self.show_runs(schedule_id, runs)

    def show_schedules(self, found: ScheduleSearchResult) -> None:
        """Fill the list, the cursor staying on the schedule it was on (or near it)."""
        self.found = found
        ordered = sorted(found.schedules,
                         key=lambda s: ((s.name or s.schedule_id).lower(), s.schedule_id))
        self.schedules = {s.schedule_id: s for s in ordered}
        self.set_class(not ordered, "-empty")
        table = self.query_one("#schedule-table", DataTable)
        row = table.cursor_row
        table.clear()
        palette = self.palette
        for schedule in ordered:
            table.add_row(*schedule_cells(schedule, palette), key=schedule.schedule_id)
        ids = list(self.schedules)
        if ids:
            row = ids.index(self.selected_id) if self.selected_id in ids else min(row,
                                                                                  len(ids) - 1)
            table.move_cursor(row=row, animate=False)
            self.selected_id = ids[row]
        else:
            self.selected_id = self.runs_of = self.selected_run_id = None
            self.runs = {}
        self.show_summary(found)
        self.show_detail()

    def show_summary(self, found: ScheduleSearchResult) -> None:
        counts = {status: sum(s.status == status for s in found.schedules)
                  for status in ("active", "paused", "completed")}
        failing = sum(s.consecutive_failures > 0 for s in found.schedules)
        shown = (f"{len(found.schedules)} of {found.total}" if found.total > len(found.schedules)
                 else str(found.total))
        parts = [f"{shown} schedule{'' if found.total == 1 else 's'}"]
        parts += [f"{count} {status}" for status, count in counts.items() if count]
        if failing:
            parts.append(f"{failing} failing")
        self.query_one("#schedules-summary", Static).update(
            Content(" · ".join(parts) + " · times on each schedule's own clock"))

    def show_detail(self) -> None:
        schedule = self.selected
        detail = self.query_one("#schedule-detail", Static)
        if schedule is None:
            detail.update("")
            return
        detail.update(schedule_detail(schedule, upcoming(schedule)))

    def show_runs(self, schedule_id: str, runs: list[ScheduleRun]) -> None:
        """Fill the history, keeping the selected run when it is the same schedule's."""
        if schedule_id != self.runs_of:
            self.selected_run_id = None
        self.runs_of = schedule_id
        self.runs = {run.run_id: run for run in runs}
        schedule = self.schedules[schedule_id]
        cadence = cadence_of(schedule)
        table = self.query_one("#run-table", DataTable)
        table.clear()
        palette = self.palette
        for run in runs:
            table.add_row(*run_cells(run, cadence, palette), key=run.run_id)
        failed = sum(run.status != "ok" for run in runs)
        self.query_one("#runs-title", Static).update(Content(
            f"Run history of {label(schedule)}: {len(runs)} run{'' if len(runs) == 1 else 's'}"
            + (f", {failed} not ok" if failed else "") + " (newest first)"))
        ids = list(self.runs)
        if ids:
            row = ids.index(self.selected_run_id) if self.selected_run_id in ids else 0
            table.move_cursor(row=row, animate=False)
            self.selected_run_id = ids[row]
        self.show_run_output()

    def show_run_output(self) -> None:
        output = self.query_one("#run-output-text", Static)
        schedule, run = self.selected, self.selected_run
        if schedule is None:
            output.update("")
        elif run is None:
            output.update(empty_runs(schedule))
        else:
            output.update(run_detail(run, cadence_of(schedule)))

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        """Follow the cursor (read from the table itself: a refill may have moved it since
        this message was sent)."""
        table = event.data_table
        if table.row_count == 0:
            return
        key = table.coordinate_to_cell_key(Coordinate(table.cursor_row, 0)).row_key.value
        if table.id == "schedule-table":
            if key != self.selected_id or key != self.runs_of:
                self.selected_id = key
                self.show_detail()
                self.load_runs(key)
        elif table.id == "run-table" and key in self.runs:
            self.selected_run_id = key
            self.show_run_output()

    # -- actions -------------------------------------------------------------------------------

    def _need_selected(self) -> ScheduleDefinition | None:
        schedule = self.selected
        if schedule is None:
            self.notify("No schedule selected. Press n to add one.", severity="warning")
        return schedule

    def _written(self, schedule_id: str | None, message: str) -> None:
        """After a write: say what happened, reload here, tell the other panes."""
        if schedule_id is not None:
            self.selected_id = schedule_id
        self.notify(message, markup=False)
        self.workbench.memory_written()  # the pulse it takes reloads this pane once

    def action_new_schedule(self) -> None:
        near = self.selected
        start = ScheduleDraft(user_id=near.user_id if near else "", goal="", kind="cron",
                              value="", timezone=cadence_of(near).timezone if near else "UTC")
        self._open_editor(None, start)

    def action_edit_schedule(self) -> None:
        if (schedule := self._need_selected()) is not None:
            self._open_editor(schedule, None)

    def _open_editor(self, schedule: ScheduleDefinition | None,
                     start: ScheduleDraft | None) -> None:
        def saved(result: ScheduleDefinition | None) -> None:
            if result is None:
                return
            cadence = cadence_of(result)
            when = (f"next {local_time(result.next_run_at, cadence)}"
                    if result.status == "active" and result.next_run_at else result.status)
            self._written(result.schedule_id,
                          f"Saved {label(result)}: {in_words(cadence)}; {when}")

        editor = ScheduleEditor(self.engine.schedules,
                                self.engine.config.scheduler.min_interval_secs, schedule, start)
        self.app.push_screen(editor, saved)

    def action_pause_schedule(self) -> None:
        schedule = self._need_selected()
        if schedule is None:
            return
        if schedule.status == "paused":
            self.notify(f"{label(schedule)} is already paused. Press r to resume it.",
                        markup=False)
            return

        def paused(reason: str | None) -> None:
            if reason is not None:
                self.pause(schedule.schedule_id, reason)

        self.app.push_screen(PromptScreen(
            f"Pause {escape(label(schedule))}: why? (kept as its status reason; esc keeps it "
            "running)",
            "paused by hand", "paused by hand"), paused)

    @work(group="schedule-writes", exit_on_error=False)
    async def pause(self, schedule_id: str, reason: str) -> None:
        schedule = await self.engine.schedules.pause_schedule(schedule_id, reason)
        self._written(schedule_id, f"Paused {label(schedule)}: {reason}")

    def action_resume_schedule(self) -> None:
        schedule = self._need_selected()
        if schedule is None:
            return
        if schedule.status == "active":
            self.notify(f"{label(schedule)} is already active.", markup=False)
            return
        self.resume(schedule_id=schedule.schedule_id)

    @work(group="schedule-writes", exit_on_error=False)
    async def resume(self, schedule_id: str) -> None:
        schedule = await self.engine.schedules.resume_schedule(schedule_id)
        cadence = cadence_of(schedule)
        self._written(schedule_id, f"Resumed {label(schedule)}: next "
                                   f"{local_time(schedule.next_run_at, cadence)}")

    def action_delete_schedule(self) -> None:
        if (schedule := self._need_selected()) is not None:
            self.confirm_delete(schedule)

    @work(group="schedule-writes", exit_on_error=False)
    async def confirm_delete(self, schedule: ScheduleDefinition) -> None:
        """Count the runs that go with it, then ask (without waiting here for the answer)."""
        runs = await self.engine.schedules.count_runs(schedule.schedule_id)
        what = f"{runs} run{'' if runs == 1 else 's'}"
        history = f"Its history of {what} goes with it." if runs else "It has not run yet."
        question = (f"Delete the schedule {escape(label(schedule))} ({escape(schedule.user_id)}, "
                    f"{in_words(cadence_of(schedule))})? {history} This cannot be undone.")

        def answered(confirmed: bool | None) -> None:
            if confirmed:
                self.delete(schedule, what)

        self.app.push_screen(ConfirmScreen(question, "Delete"), answered)

    @work(group="schedule-writes", exit_on_error=False)
    async def delete(self, schedule: ScheduleDefinition, what: str) -> None:
        deleted = await self.engine.schedules.delete_schedule(schedule.schedule_id)
        message = (f"Deleted {label(schedule)} and its history of {what}" if deleted
                   else f"{label(schedule)} was already gone")
        self._written(None, message)

    def action_copy_schedule(self) -> None:
        if (schedule := self._need_selected()) is not None:
            self.copy_json(schedule_preview(schedule), f"schedule {escape(label(schedule))}")

    def action_copy_run(self) -> None:
        run = self.selected_run
        if run is None:
            self.notify("No run selected: the selected schedule has not run yet.",
                        severity="warning")
            return
        self.copy_json(run, f"run {run.run_id}")
