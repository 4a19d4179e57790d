"""The isolation suite (``workbench bench isolation``) on PostgreSQL: as on a file with every
entry point connected as the owner (the engine's own namespace checks isolate), and with
row-level security (the attacker's engine, CLI and MCP server connected as roles bound to the
namespaces they attack from). No attack may reach the victim either way."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from workbench.bench.isolation import run_suite
from workbench.bench.isolation.command import report_lines
from workbench.cli.root import main

pytest.importorskip("mcp")

# What the suite tries at least on PostgreSQL: as on a file (tests/test_isolation.py), a
# floor that a shrunken input list or a part that stopped running would fall through.
FLOORS = {"engine API": 3000, "CLI": 180, "MCP server": 500, "victim's view": 20}


# The suite's parts in two halves of about equal time, so two test workers share them.
HALVES = {"engine": ("engine API",), "front-ends": ("CLI", "MCP server")}


@pytest.mark.parametrize("half", HALVES)
@pytest.mark.parametrize("rls", [False, True], ids=["owner", "rls"])
def test_no_attack_reaches_the_victim_on_postgres(tmp_path: Path, pg_url: str, rls: bool,
                                                   half: str) -> None:
    result = run_suite(tmp_path / "suite", main, memory=pg_url, rls=rls, parts=HALVES[half])
    for line in report_lines(result):
        print(line)
    assert not result.leaks, "\n".join(finding.line() for finding in result.leaks)
    assert not result.crashes, "\n".join(finding.line() for finding in result.crashes)
    for entry in (*HALVES[half], "victim's view"):
        assert result.cases[entry] >= FLOORS[entry], (entry, result.cases[entry])
    others = set(FLOORS) - {*HALVES[half], "victim's view"}
    assert all(result.cases[entry] == 0 for entry in others)
    with psycopg.connect(pg_url) as conn:  # the roles made for the run went with it
        bound = conn.execute("SELECT count(*) FROM memory_roles").fetchone()
        privileged = conn.execute(
            "SELECT count(*) FROM pg_roles WHERE rolname LIKE 'isolation\\_%'"
            " AND has_table_privilege(oid, 'notes', 'SELECT')").fetchone()
    assert (bound, privileged) == ((0,), (0,))
