"""The engine connected as a role that `workbench pg grant` bound to one namespace: it works
in its own namespace, finds nothing of another, and a refused diagnostic (a log entry scoped
to another namespace's session) costs only that entry."""

from __future__ import annotations

import logging
from typing import Any

import psycopg
import pytest

from core import Engine
from core.locations import parse_location
from core.storage.pg import roles
from tests.pg.test_pg_roles import alpha_bound, as_role, drop_role

CONFIG: dict[str, Any] = {"embedding": {"backend": "deterministic", "fallback_dimensions": 64}}


async def test_a_bound_engine_sees_its_namespace_only_and_keeps_its_own_log(
        pg_url: str) -> None:
    async with alpha_bound(pg_url, CONFIG) as url:
        async with Engine.open(url, config=CONFIG) as agent:
            own = await agent.hybrid_query(session_id="alpha-1", query="key", caller="agent")
            assert [r.text for r in own] == ["alpha keeps the blue key"]
            assert await agent.hybrid_query(namespace="beta", query="key") == []
            assert await agent.recall("beta-1") == []
            context = await agent.get_context("beta-1", "key", caller="agent")
            assert context.items == []
            logged = await agent.retrieval_log(caller="agent")
            assert [(e["scope_kind"], e["scope_value"]) for e in logged] == [
                ("session", "alpha-1")]
        async with Engine.open(pg_url, config=CONFIG) as owner:
            everything = await owner.retrieval_log(limit=10)
            assert all(e["scope_value"] != "beta-1" for e in everything)
            assert any(e["scope_value"] == "alpha-1" for e in everything)


async def test_a_bound_engine_warns_once_for_many_refused_log_entries(
        pg_url: str, caplog: pytest.LogCaptureFixture) -> None:
    async with Engine.open(pg_url, config=CONFIG) as owner:
        await owner.append("beta-1", {"role": "user", "content": "beta keeps the red key"},
                           namespace="beta")
    await roles.grant(parse_location(pg_url), "alpha", "agent_alpha")
    try:
        async with Engine.open(as_role(pg_url, "agent_alpha"), config=CONFIG) as agent:
            with caplog.at_level(logging.WARNING, logger="core.retrieval.log_writer"):
                for _ in range(5):
                    await agent.hybrid_query(session_id="beta-1", query="key", caller="agent")
                    await agent.retrieval.flush_logs()
        refused = [r for r in caplog.records if "retrieval log entr" in r.getMessage()]
        assert len(refused) == 1, [r.getMessage() for r in refused]
    finally:
        await drop_role(pg_url, "agent_alpha")


async def test_a_bound_role_reads_the_postings_of_its_namespace_only(pg_url: str) -> None:
    async with alpha_bound(pg_url, CONFIG) as url, \
            await psycopg.AsyncConnection.connect(url) as conn:
        cursor = await conn.execute("SELECT DISTINCT session_id FROM chunk_terms")
        assert await cursor.fetchall() == [("alpha-1",)]
