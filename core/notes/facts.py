"""Facts (aidaemon): a value under a key that is unique within its category.

Why facts have a table of their own rather than being notes with a category and a key:

- Identity differs. A fact is (category, key), so "user/name" and "project/name" are two
  facts; a note's name is unique across its whole namespace, and a note's category is one
  of three fixed values (core, daily, conversation), not a free grouping.
- Use differs. A fact is read by its key and replaced whole ("the user's time zone is
  Europe/Lisbon"); nothing ranks it, so it needs no chunks, FTS rows or vectors, and an
  upsert is one ``INSERT … ON CONFLICT`` instead of a note's delete-then-store of its index.
- aidaemon defines the table: ``id``, ``category``, ``key``, ``value``, ``source``
  ("agent" or "user"), ``created_at``, ``updated_at``; keeping its shape keeps its meaning.

Facts live in a namespace like notes do, and every statement names it: a category and key
of another namespace find nothing. When an agent wants a fact to be found by search too, it
saves a note as well.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from core.clock import utc_now
from core.errors import InvalidInput, NotFound
from core.inputs import shown
from core.notes.fields import clean_identifier
from core.types import Fact

if TYPE_CHECKING:
    from core.notes.service import Notes
    from core.storage.backend import Backend

SOURCES = ("agent", "user")


def _value(value: Any) -> str:
    if not isinstance(value, str):
        raise InvalidInput(f"a fact's value must be a string, got {type(value).__name__}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInput("a fact's value is not valid UTF-8 text") from None
    return value


def _source(source: Any) -> str:
    if source not in SOURCES:
        raise InvalidInput(f"a fact's source must be one of {', '.join(SOURCES)}; "
                           f"got {shown(source)}")
    return str(source)


class Facts:
    """The engine's facts: upsert, get, list, delete, each in one namespace."""

    def __init__(self, backend: Backend, notes: Notes) -> None:
        self._backend = backend
        self._notes = notes

    async def upsert(self, category: str, key: str, value: str, *, source: str = "agent",
                     namespace: str | None = None) -> Fact:
        """Store a fact, replacing the value (and source) under the same category and key."""
        return await self._backend.upsert_fact(
            self._notes.namespace(namespace), clean_identifier(category, "category"),
            clean_identifier(key, "key"),
            self._notes.within_size(_value(value), "a fact's value"), _source(source),
            utc_now())

    async def get(self, category: str, key: str, *, namespace: str | None = None) -> Fact:
        """The fact under (category, key); ``NotFound`` when there is none."""
        namespace = self._notes.namespace(namespace)
        category, key = clean_identifier(category, "category"), clean_identifier(key, "key")
        row = await self._backend.read_fact(namespace, category, key)
        if row is None:
            raise NotFound(f"no fact {shown(key)} in category {shown(category)} of namespace "
                           f"{shown(namespace)}")
        return row

    async def list_facts(self, *, category: str | None = None,
                         namespace: str | None = None) -> list[Fact]:
        """The namespace's facts (of one category when given), by category then key."""
        return await self._backend.list_facts(
            self._notes.namespace(namespace),
            None if category is None else clean_identifier(category, "category"))

    async def delete(self, category: str, key: str, *, namespace: str | None = None) -> bool:
        """Delete a fact; False when there was none."""
        return await self._backend.delete_fact(
            self._notes.namespace(namespace), clean_identifier(category, "category"),
            clean_identifier(key, "key"))
