"""Shared by the LangGraph saver tests: an engine for tests, and LangGraph's own conformance
suite run against WorkbenchSaver on a memory (a SQLite file or a PostgreSQL database)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.report import CapabilityReport

from core import Engine
from core.integrations.langgraph import WorkbenchSaver

ENGINE_CONFIG: dict[str, Any] = {"embedding": {"backend": "deterministic"},
                                 "summary": {"auto": False},
                                 "consolidation": {"enabled": False}}


async def run_conformance(where: str, name: str) -> CapabilityReport:
    """LangGraph's conformance suite against WorkbenchSaver on ``where`` (a fresh engine per
    capability, as the suite asks), its report printed."""

    @checkpointer_test(name=name)
    async def saver() -> AsyncIterator[WorkbenchSaver]:
        async with Engine.open(where, config=ENGINE_CONFIG) as engine:
            yield WorkbenchSaver(engine)

    report = await validate(saver)
    report.print_report()
    for capability, result in report.results.items():
        print(f"  {capability}: {result.tests_passed} passed, {result.tests_failed} failed,"
              f" {result.tests_skipped} skipped")
        for failure in result.failures:
            print(f"    {failure}")
    return report
