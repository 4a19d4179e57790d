"""The Textual app: a status header, five panes over one engine, a footer.

The app owns the engine and the things every pane shares — the selected session, the
"memory changed" signal, copying, long work with progress, themes — and nothing a pane
does. Panes live in :mod:`workbench.app.panes`, one module each.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import platformdirs
from textual import work
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding
from textual.reactive import reactive
from textual.screen import Screen
from textual.signal import Signal
from textual.widget import Widget
from textual.widgets import Input, TabbedContent, TabPane, TextArea
from textual.worker import Worker, WorkerState

from core import Engine
from core.errors import WorkbenchError
from core.locations import Location, parse_location
from core.types import Pulse
from workbench.app.clipboard import copy_text
from workbench.app.host import Report
from workbench.app.layout import HORIZONTAL_BREAKPOINTS, VERTICAL_BREAKPOINTS
from workbench.app.panes.base import Pane
from workbench.app.panes.notes import NotesPane
from workbench.app.panes.schedules import SchedulesPane
from workbench.app.panes.scratchpad import ScratchpadPane
from workbench.app.panes.sessions import SessionsPane
from workbench.app.playground.pane import PlaygroundPane
from workbench.app.screens.help import HelpScreen
from workbench.app.themes import DEFAULT_THEME, PROJECT_THEMES, load_theme_dirs, user_theme_dir
from workbench.app.widgets.footer import KeyFooter
from workbench.app.widgets.header import StatusHeader
from workbench.app.widgets.progress import ProgressStrip, WorkProgress
from workbench.text import to_json

PANES: tuple[tuple[str, type[Pane], str], ...] = (
    ("sessions", SessionsPane, "1"),
    ("notes", NotesPane, "2"),
    ("scratchpad", ScratchpadPane, "3"),
    ("playground", PlaygroundPane, "4"),
    ("schedules", SchedulesPane, "5"),
)

@dataclass(frozen=True)
class AppSettings:
    """How the app runs (the CLI's defaults; tests and screenshots pin them down)."""

    poll_interval: float = 0.5
    """Seconds between polls of the file's change counter and the backlog."""
    theme: str | None = None
    theme_dirs: tuple[Path, ...] = field(
        default_factory=lambda: (PROJECT_THEMES, user_theme_dir()))
    defer_model: bool = True
    """Open the file first and load the model while the user browses."""
    still: bool = False
    """No cursor blink, no animation, no polling: for snapshot tests and screenshots."""


class MainScreen(Screen[None]):
    """The panes' screen: nothing is focused for the user (a filter box would take the
    digits that switch panes); each pane focuses its own list when it is shown."""

    AUTO_FOCUS = None


class WorkbenchApp(App[None]):
    """Memory Workbench: browse, edit and replay an agent's memory.

    Its panes, screens and long work see it as a :class:`~workbench.app.host.WorkbenchHost`.
    """

    TITLE = "Memory Workbench"
    # Every screen gets one class per axis from its size; the panes reflow on them.
    HORIZONTAL_BREAKPOINTS = HORIZONTAL_BREAKPOINTS
    VERTICAL_BREAKPOINTS = VERTICAL_BREAKPOINTS
    CSS = """
    TabbedContent { height: 1fr; }
    TabPane { padding: 0; }
    .empty-state { color: $text-muted; padding: 1 2; }
    """
    BINDINGS = [
        # A digit switches panes unless a field takes it as text; F1-F5 always switch.
        *(Binding(key, f"show_pane('{pane_id}')", pane.pane_title, id=f"app.pane.{pane_id}")
          for pane_id, pane, key in PANES),
        *(Binding(f"f{key}", f"show_pane('{pane_id}')", pane.pane_title,
                  id=f"app.pane.{pane_id}.fkey", show=False, priority=True)
          for pane_id, pane, key in PANES),
        Binding("question_mark", "help", "Help", id="app.help", key_display="?"),
        Binding("ctrl+x", "cancel_work", "Cancel work", id="app.cancel", show=False),
        Binding("ctrl+q", "quit", "Quit", id="app.quit"),
    ]

    current_session: reactive[str | None] = reactive(None)
    """The session the Sessions pane selected; Scratchpad and Search follow it."""

    def __init__(self, location: str | Path | Location, config: Any = None,
                 settings: AppSettings | None = None) -> None:
        super().__init__()
        self.location = (location if isinstance(location, Location)
                         else parse_location(location))
        """The memory the app opens; shown (without a URL's password) in the header."""
        self.config = config
        self.settings = settings or AppSettings()
        self.engine: Engine | None = None
        self.memory_changed: Signal[Pulse] = Signal(self, "memory-changed")
        self._data_version: int | None = None
        self.theme_problems: list[str] = []
        self._theme_notices: list[dict[str, Any]] = []  # notified once mounted
        if self.settings.still:
            self.animation_level = "none"
        # Before the first stylesheet pass: a theme set on mount parsed and applied every
        # style a second time, a fifth of the app's start.
        self._load_themes()

    def export_screenshot(self, *, title: str | None = None, simplify: bool = False) -> str:
        """Textual's SVG of the screen, its spaces kept: each styled run is a ``<text>`` of
        its own, and SVG renderers strip a run's leading spaces unless ``xml:space`` says
        to keep them (the title then ran into the file name)."""
        svg = super().export_screenshot(title=title, simplify=simplify)
        return svg.replace("<svg ", '<svg xml:space="preserve" ', 1)

    # -- layout ------------------------------------------------------------------------------

    def get_default_screen(self) -> Screen[None]:
        return MainScreen(id="_default")

    def compose(self) -> ComposeResult:
        header = StatusHeader()
        header.file_name = self.location.display
        yield header
        with TabbedContent(id="panes"):
            for pane_id, pane_class, key in PANES:
                with TabPane(f"{key} {pane_class.pane_title}", id=f"tab-{pane_id}"):
                    yield pane_class(id=pane_id)
        yield ProgressStrip()
        yield KeyFooter()

    @property
    def panes(self) -> list[Pane]:
        return [self.query_one(f"#{pane_id}", Pane) for pane_id, _, _ in PANES]

    @property
    def active_pane(self) -> Pane | None:
        active = self.query_one(TabbedContent).active
        if not active:
            return None
        return self.query_one(f"#{active.removeprefix('tab-')}", Pane)

    def on_mount(self) -> None:
        for notice in self._theme_notices:
            self.notify(**notice)
        self.open_engine()
        if not self.settings.still:
            self.set_interval(self.settings.poll_interval, self.poll_pulse)

    def _load_themes(self) -> None:
        loaded = load_theme_dirs(*self.settings.theme_dirs)
        for theme in loaded.themes:
            self.register_theme(theme)
        self.theme_problems = loaded.problems
        if loaded.problems:
            self._theme_notices.append({
                "message": "\n".join(loaded.problems), "title": "Some theme files were not loaded",
                "severity": "warning", "timeout": 12})
        wanted = self.settings.theme or DEFAULT_THEME
        if wanted in self.available_themes:
            self.theme = wanted
        else:
            self._theme_notices.append({
                "message": f"no theme named {wanted!r}; themes: "
                           f"{', '.join(sorted(self.available_themes))}",
                "severity": "warning"})

    def get_theme_variable_defaults(self) -> dict[str, str]:
        """Colours the panes use that a theme may set (the built-in themes do not)."""
        return {"vector-leg": "#4ea8de", "fts-leg": "#e9a23b"}

    # -- the engine ----------------------------------------------------------------------------

    @work(exclusive=True, group="engine", exit_on_error=False)
    async def open_engine(self) -> None:
        header = self.query_one(StatusHeader)
        # The rule of every command that adds to memory: a missing file is made, and said.
        created = not self.location.is_postgres and not self.location.path.exists()
        try:
            engine = await Engine.open(self.location, config=self.config,
                                       defer_model=self.settings.defer_model)
        except Exception as exc:  # any reason the file does not open is the user's to read
            header.opening_error = f"cannot open: {exc}"
            self.notify(str(exc), title="The memory file did not open", severity="error",
                        timeout=30)
            return
        self.engine = engine
        header.file_name = engine.location.display
        header.schema = engine.backend.schema_version
        header.read_only = engine.backend.read_only_reason
        if created:
            self.notify(f"created {engine.location.display}: a new memory file", timeout=10)
        for warning in engine.warnings:
            self.notify(warning, severity="warning", timeout=10)
        await self._poll_once()
        for pane in self.panes:
            pane._stale = True
        if (active := self.active_pane) is not None:
            active.activate()
        try:
            await engine.model_ready()
        except Exception as exc:  # a model the file refuses: browsing goes on without it
            self.notify(f"{exc}", title="The embedding model did not load", severity="error",
                        timeout=30)
        else:
            if engine.model.warning:
                self.notify(engine.model.warning, severity="warning", timeout=15)
        await self._poll_once()

    def poll_pulse(self) -> None:
        if self.engine is not None:
            self._poll_worker()

    @work(exclusive=True, group="pulse", exit_on_error=False)
    async def _poll_worker(self) -> None:
        await self._poll_once()

    async def _poll_once(self) -> None:
        """Read the pulse; tell the panes when the file changed since the last one."""
        if self.engine is None:
            return
        pulse = await self.engine.pulse()
        header = self.query_one(StatusHeader)
        if pulse.storage_error and (header.pulse is None
                                    or header.pulse.storage_error != pulse.storage_error):
            self.notify(pulse.storage_error, title="Embedding paused: the file refused the write",
                        severity="error", timeout=30)
        header.pulse = pulse
        if self._data_version is not None and pulse.data_version != self._data_version:
            self.memory_changed.publish(pulse)
        self._data_version = pulse.data_version

    def memory_written(self) -> None:
        """A pane wrote through the engine: poll now, so every pane showing what changed
        reloads without waiting for the next poll (and still mode, which never polls,
        sees it at all)."""
        if self.engine is not None:
            self._poll_worker()

    async def _close_engine(self) -> None:
        engine, self.engine = self.engine, None
        if engine is not None:
            await engine.close()

    async def action_quit(self) -> None:
        await self._close_engine()
        self.exit()

    async def on_unmount(self) -> None:
        await self._close_engine()

    # -- panes ---------------------------------------------------------------------------------

    def action_show_pane(self, pane_id: str) -> None:
        # Focus leaves the old pane first: left inside it, Textual would move focus to a
        # neighbour there and the old tab would take over again.
        tabs = self.query_one(TabbedContent)
        if tabs.active == f"tab-{pane_id}":
            return
        self.screen.set_focus(None)
        tabs.active = f"tab-{pane_id}"

    def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        pane = self.active_pane
        if pane is not None:
            pane.activate()

    def show_session(self, session_id: str, pane_id: str | None = None) -> None:
        """Select a session everywhere, and optionally switch to a pane that shows it."""
        self.current_session = session_id
        if pane_id is not None:
            self.action_show_pane(pane_id)

    # -- shared actions ----------------------------------------------------------------------

    def deliver_screenshot(self, filename: str | None = None, path: str | None = None,
                           time_format: str | None = None) -> str | None:
        """Textual's screenshot (the palette's "Screenshot"): in the user's downloads folder,
        as Textual saves it, or in the working directory when there is none (a server, a
        container), where Textual reported "Failed to save screenshot" and saved nothing."""
        if path is None:
            downloads = Path(platformdirs.user_downloads_dir())
            path = str(downloads if downloads.is_dir() else Path.cwd())
        return super().deliver_screenshot(filename, path, time_format)

    def action_help(self) -> None:
        sections: list[tuple[str, list[Any]]] = [("Everywhere", list(self.BINDINGS))]
        sections += [(pane.pane_title, list(pane.BINDINGS)) for pane in self.panes]
        self.push_screen(HelpScreen(sections))

    def steady_cursors(self, *roots: Widget) -> None:
        """In still mode (snapshots, screenshots) the text cursors of ``roots`` and of the
        fields inside them do not blink; otherwise they do."""
        blink = not self.settings.still
        for root in roots:
            for widget in (root, *root.query("Input, TextArea")):
                if isinstance(widget, Input | TextArea):
                    widget.cursor_blink = blink

    def copy_json(self, value: Any, what: str) -> None:
        """Copy ``value`` as JSON with pyperclip, and say plainly when there is no clipboard."""
        text = to_json(value)
        problem = copy_text(text)
        if problem is None:
            self.notify(f"Copied {what} as JSON ({len(text):,} characters)")
            return
        self.copy_to_clipboard(text)  # OSC 52: some terminals take it, some ignore it
        self.notify(f"{problem}. Sent {what} to the terminal's clipboard instead (OSC 52), "
                    "which some terminals ignore.", severity="warning", timeout=8)

    def run_long(self, label: str, job: Callable[[Report], Awaitable[str]]) -> Worker[None]:
        """Run long work with a progress strip; ctrl+x cancels it; its result is notified."""
        strip = self.query_one(ProgressStrip)
        strip.start(label)

        def report(done: int, total: int | None, new_label: str | None = None) -> None:
            self.post_message(WorkProgress(done, total, new_label))

        async def run() -> None:
            try:
                outcome = await job(report)
            except Exception as exc:
                self.notify(f"{label}: {exc}", severity="error", timeout=15)
            else:
                self.notify(outcome, title=label)
            finally:
                strip.stop()

        return self.run_worker(run(), group="long", exclusive=True, exit_on_error=False)

    def on_work_progress(self, message: WorkProgress) -> None:
        self.query_one(ProgressStrip).advance(message.done, message.total, message.label)

    def action_cancel_work(self) -> None:
        running = [w for w in self.workers if w.group == "long" and w.is_running]
        for worker in running:
            worker.cancel()
        if running:
            self.query_one(ProgressStrip).stop()
            self.notify("Cancelled. What was finished stays; run it again to go on.")

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """One place where a failed worker becomes a notification the user can read."""
        if event.state is not WorkerState.ERROR:
            return
        node = event.worker.node
        if isinstance(node, Widget) and not node.is_attached:
            return  # its widget is gone (the app is closing): nobody to tell
        error = event.worker.error
        if isinstance(error, WorkbenchError):
            self.notify(str(error), severity="error", timeout=10)
        else:
            self.notify(f"{type(error).__name__}: {error}", title=f"{event.worker.name} failed",
                        severity="error", timeout=15)

    # -- command palette ---------------------------------------------------------------------

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        for pane_id, pane_class, key in PANES:
            yield SystemCommand(f"Show {pane_class.pane_title}", f"key {key}",
                                partial(self.action_show_pane, pane_id))
        for pane in self.panes:
            for binding in pane.BINDINGS:
                if isinstance(binding, Binding) and binding.description:
                    yield SystemCommand(
                        f"{pane.pane_title}: {binding.description}",
                        f"key {binding.key_display or binding.key}",
                        partial(self._run_pane_action, pane, binding.action))
        yield from self.long_work_commands()

    def _run_pane_action(self, pane: Pane, action: str) -> None:
        self.action_show_pane(pane.id or "")
        self.call_after_refresh(self.run_action, action, pane)

    def long_work_commands(self) -> Iterable[SystemCommand]:
        from workbench.app import long_work

        for title, help_text, starter in long_work.COMMANDS:
            yield SystemCommand(title, help_text, partial(starter, self))
