"""Database roles bound to one namespace each: what ``workbench pg grant|revoke|roles`` do.

The row-level security policies (the last section of ``migrations/0001_initial.sql``) let a
role see and write only the rows of the namespace ``memory_roles`` maps it to. This module
writes that mapping and the privileges the engine needs, run by the tables' owner (the
role that migrated the memory), to whom the policies do not apply.

A password given for a role is hashed here by libpq (SCRAM-SHA-256) before it is sent, so
the server's statement log, ``pg_stat_activity`` and any error see the verifier, never the
password.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import sql

from core.errors import InvalidInput
from core.inputs import clean_namespace
from core.locations import Location
from core.storage.pg.connection import Conn, PgDatabase

# The tables holding a namespace's rows: a granted role reads and writes them through the
# policies. Every other table of the schema is in DERIVED_TABLES or SHARED_TABLES.
NAMESPACE_TABLES = (
    "sessions", "conversation_events", "session_state", "files", "chunks", "chunks_vec",
    "archives", "notes", "note_names", "note_tags", "facts", "schedules", "schedule_runs",
    "retrieval_log", "relevance_judgments",
    "framework_items", "langgraph_checkpoints", "langgraph_writes",
)
# Full text's postings (migration 0002) and the chunk change log (0003): namespace rows under
# a policy, readable by every role (granted to PUBLIC, so roles granted before the tables
# existed read them too) and written only by the chunks' triggers, never by a role directly.
DERIVED_TABLES = ("chunk_terms", "chunk_changes")
# Tables every role reads: the schema's version, (its own row of) the role mapping, the
# change log's pruning mark, and memory_meta, whose shared keys (the vector model and
# dimension) a bound role only reads; its policies let it write its namespace's own keys
# (migration 0004), which its engine's consolidation pass records.
SHARED_TABLES = {"memory_migrations": "SELECT", "memory_roles": "SELECT",
                 "memory_meta": "SELECT, INSERT, UPDATE", "chunk_changes_pruned": "SELECT"}

MAX_ROLE_CHARS = 63  # PostgreSQL truncates longer identifiers (NAMEDATALEN - 1)


@dataclass(frozen=True)
class RoleGrant:
    """A role bound to a namespace, as ``workbench pg roles`` lists it."""

    role: str
    namespace: str
    granted_at: str
    can_login: bool
    exists: bool

    def to_dict(self) -> dict[str, Any]:
        return {"role": self.role, "namespace": self.namespace, "granted_at": self.granted_at,
                "can_login": self.can_login, "exists": self.exists}


def clean_role(value: Any) -> str:
    """A role name as PostgreSQL keeps it (quoted: exact case, any character but NUL)."""
    if not isinstance(value, str) or not value or "\x00" in value:
        raise InvalidInput("a role name must be non-empty text without NUL characters")
    if len(value.encode("utf-8")) > MAX_ROLE_CHARS:
        raise InvalidInput(f"role name {value[:20]!r}… is longer than PostgreSQL's "
                           f"{MAX_ROLE_CHARS} bytes")
    if value.lower().startswith("pg_"):
        raise InvalidInput(f"role name {value!r}: names starting with pg_ are reserved")
    return value


async def grant(location: Location, namespace: str, role: str,
                password: str | None = None) -> RoleGrant:
    """Bind ``role`` (created as a LOGIN role when missing) to ``namespace``: the mapping row,
    and the privileges the engine needs on every table. A role bound to another namespace
    is refused: revoke it first. ``password`` sets the role's password when given."""
    namespace, role = clean_namespace(namespace), clean_role(role)
    return await _on_memory(location, _grant, namespace, role, password)


async def revoke(location: Location, role: str) -> RoleGrant | None:
    """Unbind ``role``: its mapping row and its privileges on the memory's tables go (the role
    itself stays: it may own or be granted other things on the server). None when the role
    had no namespace here."""
    return await _on_memory(location, _revoke, clean_role(role))


async def list_grants(location: Location) -> list[RoleGrant]:
    """Every role bound to a namespace, by role name."""
    return await _on_memory(location, _list)


async def _on_memory(location: Location, fn: Any, *args: Any) -> Any:
    """Run ``fn(conn, *args)`` in one write transaction on the migrated memory."""
    db = PgDatabase(location, pool_size=1)
    await db.open()
    try:
        await db.migrate()
        return await db.write(fn, *args)
    finally:
        await db.close()


async def _grant(conn: Conn, namespace: str, role: str, password: str | None) -> RoleGrant:
    # Two grants of one role at once must not both create it.
    await conn.execute("SELECT pg_advisory_xact_lock(hashtext('memory_roles'), hashtext(%s))",
                       (role,))
    bound = await _bound(conn, role)
    if bound is not None and bound.namespace != namespace:
        raise InvalidInput(f"role {role!r} is bound to namespace {bound.namespace!r}; "
                           f"revoke it first (`workbench pg revoke {role}`)")
    ident = sql.Identifier(role)
    if not await _role_exists(conn, role):
        await conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(ident))
    if password is not None:
        verifier = _password_verifier(conn, password, role)
        await conn.execute(sql.SQL("ALTER ROLE {} PASSWORD {}").format(
            ident, sql.Literal(verifier)))
    database = await _scalar(conn, "SELECT current_database()")
    schema = await _scalar(conn, "SELECT current_schema()")
    await conn.execute(sql.SQL("GRANT CONNECT ON DATABASE {} TO {}").format(
        sql.Identifier(database), ident))
    await conn.execute(sql.SQL("GRANT USAGE ON SCHEMA {} TO {}").format(
        sql.Identifier(schema), ident))
    await _withhold_temp_and_create(conn, ident, database, schema)
    await conn.execute(sql.SQL("GRANT SELECT, INSERT, UPDATE, DELETE ON {} TO {}").format(
        sql.SQL(", ").join(sql.Identifier(table) for table in NAMESPACE_TABLES), ident))
    for table, privileges in SHARED_TABLES.items():
        await conn.execute(sql.SQL("GRANT {} ON {} TO {}").format(
            sql.SQL(privileges), sql.Identifier(table), ident))
    await conn.execute(
        "INSERT INTO memory_roles(role_name, namespace) VALUES (%s, %s)"
        " ON CONFLICT (role_name) DO NOTHING", (role, namespace))
    found = await _bound(conn, role)
    assert found is not None, "the mapping row was just written"
    return found


async def _withhold_temp_and_create(conn: Conn, ident: sql.Identifier, database: str,
                                    schema: str) -> None:
    """Take from a bound role what the engine does not need: TEMP tables in the database and
    objects of its own in the memory's schema. Neither is what isolates (the policies'
    functions name their tables and fix their search_path, migration 0004); each would
    let it put names where the owner's unqualified SQL looks. Both privileges are PUBLIC's
    by default (TEMPORARY always; CREATE on ``public`` before PostgreSQL 15), so they are
    revoked from PUBLIC too, where the granting role owns the database or the schema: a
    memory's database is the memory's, and its owner keeps both."""
    await conn.execute(sql.SQL("REVOKE TEMPORARY ON DATABASE {} FROM {}").format(
        sql.Identifier(database), ident))
    await conn.execute(sql.SQL("REVOKE CREATE ON SCHEMA {} FROM {}").format(
        sql.Identifier(schema), ident))
    cursor = await conn.execute(
        "SELECT pg_has_role(d.datdba, 'USAGE'), pg_has_role(n.nspowner, 'USAGE')"
        " FROM pg_database d, pg_namespace n"
        " WHERE d.datname = current_database() AND n.nspname = current_schema()")
    owns = await cursor.fetchone()
    assert owns is not None, "the current database and schema exist"
    if owns[0]:
        await conn.execute(sql.SQL("REVOKE TEMPORARY ON DATABASE {} FROM PUBLIC").format(
            sql.Identifier(database)))
    if owns[1]:
        await conn.execute(sql.SQL("REVOKE CREATE ON SCHEMA {} FROM PUBLIC").format(
            sql.Identifier(schema)))


async def _revoke(conn: Conn, role: str) -> RoleGrant | None:
    await conn.execute("SELECT pg_advisory_xact_lock(hashtext('memory_roles'), hashtext(%s))",
                       (role,))
    bound = await _bound(conn, role)
    if bound is None:
        return None
    await conn.execute("DELETE FROM memory_roles WHERE role_name = %s", (role,))
    if bound.exists:
        ident = sql.Identifier(role)
        tables = (*NAMESPACE_TABLES, *SHARED_TABLES)
        await conn.execute(sql.SQL("REVOKE ALL ON {} FROM {}").format(
            sql.SQL(", ").join(sql.Identifier(table) for table in tables), ident))
    return bound


async def _list(conn: Conn) -> list[RoleGrant]:
    cursor = await conn.execute(
        "SELECT m.role_name, m.namespace, m.granted_at, coalesce(r.rolcanlogin, false),"
        " r.rolname IS NOT NULL FROM memory_roles m"
        " LEFT JOIN pg_roles r ON r.rolname = m.role_name ORDER BY m.role_name")
    return [RoleGrant(*row) for row in await cursor.fetchall()]


async def _bound(conn: Conn, role: str) -> RoleGrant | None:
    cursor = await conn.execute(
        "SELECT m.role_name, m.namespace, m.granted_at, coalesce(r.rolcanlogin, false),"
        " r.rolname IS NOT NULL FROM memory_roles m"
        " LEFT JOIN pg_roles r ON r.rolname = m.role_name WHERE m.role_name = %s", (role,))
    row = await cursor.fetchone()
    return RoleGrant(*row) if row else None


async def _role_exists(conn: Conn, role: str) -> bool:
    cursor = await conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,))
    return await cursor.fetchone() is not None


async def _scalar(conn: Conn, query: str) -> Any:
    cursor = await conn.execute(query)
    row = await cursor.fetchone()
    assert row is not None, query
    return row[0]


def _password_verifier(conn: Conn, password: str, role: str) -> str:
    """The SCRAM-SHA-256 verifier of ``password``, computed by libpq on this side."""
    if not password or "\x00" in password:
        raise InvalidInput("a role's password must be non-empty text without NUL characters")
    try:
        verifier = conn.pgconn.encrypt_password(password.encode("utf-8"), role.encode("utf-8"),
                                                b"scram-sha-256")
    except psycopg.Error as exc:
        raise InvalidInput(f"the password could not be hashed: {type(exc).__name__}") from None
    return verifier.decode("ascii")
