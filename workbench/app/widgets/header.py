"""The status line at the top: the file, its schema, the model, the embedding backlog, and
a read-only banner when the file could not be opened for writing."""

from __future__ import annotations

from textual.content import Content
from textual.reactive import reactive
from textual.widgets import Static

from core.types import Pulse


class StatusHeader(Static):
    """One line the app keeps current from each pulse it polls."""

    DEFAULT_CSS = """
    StatusHeader {
        dock: top;
        height: 1;
        background: $panel;
        color: $foreground;
        padding: 0 1;
    }
    """

    file_name: reactive[str] = reactive("")
    schema: reactive[int | None] = reactive(None)
    pulse: reactive[Pulse | None] = reactive(None)
    opening_error: reactive[str | None] = reactive(None)
    read_only: reactive[str | None] = reactive(None)
    """Why the file is open read-only (shown right after its name), or None."""

    def render(self) -> Content:
        parts: list[str | tuple[str, str]] = [("Memory Workbench", "bold"),
                                              f"  {self.file_name}"]
        if self.read_only:
            parts.append((f"  READ-ONLY: {self.read_only}", "bold $warning"))
        if self.opening_error:
            parts.append((f"  {self.opening_error}", "bold $error"))
        elif self.schema is None:
            parts.append(("  opening…", "italic"))
        else:
            parts.append((f"  schema {self.schema}", "$text-muted"))
            if self.pulse is not None:
                parts.extend(_pulse_parts(self.pulse))
        return Content.assemble(*parts)


def _pulse_parts(pulse: Pulse) -> list[str | tuple[str, str]]:
    """The model (or the plain fallback warning), whether the file's vectors are its own,
    and the embedding backlog."""
    parts: list[str | tuple[str, str]] = []
    if pulse.model_error:
        parts.append((f"  model did not load: {pulse.model_error}", "bold $error"))
    elif not pulse.model_loaded:
        parts.append((f"  model {pulse.model}", "italic"))
    elif pulse.fell_back and not pulse.vectors_off:
        parts.append(("  deterministic fallback embeddings: the configured model did not load",
                      "bold $warning"))
    elif pulse.vectors_off:  # for as long as the file is open, not a passing toast
        parts.append((f"  {pulse.vectors_off}", "bold $error"))
    else:
        parts.append(f"  model {pulse.model}")
    if pulse.backlog:
        parts.append((f"  embedding backlog {pulse.backlog:,}", "$warning"))
    else:
        parts.append(("  backlog 0", "$text-muted"))
    if pulse.failed:
        parts.append((f"  {pulse.failed:,} failed to embed", "$error"))
    if pulse.storage_error:
        parts.append(("  embedding paused: the file refused the write", "bold $error"))
    return parts
