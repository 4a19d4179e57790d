"""An adversarial isolation suite: one namespace's memory attacked from another.

A victim namespace is planted with secrets in every kind of row it can own (messages, notes
with names, aliases and tags, pynchy memories, facts, scratchpads, a rolling summary,
schedules and their runs, compaction archives and their markdown files, logged queries,
relevance judgments). Another namespace then attacks it with crafted input through the three
front ends: the engine API, the command line and the MCP server. A *leak* is any answer,
error message or written file holding one of the victim's secrets (or ids) that the input did
not already hold, or any change to the victim's rows or files. ``workbench bench isolation``
runs the suite and prints the cases tried and the leaks found; ``tests/test_isolation.py``
runs the same suite and asserts there are none.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from workbench.bench.isolation.suite import SuiteResult, run_suite

__all__ = ["SuiteResult", "run_suite"]


def __getattr__(name: str) -> Any:
    # Lazy (PEP 562): the `workbench bench isolation` command lives in this package, and
    # `workbench --help` should not load the suite to list it.
    if name in __all__:
        from workbench.bench.isolation import suite

        return getattr(suite, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
