"""Raw SQL from a bound role (``workbench pg grant``'s code path, logged in as the role with
psycopg) against another namespace on a real PostgreSQL: every attack of
:mod:`workbench.bench.isolation.sql_attacks` must read nothing of the victim, change none of
its rows, and tell an id that exists from one that does not in no way.

The victim ("beta") is written by the owner through the engine (a conversation, a note
with a tag, embedded); the attacker ("alpha") holds a session of its own.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from psycopg import sql

from core import Engine
from core.locations import parse_location
from core.storage.pg import roles
from tests.pg.test_pg_roles import as_role, drop_role
from workbench.bench.isolation import sql_attacks
from workbench.bench.isolation.sql_attacks import Outcome, Target

CONFIG: dict[str, Any] = {"embedding": {"backend": "deterministic", "fallback_dimensions": 8},
                          "consolidation": {"enabled": False}}
VICTIM_TEXT = "beta keeps the hxqcobalt key"
SECRETS = ("hxqcobalt", "hxqnotebody", "hxqnotetag")
# How the victim's rows are picked out of each table, for the owner's snapshot of them.
VICTIM_ROWS = {
    "sessions": "agent_identity = 'beta'",
    "conversation_events": "session_id IN ('beta-chat', 'memory:beta')",
    "session_state": "session_id IN ('beta-chat', 'memory:beta')",
    "files": "session_id IN ('beta-chat', 'memory:beta')",
    "chunks": "session_id IN ('beta-chat', 'memory:beta')",
    "chunks_vec": "agent_identity = 'beta'",
    "archives": "namespace = 'beta'",
    "notes": "namespace = 'beta'", "note_names": "namespace = 'beta'",
    "note_tags": "namespace = 'beta'", "facts": "namespace = 'beta'",
    "schedules": "user_id = 'beta'", "schedule_runs": "true",
    "retrieval_log": "scope_value IN ('beta', 'beta-chat')",
    "relevance_judgments": "scope_value IN ('beta', 'beta-chat')",
    "framework_items": "session_id IN ('beta-chat', 'memory:beta')",
    "langgraph_checkpoints": "session_id IN ('beta-chat', 'memory:beta')",
    "langgraph_writes": "session_id IN ('beta-chat', 'memory:beta')",
    "chunk_terms": "session_id IN ('beta-chat', 'memory:beta')",
    "chunk_changes": "namespace = 'beta'",
    "memory_meta": "true", "memory_migrations": "true", "memory_roles": "true",
    "chunk_changes_pruned": "true",
}


def test_the_snapshot_covers_every_table_a_role_is_granted() -> None:
    assert set(VICTIM_ROWS) == (set(roles.NAMESPACE_TABLES) | set(roles.DERIVED_TABLES)
                                | set(roles.SHARED_TABLES))
    assert set(sql_attacks.NAMESPACE_TABLES) == set(roles.NAMESPACE_TABLES)


def victim_snapshot(owner_url: str) -> dict[str, str]:
    """A digest of the victim's rows in every table (and of the shared tables whole)."""
    with psycopg.connect(owner_url, autocommit=True) as conn:
        found = {}
        for table, where in VICTIM_ROWS.items():
            row = conn.execute(sql.SQL(
                "SELECT count(*) || ':' || coalesce(md5(string_agg(t::text, '|'"
                " ORDER BY t::text)), '') FROM {} t WHERE " + where).format(
                    sql.Identifier(table))).fetchone()
            assert row is not None
            found[table] = str(row[0])
        return found


async def plant(pg_url: str) -> Target:
    async with Engine.open(pg_url, config=CONFIG) as owner:
        await owner.append("beta-chat", {"role": "user", "content": VICTIM_TEXT},
                           namespace="beta")
        note = await owner.add_note("hxqnotename", "beta's hxqnotebody", tags=["hxqnotetag"],
                                    namespace="beta")
        await owner.append("alpha-chat", {"role": "user", "content": "alpha's own words"},
                           namespace="alpha")
        await owner.drain()
    with psycopg.connect(pg_url, autocommit=True) as conn:
        chunk_ids = [str(r[0]) for r in conn.execute(
            "SELECT chunk_id FROM chunks WHERE session_id = 'beta-chat'").fetchall()]
        schema = str((conn.execute("SELECT current_schema()").fetchone() or ("",))[0])
        conn.execute("ANALYZE")  # the statistics views have something to show
    await roles.grant(parse_location(pg_url), "alpha", "agent_alpha")
    return Target(schema=schema, victim="beta", victim_sessions=("beta-chat", "memory:beta"),
                  victim_chunk_ids=tuple(chunk_ids), victim_note_ids=(note.note_id,),
                  victim_text=VICTIM_TEXT, attacker="alpha", attacker_session="alpha-chat",
                  ungranted="carol")


@pytest.fixture
def attacked(pg_url: str) -> Iterator[tuple[str, Target]]:
    """The planted memory, and the URL the attacker's bound role logs in with."""
    target = asyncio.run(plant(pg_url))
    try:
        yield as_role(pg_url, "agent_alpha"), target
    finally:
        asyncio.run(drop_role(pg_url, "agent_alpha"))


def findings(outcomes: list[Outcome]) -> list[str]:
    """What an attack reached: a finding it made, or a victim's secret in what it read."""
    found = [f"{o.operation}: {o.finding}" for o in outcomes if o.finding]
    found += [f"{o.operation}: read {secret!r}" for o in outcomes for secret in SECRETS
              if secret in o.text.lower()]
    return found


@pytest.mark.parametrize("name", list(sql_attacks.attacks("")))
def test_a_bound_role_reaches_nothing_of_another_namespace(
        attacked: tuple[str, Target], pg_url: str, name: str) -> None:
    url, target = attacked
    assert sql_attacks.chunk_id_for("beta-chat", VICTIM_TEXT) in target.victim_chunk_ids, \
        "the oracle's right guess must be the victim's real chunk id"
    before = victim_snapshot(pg_url)
    outcomes = sql_attacks.attacks(pg_url)[name](url, target)
    after = victim_snapshot(pg_url)
    changed = [table for table in before if before[table] != after[table]]
    assert outcomes
    assert findings(outcomes) == [] and changed == [], (findings(outcomes), changed)


def test_the_engine_still_works_after_the_attacks_as_the_bound_role(
        attacked: tuple[str, Target], pg_url: str) -> None:
    url, target = attacked
    for attack in sql_attacks.attacks(pg_url).values():
        attack(url, target)

    async def use() -> list[str]:
        async with Engine.open(url, config={**CONFIG, "agent": "alpha"}) as agent:
            await agent.append("alpha-chat", {"role": "user", "content": "alpha again"},
                               namespace="alpha")
            await agent.add_note("alpha-note", "alpha's note", namespace="alpha")
            await agent.drain()
            found = await agent.hybrid_query(session_id="alpha-chat", query="alpha")
            return [r.text for r in found]

    assert "alpha again" in asyncio.run(use())


@pytest.mark.parametrize("table", sql_attacks.SHADOWED)
def test_temp_tables_shadow_nothing_where_the_role_may_create_them(
        attacked: tuple[str, Target], pg_url: str, table: str) -> None:
    """`pg grant` withholds TEMPORARY, but a granter who does not own the database cannot
    take it from PUBLIC: the fixed search_path of the policies' functions must hold alone."""
    url, target = attacked
    with psycopg.connect(pg_url, autocommit=True) as owner:
        database = str((owner.execute("SELECT current_database()").fetchone() or ("",))[0])
        owner.execute(sql.SQL("GRANT TEMPORARY ON DATABASE {} TO agent_alpha").format(
            sql.Identifier(database)))
    before = victim_snapshot(pg_url)
    outcomes = sql_attacks.temp_shadow(table)(url, target)
    assert not outcomes[0].text.startswith("error"), outcomes[0].text  # the shadow exists
    assert findings(outcomes) == [] and victim_snapshot(pg_url) == before


def test_an_existing_memory_gets_the_fixed_functions_by_the_usual_migrate(
        pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from core.storage.pg import migrations

    known = migrations.available_migrations()

    async def migrate_to(versions: list[Any]) -> None:
        monkeypatch.setattr(migrations, "available_migrations", lambda: versions)
        async with await psycopg.AsyncConnection.connect(pg_url) as conn:
            await migrations.migrate(conn)

    asyncio.run(migrate_to([m for m in known if m.version <= 3]))
    asyncio.run(migrate_to(known))
    with psycopg.connect(pg_url) as conn:
        configs: dict[str, str] = dict(conn.execute(
            "SELECT proname, proconfig::text FROM pg_proc WHERE pronamespace ="
            " current_schema()::regnamespace AND (prosecdef OR proname LIKE 'memory_role%%')"
        ).fetchall())
    assert len(configs) == 8 and set(configs.values()) == {'{"search_path=public, pg_temp"}'}
