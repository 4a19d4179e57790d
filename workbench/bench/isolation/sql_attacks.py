"""Raw SQL from a role bound to one namespace, against another namespace's rows.

The engine, the CLI and the MCP server send the SQL the engine writes; a role that
``workbench pg grant`` bound to a namespace may send any SQL at all. Each attack here
connects as such a role with psycopg (no engine code in between) and tries one way around
the row-level security: TEMP tables shadowing the tables the policies and the owner's
trigger functions read, ``search_path`` changes, objects created in any schema the role may
write, views, calling the owner's SECURITY DEFINER functions, every statement on every
table, the shared tables (``memory_meta``), squatting another namespace's notes session,
unique-key and foreign-key oracles, and what LISTEN and the statistics views show.

An attack returns :class:`Outcome` values: text it got back (searched for the victim's
markers by the caller) and, where the attack itself can tell, a finding (a write that
committed, two answers that differ for an id that exists and one that does not). The
caller compares the victim's rows before and after, so a write that went through is caught
even when the attack cannot see it. ``tests/pg/test_pg_attacks.py`` runs every attack as a
test; ``workbench bench isolation --rls`` runs them as its "SQL (bound role)" part.
"""

from __future__ import annotations

import hashlib
import select
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import sql

# Tables a bound role is granted: each namespace table, the derived ones, the shared ones
# (core/storage/pg/roles.py lists the same; repeated so the suite names what it attacks).
NAMESPACE_TABLES = (
    "sessions", "conversation_events", "session_state", "files", "chunks", "chunks_vec",
    "archives", "notes", "note_names", "note_tags", "facts", "schedules", "schedule_runs",
    "retrieval_log", "relevance_judgments",
    "framework_items", "langgraph_checkpoints", "langgraph_writes",
)
DERIVED_TABLES = ("chunk_terms", "chunk_changes")
SHARED_TABLES = ("memory_meta", "memory_migrations", "memory_roles", "chunk_changes_pruned")
# What the policies' helper functions and the owner's trigger functions read by name.
SHADOWED = ("memory_roles", "sessions", "notes", "schedules", "chunks", "chunk_terms",
            "chunk_changes", "chunk_changes_pruned")


@dataclass(frozen=True)
class Target:
    """What the attacker knows of the victim, and who it is itself."""

    schema: str  # the schema the memory was migrated into
    victim: str  # the victim's namespace
    victim_sessions: tuple[str, ...]  # its sessions' ids (its notes session among them)
    victim_chunk_ids: tuple[str, ...]
    victim_note_ids: tuple[str, ...]
    victim_text: str  # one message the victim stored, word for word (a guess that is right)
    attacker: str  # the attacker's namespace
    attacker_session: str  # a session of the attacker's own, already stored
    ungranted: str  # a namespace no role is bound to yet (squatting its notes session)


@dataclass(frozen=True)
class Outcome:
    """One case: what was tried, what came back, and a finding when the attack saw one."""

    operation: str
    text: str
    finding: str | None = None


Attack = Callable[[str, Target], list[Outcome]]


def chunk_id_for(session_id: str, text: str) -> str:
    """The id the engine gives a message's chunk (core/storage/messages.py chunk_id_for)."""
    digest = hashlib.sha256(f"{session_id}\x00{content_hash(text)}".encode()).hexdigest()
    return f"chk-{digest[:32]}"


def content_hash(text: str) -> str:
    """A chunk's content hash, as the engine computes it."""
    from core.indexing import content_hash as engine_hash

    return engine_hash(text)


def _connect(url: str) -> psycopg.Connection[Any]:
    return psycopg.connect(url, autocommit=True)


def _try(conn: psycopg.Connection[Any], statement: Any, params: Any = None) -> str:
    """A statement's rows (or its row count), or its error, as text; never raises."""
    try:
        cursor = conn.execute(statement, params)
        if cursor.description is None:
            return f"ok {cursor.rowcount} rows"
        return f"ok {cursor.fetchall()!r}"
    except psycopg.Error as exc:
        return f"error {type(exc).__name__}: {' '.join(str(exc).split())}"


def _read_everything(conn: psycopg.Connection[Any], target: Target, how: str) -> list[Outcome]:
    """Every table of the memory read whole, by schema-qualified name and by bare name
    (which a TEMP table or a search_path change may redirect)."""
    found = []
    for table in (*NAMESPACE_TABLES, *DERIVED_TABLES, *SHARED_TABLES):
        for name in (sql.Identifier(target.schema, table), sql.Identifier(table)):
            text = _try(conn, sql.SQL("SELECT * FROM {}").format(name))
            found.append(Outcome(f"{how}: SELECT * FROM {name.as_string(conn)}", text))
    return found


def _write_everything(conn: psycopg.Connection[Any], target: Target, how: str) -> list[Outcome]:
    """An UPDATE and a DELETE of every row of every table; the caller's snapshot of the
    victim's rows shows whether any of theirs went (the attacker's own may)."""
    found = []
    for table in (*NAMESPACE_TABLES, *DERIVED_TABLES, *SHARED_TABLES):
        name = sql.Identifier(target.schema, table)
        column = _first_text_column(conn, target.schema, table)
        if column is not None:
            statement = sql.SQL("UPDATE {} SET {} = {}").format(
                name, sql.Identifier(column), sql.Identifier(column))
            found.append(Outcome(f"{how}: UPDATE {table}", _try(conn, statement)))
        found.append(Outcome(f"{how}: DELETE FROM {table} (rolled back)",
                             _rolled_back(conn, sql.SQL("DELETE FROM {}").format(name))))
    return found


def _rolled_back(conn: psycopg.Connection[Any], statement: Any) -> str:
    """``statement`` in a transaction rolled back after: what it reached, nothing kept (a
    DELETE that reached the victim's rows shows in its row count against the snapshot)."""
    conn.autocommit = False
    try:
        return _try(conn, statement)
    finally:
        conn.rollback()
        conn.autocommit = True


def _first_text_column(conn: psycopg.Connection[Any], schema: str, table: str) -> str | None:
    row = conn.execute(
        "SELECT a.attname FROM pg_attribute a WHERE a.attrelid = %s::regclass"
        " AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = ''"
        " AND a.atttypid = 'text'::regtype ORDER BY a.attnum LIMIT 1",
        (f'"{schema}"."{table}"',)).fetchone()
    return None if row is None else str(row[0])


def _shadow(conn: psycopg.Connection[Any], target: Target, table: str) -> str:
    """A TEMP table named ``table`` with the real one's columns, holding rows that would
    hand the victim's namespace (or sessions) to the attacker if a function read it."""
    created = _try(conn, sql.SQL("CREATE TEMP TABLE {} (LIKE {} INCLUDING DEFAULTS)").format(
        sql.Identifier(table), sql.Identifier(target.schema, table)))
    if created.startswith("error"):
        return created
    if table == "memory_roles":
        return _try(conn, "INSERT INTO pg_temp.memory_roles(role_name, namespace)"
                          " VALUES (current_user, %s)", (target.victim,))
    if table == "sessions":
        return _try(conn, "INSERT INTO pg_temp.sessions(session_id, agent_identity)"
                          " SELECT unnest(%s::text[]), %s",
                    (list(target.victim_sessions), target.attacker))
    return created


def temp_shadow(table: str) -> Attack:
    """A TEMP table shadowing ``table`` (pg_temp is searched first unless a function fixes
    its search_path), then every table read and written."""
    def attack(url: str, target: Target) -> list[Outcome]:
        with _connect(url) as conn:
            made = Outcome(f"CREATE TEMP TABLE {table}", _shadow(conn, target, table))
            return [made, *_read_everything(conn, target, f"temp {table}"),
                    *_write_everything(conn, target, f"temp {table}")]
    attack.__name__ = f"temp_shadow_{table}"
    return attack


def all_temp_shadows(url: str, target: Target) -> list[Outcome]:
    """Every shadow at once, under a search_path that names pg_temp first explicitly."""
    with _connect(url) as conn:
        found = [Outcome("SET search_path", _try(
            conn, sql.SQL("SET search_path = pg_temp, {}").format(
                sql.Identifier(target.schema))))]
        found += [Outcome(f"CREATE TEMP TABLE {t}", _shadow(conn, target, t)) for t in SHADOWED]
        return found + _read_everything(conn, target, "all shadows")


def search_paths(url: str, target: Target) -> list[Outcome]:
    """The role's own search_path set to each thing it could be: the policies' functions
    must read the memory's tables whatever it is."""
    found = []
    for path in ("''", "pg_temp", "pg_catalog", "public", "pg_temp, public",
                 '"$user", pg_temp'):
        with _connect(url) as conn:
            _shadow(conn, target, "memory_roles")
            found.append(Outcome(f"SET search_path = {path}",
                                 _try(conn, f"SET search_path = {path}")))
            found += _read_everything(conn, target, f"search_path {path}")
    return found


def writable_schemas(url: str, target: Target) -> list[Outcome]:
    """Any schema the role may create objects in (PUBLIC's CREATE on public, before
    PostgreSQL 15): functions, operators and tables there, first on the search_path."""
    found = []
    with _connect(url) as conn:
        rows = conn.execute(
            "SELECT nspname FROM pg_namespace WHERE has_schema_privilege(oid, 'CREATE')"
            " AND nspname NOT LIKE 'pg\\_temp\\_%' AND nspname NOT LIKE 'pg\\_toast%'"
        ).fetchall()
        schemas = [str(row[0]) for row in rows]
        found.append(Outcome("schemas the role may create in", repr(schemas),
                             f"may create objects in {schemas}" if schemas else None))
        for schema in schemas:
            ident = sql.Identifier(schema)
            for statement in (
                    sql.SQL("CREATE FUNCTION {}.memory_role_namespace() RETURNS text"
                            " LANGUAGE sql AS $$ SELECT {} $$").format(
                                ident, sql.Literal(target.victim)),
                    sql.SQL("CREATE FUNCTION {}.texteq_all(text, text) RETURNS boolean"
                            " LANGUAGE sql AS 'SELECT true'").format(ident),
                    sql.SQL("CREATE OPERATOR {}.= (LEFTARG = text, RIGHTARG = text,"
                            " FUNCTION = {}.texteq_all)").format(ident, ident),
                    sql.SQL("CREATE TABLE {}.memory_roles (role_name text, namespace text)"
                            ).format(ident),
                    sql.SQL("SET search_path = {}, pg_catalog, {}").format(
                        ident, sql.Identifier(target.schema))):
                found.append(Outcome(f"in {schema}: {statement.as_string(conn)[:60]}",
                                     _try(conn, statement)))
            found += _read_everything(conn, target, f"objects in {schema}")
    return found


def temp_functions_and_views(url: str, target: Target) -> list[Outcome]:
    """Functions and an operator in pg_temp (never found for functions unless named), and
    views over the memory's tables: a view runs with its owner's rights, the attacker's."""
    with _connect(url) as conn:
        found = [Outcome(f"temp {kind}", _try(conn, statement)) for kind, statement in (
            ("function", sql.SQL("CREATE FUNCTION pg_temp.memory_role_namespace() RETURNS"
                                 " text LANGUAGE sql AS $$ SELECT {} $$").format(
                                     sql.Literal(target.victim))),
            ("view", sql.SQL("CREATE TEMP VIEW chunk_view AS SELECT * FROM {}").format(
                sql.Identifier(target.schema, "chunks"))),
            ("barrier view", sql.SQL(
                "CREATE TEMP VIEW note_view WITH (security_barrier = false) AS"
                " SELECT * FROM {} WHERE pg_temp.memory_role_namespace() IS NOT NULL").format(
                    sql.Identifier(target.schema, "notes"))))]
        for query in ("SELECT * FROM chunk_view", "SELECT * FROM note_view",
                      "SELECT pg_temp.memory_role_namespace()"):
            found.append(Outcome(query, _try(conn, query)))
        return found


def security_definer(url: str, target: Target) -> list[Outcome]:
    """The owner's SECURITY DEFINER functions called directly, and the chunk triggers fed
    a TEMP ``sessions`` that names the victim as the attacker's session's agent: the change
    log would then credit the victim's namespace with the attacker's chunk."""
    found = []
    with _connect(url) as conn:
        rows = conn.execute(
            "SELECT p.oid::regprocedure::text, pg_get_function_identity_arguments(p.oid)"
            " FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace"
            " WHERE p.prosecdef AND n.nspname = %s", (target.schema,)).fetchall()
        for signature, arguments in rows:
            name = signature.split("(")[0]
            call = f"SELECT {name}(1000000000000)" if arguments else f"SELECT {name}()"
            text = _try(conn, call)
            if arguments:  # a trigger function refuses by itself; a plain one runs as owner
                found.append(Outcome(call, text, None if text.startswith("error") else
                                     f"{call} ran with the owner's rights"))
            else:
                found.append(Outcome(call, text))
        _try(conn, sql.SQL("CREATE TEMP TABLE sessions (LIKE {})").format(
            sql.Identifier(target.schema, "sessions")))
        # Two rows for one session (a TEMP copy has no primary key): the policies find the
        # attacker's, a trigger joining sessions finds the victim's too.
        _try(conn, "INSERT INTO pg_temp.sessions(session_id, agent_identity)"
                   " VALUES (%s, %s), (%s, %s)", (target.attacker_session, target.attacker,
                                                  target.attacker_session, target.victim))
        inserted = _try(conn, sql.SQL(
            "INSERT INTO {}(chunk_id, session_id, chunk_text, content_hash, sequence_start,"
            " sequence_end, scope_token) VALUES (%s, %s, 'attacker chunk', %s, 1, 1, 't')"
        ).format(sql.Identifier(target.schema, "chunks")),
            (chunk_id_for(target.attacker_session, "attacker chunk"), target.attacker_session,
             content_hash("attacker chunk")))
        found.append(Outcome("a chunk written beside a TEMP sessions", inserted))
    return found


def meta_and_shared_writes(url: str, target: Target) -> list[Outcome]:
    """Writes to the tables every namespace shares: each must be refused."""
    statements = (
        "UPDATE {s}.memory_meta SET value = value || 'x'",
        "UPDATE {s}.memory_meta SET value = 'another-model' WHERE key = 'embedding_model'",
        "DELETE FROM {s}.memory_meta",
        "INSERT INTO {s}.memory_meta(key, value) VALUES ('embedding_model', 'x')"
        " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        "INSERT INTO {s}.memory_meta(key, value) VALUES ('attacker_key', 'x')",
        "INSERT INTO {s}.memory_meta(key, value) VALUES ('consolidation_last_run', '9999')"
        " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        "UPDATE {s}.memory_migrations SET name = 'x'",
        "INSERT INTO {s}.memory_migrations VALUES (99, 'x', 'x')",
        "INSERT INTO {s}.memory_roles(role_name, namespace) VALUES ('x', 'x')",
        "UPDATE {s}.chunk_changes_pruned SET max_xid = '1'",
        "INSERT INTO {s}.chunk_terms VALUES ('w', 's', 1, 1, 1, 1)",
        "INSERT INTO {s}.chunk_changes(namespace, fts_rowid, op) VALUES ('x', 1, 'insert')",
        "TRUNCATE {s}.chunks",
        "ALTER TABLE {s}.chunks DISABLE ROW LEVEL SECURITY",
        "DROP POLICY namespace_rows ON {s}.chunks",
        "CREATE POLICY open ON {s}.chunks USING (true)",
    )
    found = []
    with _connect(url) as conn:
        for template in statements:
            statement = template.format(s=sql.Identifier(target.schema).as_string(conn))
            text = _try(conn, statement)
            changed = text.startswith("ok") and not text.startswith("ok 0 rows")
            found.append(Outcome(statement, text, f"{statement} went through: {text}"
                                 if changed else None))
    return found


def squatting(url: str, target: Target) -> list[Outcome]:
    """Sessions another namespace will need: the notes session of a namespace not granted
    yet, and of the victim (taken already, so only refused); one under another agent."""
    found = []
    with _connect(url) as conn:
        for session_id, agent in ((f"memory:{target.ungranted}", target.attacker),
                                  (f"memory:{target.ungranted}", target.ungranted),
                                  ("fresh-session", target.ungranted)):
            statement = sql.SQL("INSERT INTO {}(session_id, agent_identity) VALUES (%s, %s)"
                                ).format(sql.Identifier(target.schema, "sessions"))
            text = _try(conn, statement, (session_id, agent))
            found.append(Outcome(f"INSERT session {session_id!r} as {agent!r}", text,
                                 None if text.startswith("error") else
                                 f"created session {session_id!r} under {agent!r}"))
    return found


def _same_refusal(first: str, second: str) -> bool:
    """Two answers alike once the ids they quote are set aside: the same error class and
    the same words."""
    def shape(text: str) -> str:
        return text.split(":", 1)[0] + " " + " ".join(
            word for word in text.split() if "chk-" not in word and "note-" not in word
            and "never-" not in word and not any(s in word for s in ("vicns", "beta")))
    return shape(first) == shape(second)


def _oracle(conn: psycopg.Connection[Any], label: str, statement: str,
            existing: tuple[Any, ...], absent: tuple[Any, ...]) -> Outcome:
    """One statement with an existing id of the victim and with one nobody has: a finding
    when the answers differ (the difference says the id exists) or either went through."""
    def run(values: tuple[Any, ...]) -> str:
        return _rolled_back(conn, statement % tuple(sql.Literal(v).as_string(conn)
                                                    for v in values))

    seen, unseen = run(existing), run(absent)
    finding = None
    if seen.startswith("ok"):
        finding = f"{label} with the victim's id went through: {seen}"
    elif not _same_refusal(seen, unseen):
        finding = f"{label}: an existing id answers {seen[:90]!r}, an unknown one {unseen[:90]!r}"
    return Outcome(label, f"{seen}\n{unseen}", finding)


def key_oracles(url: str, target: Target) -> list[Outcome]:
    """Unique keys and foreign keys as existence tests: a chunk id computed from the
    victim's session and a guessed text (right, and wrong), the victim's chunk and note ids
    under the attacker's own rows. Each must be refused alike whether the id exists or not."""
    s = sql.Identifier(target.schema)
    own = target.attacker_session
    right = chunk_id_for(target.victim_sessions[0], target.victim_text)
    wrong = chunk_id_for(target.victim_sessions[0], "a message never said")
    chunk, note = target.victim_chunk_ids[0], target.victim_note_ids[0]
    found = []
    with _connect(url) as conn:
        insert_chunk = sql.SQL(
            "INSERT INTO {}.chunks(chunk_id, session_id, chunk_text, content_hash,"
            " sequence_start, sequence_end, scope_token) VALUES (%s, %s, 'x', 'h', 1, 1, 't')"
        ).format(s).as_string(conn)
        found.append(_oracle(conn, "INSERT chunk with a guessed chunk id", insert_chunk,
                             (right, own), (wrong, own)))
        update_chunk = sql.SQL("UPDATE {}.chunks SET chunk_id = %s WHERE session_id = %s"
                               ).format(s).as_string(conn)
        found.append(_oracle(conn, "UPDATE own chunk to a guessed chunk id", update_chunk,
                             (right, own), (wrong, own)))
        insert_vec = sql.SQL(
            "INSERT INTO {}.chunks_vec(chunk_id, agent_identity, session_id, embedding_blob)"
            " SELECT %s, %s, %s, embedding_blob FROM {}.chunks_vec LIMIT 1").format(
                s, s).as_string(conn)
        found.append(_oracle(conn, "INSERT vector for the victim's chunk", insert_vec,
                             (chunk, target.attacker, own),
                             ("chk-never-stored", target.attacker, own)))
        insert_note = sql.SQL(
            "INSERT INTO {}.notes(note_id, namespace, session_id, name, content, created_at,"
            " updated_at) VALUES ('note-attacker-probe', %s, %s, 'probe', 'x', 'x', 'x')"
        ).format(s).as_string(conn)
        found.append(_oracle(conn, "INSERT note under the victim's session", insert_note,
                             (target.attacker, target.victim_sessions[0]),
                             (target.attacker, "never-a-session")))
        for table, columns in (("note_names", "(namespace, name, note_id, is_alias)"
                                " VALUES (%s, 'probe-name', %s, 0)"),
                               ("note_tags", "(namespace, tag, note_id) VALUES (%s, 'probe', %s)")):
            statement = sql.SQL("INSERT INTO {}.{} " + columns).format(
                s, sql.Identifier(table)).as_string(conn)
            found.append(_oracle(conn, f"INSERT {table} for the victim's note", statement,
                                 (target.attacker, note), (target.attacker, "note-never")))
    return found


def listen_payloads(url: str, target: Target, owner_url: str) -> list[Outcome]:
    """LISTEN memory_changed while the owner writes a victim's row: what the notification
    carries (its timing is documented as what a bound role can still learn)."""
    with _connect(url) as conn:
        conn.execute("LISTEN memory_changed")
        with _connect(owner_url) as owner:
            owner.execute(sql.SQL("UPDATE {} SET updated_at = updated_at WHERE session_id = %s"
                                  ).format(sql.Identifier(target.schema, "sessions")),
                          (target.victim_sessions[0],))
        payloads = list(_notifications(conn, deadline_s=5.0))
    finding = None if all(p == "" for p in payloads) else f"payloads {payloads[:3]!r}"
    return [Outcome("LISTEN memory_changed", repr(payloads), finding)]


def _notifications(conn: psycopg.Connection[Any], deadline_s: float) -> Iterator[str]:
    """The payloads that reach ``conn`` until the first one (or the deadline)."""
    ends = time.monotonic() + deadline_s
    while time.monotonic() < ends:
        select.select([conn.fileno()], [], [], max(0.0, ends - time.monotonic()))
        got = [notify.payload for notify in conn.notifies(timeout=0, stop_after=10)]
        yield from got
        if got:
            return


def statistics_views(url: str, target: Target) -> list[Outcome]:
    """The planner's statistics of the memory's tables (pg_stats holds sample values) and
    the catalog's row counts: the values must not show; the counts are documented."""
    with _connect(url) as conn:
        return [Outcome(query, _try(conn, query, (target.schema,))) for query in (
            "SELECT tablename, attname, most_common_vals::text, histogram_bounds::text"
            " FROM pg_stats WHERE schemaname = %s",
            "SELECT tablename, statistics_name, most_common_vals::text FROM pg_stats_ext"
            " WHERE schemaname = %s")]


def attacks(owner_url: str) -> dict[str, Attack]:
    """Every attack by name (LISTEN needs the owner to write while it listens)."""
    every: dict[str, Attack] = {f"temp {table}": temp_shadow(table) for table in SHADOWED}
    every.update({
        "every temp shadow": all_temp_shadows, "search_path": search_paths,
        "writable schemas": writable_schemas, "temp functions and views":
            temp_functions_and_views,
        "security definer": security_definer, "shared tables": meta_and_shared_writes,
        "squatting": squatting, "key oracles": key_oracles,
        "LISTEN": lambda url, target: listen_payloads(url, target, owner_url),
        "statistics": statistics_views,
    })
    return every


def attack_sql(owner_url: str, attacker_url: str, planted: Any, probe: Any, entry: str) -> None:
    """Every attack as the attacker's bound role against the suite's planted victim: each
    outcome a case checked for the victim's markers, each finding a leak, and the victim's
    rows compared with the planted state after each attack."""
    from workbench.bench.isolation.probe import Finding
    from workbench.bench.isolation.victim import ATTACKER, ATTACKER_CHAT, VICTIM, VICTIM_CHAT

    with psycopg.connect(owner_url) as conn:
        schema = str((conn.execute("SELECT current_schema()").fetchone() or ("",))[0])
    target = Target(schema=schema, victim=VICTIM, victim_sessions=tuple(planted.sessions),
                    victim_chunk_ids=tuple(planted.chunk_ids),
                    victim_note_ids=tuple(planted.note_ids), victim_text=VICTIM_FIRST,
                    attacker=ATTACKER, attacker_session=ATTACKER_CHAT,
                    ungranted="isolation-ungranted")
    if chunk_id_for(VICTIM_CHAT, VICTIM_FIRST) not in planted.chunk_ids:
        probe.crash(entry, "key oracles", [], "the right guess is not the victim's chunk id")
    # The engine part logged the attacker's own queries, which quote the victim's words as
    # crafted input: its own rows, cleared (as it may) so that reading them is no finding.
    with _connect(attacker_url) as conn:
        conn.execute("DELETE FROM retrieval_log")
        conn.execute("DELETE FROM relevance_judgments")
    given = [*target.victim_sessions, *target.victim_chunk_ids, *target.victim_note_ids,
             target.victim]
    for name, attack in attacks(owner_url).items():
        for outcome in attack(attacker_url, target):
            probe.check(entry, f"{name}: {outcome.operation}", given, outcome.text)
            if outcome.finding:
                probe.leaks.append(Finding(entry, name, outcome.operation[:60],
                                           outcome.finding))
        probe.unchanged(entry, name, [])


# The victim's first message (workbench/bench/isolation/victim.py): the oracle's right guess.
VICTIM_FIRST = "aurora lantern meridian hxqmsgone"
