"""The note editor's fields as text, checked field by field before anything is saved.

The editor holds what the user typed; :func:`check_form` turns it into the values the
engine takes, using the engine's own rules (:mod:`core.notes.fields` and the configured tag
limits), and collects one message per field that is refused, so every error shows at its
field and nothing reaches the engine until all of them pass.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, TypeVar

from core.errors import InvalidInput, NameTaken
from core.notes.fields import (
    clean_aliases,
    clean_category,
    clean_content,
    clean_importance,
    clean_kind,
    clean_name,
    clean_source,
)

if TYPE_CHECKING:
    from core.notes.service import Notes
    from core.types import Note

FIELD_NAMES = ("name", "aliases", "tags", "source", "category", "kind", "importance",
               "content")
# How the engine's messages begin, by the field they are about.
_MESSAGE_STARTS = {"name": ("name ",), "aliases": ("alias",), "tags": ("tag",),
                   "source": ("source ",), "category": ("category ",), "kind": ("kind ",),
                   "importance": ("importance ",), "content": ("content ",)}
_Value = TypeVar("_Value")


@dataclass(frozen=True)
class NoteForm:
    """Every editor field as the user sees it (lists comma-separated)."""

    name: str = ""
    aliases: str = ""
    tags: str = ""
    source: str = ""
    category: str = "core"
    kind: str = "Note"
    importance: str = "0.5"
    content: str = ""

    @classmethod
    def of(cls, note: Note) -> NoteForm:
        """A stored note as the editor shows it."""
        return cls(name=note.name, aliases=", ".join(note.aliases), tags=", ".join(note.tags),
                   source=note.source, category=note.category, kind=note.kind,
                   importance=f"{note.importance:g}", content=note.content)

    def changed_fields(self, other: NoteForm) -> list[str]:
        """The names of the fields whose text differs from ``other``'s."""
        return [f.name for f in fields(self) if getattr(self, f.name) != getattr(other, f.name)]


@dataclass(frozen=True)
class CheckedNote:
    """A form whose every field the engine's rules accept."""

    name: str
    aliases: tuple[str, ...]
    tags: tuple[str, ...]
    source: str
    category: str
    kind: str
    importance: float
    content: str


def split_list(text: str) -> list[str]:
    """Comma-separated text as its non-blank items, trimmed."""
    return [item.strip() for item in text.split(",") if item.strip()]


def check_form(form: NoteForm, notes: Notes) -> tuple[CheckedNote | None, dict[str, str]]:
    """The form's values, or None and the engine's message for every field it refuses."""
    errors: dict[str, str] = {}

    def checked(field: str, clean: Callable[[], _Value], fallback: _Value) -> _Value:
        try:
            return clean()
        except InvalidInput as exc:
            errors[field] = str(exc)
            return fallback

    name = checked("name", lambda: clean_name(form.name), "")
    no_words: tuple[str, ...] = ()
    aliases = checked("aliases", lambda: clean_aliases(split_list(form.aliases), name), no_words)
    tags = checked("tags", lambda: notes.tags(split_list(form.tags)), no_words)
    source = checked("source", lambda: clean_source(form.source), "")
    category = checked("category", lambda: clean_category(form.category), "")
    kind = checked("kind", lambda: clean_kind(form.kind), "")
    importance = checked("importance", lambda: clean_importance(_number(form.importance)), 0.0)
    content = checked("content", lambda: _content(form.content, notes), "")
    if errors:
        return None, errors
    return CheckedNote(name, aliases, tags, source, category, kind, importance, content), {}


def _number(text: str) -> float | str:
    """The text as a number, or the text itself (which the importance rule then refuses)."""
    try:
        return float(text.strip())
    except ValueError:
        return text


def _content(text: str, notes: Notes) -> str:
    clean = clean_content(text)
    notes.chunks(clean)  # content of control characters only has nothing to index
    return clean


def field_of_error(exc: InvalidInput, form: NoteForm) -> str | None:
    """Which field an engine refusal is about (a race the form's checks could not see, such
    as a name another writer took meanwhile), or None when it is about no one field."""
    message = str(exc)
    if isinstance(exc, NameTaken):
        return "name" if message.startswith(repr(form.name.strip())) else "aliases"
    if " tags given" in message:
        return "tags"
    for field, starts in _MESSAGE_STARTS.items():
        if message.startswith(starts):
            return field
    return None
