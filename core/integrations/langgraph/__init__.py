"""LangGraph on the engine: ``WorkbenchSaver`` (the checkpointer), whose threads are the
memory's sessions, and ``WorkbenchStore`` (the long-term store), whose items are notes.

Importing this package imports LangGraph (the ``langgraph`` extra:
``pip install 'memory-workbench[langgraph]'``).
"""

from __future__ import annotations

from core.integrations.langgraph.saver import WorkbenchSaver
from core.integrations.langgraph.store import WorkbenchStore

__all__ = ["WorkbenchSaver", "WorkbenchStore"]
