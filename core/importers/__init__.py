"""Importers: other agents' memory stores into a memory file, through the Engine.

One module per source shape, each with an ``import_<format>(engine, path, *, namespace=None,
progress=None) -> ImportReport`` whose docstring says what every source record maps to, and
a ``check(path)`` that refuses a malformed source without touching a memory file:

============  ===================================================================
``jsonl``     JSONL conversations, one message per line (:mod:`.jsonl`)
``aidaemon``  an aidaemon SQLite file: ``messages`` and ``facts``
``oxydra``    an oxydra SQLite/libSQL file: sessions, events, state, notes
``pynchy``    a pynchy ``memories.db``: key, content, category
``crabtalk``  a crabtalk entry store exported as JSON
============  ===================================================================

and ``langgraph-checkpoints``: LangGraph SqliteSaver checkpoints (a file) or PostgresSaver
ones (a ``postgresql://`` URL), threads as sessions (:mod:`.langgraph_checkpoints`; it needs
the ``langgraph`` extra, imported only when it runs); ``langgraph-store``: LangGraph
SqliteStore items (a file) or PostgresStore ones (a URL), as the notes ``WorkbenchStore``
reads (:mod:`.langgraph_store`; read directly, without LangGraph); ``openai-agents-session``:
an OpenAI Agents SDK SQLiteSession file, sessions with their items
(:mod:`.openai_agents_session`).

(LoCoMo conversations import through :mod:`core.evaluation`, with their questions.)

The rules every importer keeps:

- It writes only through the engine's public operations and never opens the memory file
  itself; a source SQLite file is opened read-only.
- Everything lands in one namespace (an agent identity): ``namespace`` or the engine's
  configured agent. Sessions are created with ``agent=namespace``; a session of the same
  id that belongs to another namespace is left alone and its records are skipped.
- Nothing is skipped silently: every source record is counted as added, already there, or
  skipped with where it is and why (:class:`~core.importers.report.ImportReport`).
- Importing the same source twice adds nothing: messages are identified by session and
  sequence, notes by name (seed-001 notes also by id), facts by category and key. What the
  target holds differently is skipped, never overwritten.
- A malformed source (not JSON, not SQLite, a table or column missing, a line or entry of
  the wrong shape) is ``InvalidInput`` naming the file and the line or entry, raised before
  anything is written. In the project's own JSONL format every line must be valid; in the
  other seeds' stores a well-formed record the engine refuses (an unknown role, a name over
  the limit) is skipped with the engine's reason, since those files hold what another
  program wrote and the rest of them is still worth importing.
- Vectors are never copied: the engine embeds what it imports with its own model, which
  is always right for the model the file is searched with; the report says what the
  source held.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from core.engine import Engine
    from core.importers.report import ImportReport, Progress

FORMATS = ("jsonl", "aidaemon", "oxydra", "pynchy", "crabtalk", "langgraph-checkpoints",
           "langgraph-store", "openai-agents-session")


def _module(source_format: str) -> ModuleType:
    if source_format not in FORMATS:
        from core.errors import InvalidInput

        raise InvalidInput(f"unknown import format {source_format!r}; the formats are "
                           f"{', '.join(FORMATS)}")
    return importlib.import_module(f"core.importers.{source_format.replace('-', '_')}")


def check_source(source_format: str, path: str | Path) -> None:
    """Refuse a source that is malformed or not of ``source_format`` (``InvalidInput``
    naming the file and line), before any memory file is opened or created."""
    _module(source_format).check(path)


async def import_file(source_format: str, engine: Engine, path: str | Path, *,
                      namespace: str | None = None,
                      progress: Progress | None = None) -> ImportReport:
    """Run the importer of ``source_format`` (one of :data:`FORMATS`)."""
    importer = getattr(_module(source_format), f"import_{source_format.replace('-', '_')}")
    report: ImportReport = await importer(engine, path, namespace=namespace, progress=progress)
    return report
