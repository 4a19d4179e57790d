"""The list side of the Notes pane: one page of notes as a table, and a status line that
says how many match, or what to do when none does."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.widgets import DataTable, Static

from core.types import Note, NotePage
from workbench.app.widgets.cells import fit
from workbench.app.widgets.lists import RowTable
from workbench.app.widgets.note_editor import stamp

COLUMNS = (("Name", 26), ("Category", 12), ("Tags", 18), ("Imp.", 4), ("Updated", 16))


class NoteList(Vertical):
    """A page of notes, one row each, keyed by note id."""

    SCOPED_CSS = False  # its rules also start at the screen's size class
    DEFAULT_CSS = """
    NoteList { width: 55%; height: 1fr; }
    .-narrow NoteList { width: 1fr; height: 7; }
    NoteList #notes-table { height: 1fr; }
    NoteList #notes-status { height: auto; padding: 0 1; color: $text-muted; }
    NoteList.-empty #notes-table { display: none; }
    NoteList.-empty #notes-status { color: $text; padding: 1 2; }
    """

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.by_id: dict[str, Note] = {}

    def compose(self) -> ComposeResult:
        yield RowTable(id="notes-table", cursor_type="row", zebra_stripes=True)
        yield Static(id="notes-status")

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        for label, width in COLUMNS:
            table.add_column(label, width=width, key=label)

    @property
    def table(self) -> DataTable[str | Text]:
        return self.query_one(DataTable)

    @property
    def highlighted_id(self) -> str | None:
        """The id of the note under the cursor."""
        table = self.table
        if not table.row_count:
            return None
        return str(table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value)

    def show(self, page: NotePage, unfiltered: int, namespace: str, keep: str | None) -> None:
        """Show ``page``, the cursor on note ``keep`` when listed, else on the same row."""
        table = self.table
        row_before = table.cursor_row
        self.by_id = {note.note_id: note for note in page.notes}
        table.clear()
        for note in page.notes:
            name = note.name if note.kind == "Note" else f"{note.name} [archive]"
            cells = (name, note.category, ", ".join(note.tags), f"{note.importance:.2g}",
                     stamp(note.updated_at))
            table.add_row(*(fit(cell, width) for cell, (_, width) in zip(cells, COLUMNS,
                                                                         strict=True)),
                          key=note.note_id)
        if keep in self.by_id:
            table.move_cursor(row=table.get_row_index(keep))
        elif page.notes:
            table.move_cursor(row=min(row_before, len(page.notes) - 1))
        self.set_class(not page.notes, "-empty")
        self.show_status(status_text(page, unfiltered, namespace))

    def show_status(self, text: Content | str) -> None:
        self.query_one("#notes-status", Static).update(text)


def status_text(page: NotePage, unfiltered: int, namespace: str) -> Content:
    """How many notes are listed, or (none) what the user can do next."""
    if not page.notes and not unfiltered:
        return Content.assemble(
            (f"No notes in namespace {namespace!r} yet.\n\n", "bold"),
            "Press ctrl+n to write one here, or pick another namespace above. An agent "
            "adds notes with engine.add_note() or save_memory(); `workbench demo` builds "
            "a file that has some.")
    if not page.notes:
        return Content.assemble(
            ("No notes match these filters.\n\n", "bold"),
            f"Namespace {namespace!r} holds {unfiltered:,}; clear the category, kind, "
            "tags or text above to see them.")
    total = f"{page.total:,}" if page.total_exact else f"at least {page.total:,}"
    noun = "note" if page.total == 1 else "notes"
    shown = (f"{total} {noun}" if len(page.notes) == page.total
             else f"first {len(page.notes):,} of {total} {noun} (narrow the filters)")
    how = {"like": " · text found as a substring", "fts": " · text found as words"}.get(
        page.text_match or "", "")
    return Content(f"{shown} in {namespace}{how}")
