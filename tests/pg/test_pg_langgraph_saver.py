"""WorkbenchSaver on PostgreSQL: LangGraph's own conformance suite, every capability."""

from __future__ import annotations

from langgraph.checkpoint.conformance.capabilities import BASE_CAPABILITIES, EXTENDED_CAPABILITIES

from tests.langgraph_support import run_conformance


async def test_the_saver_passes_langgraphs_conformance_suite_on_postgresql(pg_url: str) -> None:
    report = await run_conformance(pg_url, "WorkbenchSaver (PostgreSQL)")
    assert report.passed_all_base()
    for capability in BASE_CAPABILITIES | EXTENDED_CAPABILITIES:
        result = report.results[capability.value]
        assert result.detected and result.passed, (capability.value, result.failures)
