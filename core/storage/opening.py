"""Open the backend a location names: a SQLite file, or a PostgreSQL database by URL.

This is the one place that looks at which backend a memory is on; everything above it talks
to the :class:`core.storage.backend.Backend` protocol. The PostgreSQL driver is imported only
for a ``postgresql://`` location, so a file-only user never loads it.
"""

from __future__ import annotations

import asyncio
import os
from typing import TYPE_CHECKING

from core.errors import InvalidInput
from core.locations import Location, parse_location
from core.storage import index_cache

if TYPE_CHECKING:
    from core.config import StorageConfig
    from core.storage.backend import Backend


def configured_location(where: str | os.PathLike[str] | Location | None,
                        config: StorageConfig) -> Location:
    """The memory ``where`` names, or when it is None the config's ``[storage] url``;
    ``InvalidInput`` saying how to name one when neither is given."""
    if isinstance(where, Location):
        return where
    if where is not None:
        return parse_location(where)
    if config.url:
        return parse_location(config.url)
    raise InvalidInput("no memory was named: give a file path or a postgresql:// URL, or set "
                       "url in the [storage] section of the config file")


def code_schema_version(location: Location) -> int:
    """The schema version this code writes on ``location``'s backend."""
    if location.is_postgres:
        from core.storage.pg.migrations import latest_version as latest_pg

        return latest_pg()
    from core.storage.sqlite.migrations import latest_version

    return latest_version()


async def open_backend(where: str | os.PathLike[str] | Location, config: StorageConfig, *,
                       read_only: bool = False) -> Backend:
    """Open (creating or migrating as needed) the memory at ``where``.

    A file is created when missing and made a memory when empty (0 bytes), unless
    ``read_only``; any other file that is not already a memory is refused untouched
    (:func:`core.storage.sqlite.memory_file.examine`).

    Raises ``InvalidInput`` for a location with an unsupported scheme (naming the supported
    ones) or a file that is not a memory, and the backend's own refusals
    (``StorageUnavailable`` for a server that cannot be reached, ``SchemaTooNew``
    conditions open read-only with a warning instead).
    """
    location = where if isinstance(where, Location) else parse_location(where)
    if location.is_postgres:
        # The saved indexes' checks start now, beside the driver's import and the connect.
        index_cache.check_ahead(location.display)
        from core.storage.pg.backend import PostgresBackend

        return await PostgresBackend.open(location, config, read_only=read_only)
    path = location.path.expanduser()
    # The saved indexes beside the file start their checks now, beside the imports and the
    # open (the load that follows takes what was checked: core.storage.derived.persisted).
    index_cache.check_ahead_file(path)
    from core.storage.sqlite.memory_file import examine, refuse_empty
    from core.storage.sqlite.sqlite_backend import SqliteBackend

    if await asyncio.to_thread(examine, path) == "empty" and read_only:
        raise refuse_empty(path)
    return await asyncio.to_thread(SqliteBackend.open, path, config, read_only=read_only)
