"""The OpenAI Agents SDK on the engine: ``WorkbenchSession``, a session whose items are the
memory's session's events.

Importing this package imports the SDK (the ``openai-agents`` extra:
``pip install 'memory-workbench[openai-agents]'``).
"""

from __future__ import annotations

from core.integrations.openai_agents.session import WorkbenchSession

__all__ = ["WorkbenchSession"]
