"""The footer of keys, rebuilt only when the keys it shows change."""

from __future__ import annotations

from collections.abc import Hashable

from textual.app import ComposeResult
from textual.widgets import Footer


class KeyFooter(Footer):
    """Textual's footer rebuilds its keys (each a widget, mounted and styled anew) every
    time the screen says its bindings were updated: at each focus move, pane switch and
    screen pushed or popped, some 150 times in a Pilot test of the Schedules pane, where
    it was a fifth of the CPU. Most of those updates leave the keys as they were; this
    footer rebuilds only when what it would show differs from what it shows."""

    _shown: Hashable = None

    def _keys(self) -> Hashable:
        """Everything the footer's ``compose`` reads: each active binding (a frozen
        dataclass: key, action, description, group, tooltip ...), whether it is enabled,
        its tooltip there and the key as displayed (the user's keymap may rename it), in
        order; and whether the command palette's key is shown."""
        if not self._bindings_ready:
            return None
        app = self.app
        return (self.show_command_palette, app.ENABLE_COMMAND_PALETTE,
                tuple((binding, enabled, tooltip, app.get_key_display(binding))
                      for _node, binding, enabled, tooltip
                      in self.screen.active_bindings.values()))

    def compose(self) -> ComposeResult:
        self._shown = self._keys()  # as the keys are read, not as the rebuild was asked for
        yield from super().compose()

    async def recompose(self) -> None:
        if self._shown is not None and self._keys() == self._shown:
            return
        await super().recompose()
