"""The retrieval log as a list: every logged query, newest first, the agent's included.

Enter on one replays it in the playground (``engine.replay``).
"""

from __future__ import annotations

from typing import Any

from textual.content import Content
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from workbench.text import short_time as stamp

CALLER_STYLES = {"agent": "bold $warning", "workbench": "$primary", "replay": "$secondary",
                 "api": "$accent"}


def scope_label(kind: str, value: str) -> str:
    """A scope as the playground names it."""
    return value if kind == "session" else f"namespace {value}"


def log_prompt(entry: dict[str, Any]) -> Content:
    """Two lines: who asked what; when, where and how (the list cuts what does not fit)."""
    caller = str(entry.get("caller") or "?")
    query = " ".join(str(entry.get("query") or "").split())
    params = entry.get("params") or {}
    where = scope_label(entry.get("scope_kind", ""), entry.get("scope_value", ""))
    return Content.assemble(
        (f"{caller:<10} ", CALLER_STYLES.get(caller, "$text-muted")),
        (query, "bold") if query else ("(empty query)", "italic $text-muted"), "\n",
        (f"  {stamp(entry.get('created_at', ''))} · {params.get('mode', '?')} · {where}",
         "$text-muted"))


class LogList(OptionList):
    """Past queries; enter replays the highlighted one."""

    DEFAULT_CSS = """
    LogList {
        height: 1fr;
        text-wrap: nowrap;
        text-overflow: ellipsis;
        border: round $foreground 20%;
        border-title-color: $text-muted;
        & > .option-list--option-highlighted { background: $primary 22%; color: $foreground;
                                               text-style: none; }
        &:focus {
            border: round $primary;
            border-title-color: $primary;
            & > .option-list--option-highlighted { background: $primary 30%;
                                                   color: $foreground; text-style: none; }
        }
    }
    """

    def show(self, entries: list[dict[str, Any]]) -> None:
        """Replace the entries, keeping the highlighted one (by log id) highlighted."""
        keep = self.highlighted_option.id if self.highlighted_option is not None else None
        self.set_options(Option(log_prompt(entry), id=f"log-{entry['log_id']}")
                         for entry in entries)
        ids = [option.id for option in self.options]
        if ids:
            self.highlighted = ids.index(keep) if keep in ids else 0
