"""LangGraph on the engine: its long-term store (``WorkbenchStore``).

Importing this package imports LangGraph (the ``langgraph`` extra:
``pip install 'memory-workbench[langgraph]'``).
"""

from __future__ import annotations

from core.integrations.langgraph.store import WorkbenchStore

__all__ = ["WorkbenchStore"]
