"""The playground's question: the query box, the scope (a session or a namespace) and the
mode, and the :class:`Asked` they describe.

Scopes are every session and every agent identity the sessions name. Setting them from the
program (a load, a replay, the session Sessions selected) never posts ``Select.Changed``,
so only the person's own choice reruns the query.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import Input, Select

from core.storage.vocabulary import MEMORY_PREFIX
from core.types import SessionInfo
from workbench.app.layout import borderless_when_short

MODES = ("keyword", "vector", "hybrid", "tri-hybrid")
TRI_HYBRID = "tri-hybrid"


@dataclass(frozen=True)
class Asked:
    """A query as asked: what it needs the database for (text, scope, mode)."""

    text: str
    scope_kind: str
    scope_value: str
    mode: str

    @property
    def scope(self) -> dict[str, str]:
        """The scope as ``engine.search`` takes it."""
        key = "session_id" if self.scope_kind == "session" else "namespace"
        return {key: self.scope_value}


class AskBar(Horizontal):
    """Query box, scope and mode."""

    SCOPED_CSS = False  # its rules also start at the screen's size class
    DEFAULT_CSS = """
    AskBar { height: 3; }
    AskBar #pg-query { width: 1fr; }
    AskBar #pg-scope { width: 38; }
    /* A long session name is cut with an ellipsis, not wrapped onto a second line. */
    AskBar #pg-scope SelectCurrent Static#label { text-wrap: nowrap; text-overflow: ellipsis; }
    AskBar #pg-mode { width: 18; }
    /* A short screen keeps its rows for the results: the fields lose their borders. */
    .-short AskBar { height: 1; }
    .-short AskBar #pg-scope, .-short AskBar #pg-mode { margin-left: 1; }
    .-narrow AskBar #pg-scope { width: 26; }
    .-narrow AskBar #pg-mode { width: 14; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.scopes: list[tuple[str, tuple[str, str]]] = []
        """The scope select's options: (label, (kind, value))."""

    def compose(self) -> ComposeResult:
        yield Input(placeholder="Ask the memory anything — enter runs it", id="pg-query")
        yield Select[tuple[str, str]]([], prompt="scope", id="pg-scope")
        yield Select([(mode, mode) for mode in MODES], value="hybrid", allow_blank=False,
                     id="pg-mode")

    def on_resize(self) -> None:
        borderless_when_short(self, self.query_one("#pg-query", Input),
                              self.query_one("#pg-scope", Select),
                              self.query_one("#pg-mode", Select))

    @property
    def mode(self) -> str:
        return str(self.query_one("#pg-mode", Select).value)

    @property
    def scope(self) -> Any:
        """``(kind, value)``, or ``Select.NULL`` when none is chosen."""
        return self.query_one("#pg-scope", Select).value

    def asking(self) -> Asked:
        """The question the widgets describe; ``ValueError`` says why there is none."""
        scope = self.scope
        if not isinstance(scope, tuple):
            raise ValueError("choose a scope first: a session or a namespace")
        if self.mode == TRI_HYBRID and scope[0] != "session":
            raise ValueError("tri-hybrid reads one session's events: choose a session as "
                             "the scope")
        return Asked(self.query_one("#pg-query", Input).value, scope[0], scope[1], self.mode)

    def show_scopes(self, sessions: list[SessionInfo], current_session: str | None) -> None:
        """Every session and agent identity as a scope; the chosen one stays chosen, else
        ``current_session``, else the newest conversation."""
        options: list[tuple[str, tuple[str, str]]] = [
            (f"session {s.session_id}", ("session", s.session_id)) for s in sessions]
        namespaces = sorted({s.agent_identity for s in sessions if s.agent_identity})
        options += [(f"namespace {name}", ("namespace", name)) for name in namespaces]
        chosen = self.scope
        if chosen not in [value for _, value in options]:
            ids = [s.session_id for s in sessions]
            # a namespace's notes live in a session named with MEMORY_PREFIX: not a conversation
            conversations = [sid for sid in ids if not sid.startswith(MEMORY_PREFIX)] or ids
            newest = conversations[0] if conversations else None
            chosen = ("session", current_session if current_session in ids else newest)
        self._set_scopes(options, chosen)

    def _set_scopes(self, options: list[tuple[str, tuple[str, str]]], chosen: Any) -> None:
        scope = self.query_one("#pg-scope", Select)
        self.scopes = options
        with self.prevent(Select.Changed):
            scope.set_options(options)
            if chosen in [value for _, value in options]:
                scope.value = chosen

    def follow_session(self, session_id: str) -> bool:
        """Make a listed session the scope; True when that changed the scope."""
        wanted = ("session", session_id)
        if self.scope == wanted or wanted not in [value for _, value in self.scopes]:
            return False
        with self.prevent(Select.Changed):
            self.query_one("#pg-scope", Select).value = wanted
        return True

    def show_question(self, asked: Asked) -> None:
        """Put a replayed query's text, scope and mode in the widgets."""
        wanted = (asked.scope_kind, asked.scope_value)
        if wanted not in [value for _, value in self.scopes]:  # e.g. a session since deleted
            self._set_scopes([*self.scopes, (f"{asked.scope_kind} {asked.scope_value}",
                                             wanted)], wanted)
        with self.prevent(Select.Changed, Input.Changed):
            self.query_one("#pg-query", Input).value = asked.text
            self.query_one("#pg-scope", Select).value = wanted
            self.query_one("#pg-mode", Select).value = asked.mode

    def set_mode(self, mode: str) -> None:
        """Choose a mode without running the query (the configured default)."""
        if mode in MODES:
            with self.prevent(Select.Changed):
                self.query_one("#pg-mode", Select).value = mode
