"""The OpenAI Agents SDK on the engine: ``WorkbenchSession``, a session whose items are the
memory's session's events.

``WorkbenchSession`` imports the SDK (the ``openai-agents`` extra:
``pip install 'memory-workbench[openai-agents]'``) when first named; the modules that map
and store items (:mod:`.items`, :mod:`.storing`) do not, so the importer of SQLiteSession
files runs without it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from core.integrations.openai_agents.session import WorkbenchSession

__all__ = ["WorkbenchSession"]


def __getattr__(name: str) -> Any:
    if name == "WorkbenchSession":
        from core.integrations.openai_agents.session import WorkbenchSession

        return WorkbenchSession
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
