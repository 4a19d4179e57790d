"""The Notes pane: a namespace's notes, filtered, and an editor for one of them.

Saving checks every field first (the engine's own rules, :mod:`workbench.app.widgets.note_form`)
and shows each refusal under its field; only a form that passes reaches the engine. An
existing note is saved with ``Engine.edit_note``, which renames it, sets its aliases and
writes its fields in one transaction, so a name another note holds (``NameTaken``, also
when another writer took it a moment ago) leaves the note exactly as it was. Rename and
alias have their own keys too (F6, F7, F9), each one engine call.

A live reload refreshes the list and, when the editor holds no unsaved text, the open
note; unsaved text is never replaced: the heading says "modified" and, when the stored note
changed or went away meanwhile, says that as well.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.content import Content
from textual.widget import Widget
from textual.widgets import DataTable, Input, Select

from core.errors import InvalidInput, NotFound, WorkbenchError
from core.notes.fields import CATEGORIES, KINDS
from core.types import Note, NotePage
from workbench.app.layout import borderless_when_short
from workbench.app.panes.base import Pane
from workbench.app.screens.confirm import ConfirmScreen
from workbench.app.screens.prompt import PromptScreen, when_given
from workbench.app.widgets.note_editor import NoteEditor, stamp
from workbench.app.widgets.note_form import (
    CheckedNote,
    NoteForm,
    check_form,
    field_of_error,
    split_list,
)
from workbench.app.widgets.note_list import NoteList

PAGE = 500
"""Notes listed at once; the status line says when the filters match more."""


class NotesPane(Pane):
    """A namespace's notes with filters, and an editor for the one under the cursor."""

    pane_title = "Notes"
    SCOPED_CSS = False  # its rules also start at the screen's size class
    DEFAULT_CSS = """
    NotesPane #notes-filters { height: auto; padding: 0 1; }
    NotesPane #notes-filters Select { width: 24; margin-right: 1; }
    NotesPane #notes-filters Input { width: 1fr; margin-right: 1; }
    .-narrow NotesPane #notes-filters Select { width: 15; }
    .-medium NotesPane #notes-filters Select { width: 19; }
    .-narrow NotesPane #notes-body { layout: vertical; }
    .-short NotesPane #notes-filters { margin-bottom: 1; }
    """
    BINDINGS = [
        Binding("ctrl+s", "save", "Save", id="notes.save"),
        Binding("ctrl+n", "new_note", "New note", id="notes.new"),
        Binding("f6", "rename", "Rename", id="notes.rename"),
        Binding("f7", "add_alias", "Add alias", id="notes.alias"),
        Binding("f9", "remove_alias", "Remove alias", id="notes.unalias", show=False),
        Binding("f10", "copy", "Copy JSON", id="notes.copy"),
        Binding("f8", "delete", "Delete", id="notes.delete"),
        Binding("ctrl+f", "find", "Filter by text", id="notes.find", show=False),
        Binding("escape", "focus_list", "Back to the list", id="notes.list", show=False),
    ]

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.namespace: str | None = None
        self._namespaces: list[str] = []
        self._focus_note: str | None = None
        """The note the next load puts the cursor on (one just saved)."""
        self._new_requested = False
        """The editor holds a new note the user asked for (kept when the list reloads)."""

    def compose(self) -> ComposeResult:
        with Horizontal(id="notes-filters"):
            yield Select([], prompt="namespace", id="notes-namespace")
            yield Select([(c, c) for c in CATEGORIES], prompt="any category",
                         id="notes-category")
            yield Select([(k, k) for k in KINDS], prompt="any kind", id="notes-kind")
            yield Input(placeholder="tags (a note holds all of them)", id="notes-tags")
            yield Input(placeholder="text in name or content", id="notes-text")
        # Side by side; on a narrow screen the list over the editor.
        with Horizontal(id="notes-body"):
            yield NoteList(id="notes-list")
            yield NoteEditor(id="note-editor")

    def on_resize(self) -> None:
        borderless_when_short(self, *self.query_one("#notes-filters").query(Select),
                              *self.query_one("#notes-filters").query(Input))

    @property
    def editor(self) -> NoteEditor:
        return self.query_one(NoteEditor)

    def focus_target(self) -> Widget | None:
        return self.query_one(DataTable)

    # -- loading --------------------------------------------------------------------------------

    def reload(self) -> None:
        self._load()

    @work(exclusive=True, group="notes", exit_on_error=False)
    async def _load(self) -> None:
        """Read the namespaces, the filtered page and the open note again; show them without
        moving the cursor or touching unsaved text."""
        engine = self.engine
        namespaces = await engine.notes.namespaces()
        agent = engine.config.agent
        if self.namespace not in {*namespaces, agent}:
            self.namespace = namespaces[0] if namespaces and agent not in namespaces else agent
        namespace = self.namespace
        assert namespace is not None
        try:
            tags = engine.notes.tags(split_list(self.query_one("#notes-tags", Input).value))
            page = await engine.list_notes(
                namespace=namespace, category=self._chosen("#notes-category"),
                kind=self._chosen("#notes-kind"), tags=tags,
                text=self.query_one("#notes-text", Input).value or None, limit=PAGE)
        except InvalidInput as exc:
            self.query_one("#notes-tags", Input).add_class("-invalid")
            self.query_one(NoteList).show_status(Content.styled(str(exc), "$error"))
            return
        self.query_one("#notes-tags", Input).remove_class("-invalid")
        unfiltered = page.total
        if not page.total and self._filtered():
            unfiltered = (await engine.list_notes(namespace=namespace, limit=1)).total
        open_note = self.editor.note
        stored: Note | None = None
        if open_note is not None and self.editor.dirty:
            try:
                stored = await engine.get_note(open_note.note_id, namespace=self.editor.namespace)
            except NotFound:
                stored = None
        self._show_namespaces(sorted({*namespaces, agent}))
        self._show_page(page, unfiltered)
        if not self.editor.dirty:
            self._open_highlighted()
        elif open_note is not None and open_note is self.editor.note:
            self._follow_disk(open_note, stored)

    def _chosen(self, selector: str) -> str | None:
        value = self.query_one(selector, Select).value
        return None if value is Select.NULL else str(value)

    def _filtered(self) -> bool:
        return any((self._chosen("#notes-category"), self._chosen("#notes-kind"),
                    self.query_one("#notes-tags", Input).value.strip(),
                    self.query_one("#notes-text", Input).value.strip()))

    def _show_namespaces(self, namespaces: list[str]) -> None:
        select: Select[str] = self.query_one("#notes-namespace", Select)
        if namespaces != self._namespaces:
            self._namespaces = namespaces
            select.set_options([(name, name) for name in namespaces])
        if select.value != self.namespace:
            select.value = self.namespace  # type: ignore[assignment]

    def _show_page(self, page: NotePage, unfiltered: int) -> None:
        editor, note_list = self.editor, self.query_one(NoteList)
        shown = editor.note.note_id if editor.note is not None and not editor.dirty else None
        keep, self._focus_note = self._focus_note or shown or note_list.highlighted_id, None
        note_list.show(page, unfiltered, self.namespace or "", keep)
        if page.notes and self.screen.focused is None and self.is_shown:
            note_list.table.focus()  # hiding the empty table took the focus away

    def _follow_disk(self, open_note: Note, stored: Note | None) -> None:
        """Say that the stored note changed or went away, without replacing unsaved text."""
        editor = self.editor
        if stored is None:
            editor.note = None
            editor.disk_notice = ("This note was deleted on disk meanwhile; ctrl+s saves "
                                  "your text as a new note.")
        elif stored != open_note:
            editor.disk_notice = (f"Changed on disk ({stamp(stored.updated_at)}) since you "
                                  "opened it; ctrl+s replaces that version with yours.")
        editor.refresh_heading()

    def _open_highlighted(self) -> None:
        """Show the note under the cursor as stored now, or an empty new note when the list
        is empty; a new note the user started is kept."""
        note_list = self.query_one(NoteList)
        note = note_list.by_id.get(note_list.highlighted_id or "")
        editor = self.editor
        if editor.note is None and self._new_requested:
            return
        if note is None:
            self._start_new_note()
        elif editor.note != note:
            editor.load(note, self.namespace or "")

    def _start_new_note(self, requested: bool = False) -> None:
        self._new_requested = requested
        default_category = self.engine.config.notes.default_category
        self.editor.load(None, self.namespace or "",
                         NoteForm(category=default_category, source="workbench"))

    def _open(self, note: Note) -> None:
        self._new_requested = False
        self.editor.load(note, self.namespace or "")

    # -- following the user ---------------------------------------------------------------------

    @on(DataTable.RowHighlighted, "#notes-table")
    def _row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.cursor_row != event.data_table.cursor_row or self.editor.dirty:
            return  # a stale event from a rebuild, or unsaved text the cursor must not drop
        self._open_highlighted()

    @on(DataTable.RowSelected, "#notes-table")
    def _row_selected(self, event: DataTable.RowSelected) -> None:
        note = self.query_one(NoteList).by_id.get(str(event.row_key.value))
        editor = self.editor
        if note is None or (editor.note is not None and editor.note.note_id == note.note_id):
            if note is not None:
                editor.focus_field("content")
            return
        self._discard_then(lambda: self._open(note))

    @on(Select.Changed, "#notes-namespace")
    def _namespace_changed(self, event: Select.Changed) -> None:
        if event.value is Select.NULL:
            select = cast("Select[str]", event.select)
            if self.namespace is not None:  # the blank choice means nothing here
                select.value = self.namespace
        elif event.value != self.namespace:
            self.namespace = str(event.value)
            if not self.editor.dirty:
                self._new_requested = False  # an untouched new note follows the namespace
            self._load()

    @on(Select.Changed, "#notes-category, #notes-kind")
    @on(Input.Changed, "#notes-tags, #notes-text")
    def _filter_changed(self) -> None:
        if self.engine_open:
            self._load()

    def _discard_then(self, then: Callable[[], None]) -> None:
        """Run ``then`` now, or after the user agrees to drop the editor's unsaved text."""
        editor = self.editor
        if not editor.dirty:
            then()
            return
        name = editor.note.name if editor.note else "the new note"
        question = f"Discard your unsaved changes to {name!r}?"

        def answered(discard: bool | None) -> None:
            if discard:
                then()

        self.app.push_screen(ConfirmScreen(question, "Discard"), answered)

    # -- actions ----------------------------------------------------------------------------------

    def action_new_note(self) -> None:
        def start() -> None:
            self._start_new_note(requested=True)
            self.editor.focus_field("name")

        self._discard_then(start)

    def action_find(self) -> None:
        self.query_one("#notes-text", Input).focus()

    def action_focus_list(self) -> None:
        self.query_one(DataTable).focus()

    def action_save(self) -> None:
        editor = self.editor
        checked, errors = check_form(editor.form, self.engine.notes)
        editor.show_errors(errors)
        if checked is None:
            first = next(iter(errors))
            editor.focus_field(first)
            self.notify(f"Not saved: {len(errors)} field(s) need a change (shown in red).",
                        severity="error")
            return
        self._save(checked)

    @work(exclusive=True, group="notes-write", exit_on_error=False)
    async def _save(self, checked: CheckedNote) -> None:
        editor, engine = self.editor, self.engine
        form, namespace, base = editor.form, editor.namespace, editor.note
        try:
            if base is None:
                note = await engine.add_note(
                    checked.name, checked.content, namespace=namespace, aliases=checked.aliases,
                    kind=checked.kind, category=checked.category, tags=checked.tags,
                    source=checked.source, importance=checked.importance)
            else:
                note = await engine.edit_note(
                    base.note_id, namespace=namespace,
                    name=None if checked.name == base.name else checked.name,
                    aliases=None if list(checked.aliases) == base.aliases else checked.aliases,
                    content=checked.content, kind=checked.kind, category=checked.category,
                    tags=checked.tags, source=checked.source, importance=checked.importance)
        except WorkbenchError as exc:
            self._refused(exc, form)
            return
        self._new_requested = False
        editor.load(note, namespace)
        self.notify(f"Saved {note.name!r}.")
        self._written(note.note_id)

    def _refused(self, exc: WorkbenchError, form: NoteForm) -> None:
        """An engine refusal: at its field when it names one, and as a notification."""
        field = field_of_error(exc, form) if isinstance(exc, InvalidInput) else None
        if field is not None:
            self.editor.show_error(field, str(exc))
        self.notify(f"Nothing was changed: {exc}", severity="error", timeout=10)

    def _written(self, note_id: str | None) -> None:
        self.workbench.memory_written()
        self._focus_note = note_id
        self._load()

    def _open_note_or_say(self) -> Note | None:
        note = self.editor.note
        if note is None:
            self.notify("No saved note is open: pick one in the list (or save this one first).",
                        severity="warning")
        return note

    def action_rename(self) -> None:
        if (note := self._open_note_or_say()) is None:
            return
        self.app.push_screen(PromptScreen(f"Rename note {note.name!r} to:", "a new name",
                                          note.name),
                             when_given(lambda name: self._rename(note, name)))

    @work(exclusive=True, group="notes-write", exit_on_error=False)
    async def _rename(self, note: Note, new_name: str) -> None:
        try:
            renamed = await self.engine.rename_note(note.note_id, new_name,
                                                    namespace=self.editor.namespace)
        except WorkbenchError as exc:
            self._refused(exc, NoteForm(name=new_name))
            return
        self.editor.rebase(renamed)
        self.notify(f"Renamed {note.name!r} to {renamed.name!r}.")
        self._written(renamed.note_id)

    def action_add_alias(self) -> None:
        if (note := self._open_note_or_say()) is None:
            return
        self.app.push_screen(PromptScreen(f"Another name for {note.name!r}:", "an alias"),
                             when_given(lambda alias: self._alias(note, alias)))

    @work(exclusive=True, group="notes-write", exit_on_error=False)
    async def _alias(self, note: Note, alias: str) -> None:
        try:
            aliased = await self.engine.alias_note(note.note_id, alias,
                                                   namespace=self.editor.namespace)
        except WorkbenchError as exc:
            self._refused(exc, NoteForm())
            return
        self.editor.rebase(aliased)
        self.notify(f"{alias!r} now names {aliased.name!r}.")
        self._written(aliased.note_id)

    def action_remove_alias(self) -> None:
        if (note := self._open_note_or_say()) is None:
            return
        if not note.aliases:
            self.notify(f"{note.name!r} has no aliases.", severity="warning")
            return
        self.app.push_screen(
            PromptScreen(f"Remove which alias of {note.name!r}? ({', '.join(note.aliases)})",
                         "an alias", note.aliases[-1]),
            when_given(lambda alias: self._unalias(note, alias)))

    @work(exclusive=True, group="notes-write", exit_on_error=False)
    async def _unalias(self, note: Note, alias: str) -> None:
        if alias not in note.aliases:
            message = f"alias {alias!r} is not one of {note.name!r}'s aliases"
            self.editor.show_error("aliases", message)
            self.notify(f"Nothing was changed: {message}", severity="error")
            return
        try:
            unaliased = await self.engine.unalias_note(alias, namespace=self.editor.namespace)
        except WorkbenchError as exc:
            self._refused(exc, NoteForm())
            return
        self.editor.rebase(unaliased)
        self.notify(f"{alias!r} no longer names {unaliased.name!r}.")
        self._written(unaliased.note_id)

    def action_delete(self) -> None:
        if (note := self._open_note_or_say()) is None:
            return
        noun = "alias" if len(note.aliases) == 1 else "aliases"
        names = (f" and its {noun} {', '.join(map(repr, note.aliases))}" if note.aliases
                 else "")
        question = (f"Delete note {note.name!r}{names} from namespace {self.editor.namespace!r}?"
                    f"\n\nIts {len(note.content):,} characters and its search index go with "
                    "it; this cannot be undone.")
        self.app.push_screen(ConfirmScreen(question, "Delete"),
                             when_given(lambda _: self._delete(note)))

    @work(exclusive=True, group="notes-write", exit_on_error=False)
    async def _delete(self, note: Note) -> None:
        try:
            removed = await self.engine.remove_note(note.note_id, namespace=self.editor.namespace)
        except WorkbenchError as exc:
            self.notify(str(exc), severity="error")
            return
        self.notify(f"Deleted {note.name!r}." if removed else
                    f"{note.name!r} was already gone.")
        self._start_new_note()
        self._written(None)

    def action_copy(self) -> None:
        if (note := self._open_note_or_say()) is None:
            return
        self.copy_json(note, f"note {note.name!r}"
                       + (" (as saved; your unsaved edits are not in it)"
                          if self.editor.dirty else ""))
