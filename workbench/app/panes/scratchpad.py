"""The Scratchpad pane: the selected session's short list, edited in place.

A scratchpad is written whole (``Engine.write_scratchpad``), so every action here builds
the new list and hands it over at once; the engine refuses a list over the configured
limits (``[scratchpad]`` in the config) whole, and the pane then shows its message and
keeps what the user typed. The limits are drawn as the user nears them: the item count
turns to the warning colour near the most items and to the error colour at it, and the
item being edited counts its characters the same way.

The pane follows ``app.current_session``; a live reload rebuilds the rows from the file
and puts the cursor, and any item being edited with its text and caret, back in place.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Input, Label, ListItem, ListView, Select, Static

from core.errors import WorkbenchError
from core.storage.vocabulary import MEMORY_PREFIX
from core.types import ScratchpadState
from workbench.app.layout import borderless_when_short
from workbench.app.panes.base import Pane
from workbench.app.screens.confirm import ConfirmScreen
from workbench.app.screens.prompt import when_given
from workbench.app.widgets.lists import ItemList
from workbench.text import count, short_time

SESSION_CHOICES = 200
"""Sessions offered in the picker besides those with a scratchpad (most recent first)."""


def near_limit(count: int, limit: int) -> str:
    """The counter's class: "-over" past the limit, "-full" at it, "-near" within an
    eighth of it (28 of 32 items, 210 of 240 characters), else ""."""
    if count > limit:
        return "-over"
    if count == limit:
        return "-full"
    return "-near" if count >= limit - max(1, limit // 8) else ""


@dataclass
class Edit:
    """An item being edited: its row (None for a new item at the end), the text it had when
    the edit began, and the user's text and caret so far."""

    index: int | None
    original: str
    draft: str
    caret: int


class ItemInput(Input):
    """The text of the item being edited: enter saves, escape cancels."""

    BINDINGS = [Binding("enter", "submit", "Save item", id="scratchpad.save-item"),
                Binding("escape", "cancel", "Cancel edit", id="scratchpad.cancel-edit"),
                Binding("up,down", "stay", show=False)]

    class Cancelled(Message):
        """The user pressed escape."""

    def action_cancel(self) -> None:
        self.post_message(self.Cancelled())

    def action_stay(self) -> None:
        """The cursor stays on the item while it is edited."""


class ItemRow(ListItem):
    """One item: its number and text, or, while it is edited, an input and its counter."""

    DEFAULT_CSS = """
    ItemRow Horizontal { height: auto; }
    ItemRow .number { width: 5; color: $text-muted; padding: 0 1 0 0; text-align: right; }
    ItemRow.-editing .number { padding-top: 1; }
    ItemRow .text { width: 1fr; }
    ItemRow ItemInput { width: 1fr; }
    ItemRow .chars { width: 12; padding: 1 1; color: $text-muted; }
    ItemRow .chars.-near { color: $warning; }
    ItemRow .chars.-full, ItemRow .chars.-over { color: $error; text-style: bold; }
    """

    def __init__(self, number: int, text: str, edit: Edit | None = None,
                 max_chars: int = 0) -> None:
        super().__init__(classes="-editing" if edit is not None else "")
        self.number, self.text, self.edit, self.max_chars = number, text, edit, max_chars

    def compose(self) -> ComposeResult:
        with Horizontal():
            yield Label(f"{self.number}.", classes="number")
            if self.edit is None:
                yield Static(self.text, classes="text", markup=False)
            else:
                yield ItemInput(self.edit.draft, placeholder="the item's text",
                                select_on_focus=False, id="item-input")
                yield Label(classes="chars", id="item-chars")

    def on_mount(self) -> None:
        if self.edit is not None:
            item_input = self.query_one(ItemInput)
            item_input.cursor_position = self.edit.caret
            count_chars(item_input, self.max_chars)


def count_chars(item_input: ItemInput, max_chars: int) -> None:
    """Show how long the edited item is against the limit, coloured as it nears it."""
    counter = item_input.screen.query_one("#item-chars", Label)
    length = len(item_input.value)
    counter.update(f"{length} / {max_chars}")
    counter.set_classes(f"chars {near_limit(length, max_chars)}")


class ScratchpadPane(Pane):
    """The items of the selected session's scratchpad."""

    pane_title = "Scratchpad"
    SCOPED_CSS = False  # its rules also start at the screen's size class
    DEFAULT_CSS = """
    ScratchpadPane #scratch-top { height: auto; padding: 0 1; }
    ScratchpadPane #scratch-session { width: 60; }
    ScratchpadPane #scratch-count { width: auto; padding: 1 2; color: $text-muted; }
    ScratchpadPane #scratch-count.-near { color: $warning; text-style: bold; }
    ScratchpadPane #scratch-count.-full, ScratchpadPane #scratch-count.-over {
        color: $error; text-style: bold; }
    ScratchpadPane #scratch-updated {
        width: 1fr; padding: 1 0; color: $text-muted; text-wrap: nowrap; text-overflow: ellipsis;
    }
    .-narrow ScratchpadPane #scratch-session { width: 36; }
    .-short ScratchpadPane #scratch-top { margin-bottom: 1; }
    .-short ScratchpadPane #scratch-count { padding: 0 2; }
    .-short ScratchpadPane #scratch-updated { padding: 0; }
    ScratchpadPane #scratch-items { height: 1fr; margin: 0 1; }
    ScratchpadPane #scratch-message { height: auto; padding: 0 2; color: $error; }
    """
    BINDINGS = [
        Binding("a", "add", "Add item", id="scratchpad.add"),
        Binding("e", "edit", "Edit", id="scratchpad.edit"),
        Binding("shift+up", "move(-1)", "Move up", id="scratchpad.up", key_display="⇧↑"),
        Binding("shift+down", "move(1)", "Move down", id="scratchpad.down",
                key_display="⇧↓"),
        Binding("d,delete", "remove", "Remove", id="scratchpad.remove"),
        Binding("x", "clear", "Clear", id="scratchpad.clear"),
        Binding("c", "copy", "Copy JSON", id="scratchpad.copy", show=False),
    ]
    ROW_ACTIONS = frozenset({"add", "edit", "move", "remove", "clear"})
    """What waits while an item is edited (enter saves it, escape cancels)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.session_id: str | None = None
        self.state: ScratchpadState | None = None
        self.edit: Edit | None = None
        self._choices: list[tuple[str, str]] = []
        self._shown: tuple[Any, ...] | None = None
        self._cursor = 0

    def compose(self) -> ComposeResult:
        with Horizontal(id="scratch-top"):
            yield Select([], prompt="pick a session", id="scratch-session")
            yield Static(id="scratch-count")
            yield Static(id="scratch-updated")
        yield Static(id="scratch-empty", classes="empty-state")
        yield ItemList(id="scratch-items")
        yield Static(id="scratch-message")

    def on_mount(self) -> None:
        self.watch(self.app, "current_session", self._follow_session)
        self._show_empty()

    def on_resize(self) -> None:
        borderless_when_short(self, self.query_one("#scratch-session", Select))

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return not (self.edit is not None and action in self.ROW_ACTIONS)

    @property
    def items(self) -> list[str]:
        return list(self.state.items) if self.state is not None else []

    @property
    def limits(self) -> Any:
        return self.engine.config.scratchpad

    def focus_target(self) -> Widget | None:
        view = self.query_one(ListView)
        return view if view.display else self.query_one("#scratch-session", Select)

    def _follow_session(self, session_id: str | None) -> None:
        if session_id == self.session_id:
            return
        self.session_id, self.state, self.edit, self._cursor = session_id, None, None, 0
        self._stale = True
        if self.is_shown:
            self.activate()

    # -- loading --------------------------------------------------------------------------------

    def reload(self) -> None:
        self._load()

    @work(exclusive=True, group="scratchpad", exit_on_error=False)
    async def _load(self) -> None:
        """Read the session choices and the scratchpad again, then show them in place."""
        engine = self.engine
        pads = await engine.scratchpad_sessions()
        sessions = await engine.list_sessions(limit=SESSION_CHOICES)
        session_id = self.session_id
        state = await engine.read_scratchpad(session_id) if session_id else None
        if session_id != self.session_id:
            return  # the user picked another session meanwhile; its own load follows
        self._show_choices(pads, [s.session_id for s in sessions
                                  if not s.session_id.startswith(MEMORY_PREFIX)])
        self.state = state
        await self._show_items()

    def _show_choices(self, pads: list[ScratchpadState], sessions: list[str]) -> None:
        choices = [(f"{pad.session_id}  · {count(len(pad.items), 'item')}", pad.session_id)
                   for pad in pads]
        with_pads = {pad.session_id for pad in pads}
        choices += [(session, session) for session in sessions if session not in with_pads]
        if self.session_id and self.session_id not in {value for _, value in choices}:
            choices.insert(0, (self.session_id, self.session_id))
        select: Select[str] = self.query_one("#scratch-session", Select)
        if choices != self._choices:
            self._choices = choices
            select.set_options(choices)
        if self.session_id and select.value != self.session_id:
            select.value = self.session_id

    async def _show_items(self, cursor: int | None = None) -> None:
        """Rebuild the rows from the stored items and the edit in progress (kept with its
        text and caret); the cursor stays on its row, or goes to row ``cursor``."""
        view = self.query_one(ListView)
        if self.edit is not None and (typed := self._input()) is not None:
            self.edit.draft, self.edit.caret = typed.value, typed.cursor_position
        if cursor is not None:
            self._cursor, self._shown = cursor, None
        elif view.index is not None and view.display:
            self._cursor = view.index
        items = self.items
        self._follow_cursor(items)
        self._relocate_edit(items)
        self._show_counts()
        shown = (self.session_id, tuple(items), self.state is None,
                 None if self.edit is None else ("editing", self.edit.index))
        if shown == self._shown:
            return
        self._shown = shown
        self.refresh_bindings()
        if self.session_id is None or (self.state is None and self.edit is None) or (
                not items and self.edit is None):
            self._show_empty()
            await view.clear()
            if self.is_shown and self.screen.focused in (None, view):
                self.query_one("#scratch-session", Select).focus()
            return
        self.query_one("#scratch-empty").display = False
        view.display = True
        rows = [ItemRow(number, text) for number, text in enumerate(items, 1)]
        edit = self.edit
        if edit is not None:
            at = len(rows) if edit.index is None else edit.index
            row = ItemRow(at + 1, "", edit, self.limits.max_item_chars)
            rows[at:at + 1] = [row]
            self._cursor = at
        await view.clear()
        await view.extend(rows)
        view.index = min(self._cursor, len(rows) - 1)
        if edit is not None and (typed := self._input()) is not None:
            typed.focus()
            self.workbench.steady_cursors(typed)
        elif self.is_shown:
            view.focus()

    def _follow_cursor(self, items: list[str]) -> None:
        """Keep the cursor on the item it was on when the list moved under it."""
        before: tuple[str, ...] = self._shown[1] if self._shown is not None else ()
        if self._cursor >= len(before):
            return
        item = before[self._cursor]
        if (self._cursor >= len(items) or items[self._cursor] != item) and item in items:
            self._cursor = items.index(item)

    def _relocate_edit(self, items: list[str]) -> None:
        """Keep the edit on the item it began on when the list moved under it."""
        edit = self.edit
        if edit is None or edit.index is None:
            return
        if edit.index < len(items) and items[edit.index] == edit.original:
            return
        if edit.original in items:
            edit.index = items.index(edit.original)
            return
        self._say("The item you are editing changed on disk; enter saves your text in its "
                  "place, escape keeps the stored one.")
        if edit.index >= len(items):
            edit.index = None

    def _show_counts(self) -> None:
        count = self.query_one("#scratch-count", Static)
        updated = self.query_one("#scratch-updated", Static)
        if self.state is None:
            count.update("")
            updated.update("")
            return
        limit = self.limits.max_items
        count.update(f"{len(self.items)} / {limit} items")
        count.set_classes(near_limit(len(self.items), limit))
        updated.update(f"written {short_time(self.state.updated_at)} · at most "
                       f"{self.limits.max_item_chars} characters an item")

    def _show_empty(self) -> None:
        empty = self.query_one("#scratch-empty", Static)
        self.query_one(ListView).display = False
        empty.display = True
        if self.session_id is None:
            empty.update("No session selected: select a session in Sessions (1), or pick "
                         "one above (sessions that have a scratchpad come first).")
        elif self.state is None:
            empty.update(f"Session {self.session_id!r} has no scratchpad yet. Press a to add "
                         "its first item; an agent writes one with engine.write_scratchpad().")
        else:
            empty.update(f"The scratchpad of {self.session_id!r} is empty. Press a to add an "
                         "item, or x to remove the scratchpad.")

    def _input(self) -> ItemInput | None:
        found = self.query(ItemInput)
        return found.first() if found else None

    def _say(self, message: str) -> None:
        self.query_one("#scratch-message", Static).update(message)

    # -- following the user ---------------------------------------------------------------------

    @on(Select.Changed, "#scratch-session")
    def _session_picked(self, event: Select.Changed) -> None:
        if event.value is not Select.NULL and event.value != self.session_id:
            self.workbench.show_session(str(event.value))

    @on(ListView.Selected, "#scratch-items")
    async def _row_selected(self) -> None:
        await self.action_edit()

    @on(Input.Changed, "#item-input")
    def _typed(self, event: Input.Changed) -> None:
        assert isinstance(event.input, ItemInput)
        count_chars(event.input, self.limits.max_item_chars)

    @on(ItemInput.Cancelled)
    async def _edit_cancelled(self) -> None:
        self.edit = None
        self._say("")
        await self._show_items()

    @on(Input.Submitted, "#item-input")
    def _edit_submitted(self, event: Input.Submitted) -> None:
        edit = self.edit
        if edit is None:
            return
        if not event.value.strip():
            self._say("An item needs some text: type it, or press escape and then d to "
                      "remove the item.")
            return
        items = self.items
        if edit.index is None:
            items.append(event.value)
        else:
            items[edit.index] = event.value
        self._write(items, len(items) - 1 if edit.index is None else edit.index)

    # -- actions ----------------------------------------------------------------------------------

    def _session_or_say(self) -> str | None:
        if self.session_id is None:
            self.notify("Select a session first (Sessions, key 1, or the picker above).",
                        severity="warning")
        return self.session_id

    def _row_or_say(self) -> int | None:
        index = self.query_one(ListView).index
        if self.edit is not None or index is None or index >= len(self.items):
            return None
        return index

    async def action_add(self) -> None:
        if self._session_or_say() is None or self.edit is not None:
            return
        self.edit = Edit(None, "", "", 0)
        self._say("")
        await self._show_items()

    async def action_edit(self) -> None:
        if (index := self._row_or_say()) is None:
            return
        text = self.items[index]
        self.edit = Edit(index, text, text, len(text))
        self._say("")
        await self._show_items()

    def action_move(self, step: int) -> None:
        if (index := self._row_or_say()) is None:
            return
        items, to = self.items, index + step
        if not 0 <= to < len(items):
            return
        items[index], items[to] = items[to], items[index]
        self._write(items, to)

    def action_remove(self) -> None:
        if (index := self._row_or_say()) is None:
            return
        item, session_id = self.items[index], self.session_id
        shown = item if len(item) <= 100 else item[:99] + "…"
        question = (f"Remove item {index + 1} of the scratchpad of {self.session_id!r}?\n\n"
                    f"“{shown}” goes; the other {count(len(self.items) - 1, 'item')} stay. "
                    "This cannot be undone.")

        def answered(confirmed: bool | None) -> None:
            items = self.items
            # The list may have moved meanwhile (a live reload): remove the item asked about.
            if confirmed and session_id == self.session_id and item in items:
                at = index if index < len(items) and items[index] == item else items.index(item)
                del items[at]
                self._write(items, min(at, len(items) - 1))

        self.app.push_screen(ConfirmScreen(question, "Remove"), answered)

    def action_clear(self) -> None:
        if (session_id := self._session_or_say()) is None or self.state is None:
            return
        question = (f"Clear the scratchpad of {session_id!r}? It goes whole, with its "
                    f"{count(len(self.items), 'item')}; this cannot be undone.")
        self.app.push_screen(ConfirmScreen(question, "Clear"),
                             when_given(lambda _: self._clear(session_id)))

    def action_copy(self) -> None:
        if self.state is None:
            self.notify("There is no scratchpad to copy here.", severity="warning")
            return
        self.copy_json(self.state, f"the scratchpad of {self.state.session_id!r}")

    @work(exclusive=True, group="scratchpad-write", exit_on_error=False)
    async def _write(self, items: list[str], cursor: int) -> None:
        """Write the whole list; a refusal is shown and the user's text stays."""
        session_id = self.session_id
        assert session_id is not None
        try:
            self.state = await self.engine.write_scratchpad(session_id, items)
        except WorkbenchError as exc:
            self._say(f"Not saved: {exc}")
            self.notify(str(exc), severity="error", timeout=10)
            return
        self.edit = None
        self._say("")
        self.workbench.memory_written()
        await self._show_items(cursor=max(cursor, 0))

    @work(exclusive=True, group="scratchpad-write", exit_on_error=False)
    async def _clear(self, session_id: str) -> None:
        try:
            await self.engine.clear_scratchpad(session_id)
        except WorkbenchError as exc:
            self.notify(str(exc), severity="error")
            return
        if session_id == self.session_id:
            self.state, self.edit = None, None
            await self._show_items(cursor=0)
        self.notify(f"Cleared the scratchpad of {session_id!r}.")
        self.workbench.memory_written()
