"""Notes as the engine offers them: crabtalk's operations and pynchy's memory tools.

:class:`Notes` validates what a caller gives (:mod:`core.notes.fields`), chunks a note's
content the way a message's is chunked, and hands the storage layer one operation to run
in one transaction (:mod:`core.storage.sqlite.notes`, which also says how a note is indexed).

Isolation. Every call works in one namespace, given or the engine's configured agent, and
every statement below names it: an id, name or alias of another namespace's note resolves
to nothing, so it cannot be read, listed, searched, aliased, written or removed from here,
whatever the id or name holds. Searches run in the namespace's memory session and keep only
notes the namespace owns.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from core import indexing, inputs
from core.clock import utc_now
from core.errors import InvalidInput, NameTaken, NotFound
from core.inputs import clean_namespace
from core.notes.fields import (
    DEFAULT_IMPORTANCE,
    NOTE_SCHEMA_VERSION,
    clean_aliases,
    clean_category,
    clean_content,
    clean_importance,
    clean_kind,
    clean_name,
    clean_reference,
    clean_source,
    generated_name,
    is_note_id,
    new_note_id,
)
from core.storage.messages import PreparedChunk
from core.storage.vocabulary import NoteChanges, NoteDraft, NoteQuery, NoteRef, memory_session_id
from core.types import HybridQueryResult, MemoryHit, Note, NoteHit, NotePage, ScoreParts

if TYPE_CHECKING:
    from core.config import Config
    from core.retrieval.service import Retrieval
    from core.storage.backend import Backend
    from core.storage.rows import NoteImportOutcome
    from core.working_memory import WorkingMemory

ORDERS = ("name", "updated")
MAX_PAGE = 1000


class Notes:
    """The engine's note operations, each in one namespace."""

    def __init__(self, backend: Backend, config: Config, retrieval: Retrieval,
                 working_memory: WorkingMemory, wake: Callable[[], None]) -> None:
        self._backend = backend
        self._config = config
        self._retrieval = retrieval
        self._working_memory = working_memory
        self._wake = wake

    # -- what callers give ------------------------------------------------------------------

    def namespace(self, namespace: str | None) -> str:
        """The namespace a call works in: the one given, else the engine's agent identity."""
        return clean_namespace(self._config.agent if namespace is None else namespace)

    def session_id(self, namespace: str | None = None) -> str:
        """The memory session whose chunks index the namespace's notes: a hybrid query on it
        searches exactly those notes (``namespace=`` finds them beside the conversations)."""
        return memory_session_id(self.namespace(namespace))

    @staticmethod
    def reference(ref: Any) -> NoteRef:
        """A note id, name or alias as a lookup: id-shaped text is an id, the rest a name."""
        text = clean_reference(ref)
        if not text:
            raise InvalidInput("a note is named by its id, name or an alias; got nothing")
        return NoteRef(note_id=text) if is_note_id(text) else NoteRef(name=text)

    def content(self, value: Any) -> str:
        """A note's content, checked: text, not blank, within ``storage.max_content_kb``."""
        return self.within_size(clean_content(value), "note content")

    def within_size(self, text: str, what: str) -> str:
        """``text`` when it is within ``storage.max_content_kb``, else ``InvalidInput``."""
        return inputs.within_size(text, what, self._config.storage.max_content_kb)

    def chunks(self, content: str) -> tuple[PreparedChunk, ...]:
        """The content's chunks, made as a message's are (oxydra step 6)."""
        chunking = self._config.chunking
        pieces = indexing.chunk_text(indexing.normalize_text(content), chunking.max_chars,
                                     chunking.overlap_chars)
        if not pieces:
            raise InvalidInput("content has no text to index once control characters are "
                               "removed")
        return tuple(PreparedChunk(piece, indexing.content_hash(piece)) for piece in pieces)

    def tags(self, tags: Iterable[str] | None) -> tuple[str, ...]:
        """Tags trimmed, lower-cased, deduplicated; too many or too long is refused."""
        limits = self._config.notes
        return tuple(indexing.normalize_tags(tags, limits.max_tags, limits.max_tag_chars))

    def draft(self, name: Any, content: Any, *, namespace: str, kind: Any = "Note",
              category: Any = None, tags: Iterable[str] | None = None, source: Any = "",
              importance: Any = DEFAULT_IMPORTANCE, aliases: Iterable[str] | None = None,
              note_id: str | None = None, created_at: str | None = None,
              updated_at: str | None = None) -> NoteDraft:
        """A new note, every field checked and its content chunked; nothing is written."""
        clean = clean_name(name)
        text = self.content(content)
        return NoteDraft(
            note_id=note_id or new_note_id(), namespace=namespace, name=clean,
            aliases=clean_aliases(aliases, clean), content=text, kind=clean_kind(kind),
            category=clean_category(self._config.notes.default_category
                                    if category is None else category),
            tags=self.tags(tags), source=clean_source(source),
            importance=clean_importance(importance), chunks=self.chunks(text),
            schema_version=NOTE_SCHEMA_VERSION, created_at=created_at, updated_at=updated_at)

    def changes(self, content: Any = None, *, kind: Any = None, category: Any = None,
                tags: Iterable[str] | None = None, source: Any = None,
                importance: Any = None) -> NoteChanges:
        """What a write changes, every field given checked and the content chunked; None
        keeps the note's value."""
        text = None if content is None else self.content(content)
        return NoteChanges(
            content=text, chunks=None if text is None else self.chunks(text),
            kind=None if kind is None else clean_kind(kind),
            category=None if category is None else clean_category(category),
            tags=None if tags is None else self.tags(tags),
            source=None if source is None else clean_source(source),
            importance=None if importance is None else clean_importance(importance))

    def _changed(self, note: Note) -> Note:
        """A written note, after telling the worker and dropping stale working memory."""
        self._working_memory.drop(note.session_id)
        self._wake()
        return note

    # -- crabtalk's operations -------------------------------------------------------------

    async def add(self, name: str, content: str, *, namespace: str | None = None,
                  kind: str = "Note", category: str | None = None,
                  tags: Iterable[str] | None = None, source: str = "",
                  importance: float = DEFAULT_IMPORTANCE,
                  aliases: Iterable[str] | None = None) -> Note:
        """Create a note; ``NameTaken`` when its name or an alias already names a note."""
        draft = self.draft(name, content, namespace=self.namespace(namespace), kind=kind,
                           category=category, tags=tags, source=source,
                           importance=importance, aliases=aliases)
        return self._changed(await self._backend.add_note(draft, utc_now()))

    async def write(self, ref: str, content: str | None = None, *,
                    namespace: str | None = None, kind: str | None = None,
                    category: str | None = None, tags: Iterable[str] | None = None,
                    source: str | None = None, importance: float | None = None) -> Note:
        """Replace a note's content (and any field given): its chunks are deleted and stored
        again; id, name, aliases and created_at are kept."""
        changes = self.changes(content, kind=kind, category=category, tags=tags, source=source,
                               importance=importance)
        note = await self._backend.write_note(self.namespace(namespace), self.reference(ref),
                                             changes, utc_now())
        return self._changed(note)

    async def edit(self, ref: str, *, namespace: str | None = None, name: str | None = None,
                   aliases: Iterable[str] | None = None, content: str | None = None,
                   kind: str | None = None, category: str | None = None,
                   tags: Iterable[str] | None = None, source: str | None = None,
                   importance: float | None = None) -> Note:
        """Rename a note, replace its aliases and write any field given, all or nothing:
        every value is checked first, then one transaction applies them (a name or alias
        another note holds raises ``NameTaken`` and nothing changes)."""
        new_name = None if name is None else clean_name(name)
        # An alias equal to the note's current name binds nothing (storage keeps it the name).
        kept_aliases = None if aliases is None else clean_aliases(aliases, new_name or "")
        changes = self.changes(content, kind=kind, category=category, tags=tags, source=source,
                               importance=importance)
        note = await self._backend.edit_note(self.namespace(namespace), self.reference(ref),
                                            new_name, kept_aliases, changes, utc_now())
        return self._changed(note)

    async def namespaces(self) -> list[str]:
        """Every namespace that holds a note, in order."""
        return await self._backend.note_namespaces()

    async def rename(self, ref: str, new_name: str, *, namespace: str | None = None) -> Note:
        """Give a note a new name; the old name is released."""
        note = await self._backend.rename_note(self.namespace(namespace), self.reference(ref),
                                              clean_name(new_name), utc_now())
        return self._changed(note)

    async def alias(self, ref: str, alias: str, *, namespace: str | None = None) -> Note:
        """Bind an alias to a note: it resolves to the note and adds no search words."""
        note = await self._backend.alias_note(self.namespace(namespace), self.reference(ref),
                                             clean_name(alias, "alias"), utc_now())
        return note

    async def unalias(self, alias: str, *, namespace: str | None = None) -> Note:
        """Unbind an alias; returns the note it named."""
        note = await self._backend.unalias_note(self.namespace(namespace),
                                               clean_name(alias, "alias"), utc_now())
        return note

    async def remove(self, ref: str, *, namespace: str | None = None) -> bool:
        """Delete a note and everything that indexes it; False when there was none."""
        namespace = self.namespace(namespace)
        removed = await self._backend.remove_note(namespace, self.reference(ref))
        self._working_memory.drop(memory_session_id(namespace))
        return removed

    async def get(self, ref: str, *, namespace: str | None = None) -> Note:
        """The note an id, name or alias names; ``NotFound`` when it names none here."""
        namespace = self.namespace(namespace)
        found = self.reference(ref)
        note = await self._backend.read_note(namespace, found)
        if note is None:
            raise NotFound(f"no {found.describe()} in namespace {inputs.shown(namespace)}")
        return note

    async def list_notes(self, *, namespace: str | None = None, category: str | None = None,
                   kind: str | None = None, tags: Iterable[str] | None = None,
                   text: str | None = None, limit: int = 50, offset: int = 0,
                   order: str = "name") -> NotePage:
        """A page of the namespace's notes matching every filter given.

        ``tags``: the note holds every one; ``text``: every word is the start of a word of
        the note's content or name, else (pynchy's fallback) the text is a substring of
        either; ``order``: "name" or "updated" (most recently changed first).
        """
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_PAGE:
            raise InvalidInput(f"limit must be an integer from 1 to {MAX_PAGE}, "
                               f"got {inputs.shown(limit)}")
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise InvalidInput(f"offset must be a non-negative integer, got {inputs.shown(offset)}")
        if order not in ORDERS:
            raise InvalidInput(f"order must be one of {', '.join(ORDERS)}; "
                               f"got {inputs.shown(order)}")
        if text is not None:
            inputs.query_text(text, "text")
        query = NoteQuery(
            namespace=self.namespace(namespace),
            category=None if category is None else clean_category(category),
            kind=None if kind is None else clean_kind(kind), tags=self.tags(tags),
            text=text, order=order, limit=limit, offset=offset)
        notes, total, exact, matched = await self._backend.list_notes(query)
        return NotePage(notes, total, offset, limit, matched, total_exact=exact)

    # -- pynchy's memory tools -----------------------------------------------------------

    async def save_memory(self, key: str, content: str, category: str | None = None, *,
                          namespace: str | None = None) -> Note:
        """Store content under a key: the note the key names is written (its category kept
        unless one is given), else a note of that name is added (category default core)."""
        namespace = self.namespace(namespace)
        name = clean_name(key, "key")
        for _ in range(2):  # another writer may add or remove the key between the two tries
            try:
                return await self.write(name, content, namespace=namespace, category=category)
            except NotFound:
                pass
            try:
                return await self.add(name, content, namespace=namespace, category=category,
                                      source="save_memory")
            except NameTaken:
                continue
        raise NameTaken(f"key {inputs.shown(name)} "
                        "kept changing under another writer; nothing was saved")

    async def recall_memories(self, query: str, *, namespace: str | None = None,
                              limit: int = 10,
                              caller: str = "recall_memories") -> list[MemoryHit]:
        """Memories matching a query, best first: FTS5 bm25 over content and names, and when
        that finds nothing the LIKE substring fallback (pynchy's two tiers)."""
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_PAGE:
            raise InvalidInput(f"limit must be an integer from 1 to {MAX_PAGE}, "
                               f"got {inputs.shown(limit)}")
        namespace = self.namespace(namespace)
        found = await self._retrieval.search(
            session_id=memory_session_id(namespace), query=query, mode="keyword",
            top_k=limit * 4, caller=caller)
        matched_by = "like" if found.legs.fts_fallback == "like" else "fts"
        return [MemoryHit(key=note.name, content=note.content, category=note.category,
                          score=result.fts_raw if result.fts_raw is not None else 0.0,
                          matched_by=matched_by, note_id=note.note_id)
                for result, note in await self._best_per_note(namespace, found.results)][:limit]

    # -- oxydra's memory tools -------------------------------------------------------------

    async def memory_save(self, content: str, *, tags: Iterable[str] | None = None,
                          source: str = "memory_save", namespace: str | None = None) -> Note:
        """Store a note by its content alone, under a fresh ``note-{uuid}`` (oxydra).

        oxydra's notes have no names; ours do, so a person browsing sees one made from the
        content's first words and the id's first eight hex digits ("deploy runs on fridays
        (3f2a9c1b)"). Renaming it later changes nothing an agent relies on.
        """
        namespace = self.namespace(namespace)
        text = self.content(content)
        for _ in range(3):  # a name is taken only if an 8-hex-digit suffix collides
            note_id = new_note_id()
            draft = self.draft(generated_name(text, note_id), text, namespace=namespace, tags=tags,
                               source=source, note_id=note_id)
            try:
                return self._changed(await self._backend.add_note(draft, utc_now()))
            except NameTaken:
                continue
        raise NameTaken("three generated note names were taken in a row; nothing was saved")

    async def memory_search(self, query: str, *, tags: Iterable[str] | None = None,
                            top_k: int = 10, namespace: str | None = None,
                            caller: str = "memory_search") -> list[NoteHit]:
        """The namespace's notes for ``query``, best first, one hit per note: the hybrid
        query over its memory session, each requested tag required (filtered in SQL)."""
        if isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= MAX_PAGE:
            raise InvalidInput(f"top_k must be an integer from 1 to {MAX_PAGE}, "
                               f"got {inputs.shown(top_k)}")
        namespace = self.namespace(namespace)
        found = await self._retrieval.search(
            session_id=memory_session_id(namespace), query=query, top_k=top_k * 4,
            tags=None if tags is None else list(self.tags(tags)), caller=caller)
        return [NoteHit(note_id=note.note_id, name=note.name, content=note.content,
                        tags=list(note.tags), source=note.source,
                        updated_at=note.updated_at, chunk_id=result.chunk_id,
                        text=result.text, score=result.score,
                        vector_score=result.vector_score, fts_score=result.fts_score,
                        parts=result.parts or ScoreParts(fused=result.score))
                for result, note in await self._best_per_note(namespace, found.results)][:top_k]

    async def _best_per_note(self, namespace: str, results: Iterable[HybridQueryResult],
                             ) -> list[tuple[HybridQueryResult, Note]]:
        """Each note's best-ranked chunk in ``results`` (already best first) with its note,
        for the notes the namespace owns."""
        best: dict[str, HybridQueryResult] = {}
        for result in results:
            note_id = result.metadata.get("note_id")
            if isinstance(note_id, str) and note_id not in best:
                best[note_id] = result
        owned = await self._backend.notes_by_ids(namespace, list(best))
        return [(result, owned[note_id]) for note_id, result in best.items() if note_id in owned]

    async def list_memories(self, *, namespace: str | None = None,
                            category: str | None = None) -> list[str]:
        """Every memory key (note name) of the namespace, in order."""
        return await self._backend.note_names(
            self.namespace(namespace), None if category is None else clean_category(category))

    # -- for a framework's store (core.integrations.langgraph.store) ---------------------------

    async def add_draft(self, draft: NoteDraft) -> Note:
        """Add a note drafted by the caller (its id and chunks chosen there), in one
        transaction; ``NameTaken`` when its name is bound."""
        return self._changed(await self._backend.add_note(draft, utc_now()))

    async def write_changes(self, namespace: str, note_id: str, changes: NoteChanges) -> Note:
        """Write prepared changes to the note of that id, in one transaction; ``NotFound``
        when it is gone."""
        note = await self._backend.write_note(namespace, NoteRef(note_id=note_id), changes,
                                             utc_now())
        return self._changed(note)

    async def lookup(self, namespace: str, name: str) -> Note | None:
        """The note a name (or alias) names in the namespace, or None."""
        note = await self._backend.read_note(namespace, NoteRef(name=name))
        return note

    async def under(self, namespace: str, source: str, prefix: str, *,
                    children_only: bool = False, limit: int | None = None) -> list[Note]:
        """The notes ``source`` wrote in the namespace whose names start with ``prefix``,
        by note id."""
        return await self._backend.notes_under(namespace, source, prefix,
                                               children_only=children_only, limit=limit)

    # -- for export and import (core.notes.transfer) -----------------------------------------

    async def all_notes(self, namespace: str) -> list[Note]:
        """Every note of a namespace, by name."""
        return await self._backend.all_notes(namespace)

    async def apply_import(self, namespace: str, drafts: Sequence[NoteDraft], *,
                           overwrite: bool) -> NoteImportOutcome:
        """Apply checked drafts in one transaction, or get the collisions back unapplied."""
        result = await self._backend.import_notes(namespace, drafts, overwrite, utc_now(),
                                                  new_note_id)
        if result.applied:
            self._working_memory.drop(memory_session_id(namespace))
            self._wake()
        return result

