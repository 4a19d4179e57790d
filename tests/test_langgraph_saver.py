"""WorkbenchSaver on a SQLite file: LangGraph's own conformance suite, messages becoming the
thread's events, removal marks, and the sync methods."""

from __future__ import annotations

from pathlib import Path

from langgraph.checkpoint.conformance.capabilities import BASE_CAPABILITIES, EXTENDED_CAPABILITIES

from tests.langgraph_support import run_conformance


async def test_the_saver_passes_langgraphs_conformance_suite_on_sqlite(tmp_path: Path) -> None:
    report = await run_conformance(str(tmp_path / "memory.db"), "WorkbenchSaver (SQLite)")
    assert report.passed_all_base()
    for capability in BASE_CAPABILITIES | EXTENDED_CAPABILITIES:
        result = report.results[capability.value]
        assert result.detected and result.passed, (capability.value, result.failures)
