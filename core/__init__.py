"""The Memory Workbench engine: durable agent memory on SQLite, FTS5 and sqlite-vec.

The package root stays light: names are imported on first use (PEP 562), so
``import core`` costs nothing until an ``Engine`` is asked for.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__all__ = [
    "Config",
    "Engine",
    "Fact",
    "HybridQueryResult",
    "MemoryHit",
    "MemoryRecord",
    "Note",
    "NotePage",
    "ScratchpadState",
    "SessionInfo",
    "WorkbenchError",
    "load_config",
]

_LAZY = {
    "Engine": "core.engine",
    "Config": "core.config",
    "load_config": "core.config",
    "MemoryRecord": "core.types",
    "SessionInfo": "core.types",
    "HybridQueryResult": "core.types",
    "Note": "core.types",
    "NotePage": "core.types",
    "MemoryHit": "core.types",
    "Fact": "core.types",
    "ScratchpadState": "core.types",
    "WorkbenchError": "core.errors",
}

if TYPE_CHECKING:
    from core.config import Config, load_config
    from core.engine import Engine
    from core.errors import WorkbenchError
    from core.types import (
        Fact,
        HybridQueryResult,
        MemoryHit,
        MemoryRecord,
        Note,
        NotePage,
        ScratchpadState,
        SessionInfo,
    )


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'core' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
