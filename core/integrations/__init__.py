"""The engine as the memory an agent framework asks for.

- :mod:`core.integrations.langgraph`: LangGraph's checkpointer (``WorkbenchSaver``) and
  long-term store (``WorkbenchStore``)
- :mod:`core.integrations.openai_agents`: the OpenAI Agents SDK's session
  (``WorkbenchSession``)

Each module imports its framework, installed by the ``langgraph`` and ``openai-agents``
extras; ``import core`` imports neither.
"""
