"""LangGraph on the engine: ``WorkbenchSaver`` (the checkpointer), whose threads are the
memory's sessions. Importing this package imports LangGraph (the ``langgraph`` extra)."""

from __future__ import annotations

from core.integrations.langgraph.saver import WorkbenchSaver

__all__ = ["WorkbenchSaver"]
