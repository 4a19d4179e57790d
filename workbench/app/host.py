"""What panes, screens and long work may use of the app: :class:`WorkbenchHost`.

:class:`~workbench.app.app.WorkbenchApp` implements it. Panes reach it through
``Pane.workbench`` and never import the app module, so the app can import every pane
without an import cycle, and a pane can be read (or tested) without the whole app.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from textual.screen import Screen
    from textual.signal import Signal
    from textual.widget import Widget
    from textual.worker import Worker

    from core import Engine
    from core.types import Pulse

Report = Callable[[int, int | None, str | None], None]
"""How long work reports progress: (done, total or None, a new label or None)."""


class WorkbenchHost(Protocol):
    """The app as its panes, screens and long work see it: the engine, the selected session,
    the "memory changed" signal, copying, long work with progress, cursors, screens."""

    engine: Engine | None
    """The open engine; None until the file is open and after it is closed."""
    memory_changed: Signal[Pulse]
    """Published when the file changed (this process or another); panes reload on it."""
    current_session: str | None
    """The session the Sessions pane selected; Scratchpad and Search follow it."""

    @property
    def active_pane(self) -> Widget | None:
        """The pane on the visible tab."""
        ...

    def memory_written(self) -> None:
        """A pane wrote through the engine: every pane showing what changed reloads now."""
        ...

    def show_session(self, session_id: str, pane_id: str | None = None) -> None:
        """Select a session everywhere, and optionally switch to a pane that shows it."""
        ...

    def steady_cursors(self, *roots: Widget) -> None:
        """Stop the text cursors under ``roots`` blinking in still mode."""
        ...

    def copy_json(self, value: Any, what: str) -> None:
        """Copy ``value`` as JSON to the clipboard and say so (or say why not)."""
        ...

    def run_long(self, label: str, job: Callable[[Report], Awaitable[str]]) -> Worker[None]:
        """Run long work with a progress strip; ctrl+x cancels it; its result is notified."""
        ...

    def push_screen(self, screen: Screen[Any], callback: Callable[[Any], None] | None = None,
                    ) -> Any:
        """Show a modal screen; ``callback`` gets what it is dismissed with."""
        ...
