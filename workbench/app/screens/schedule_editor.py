"""The schedule editor: a new schedule or an existing one, checked as you type.

Each keystroke checks the draft with :func:`core.schedules.drafts.check_draft` (the store's
own rules and ``scheduler.min_interval_secs``, so the editor refuses what the CLI refuses)
and shows each refusal under its field, the cadence in words, and the next five times it
fires on the schedule's own clock. Saving writes through ``engine.schedules`` in one call:
the whole schedule or nothing.
"""

from __future__ import annotations

import asyncio

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.suggester import SuggestFromList
from textual.widget import Widget
from textual.widgets import Button, Input, Label, Select, Static, TextArea

from core.errors import InvalidCadence, NotFound, WorkbenchError
from core.schedules.cadence import zone_names
from core.schedules.drafts import DraftCheck, ScheduleDraft, check_draft
from core.schedules.store import POLICIES, Schedules, as_cadence
from core.schedules.wording import in_words
from core.types import ScheduleDefinition
from workbench.app.screens.confirm import ConfirmScreen
from workbench.app.widgets.schedule_text import label, weekday_time

KINDS = (("cron expression", "cron"), ("interval", "interval"), ("once", "once"))
PLACEHOLDERS = {
    "cron": "minute hour day month weekday, e.g. 0 8 * * 1-5",
    "interval": "a duration, e.g. 30m, 6h, 1h30m, 1d",
    "once": "a local date-time, e.g. 2026-12-01T09:00",
}
FIELDS = ("name", "user_id", "goal", "kind", "value", "timezone", "notification_policy")
# Which field an engine refusal is about, from the words its message starts with.
_MESSAGE_FIELDS = (("user_id", "user_id"), ("goal", "goal"), ("name", "name"),
                   ("notification_policy", "notification_policy"))


def _field(title: str, widget: Widget, *, classes: str = "field") -> Vertical:
    """A labelled field with the line its refusal is shown on."""
    return Vertical(Label(title), widget, Static(id=f"error-{widget.id}", classes="field-error"),
                    classes=classes)


class ScheduleEditor(ModalScreen[ScheduleDefinition | None]):
    """Dismissed with the saved schedule, or None when cancelled."""

    DEFAULT_CSS = """
    ScheduleEditor { align: center middle; }
    ScheduleEditor > #editor {
        width: 108; height: auto; max-height: 100%; padding: 0 2;
        border: thick $primary; background: $surface;
    }
    ScheduleEditor #editor-title { text-style: bold; color: $accent; margin: 1 0 0 0; }
    ScheduleEditor .row { height: auto; }
    ScheduleEditor .field { height: auto; width: 1fr; }
    ScheduleEditor .narrow { height: auto; width: 26; margin-right: 1; }
    ScheduleEditor .row > .field { margin-right: 1; }
    ScheduleEditor .row > .field:last-of-type { margin-right: 0; }
    ScheduleEditor Label { color: $text-muted; margin-top: 1; }
    ScheduleEditor #goal { height: 4; }
    ScheduleEditor .field-error { color: $error; height: auto; display: none; }
    ScheduleEditor .field-error.-shown { display: block; }
    ScheduleEditor #in-words { margin-top: 1; }
    ScheduleEditor #preview { height: auto; min-height: 6; }
    ScheduleEditor #editor-buttons { height: auto; align-horizontal: right; margin: 1 0; }
    ScheduleEditor #editor-buttons Button { margin-left: 2; }
    """
    BINDINGS = [
        Binding("ctrl+s", "save", "Save", id="schedule_editor.save"),
        Binding("escape", "cancel", "Cancel", id="schedule_editor.cancel"),
    ]

    def __init__(self, store: Schedules, min_interval_secs: int,
                 schedule: ScheduleDefinition | None = None,
                 start: ScheduleDraft | None = None) -> None:
        super().__init__()
        self.store = store
        self.min_interval_secs = min_interval_secs
        self.schedule = schedule
        if start is None:
            start = (ScheduleDraft.of(schedule) if schedule is not None
                     else ScheduleDraft(user_id="", goal="", kind="cron", value=""))
        self.start = start
        self.current_cadence = as_cadence(schedule.cadence) if schedule is not None else None
        """The edited schedule's cadence, parsed once (not on every check)."""
        self.touched: set[str] = set(FIELDS) if schedule is not None else set()
        """Fields whose refusals are shown: a new schedule's blank fields are not scolded
        before they are typed in (or a save is tried)."""

    # -- layout ------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        start, editing = self.start, self.schedule is not None
        title = (f"Edit schedule {label(self.schedule)}" if self.schedule is not None
                 else "New schedule")
        with Vertical(id="editor"):
            yield Static(title, id="editor-title", markup=False)
            with Horizontal(classes="row"):
                yield _field("Name (optional)", Input(start.name, id="name",
                                                      placeholder="e.g. hut-check"))
                yield _field("User (whose agent runs it)",
                             Input(start.user_id, id="user_id", disabled=editing,
                                   placeholder="e.g. planner"))
            yield _field("Goal (what the run is asked to do)",
                         TextArea(start.goal, id="goal", soft_wrap=True, show_line_numbers=False))
            with Horizontal(classes="row"):
                yield _field("Cadence", Select(KINDS, value=start.kind, allow_blank=False,
                                               id="kind"), classes="narrow")
                yield _field("When", Input(start.value, id="value",
                                           placeholder=PLACEHOLDERS[start.kind]))
            with Horizontal(classes="row"):
                yield _field("Time zone (IANA)", Input(
                    start.timezone, id="timezone", placeholder="e.g. Europe/Rome or UTC",
                    suggester=SuggestFromList(zone_names(), case_sensitive=False)))
                yield _field("Notify the user", Select(
                    [(policy.replace("_", " "), policy) for policy in POLICIES],
                    value=start.notification_policy, allow_blank=False,
                    id="notification_policy"), classes="narrow")
            yield Static(id="in-words")
            yield Static(id="preview")
            yield Static(id="error-general", classes="field-error")
            with Horizontal(id="editor-buttons"):
                yield Button("Cancel (esc)", id="cancel")
                yield Button("Save (ctrl+s)", id="save", variant="primary")

    def on_mount(self) -> None:
        self.app.steady_cursors(self)  # type: ignore[attr-defined]
        self.query_one("#value" if self.schedule is not None else "#name").focus()
        self.run_check()

    # -- the draft ---------------------------------------------------------------------------

    def draft(self) -> ScheduleDraft:
        """The fields as they are typed now."""
        def text(field: str) -> str:
            return self.query_one(f"#{field}", Input).value

        return ScheduleDraft(
            user_id=text("user_id"), goal=self.query_one("#goal", TextArea).text,
            kind=str(self.query_one("#kind", Select).value), value=text("value"),
            timezone=text("timezone"), name=text("name"),
            notification_policy=str(self.query_one("#notification_policy", Select).value))

    def on_input_changed(self, event: Input.Changed) -> None:
        self._changed(event.input.id)

    def on_text_area_changed(self, event: TextArea.Changed) -> None:
        self._changed(event.text_area.id)

    def on_select_changed(self, event: Select.Changed) -> None:
        if event.select.id == "kind":
            self.query_one("#value", Input).placeholder = PLACEHOLDERS[str(event.value)]
        self._changed(event.select.id)

    def _changed(self, field: str | None) -> None:
        if field is not None and self.draft() != self.start:
            self.touched.add(field)
        self.run_check()

    @work(exclusive=True, group="schedule-editor-check", exit_on_error=False)
    async def run_check(self) -> None:
        """Check the draft off the event loop (an unusual cron can take a tenth of a second
        to measure) and show the outcome; a newer keystroke cancels an older check."""
        draft = self.draft()
        check = await asyncio.to_thread(self._check_draft, draft)
        self.show_check(draft, check)

    def _check_draft(self, draft: ScheduleDraft) -> DraftCheck:
        return check_draft(draft, self.min_interval_secs, current=self.schedule,
                           current_cadence=self.current_cadence)

    def show_check(self, draft: ScheduleDraft, check: DraftCheck) -> None:
        for field in FIELDS:
            self._show_error(field, check.problems.get(field) if field in self.touched else None)
        words = self.query_one("#in-words", Static)
        preview = self.query_one("#preview", Static)
        when_ok = not {"kind", "value", "timezone"} & set(check.problems)
        if check.cadence is None or not when_ok:
            words.update(Content.styled(
                "Fix the cadence to see when it fires." if self.touched & {"value", "timezone"}
                else "Type when it fires to see the next five times.", "$text-muted"))
            preview.update("")
            return
        words.update(Content.assemble(("In words  ", "bold $text-muted"),
                                      (in_words(check.cadence), "bold")))
        if not check.next_times:
            status = self.schedule.status if self.schedule is not None else "done"
            preview.update(Content.styled(f"It has no fire time left ({status}).",
                                          "$text-muted"))
            return
        count = len(check.next_times)
        heading = (f"Next {'fire time' if count == 1 else f'{count} fire times'} in "
                   f"{check.cadence.timezone}" + ("" if check.unchanged else ", if saved now"))
        lines = [Content.styled(heading, "bold $text-muted")]
        lines += [Content(f"  {weekday_time(moment, check.cadence)}")
                  for moment in check.next_times]
        preview.update(Content("\n").join(lines))

    def _show_error(self, field: str, message: str | None) -> None:
        error = self.query_one(f"#error-{field}", Static)
        error.update(Content(message or ""))
        error.set_class(bool(message), "-shown")
        if field != "general":
            self.query_one(f"#{field}").set_class(bool(message), "-invalid")

    # -- saving --------------------------------------------------------------------------------

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "save":
            self.action_save()
        else:
            self.action_cancel()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.action_save()

    def action_save(self) -> None:
        self.save()

    @work(exclusive=True, group="schedule-editor-save", exit_on_error=False)
    async def save(self) -> None:
        """Check once more, then create or update in one engine call; a refusal is shown at
        its field and nothing is written."""
        draft = self.draft()
        self.touched.update(FIELDS)
        self._show_error("general", None)
        check = await asyncio.to_thread(self._check_draft, draft)
        self.show_check(draft, check)
        if not check.ok:
            self.query_one(f"#{next(f for f in FIELDS if f in check.problems)}").focus()
            return
        try:
            saved = await self._write(draft, check)
        except WorkbenchError as error:
            self._show_error(self._field_of(error), str(error))
            return
        self.dismiss(saved)

    async def _write(self, draft: ScheduleDraft, check: DraftCheck) -> ScheduleDefinition:
        name = draft.name.strip() or None
        if self.schedule is None:
            return await self.store.create_schedule(
                draft.user_id, draft.goal, draft.cadence_dict(), name=name,
                notification_policy=draft.notification_policy)
        was = self.schedule
        patch: dict[str, object] = {}
        if name != was.name:
            patch["name"] = name
        if draft.goal.strip() != was.goal:
            patch["goal"] = draft.goal
        if not check.unchanged:
            patch["cadence"] = draft.cadence_dict()
        if draft.notification_policy != was.notification_policy:
            patch["notification_policy"] = draft.notification_policy
        if not patch:
            return was
        return await self.store.update_schedule(was.schedule_id, **patch)

    @staticmethod
    def _field_of(error: WorkbenchError) -> str:
        """The field an engine refusal is about ("general" when it is about none)."""
        message = str(error)
        if isinstance(error, InvalidCadence):
            return "timezone" if "time zone" in message else "value"
        if isinstance(error, NotFound):
            return "general"
        return next((field for prefix, field in _MESSAGE_FIELDS if message.startswith(prefix)),
                    "general")

    def action_cancel(self) -> None:
        if self.draft() == self.start:
            self.dismiss(None)
            return

        def discard(confirmed: bool | None) -> None:
            if confirmed:
                self.dismiss(None)

        self.app.push_screen(ConfirmScreen("Discard the changes to this schedule?", "Discard"),
                             discard)
