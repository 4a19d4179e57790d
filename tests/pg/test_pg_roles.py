"""``workbench pg grant``'s isolation, held by the database: a role bound to namespace A,
connected on its own with psycopg (no engine code between it and the server), can neither
read, change, delete nor create rows of namespace B in any table that holds namespace data.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest
from psycopg import errors as pg_errors

from core import Engine
from core.errors import InvalidInput, OutOfNamespace
from core.locations import parse_location
from core.storage.messages import chunk_id_for
from core.storage.pg import roles
from core.storage.pg.connection import PgDatabase
from core.storage.pg.migrations import migrate
from tests.pg_server import PgTestServer

NOW = "2026-01-01T00:00:00.000Z"


def session_of(namespace: str) -> str:
    return f"s-{namespace}"


# One row per namespace in every table of roles.NAMESPACE_TABLES, in an order that satisfies
# the foreign keys; each statement takes the namespace as {ns} and the session as {sid}.
PLANT = {
    "sessions": "INSERT INTO sessions(session_id, agent_identity) VALUES ('{sid}', '{ns}')",
    "conversation_events": "INSERT INTO conversation_events(session_id, sequence, payload_json)"
                           " VALUES ('{sid}', 1, '{{\"content\": \"hello {ns}\"}}')",
    "session_state": "INSERT INTO session_state(session_id) VALUES ('{sid}')",
    "files": "INSERT INTO files(session_id, source_uri, content_hash)"
             " VALUES ('{sid}', 'file:{ns}', 'h-{ns}')",
    "chunks": "INSERT INTO chunks(chunk_id, session_id, chunk_text, content_hash,"
              " sequence_start, sequence_end, scope_token)"
              " VALUES ('{cid}', '{sid}', 'text of {ns}', 'h-{ns}', 1, 1, 't')",
    "chunks_vec": "INSERT INTO chunks_vec(chunk_id, agent_identity, session_id, embedding_blob)"
                  " VALUES ('{cid}', '{ns}', '{sid}', '[1, 0, 0]')",
    "notes": "INSERT INTO notes(note_id, namespace, session_id, name, content, created_at,"
             " updated_at) VALUES ('n-{ns}', '{ns}', '{sid}', 'name', 'note of {ns}',"
             " '" + NOW + "', '" + NOW + "')",
    "note_names": "INSERT INTO note_names(namespace, name, note_id, is_alias)"
                  " VALUES ('{ns}', 'name', 'n-{ns}', 0)",
    "note_tags": "INSERT INTO note_tags(note_id, namespace, tag) VALUES ('n-{ns}', '{ns}', 'tag')",
    "facts": "INSERT INTO facts(category, key, value, source, created_at, updated_at, namespace)"
             " VALUES ('c', 'k', 'fact of {ns}', 'user', '" + NOW + "', '" + NOW + "', '{ns}')",
    "archives": "INSERT INTO archives(session_id, marker_sequence, archive_name, namespace,"
                " note_id, first_sequence, last_sequence, message_count, archived_at,"
                " summarizer) VALUES ('{sid}', 1, 'a-{ns}', '{ns}', 'n-{ns}', 1, 1, 1,"
                " '" + NOW + "', 'extractive')",
    "schedules": "INSERT INTO schedules(schedule_id, user_id, goal, cadence_json, created_at,"
                 " updated_at) VALUES ('sch-{ns}', '{ns}', 'goal of {ns}', '{{}}',"
                 " '" + NOW + "', '" + NOW + "')",
    "schedule_runs": "INSERT INTO schedule_runs(run_id, schedule_id, started_at, finished_at,"
                     " status) VALUES ('r-{ns}', 'sch-{ns}', '" + NOW + "', '" + NOW + "', 'ok')",
    "retrieval_log": "INSERT INTO retrieval_log(created_at, caller, scope_kind, scope_value,"
                     " query, params_json, results_json) VALUES"
                     " ('" + NOW + "', 'cli', 'namespace', '{ns}', 'q {ns}', '{{}}', '[]'),"
                     " ('" + NOW + "', 'cli', 'session', '{sid}', 'q {ns}', '{{}}', '[]')",
    "relevance_judgments": "INSERT INTO relevance_judgments(scope_kind, scope_value, query,"
                           " chunk_id, grade, created_at, updated_at) VALUES"
                           " ('namespace', '{ns}', 'q', '{cid}', 1, '" + NOW + "', '" + NOW + "'),"
                           " ('session', '{sid}', 'q', '{cid}', 1, '" + NOW + "', '" + NOW + "')",
    "framework_items": "INSERT INTO framework_items(session_id, sequence, framework, item_key)"
                       " VALUES ('{sid}', 1, 'langgraph', 'm-{ns}')",
    "langgraph_checkpoints": "INSERT INTO langgraph_checkpoints(session_id, checkpoint_id,"
                             " checkpoint_type, checkpoint, created_at)"
                             " VALUES ('{sid}', 'c-{ns}', 'msgpack', 'x', '" + NOW + "')",
    "langgraph_writes": "INSERT INTO langgraph_writes(session_id, checkpoint_id, task_id, idx,"
                        " channel, value_type, value)"
                        " VALUES ('{sid}', 'c-{ns}', 't', 0, 'messages', 'msgpack', 'x')",
}

# How each table's rows of a namespace are picked out, for the attacks below.
OF_NAMESPACE = {
    "sessions": "agent_identity = '{ns}'",
    "conversation_events": "session_id = '{sid}'",
    "session_state": "session_id = '{sid}'",
    "files": "session_id = '{sid}'",
    "chunks": "session_id = '{sid}'",
    "chunks_vec": "session_id = '{sid}'",
    "archives": "session_id = '{sid}'",
    "notes": "namespace = '{ns}'",
    "note_names": "namespace = '{ns}'",
    "note_tags": "namespace = '{ns}'",
    "facts": "namespace = '{ns}'",
    "schedules": "user_id = '{ns}'",
    "schedule_runs": "schedule_id = 'sch-{ns}'",
    "retrieval_log": "scope_value IN ('{ns}', '{sid}')",
    "relevance_judgments": "scope_value IN ('{ns}', '{sid}')",
    "framework_items": "session_id = '{sid}'",
    "langgraph_checkpoints": "session_id = '{sid}'",
    "langgraph_writes": "session_id = '{sid}'",
}

# A column each table can be updated on without breaking a constraint.
UPDATABLE = {
    "sessions": "updated_at = 'x'", "conversation_events": "role = 'tool'",
    "session_state": "state_json = '{\"x\": 1}'", "files": "source_uri = 'x'",
    "chunks": "chunk_text = 'x'", "chunks_vec": "embedding_model = 'x'",
    "archives": "file_error = 'x'", "notes": "content = 'x'", "note_names": "is_alias = 1",
    "note_tags": "tag = 'x'", "facts": "value = 'x'", "schedules": "goal = 'x'",
    "schedule_runs": "output = 'x'", "retrieval_log": "query = 'x'",
    "relevance_judgments": "grade = 3", "framework_items": "removed_at = 'x'",
    "langgraph_checkpoints": "metadata_json = '[]'", "langgraph_writes": "channel = 'x'",
}


def fill(template: str, namespace: str) -> str:
    # A chunk's id is the one its session and content hash give (the policies check it).
    sid = session_of(namespace)
    return template.format(ns=namespace, sid=sid, cid=chunk_id_for(sid, f"h-{namespace}"))


def test_every_namespace_table_is_planted_and_attacked() -> None:
    """The tables above are the ones the policies cover, no fewer."""
    assert set(PLANT) == set(OF_NAMESPACE) == set(UPDATABLE) == set(roles.NAMESPACE_TABLES)


@pytest.fixture
async def granted(pg_url: str) -> AsyncIterator[dict[str, str]]:
    """A migrated memory with rows in namespaces alpha and beta, and a role per namespace;
    the URL each role connects with."""
    async with await psycopg.AsyncConnection.connect(pg_url) as conn:
        await migrate(conn)
    location = parse_location(pg_url)
    await roles.grant(location, "alpha", "agent_alpha")
    await roles.grant(location, "beta", "agent_beta")
    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as conn:
        for namespace in ("alpha", "beta"):
            for statement in PLANT.values():
                await conn.execute(fill(statement, namespace))
    yield {namespace: as_role(pg_url, f"agent_{namespace}") for namespace in ("alpha", "beta")}
    for role in ("agent_alpha", "agent_beta"):
        await drop_role(pg_url, role)


def as_role(pg_url: str, role: str) -> str:
    """The test database's URL for ``role`` (no password: the test server trusts it)."""
    parts = urlsplit(pg_url)
    return urlunsplit((parts.scheme, f"{role}@{parts.netloc.rpartition('@')[2]}",
                       parts.path, parts.query, ""))


@contextlib.asynccontextmanager
async def alpha_bound(pg_url: str, config: dict[str, Any]) -> AsyncIterator[str]:
    """One message stored by the owner in namespace alpha and one in beta, and the role
    agent_alpha bound to alpha (dropped after): the URL it connects with."""
    async with Engine.open(pg_url, config=config) as owner:
        await owner.append("alpha-1", {"role": "user", "content": "alpha keeps the blue key"},
                           namespace="alpha")
        await owner.append("beta-1", {"role": "user", "content": "beta keeps the red key"},
                           namespace="beta")
        await owner.drain()
    await roles.grant(parse_location(pg_url), "alpha", "agent_alpha")
    try:
        yield as_role(pg_url, "agent_alpha")
    finally:
        await drop_role(pg_url, "agent_alpha")


async def drop_role(pg_url: str, role: str) -> None:
    """Unbind and drop a test's role: roles belong to the server, not to the test's database."""
    await roles.revoke(parse_location(pg_url), role)
    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as conn:
        await conn.execute(f'DROP OWNED BY "{role}"')
        await conn.execute(f'DROP ROLE "{role}"')


async def count(conn: psycopg.AsyncConnection[Any], table: str, where: str = "true") -> int:
    cursor = await conn.execute(f"SELECT count(*) FROM {table} WHERE {where}")
    row = await cursor.fetchone()
    assert row is not None
    return int(row[0])


@pytest.mark.parametrize("table", roles.NAMESPACE_TABLES)
async def test_a_role_reads_only_its_namespace(granted: dict[str, str], table: str) -> None:
    async with await psycopg.AsyncConnection.connect(granted["alpha"], autocommit=True) as conn:
        assert await count(conn, table, fill(OF_NAMESPACE[table], "alpha")) > 0
        assert await count(conn, table, fill(OF_NAMESPACE[table], "beta")) == 0
        assert await count(conn, table) == await count(conn, table,
                                                       fill(OF_NAMESPACE[table], "alpha"))


@pytest.mark.parametrize("table", roles.NAMESPACE_TABLES)
async def test_a_role_cannot_change_or_delete_another_namespace(
        granted: dict[str, str], pg_url: str, table: str) -> None:
    beta_rows = fill(OF_NAMESPACE[table], "beta")
    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as owner:
        before = await count(owner, table, beta_rows)
    async with await psycopg.AsyncConnection.connect(granted["alpha"], autocommit=True) as conn:
        changed = await conn.execute(
            f"UPDATE {table} SET {UPDATABLE[table]} WHERE {fill(OF_NAMESPACE[table], 'beta')}")
        assert changed.rowcount == 0
        deleted = await conn.execute(
            f"DELETE FROM {table} WHERE {fill(OF_NAMESPACE[table], 'beta')}")
        assert deleted.rowcount == 0
        # Its own rows it may change: the refusals above are the policies, not missing grants.
        mine = await conn.execute(
            f"UPDATE {table} SET {UPDATABLE[table]} WHERE {fill(OF_NAMESPACE[table], 'alpha')}")
        assert mine.rowcount > 0
    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as owner:
        assert before > 0 and await count(owner, table, beta_rows) == before
        untouched = UPDATABLE[table].replace("=", "IS DISTINCT FROM", 1)
        unchanged = await owner.execute(
            f"SELECT count(*) FROM {table} WHERE {beta_rows} AND {untouched}")
        assert (await unchanged.fetchone()) == (before,)


@pytest.mark.parametrize("table", roles.NAMESPACE_TABLES)
async def test_a_role_cannot_insert_a_row_claiming_another_namespace(
        granted: dict[str, str], pg_url: str, table: str) -> None:
    # Beta's row again under fresh keys where the table has its own: refused by WITH CHECK
    # (or, where the row hangs off one of beta's rows, because alpha cannot see that row).
    fresh = {"sessions": "INSERT INTO sessions(session_id, agent_identity)"
                         " VALUES ('s-new', 'beta')"}
    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as owner:
        await owner.execute(f"DELETE FROM {table} WHERE {fill(OF_NAMESPACE[table], 'beta')}")
    statement = fresh.get(table, fill(PLANT[table], "beta"))
    async with await psycopg.AsyncConnection.connect(granted["alpha"], autocommit=True) as conn:
        with pytest.raises(pg_errors.InsufficientPrivilege, match="row-level security"):
            await conn.execute(statement)
    # The same row for its own namespace goes in, once the planted one is out of the way.
    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as owner:
        await owner.execute(f"DELETE FROM {table} WHERE {fill(OF_NAMESPACE[table], 'alpha')}")
    async with await psycopg.AsyncConnection.connect(granted["alpha"], autocommit=True) as conn:
        await conn.execute(fill(PLANT[table], "alpha"))
        assert await count(conn, table, fill(OF_NAMESPACE[table], "alpha")) > 0


async def test_the_owner_sees_every_namespace(granted: dict[str, str], pg_url: str) -> None:
    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as owner:
        for table in roles.NAMESPACE_TABLES:
            for namespace in ("alpha", "beta"):
                assert await count(owner, table, fill(OF_NAMESPACE[table], namespace)) > 0


async def test_a_role_cannot_rebind_itself(granted: dict[str, str]) -> None:
    async with await psycopg.AsyncConnection.connect(granted["alpha"], autocommit=True) as conn:
        with pytest.raises(pg_errors.InsufficientPrivilege):
            await conn.execute("UPDATE memory_roles SET namespace = 'beta'")
        with pytest.raises(pg_errors.InsufficientPrivilege):
            await conn.execute("INSERT INTO memory_roles(role_name, namespace)"
                               " VALUES ('agent_alpha2', 'beta')")
        cursor = await conn.execute("SELECT role_name, namespace FROM memory_roles")
        assert await cursor.fetchall() == [("agent_alpha", "alpha")]


async def test_a_revoked_role_reads_nothing(granted: dict[str, str], pg_url: str) -> None:
    revoked = await roles.revoke(parse_location(pg_url), "agent_beta")
    assert revoked is not None and revoked.namespace == "beta"
    async with await psycopg.AsyncConnection.connect(granted["beta"], autocommit=True) as conn:
        with pytest.raises(pg_errors.InsufficientPrivilege):
            await conn.execute("SELECT count(*) FROM notes")
    assert await roles.revoke(parse_location(pg_url), "agent_beta") is None


async def test_grant_lists_refuses_a_second_namespace_and_is_repeatable(
        granted: dict[str, str], pg_url: str) -> None:
    location = parse_location(pg_url)
    again = await roles.grant(location, "alpha", "agent_alpha")
    assert (again.role, again.namespace, again.exists, again.can_login) == (
        "agent_alpha", "alpha", True, True)
    with pytest.raises(InvalidInput, match="bound to namespace 'alpha'; revoke it first"):
        await roles.grant(location, "beta", "agent_alpha")
    listed = await roles.list_grants(location)
    assert [(g.role, g.namespace) for g in listed] == [("agent_alpha", "alpha"),
                                                       ("agent_beta", "beta")]


async def test_a_password_is_set_as_a_scram_verifier_never_sent_plain(
        pg_server: PgTestServer, pg_url: str) -> None:
    async with await psycopg.AsyncConnection.connect(pg_url) as conn:
        await migrate(conn)
    await roles.grant(parse_location(pg_url), "alpha", "agent_pw", password="correct horse")
    try:
        with pg_server.admin() as admin:
            (stored,) = admin.execute(
                "SELECT rolpassword FROM pg_authid WHERE rolname = 'agent_pw'").fetchone() or ("",)
        assert stored.startswith("SCRAM-SHA-256$") and "correct horse" not in stored
    finally:
        await drop_role(pg_url, "agent_pw")


async def test_the_engines_connection_layer_turns_a_policy_refusal_into_out_of_namespace(
        granted: dict[str, str]) -> None:
    async def claim_beta(conn: Any) -> None:
        await conn.execute("INSERT INTO sessions(session_id, agent_identity)"
                           " VALUES ('s-claimed', 'beta')")

    db = PgDatabase(parse_location(granted["alpha"]))
    await db.open()
    try:
        with pytest.raises(OutOfNamespace, match="bound to one namespace") as refused:
            await db.write(claim_beta)
        assert "'beta'" not in str(refused.value)
    finally:
        await db.close()


async def test_every_table_is_either_namespace_data_under_a_policy_or_shared(
        pg_url: str) -> None:
    """A table added to the schema must be placed: under a policy (and granted to bound
    roles) or shared; until then a bound role cannot touch it at all."""
    async with await psycopg.AsyncConnection.connect(pg_url) as conn:
        await migrate(conn)
        cursor = await conn.execute(
            "SELECT c.relname, c.relrowsecurity, c.relforcerowsecurity,"
            " (SELECT count(*) FROM pg_policy p WHERE p.polrelid = c.oid)"
            " FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
            " WHERE c.relkind IN ('r', 'p') AND n.nspname = current_schema()")
        tables = {name: (rls, forced, policies)
                  for name, rls, forced, policies in await cursor.fetchall()}
    assert set(tables) == (set(roles.NAMESPACE_TABLES) | set(roles.DERIVED_TABLES)
                           | set(roles.SHARED_TABLES))
    for name in (*roles.NAMESPACE_TABLES, *roles.DERIVED_TABLES):
        # Enabled, not forced: the owner (who migrates and grants) keeps every row.
        assert tables[name][:2] == (True, False) and tables[name][2] >= 1, name


def test_the_pg_commands_grant_list_and_revoke(pg_url: str) -> None:
    from click.testing import CliRunner

    from workbench.cli.root import main

    runner = CliRunner()
    granted = runner.invoke(main, ["pg", "grant", "alpha", "agent_cli", "--db", pg_url])
    assert granted.exit_code == 0, granted.output
    assert granted.output == "role 'agent_cli' sees namespace 'alpha' only\n"
    listed = runner.invoke(main, ["pg", "roles", "--db", pg_url])
    assert listed.output.splitlines()[0].split() == ["role", "namespace", "granted", "login"]
    assert listed.output.splitlines()[1].split()[:2] == ["agent_cli", "alpha"]
    revoked = runner.invoke(main, ["pg", "revoke", "agent_cli", "--db", pg_url])
    assert revoked.output == "role 'agent_cli' no longer sees namespace 'alpha'\n"
    again = runner.invoke(main, ["pg", "revoke", "agent_cli", "--db", pg_url])
    assert again.exit_code == 1 and "is bound to no namespace" in again.output
    empty = runner.invoke(main, ["pg", "roles", "--json", "--db", pg_url])
    assert empty.exit_code == 0 and empty.output.strip() == "[]"
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute('DROP OWNED BY "agent_cli"')
        conn.execute('DROP ROLE "agent_cli"')


async def test_a_bound_role_may_make_no_temp_table_nor_object_in_the_schema(
        granted: dict[str, str]) -> None:
    async with await psycopg.AsyncConnection.connect(granted["alpha"], autocommit=True) as conn:
        cursor = await conn.execute(
            "SELECT has_database_privilege(current_database(), 'TEMPORARY'),"
            " has_schema_privilege(current_schema(), 'CREATE')")
        assert await cursor.fetchone() == (False, False)
        with pytest.raises(pg_errors.InsufficientPrivilege):
            await conn.execute("CREATE TEMP TABLE memory_roles (role_name text, namespace text)")
