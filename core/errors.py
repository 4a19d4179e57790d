"""Errors the engine raises, each with a message a person can act on.

Every error is a ``WorkbenchError`` subclass so front ends can catch the engine's refusals in
one place and show them, while a bug (any other exception) still surfaces as a bug.
"""

from __future__ import annotations

from collections.abc import Sequence


class WorkbenchError(Exception):
    """Base of every refusal the engine makes on purpose."""


class ConfigError(WorkbenchError):
    """The configuration file or dict is invalid (unknown key, wrong type, missing env var)."""


class ExtensionMissing(WorkbenchError):
    """SQLite cannot load extensions, or sqlite-vec / FTS5 is not available."""


class SchemaTooNew(WorkbenchError):
    """The file was written by a newer version of the workbench than this one."""


class ReadOnlyDatabase(WorkbenchError):
    """A write was attempted on a database opened read-only."""


class StorageFull(WorkbenchError):
    """The disk (or the file's size limit) filled during a write; that write was rolled
    back whole, earlier ones are intact, and reads go on working."""


class StorageUnavailable(WorkbenchError):
    """The database server cannot serve the request: it cannot be reached, refused the
    connection or the role, dropped the connection mid-request, or another writer kept
    conflicting. Nothing of a write that raised it was kept unless the message says so."""


class MemoryBusy(WorkbenchError):
    """Another process held the lock a write needs for longer than the engine waits for it
    (``storage.busy_timeout_ms`` on SQLite; on PostgreSQL the server's ``lock_timeout``, or
    other writers' conflicts on every attempt). Nothing of the write was kept.

    The caller may simply try again: once the other process commits or lets go, the same
    call succeeds. ``waited_s`` is how long this call waited (None when not known).
    """

    def __init__(self, message: str, waited_s: float | None = None) -> None:
        super().__init__(message)
        self.waited_s = waited_s


class DimensionMismatch(WorkbenchError):
    """The file holds vectors of a different size than the configured model produces."""


class InvalidInput(WorkbenchError):
    """A value given to the engine is refused (over a limit, wrong type); nothing was written."""


class InvalidMessage(InvalidInput):
    """A payload is not a Message dict (oxydra): wrong role, wrong types, not JSON."""


class SequenceError(WorkbenchError):
    """A message's sequence is not greater than the session's last sequence."""


class EmbeddingError(WorkbenchError):
    """An embedding backend failed to load or to embed a batch."""


class NotFound(WorkbenchError):
    """The named session, note or schedule does not exist."""


class NameTaken(InvalidInput):
    """A note name or alias already names another note in the namespace; nothing was written."""


class OutOfNamespace(InvalidInput):
    """A session named in a namespace-bound call belongs to another namespace (agent);
    nothing was read or written. The message never names the other namespace."""


class ImportCollision(InvalidInput):
    """An import's names collide with notes already in the namespace; nothing was imported.

    ``collisions`` lists each one (:class:`core.types.NameCollision`), so a front end can
    show them all and ask whether to import again with ``overwrite=True``.
    """

    def __init__(self, message: str, collisions: Sequence[object]) -> None:
        super().__init__(message)
        self.collisions = list(collisions)


class SummaryError(WorkbenchError):
    """A summarizer failed (endpoint down, bad answer); the history was left as it was."""


class SummaryConflict(WorkbenchError):
    """Another writer changed the session's summary or history first; nothing was written."""


class InvalidCadence(InvalidInput):
    """A schedule's cadence cannot be parsed, is in the past, or fires too often."""
