"""LangGraph's long-term store on the engine: ``WorkbenchStore(engine)``.

A LangGraph :class:`~langgraph.store.base.BaseStore` whose items are notes of one agent
namespace (``namespace=`` or the engine's configured agent), so the Notes pane shows what
the agent remembers and hybrid retrieval searches it. How an item maps to a note (name
``users/123/prefs``, content the value's JSON, source ``langgraph``, tags the tuple's paths,
an id that keeps insertion order) is :mod:`core.notes.store_items`.

Behaviour follows LangGraph's ``InMemoryStore`` (tested side by side on generated
operation sequences):

- a batch answers its gets, searches and namespace listings first, then applies its puts,
  the last put of a (namespace, key) winning, in the order each pair first appears; each
  put or delete is one transaction. Every put of the batch is checked before any is
  written, so a refused value leaves nothing of the batch stored;
- ``search`` without a query filters (plain equality, ``$eq $ne $gt $gte $lt $lte``, nested
  dicts and lists as LangGraph compares them) and pages items tuple by tuple, each in
  insertion order. With a query, the engine's hybrid retrieval ranks the items under the
  prefix, logged with caller ``langgraph`` so the playground replays it; items it does not
  rank follow, unscored, in insertion order, as ``InMemoryStore`` appends items it has no
  vector for;
- ``list_namespaces`` matches prefix and suffix (``*`` a wildcard label), truncates to
  ``max_depth``, sorts and pages.

Where it differs, on purpose: ``created_at`` stays the time the item was first put (as in
LangGraph's SQLite and Postgres stores; ``InMemoryStore`` resets it on every put); a
namespace with no item left is not listed (``InMemoryStore`` keeps listing a tuple once a
get or delete has touched it); a value must be JSON (a dict with string keys; tuples come
back as lists) and a tuple and key must fit a note name (200 characters once encoded);
a ``$gt``/``$gte``/``$lt``/``$lte`` filter on a missing or non-numeric field does not match
(as in LangGraph's SQL stores; ``InMemoryStore`` raises ``TypeError``).
The embedding model is the engine's: an ``index`` config gives only ``fields``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import operator
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    get_text_at_path,
    tokenize_path,
    validate_op_namespace,
)

from core.errors import InvalidInput, NameTaken, NotFound
from core.inputs import shown
from core.notes import store_items
from core.notes.store_items import SOURCE
from core.retrieval.service import MAX_TOP_K
from core.storage.vocabulary import memory_session_id

if TYPE_CHECKING:
    from core.engine import Engine
    from core.storage.messages import PreparedChunk
    from core.types import Note

CALLER = "langgraph"
"""The caller a query search is logged with."""

_ATTEMPTS = 3  # another writer may add or remove the same key between a look-up and a write


@dataclasses.dataclass(frozen=True)
class _Put:
    """A put of the batch, checked: the note name, and for a value its content and chunks."""

    op: PutOp
    name: str | None  # None: a delete of a name no note can have (nothing to do)
    content: str | None = None
    chunks: tuple[PreparedChunk, ...] = ()


class WorkbenchStore(BaseStore):
    """LangGraph's ``BaseStore`` over the engine's notes (see the module docstring).

    Use the async methods (``aput``, ``aget``, ``asearch``...) on the engine's event loop;
    the sync ones from other threads, which they run on that loop.
    """

    supports_ttl = False

    def __init__(self, engine: Engine, *, namespace: str | None = None,
                 index: Mapping[str, Any] | None = None) -> None:
        self.engine = engine
        self.namespace = engine.notes.namespace(namespace)
        self.session_id = memory_session_id(self.namespace)
        self._fields = _index_fields(index)
        try:
            self._loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            self._loop = None

    # -- the batch --------------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """:meth:`abatch` run on the engine's event loop, from another thread."""
        loop = self._loop
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if loop is None or running is loop:
            raise asyncio.InvalidStateError(
                "WorkbenchStore's sync methods run on the engine's event loop from another "
                "thread; on that loop call the async ones (aput, aget, asearch, abatch)")
        return asyncio.run_coroutine_threadsafe(self.abatch(list(ops)), loop).result()

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Answer the reads, then apply the puts (see the module docstring)."""
        if self._loop is None:
            self._loop = asyncio.get_running_loop()
        ops = list(ops)
        puts: dict[tuple[tuple[str, ...], str], _Put] = {}
        for op in ops:
            if not isinstance(op, GetOp | SearchOp | ListNamespacesOp | PutOp):
                raise InvalidInput(f"unknown store operation {type(op).__name__}; give GetOp, "
                                   "PutOp, SearchOp or ListNamespacesOp")
            validate_op_namespace(op)
            if isinstance(op, PutOp):
                puts[(tuple(op.namespace), op.key)] = self._checked(op)
        results: list[Result] = []
        for op in ops:
            if isinstance(op, GetOp):
                results.append(await self._get(tuple(op.namespace), op.key))
            elif isinstance(op, SearchOp):
                results.append(await self._search(op))
            elif isinstance(op, ListNamespacesOp):
                results.append(await self._list_namespaces(op))
            else:
                results.append(None)
        if puts:
            held = {put.name: await self.engine.notes.lookup(self.namespace, put.name)
                    for put in puts.values() if put.name is not None}
            for put in puts.values():
                if put.name is not None and put.content is not None:
                    _refuse_foreign(held[put.name], put.name, self.namespace)
            for put in puts.values():
                await self._apply(put, held.get(put.name) if put.name else None)
        return results

    # -- puts -------------------------------------------------------------------------------

    def _checked(self, op: PutOp) -> _Put:
        """A put with its name, content and chunks, or ``InvalidInput`` naming what is wrong
        (nothing is written before every put of the batch passed)."""
        labels = tuple(op.namespace)
        if op.value is None:
            if not labels:
                return _Put(op, None)
            try:
                return _Put(op, store_items.item_name(labels, op.key))
            except InvalidInput:
                return _Put(op, None)
        if not labels:
            raise InvalidNamespaceError("Namespace cannot be empty.")
        if labels[0] == "langgraph":
            raise InvalidNamespaceError(
                f'Root label for namespace cannot be "langgraph". Got: {labels}')
        if not isinstance(op.key, str):
            raise InvalidInput(f"a store key must be a string, got {type(op.key).__name__}")
        name = store_items.item_name(labels, op.key)
        where = f"key {shown(op.key)} in namespace {shown(labels)}"
        content = self.engine.notes.within_size(store_items.item_content(op.value, where),
                                                f"the JSON value of {where}")
        return _Put(op, name, content, self._chunks(op, content))

    def _chunks(self, op: PutOp, content: str) -> tuple[PreparedChunk, ...]:
        """What the item is searched by: ``index=False`` nothing; a list of paths (or the
        store's ``fields``) the text at them; otherwise the whole value."""
        paths = self._fields if op.index is None else (None if op.index is False else op.index)
        if op.index is False:
            return ()
        if paths is None:
            return self.engine.notes.chunks(content)
        texts = [text for path in paths
                 for text in get_text_at_path(op.value, tokenize_path(path))]
        joined = "\n".join(texts)
        return self.engine.notes.chunks(joined) if joined.strip() else ()

    async def _apply(self, put: _Put, held: Note | None) -> None:
        """One put or delete, each write one transaction; a racing writer is retried."""
        notes = self.engine.notes
        if put.name is None:
            return
        if put.content is None:
            if held is not None and held.source == SOURCE:
                await notes.remove(held.note_id, namespace=self.namespace)
            return
        labels = tuple(put.op.namespace)
        for _ in range(_ATTEMPTS):
            if held is not None:
                _refuse_foreign(held, put.name, self.namespace)
                changes = notes.changes(put.content)
                try:
                    await notes.write_changes(self.namespace, held.note_id,
                                              dataclasses.replace(changes, chunks=put.chunks))
                    return
                except NotFound:
                    held = None
                    continue
            draft = notes.draft(put.name, put.content, namespace=self.namespace,
                                source=SOURCE, tags=self._tags(labels),
                                note_id=store_items.item_note_id(
                                    await self._namespace_stamp(labels)))
            try:
                await notes.add_draft(dataclasses.replace(draft, chunks=put.chunks))
                return
            except NameTaken:
                held = await notes.lookup(self.namespace, put.name)
        raise NameTaken(f"store key {shown(put.op.key)} in namespace {shown(labels)} kept "
                        "changing under another writer; it was not written")

    async def _namespace_stamp(self, labels: tuple[str, ...]) -> int:
        """The stamp of the tuple's items (a new one when it holds none)."""
        siblings = await self.engine.notes.under(
            self.namespace, SOURCE, store_items.namespace_path(labels) + "/",
            children_only=True, limit=1)
        if siblings:
            return store_items.namespace_stamp(siblings[0].note_id)
        return store_items.new_stamp()

    def _tags(self, labels: Sequence[str]) -> list[str]:
        limits = self.engine.config.notes
        return store_items.prefix_tags(labels, limits.max_tags, limits.max_tag_chars)

    # -- reads ------------------------------------------------------------------------------

    async def _get(self, labels: tuple[str, ...], key: str) -> Item | None:
        if not labels:
            return None
        try:
            name = store_items.item_name(labels, key)
        except InvalidInput:
            return None  # a name too long for a note: no item can have it
        note = await self.engine.notes.lookup(self.namespace, name)
        if note is None or note.source != SOURCE or note.name != name:
            return None
        return _item(labels, key, note)

    async def _items_under(self, prefix: tuple[str, ...],
                           ) -> list[tuple[tuple[str, ...], str, Note]]:
        path = store_items.namespace_path(prefix)
        found = await self.engine.notes.under(self.namespace, SOURCE,
                                              path + "/" if path else "")
        return [(labels, key, note) for labels, key, note in store_items.ordered(found)
                if labels[:len(prefix)] == prefix]

    async def _search(self, op: SearchOp) -> list[SearchItem]:
        prefix = tuple(op.namespace_prefix)
        candidates = [(labels, key, note) for labels, key, note in
                      await self._items_under(prefix)
                      if not op.filter or _matches(_item(labels, key, note).value, op.filter)]
        if not candidates:
            return []
        if not op.query:
            return [_search_item(labels, key, note, None)
                    for labels, key, note in candidates[op.offset:op.offset + op.limit]]
        scores = await self._ranked(op.query, prefix, op.offset + op.limit)
        by_id = {note.note_id: (labels, key, note) for labels, key, note in candidates}
        ranked = [(by_id[note_id], score) for note_id, score in scores.items()
                  if note_id in by_id]
        rest = [(found, None) for found in candidates if found[2].note_id not in scores]
        page = (ranked + rest)[op.offset:op.offset + op.limit]
        return [_search_item(labels, key, note, score) for (labels, key, note), score in page]

    async def _ranked(self, query: str, prefix: tuple[str, ...], wanted: int,
                      ) -> dict[str, float]:
        """note id -> score of the items hybrid retrieval finds for ``query`` under the
        prefix, best first (chunks filtered by the prefix's tag in SQL)."""
        limits = self.engine.config.notes
        tag = store_items.search_tag(prefix, limits.max_tags, limits.max_tag_chars)
        found = await self.engine.search(
            session_id=self.session_id, query=query,
            top_k=min(MAX_TOP_K, max(4 * max(wanted, 1), 40)),
            tags=None if tag is None else [tag], caller=CALLER)
        scores: dict[str, float] = {}
        for result in found.results:
            note_id = result.metadata.get("note_id")
            if isinstance(note_id, str) and note_id not in scores:
                scores[note_id] = float(result.score)
        return scores

    async def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        tuples = {labels for labels, _, _ in await self._items_under(())}
        for condition in op.match_conditions or ():
            tuples = {labels for labels in tuples if _path_matches(condition.match_type,
                                                                   condition.path, labels)}
        if op.max_depth is not None:
            tuples = {labels[:op.max_depth] for labels in tuples}
        return sorted(tuples)[op.offset:op.offset + op.limit]


# -- helpers ---------------------------------------------------------------------------------


def _index_fields(index: Mapping[str, Any] | None) -> list[str] | None:
    """The value paths a store's ``index`` config says to search by (None: the whole value)."""
    if index is None:
        return None
    unknown = sorted(set(index) - {"fields", "dims", "embed"})
    if unknown or index.get("embed") is not None:
        raise InvalidInput("WorkbenchStore's index config takes only 'fields' (the engine "
                           "embeds with its own model); got " + shown(sorted(index)))
    fields = index.get("fields")
    if fields is None or list(fields) == ["$"]:
        return None
    if isinstance(fields, str) or not all(isinstance(f, str) for f in fields):
        raise InvalidInput(f"index 'fields' must be a list of paths, got {shown(fields)}")
    return list(fields)


def _refuse_foreign(held: Note | None, name: str, namespace: str) -> None:
    """Refuse to write over a note the store did not write."""
    if held is not None and (held.source != SOURCE or held.name != name):
        raise NameTaken(f"note {shown(name)} in namespace {shown(namespace)} was not written "
                        "by the LangGraph store; rename that note or use another key")


def _time(text: str) -> datetime:
    return datetime.fromisoformat(text)


def _item(labels: tuple[str, ...], key: str, note: Note) -> Item:
    return Item(value=store_items.item_value(note.content, note.name), key=key,
                namespace=labels, created_at=_time(note.created_at),
                updated_at=_time(note.updated_at))


def _search_item(labels: tuple[str, ...], key: str, note: Note,
                 score: float | None) -> SearchItem:
    return SearchItem(namespace=labels, key=key,
                      value=store_items.item_value(note.content, note.name),
                      created_at=_time(note.created_at), updated_at=_time(note.updated_at),
                      score=score)


def _path_matches(match_type: str, path: Sequence[str], labels: tuple[str, ...]) -> bool:
    """A namespace against a prefix or suffix condition, ``*`` matching any one label."""
    if len(labels) < len(path):
        return False
    if match_type == "prefix":
        pairs = zip(labels, path, strict=False)
    elif match_type == "suffix":
        pairs = zip(reversed(labels), reversed(path), strict=False)
    else:
        raise InvalidInput(f"unsupported namespace match type {shown(match_type)}; "
                           "use 'prefix' or 'suffix'")
    return all(wanted == "*" or label == wanted for label, wanted in pairs)


def _matches(value: Mapping[str, Any], filters: Mapping[str, Any]) -> bool:
    """Whether a value passes a search filter, key by key."""
    return all(_compare(value.get(key), wanted) for key, wanted in filters.items())


def _compare(found: Any, wanted: Any) -> bool:
    """LangGraph's filter comparison: operators, nested dicts, lists element by element."""
    if isinstance(wanted, dict):
        if any(str(k).startswith("$") for k in wanted):
            return all(_operator(found, op, operand) for op, operand in wanted.items())
        if not isinstance(found, dict):
            return False
        return all(_compare(found.get(k), v) for k, v in wanted.items())
    if isinstance(wanted, list | tuple):
        return (isinstance(found, list | tuple) and len(found) == len(wanted)
                and all(_compare(f, w) for f, w in zip(found, wanted, strict=False)))
    return bool(found == wanted)


def _operator(found: Any, name: str, operand: Any) -> bool:
    if name == "$eq":
        return bool(found == operand)
    if name == "$ne":
        return bool(found != operand)
    comparisons = {"$gt": operator.gt, "$gte": operator.ge, "$lt": operator.lt,
                   "$lte": operator.le}
    if name not in comparisons:
        raise InvalidInput(f"unsupported filter operator {shown(name)}; use $eq, $ne, "
                           "$gt, $gte, $lt or $lte")
    try:
        wanted = float(operand)
    except (TypeError, ValueError):
        raise InvalidInput(f"filter {name} compares numbers; got {shown(operand)}") from None
    try:
        held = float(found)
    except (TypeError, ValueError):
        return False  # a missing or non-numeric field matches no comparison, as in SQL
    return bool(comparisons[name](held, wanted))
