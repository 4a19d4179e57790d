"""The note editor: every field of one note, the engine's message under the field it
refuses, and a heading that says whether the text is saved and whether the file moved on.

It only holds text. What it was loaded from (``note``, or None for a new note) is kept so
that "modified" means "differs from what was loaded", and a live reload can tell the user
that the note changed on disk without touching what they typed.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.widget import Widget
from textual.widgets import Input, Label, Select, Static, TextArea

from core.notes.fields import CATEGORIES, KINDS
from core.types import Note
from workbench.app.layout import borderless_when_short
from workbench.app.widgets.note_form import FIELD_NAMES, NoteForm
from workbench.text import short_time as stamp


class NoteField(Vertical):
    """A caption, the field's widget, and the engine's message when it refuses the value
    (as wide as the field and wrapped there, so a narrow field shows all of it)."""

    DEFAULT_CSS = """
    NoteField { height: auto; width: 1fr; }
    NoteField > .caption { color: $text-muted; padding: 0 1; }
    NoteField > .field-error { color: $error; padding: 0 1; display: none; width: 100%; }
    NoteField.-refused > .caption { color: $error; }
    NoteField.-refused > .field-error { display: block; }
    """

    def __init__(self, caption: str, widget: Widget, field_name: str) -> None:
        super().__init__(id=f"field-{field_name}")
        self.caption = caption
        self.widget = widget
        self.field_name = field_name

    def compose(self) -> ComposeResult:
        yield Label(self.caption, classes="caption")
        yield self.widget
        yield Label("", classes="field-error", id=f"error-{self.field_name}")

    def show_error(self, message: str | None) -> None:
        self.query_one(".field-error", Label).update(message or "")
        self.set_class(bool(message), "-refused")
        self.widget.set_class(bool(message), "-invalid")


class NoteEditor(Vertical):
    """One note's fields; the pane saves them."""

    SCOPED_CSS = False  # its rules also start at the screen's size class
    DEFAULT_CSS = """
    NoteEditor { width: 1fr; height: 1fr; padding: 0 1; }
    NoteEditor #note-heading { height: 1; padding: 0 1; }
    NoteEditor #note-meta { height: auto; padding: 0 1; color: $text-muted; margin-bottom: 1; }
    NoteEditor #note-notice { height: auto; padding: 0 1; color: $error; margin-bottom: 1; }
    NoteEditor Horizontal { height: auto; }
    NoteEditor #field-category, NoteEditor #field-kind { width: 22; }
    NoteEditor #field-importance { width: 18; }
    NoteEditor #field-content { height: 1fr; }
    NoteEditor #note-content { height: 1fr; }
    /* A short screen: the meta line without the blank under it, the content at least
       three lines. */
    .-narrow NoteEditor #field-category, .-narrow NoteEditor #field-kind,
    .-narrow NoteEditor #field-importance, .-medium NoteEditor #field-category,
    .-medium NoteEditor #field-kind, .-medium NoteEditor #field-importance { width: 1fr; }
    .-short NoteEditor #note-meta { margin-bottom: 0; }
    .-short NoteEditor #field-content { min-height: 4; }
    .-short NoteEditor #note-content { min-height: 3; }
    """

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.note: Note | None = None
        """The stored note the fields were loaded from; None while writing a new one."""
        self.namespace = ""
        self.loaded = NoteForm()
        self.disk_notice: str | None = None
        """Why the stored note no longer matches ``note`` (changed or deleted on disk)."""

    def compose(self) -> ComposeResult:
        yield Static(id="note-heading")
        yield Static(id="note-meta")
        yield Static(id="note-notice")
        with Horizontal():
            yield NoteField("Name", Input(id="note-name"), "name")
            yield NoteField("Aliases (comma-separated)", Input(id="note-aliases"), "aliases")
        with Horizontal():
            yield NoteField("Tags (comma-separated)", Input(id="note-tags"), "tags")
            yield NoteField("Source", Input(id="note-source"), "source")
        with Horizontal():
            yield NoteField("Category", Select([(c, c) for c in CATEGORIES],
                                               allow_blank=False, id="note-category"),
                            "category")
            yield NoteField("Kind", Select([(k, k) for k in KINDS], allow_blank=False,
                                           id="note-kind"), "kind")
            yield NoteField("Importance (0–1)", Input(id="note-importance"), "importance")
        yield NoteField("Content", TextArea(id="note-content", soft_wrap=True), "content")

    def on_mount(self) -> None:
        self.set_fields(self.loaded)

    def on_resize(self) -> None:
        borderless_when_short(self, *self.query(Input), *self.query(Select))

    # -- what the fields hold ----------------------------------------------------------------

    @property
    def form(self) -> NoteForm:
        """The fields' text now."""
        return NoteForm(
            name=self.query_one("#note-name", Input).value,
            aliases=self.query_one("#note-aliases", Input).value,
            tags=self.query_one("#note-tags", Input).value,
            source=self.query_one("#note-source", Input).value,
            category=str(self.query_one("#note-category", Select).value),
            kind=str(self.query_one("#note-kind", Select).value),
            importance=self.query_one("#note-importance", Input).value,
            content=self.query_one("#note-content", TextArea).text)

    @property
    def dirty(self) -> bool:
        """Whether the fields differ from what was loaded."""
        return self.form != self.loaded

    def load(self, note: Note | None, namespace: str, form: NoteForm | None = None) -> None:
        """Show ``note`` (or a new note's ``form``), dropping any unsaved text and errors."""
        self.note, self.namespace, self.disk_notice = note, namespace, None
        self.loaded = form or (NoteForm.of(note) if note is not None else NoteForm())
        self.set_fields(self.loaded)
        self.show_errors({})

    def set_fields(self, form: NoteForm, only: list[str] | None = None) -> None:
        """Put ``form``'s text in the fields (``only`` some of them)."""
        for name in only or FIELD_NAMES:
            value = getattr(form, name)
            widget = self.query_one(f"#note-{name}")
            if isinstance(widget, TextArea):
                if widget.text != value:
                    widget.load_text(value)
            elif isinstance(widget, Select | Input) and widget.value != value:
                widget.value = value
        self.refresh_heading()

    def rebase(self, note: Note) -> None:
        """The stored note changed under a deliberate action of the user's (rename, alias):
        take it as the new base and refresh the fields the user had not edited."""
        untouched = [name for name in FIELD_NAMES if name not in self.form.changed_fields(
            self.loaded)]
        self.note, self.loaded = note, NoteForm.of(note)
        self.set_fields(self.loaded, untouched)

    def show_errors(self, errors: dict[str, str]) -> None:
        """The engine's message under each field it refuses; the others are cleared."""
        for field in self.query(NoteField):
            field.show_error(errors.get(field.field_name))

    def show_error(self, field_name: str, message: str) -> None:
        self.query_one(f"#field-{field_name}", NoteField).show_error(message)

    def focus_field(self, field_name: str) -> None:
        self.query_one(f"#field-{field_name}", NoteField).widget.focus()

    # -- the heading ---------------------------------------------------------------------------

    def on_input_changed(self, event: Input.Changed) -> None:
        self._edited(event.input)

    def on_text_area_changed(self, event: TextArea.Changed) -> None:
        self._edited(event.text_area)

    def on_select_changed(self, event: Select.Changed) -> None:
        self._edited(event.select)

    def _edited(self, widget: Widget) -> None:
        field = widget.parent
        if isinstance(field, NoteField) and getattr(self.loaded, field.field_name) != getattr(
                self.form, field.field_name):
            field.show_error(None)
        self.refresh_heading()

    def refresh_heading(self) -> None:
        if not self.is_mounted:
            return
        parts: list[str | tuple[str, str]] = [
            ("New note", "bold") if self.note is None else (self.note.name, "bold $primary")]
        if self.dirty:
            parts.append(("  ● modified (ctrl+s saves)", "bold $warning"))
        self.query_one("#note-heading", Static).update(Content.assemble(*parts))
        if self.note is None:
            meta = f"not saved yet · namespace {self.namespace}"
        else:
            meta = (f"{self.namespace} · created {stamp(self.note.created_at)} · "
                    f"updated {stamp(self.note.updated_at)}")
        self.query_one("#note-meta", Static).update(meta)
        notice = self.query_one("#note-notice", Static)
        notice.update(self.disk_notice or "")
        notice.display = bool(self.disk_notice)
