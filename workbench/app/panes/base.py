"""What every pane shares: the engine, live reloads, empty states, copying as JSON.

A pane loads its data in Textual workers (``@work``) that call the async engine and never
touch widgets from another thread; the engine runs its SQL on its own connection threads,
so the event loop stays free for keystrokes. When the file changes (the app polls
``PRAGMA data_version``), the visible pane reloads and keeps the user's cursor; a hidden
one reloads when it is shown again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, cast

from textual.containers import Vertical
from textual.widget import Widget

from workbench.app.host import WorkbenchHost

if TYPE_CHECKING:
    from core import Engine
    from core.types import Pulse


class Pane(Vertical):
    """A tab of the app: loads from the engine, reloads when the memory changes."""

    pane_title: ClassVar[str] = ""
    """The tab's label."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._stale = True
        self._subscribed = False

    @property
    def workbench(self) -> WorkbenchHost:
        """The app, as panes may use it (:class:`~workbench.app.host.WorkbenchHost`)."""
        return cast(WorkbenchHost, self.app)

    @property
    def engine(self) -> Engine:
        """The app's engine (panes are only asked to load once it is open)."""
        engine = self.workbench.engine
        assert engine is not None, "the engine is not open yet"
        return engine

    @property
    def engine_open(self) -> bool:
        return self.workbench.engine is not None

    def on_mount(self) -> None:
        # Textual calls this for every pane, besides the subclass's own on_mount: a subclass
        # that also calls super().on_mount() must not subscribe twice (two reloads a change).
        if not self._subscribed:
            self._subscribed = True
            self.workbench.memory_changed.subscribe(self, self._memory_changed)
        self.workbench.steady_cursors(self)

    def _memory_changed(self, pulse: Pulse) -> None:
        self._stale = True
        if self.is_shown:
            self.activate()

    @property
    def is_shown(self) -> bool:
        return self.workbench.active_pane is self

    def activate(self) -> None:
        """Reload if the memory changed since the last load (the tab was shown or the file
        changed), and take the focus; the app calls it when the pane becomes visible."""
        if self._stale and self.engine_open:
            self._stale = False
            self.reload()
        self._take_focus()

    def focus_target(self) -> Widget | None:
        """What takes the focus when the pane is shown (its list); None leaves it alone."""
        return None

    def _take_focus(self) -> None:
        """Focus :meth:`focus_target` unless the focus is already inside the pane, so the
        pane's keys work at once and a reload never pulls the cursor out of a field."""
        focused = self.screen.focused
        target = self.focus_target()
        if target is not None and self.is_shown and self.screen.is_current and (
                focused is None or self not in focused.ancestors):
            target.focus()

    def reload(self) -> None:
        """Start the worker that reads the pane's data again, keeping the user's place."""
        raise NotImplementedError

    def copy_json(self, value: Any, what: str) -> None:
        """Copy ``value`` as JSON to the clipboard and say so (or say why not)."""
        self.workbench.copy_json(value, what)
