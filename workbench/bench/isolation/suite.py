"""The suite end to end: plant, attack through each front end, check the victim's view.

:func:`run_suite` is synchronous: the command line runs ``asyncio.run`` in each command, so
its part cannot run inside an event loop, and the engine and MCP parts each get one of their
own. It returns the tally; ``workbench bench isolation`` prints it and the test asserts on it.
"""

from __future__ import annotations

import asyncio
import functools
import json
import secrets
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

import click

from workbench.bench.isolation.probe import Finding, Probe
from workbench.bench.isolation.victim import (
    ATTACKER,
    ATTACKER_CHAT,
    ATTACKER_MARK,
    BAIT,
    CONFIG,
    CONFIG_TOML,
    VICTIM,
    VICTIM_CHAT,
    Planted,
    Snapshot,
    plant_attacker,
    plant_victim,
)

VIEW = "victim's view"
SQL = "SQL (bound role)"  # raw SQL as the attacker's bound role: with row-level security only
ENTRY_POINTS = ("engine API", "CLI", "MCP server", SQL, VIEW)


@dataclass
class SuiteResult:
    """Cases per entry point, the leaks and crashes found, and how long each part took."""

    cases: dict[str, int]
    leaks: list[Finding]
    crashes: list[Finding]
    seconds: dict[str, float] = field(default_factory=dict)
    planted: dict[str, int] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return sum(self.cases.values())


def attack_config(archive_dir: Path | None = None) -> dict[str, Any]:
    """The engine config of every part: deterministic vectors, no background consolidation,
    and the victim as the configured agent, so any path that falls back to the configured
    agent when a namespace is missing or empty lands on the victim and shows up.
    ``archive_dir``: where compaction archives go (a PostgreSQL memory has no folder beside
    it; the suite points them into its work folder, where the snapshot reads them)."""
    config: dict[str, Any] = {**CONFIG, "agent": VICTIM}
    if archive_dir is not None:
        config["summary"] = {"archive_dir": str(archive_dir)}
    return config


def run_suite(workdir: Path, cli: click.Command, *, memory: str | None = None,
              rls: bool = False, mcp: bool = True, thorough: bool = False,
              parts: Collection[str] = ENTRY_POINTS,
              say: Callable[[str], None] = lambda line: None) -> SuiteResult:
    """Plant a victim in a memory and attack it; the tally.

    ``memory`` is a new memory file's path, or a PostgreSQL URL of an empty database whose
    owner plants into it (default: ``memory.db`` under ``workdir``, which holds the config,
    archives and outputs either way). On PostgreSQL, ``rls`` has the attacker's engine, CLI
    and MCP server connect as roles bound to the namespaces they attack from (row-level
    security, ``workbench pg grant``), made for the run and dropped after it; without it
    every entry point connects as the owner and the engine's own checks are what isolates.
    With row-level security the attacker's role also sends raw SQL (the "SQL (bound role)"
    part, :mod:`workbench.bench.isolation.sql_attacks`).

    ``cli`` is the ``workbench`` command whose subcommands are attacked (given, not
    imported: the command line itself runs this suite as ``workbench bench isolation``).

    ``thorough`` gives the command line every input (the engine and MCP parts always get
    them all); ``mcp=False`` leaves the MCP server out. ``parts`` names the entry points
    that attack (the victim's view is always checked): the tests run the parts side by side.
    """
    from core.locations import parse_location

    workdir.mkdir(parents=True, exist_ok=True)
    db_path = memory if memory is not None else str(workdir / "memory.db")
    postgres = parse_location(db_path).is_postgres
    if rls and not postgres:
        raise click.UsageError("row-level security needs a postgresql:// memory")
    # A file's archives go beside it (the default); a PostgreSQL memory has no folder, so
    # its archives are pointed into the work folder, where the snapshot reads them too.
    archive_dir = (workdir if postgres else Path(db_path).resolve().parent) / "conversations"
    config_path = workdir / "workbench.toml"
    config_path.write_text(f'agent = "{VICTIM}"\n' + CONFIG_TOML + (
        f"[summary]\narchive_dir = {json.dumps(str(archive_dir))}\n" if postgres else ""),
        encoding="utf-8")
    config = attack_config(archive_dir if postgres else None)
    seconds: dict[str, float] = {}
    started = time.perf_counter()
    planted = asyncio.run(_plant(db_path, config))
    roles = Roles(db_path, rls)
    try:
        return _attack(workdir, cli, planted, roles, config, config_path, archive_dir,
                       mcp=mcp, thorough=thorough, parts={*parts, VIEW}, say=say,
                       seconds=seconds, started=started)
    finally:
        roles.drop()


class Roles:
    """Where each attacking part connects: the owner's location, or (row-level security) a
    URL of a role made for this run and bound to the namespace the part attacks from."""

    def __init__(self, owner: str, rls: bool) -> None:
        self.owner = owner
        self.made: list[str] = []
        self.attacker = self.mcp = owner
        if rls:
            from workbench.bench.isolation.mcp_attacks import MCP_NAMESPACE

            tag = secrets.token_hex(4)
            self.attacker = self._grant(ATTACKER, f"isolation_{tag}_attacker")
            self.mcp = self._grant(MCP_NAMESPACE, f"isolation_{tag}_mcp")

    def _grant(self, namespace: str, role: str) -> str:
        from core.locations import parse_location
        from core.storage.pg import roles

        password = secrets.token_urlsafe(18)
        self.made.append(role)
        asyncio.run(roles.grant(parse_location(self.owner), namespace, role, password))
        parts = urlsplit(self.owner)
        host = parts.netloc.rpartition("@")[2]
        # The owner's credentials, wherever the URL held them, are not the role's.
        query = urlencode([(key, value) for key, value in parse_qsl(parts.query)
                           if key not in ("user", "password")])
        return urlunsplit((parts.scheme, f"{quote(role, safe='')}:{quote(password, safe='')}"
                           f"@{host}", parts.path, query, ""))

    def drop(self) -> None:
        """Unbind and drop the roles made for this run: roles belong to the whole server."""
        if not self.made:
            return
        import psycopg
        from psycopg import sql

        from core.locations import parse_location
        from core.storage.pg import roles

        for role in self.made:
            asyncio.run(roles.revoke(parse_location(self.owner), role))
        with psycopg.connect(self.owner, autocommit=True) as conn:
            for role in self.made:
                conn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(role)))
                conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))


def _attack(workdir: Path, cli: click.Command, planted: Planted, roles: Roles,
            config: dict[str, Any], config_path: Path, archive_dir: Path, *, mcp: bool,
            thorough: bool, parts: Collection[str], say: Callable[[str], None],
            seconds: dict[str, float], started: float) -> SuiteResult:
    db_path = roles.owner
    snapshot = Snapshot(planted, archive_dir)
    probe = Probe(planted.words, planted.ids, snapshot)
    probe.arm()
    seconds["plant"] = time.perf_counter() - started
    say(f"planted {len(planted.chunk_ids)} chunks, {len(planted.note_ids)} notes, "
        f"{len(planted.log_ids)} logged queries in namespace {VICTIM!r}")

    def engine_part() -> None:
        asyncio.run(_engine_part(roles.attacker, config, planted, probe, workdir))

    def cli_part() -> None:
        from workbench.bench.isolation.cli_attacks import attack_cli

        attack_cli(cli, roles.attacker, config_path, planted, probe, workdir,
                   thorough=thorough)

    def mcp_part() -> None:
        from workbench.bench.isolation.mcp_attacks import attack_mcp

        if mcp:
            asyncio.run(attack_mcp(roles.mcp, config_path, planted, probe, workdir))

    def sql_part() -> None:
        if roles.made:
            from workbench.bench.isolation.sql_attacks import attack_sql

            attack_sql(roles.owner, roles.attacker, planted, probe, SQL)

    def victim_view() -> None:
        _victim_cli_view(cli, db_path, config_path, planted, probe, workdir)
        asyncio.run(_victim_view(db_path, config, planted, probe))

    runs = dict(zip(ENTRY_POINTS, (engine_part, cli_part, mcp_part, sql_part, victim_view),
                    strict=True))
    try:
        for part, run in runs.items():
            if part not in parts:
                continue
            began = time.perf_counter()
            run()
            probe.unchanged(part, "(after the part)", [])
            seconds[part] = time.perf_counter() - began
            say(f"{part}: {probe.cases[part]} cases, {seconds[part]:.1f} s")
    finally:
        snapshot.close()
    return SuiteResult({entry: probe.cases[entry] for entry in ENTRY_POINTS}, probe.leaks,
                       probe.crashes, seconds,
                       {"chunks": len(planted.chunk_ids), "notes": len(planted.note_ids),
                        "logged queries": len(planted.log_ids), "markers": len(
                            planted.words) + len(planted.ids)})


async def _plant(db_path: str, config: dict[str, Any]) -> Planted:
    from core import Engine

    async with Engine.open(db_path, config=config) as engine:
        planted = await plant_victim(engine, db_path)
        await plant_attacker(engine)
    return planted


async def _engine_part(db_path: str, config: dict[str, Any], planted: Planted, probe: Probe,
                       workdir: Path) -> None:
    from core import Engine
    from workbench.bench.isolation.engine_attacks import attack_engine

    async with Engine.open(db_path, config=config) as engine:
        await attack_engine(engine, planted, probe, workdir)


def _reverse_probe(probe: Probe) -> Probe:
    """A probe for the other direction: the attacker's mark in the victim's own reads."""
    return Probe({ATTACKER_MARK: "the attacker's mark"},
                 {ATTACKER: "the attacker's namespace", ATTACKER_CHAT: "the attacker's session"},
                 probe.snapshot)


def _in_scope(reverse: Probe, operation: str, chunk_ids: list[str], planted: Planted) -> None:
    """A replay of the victim's logged query returns the victim's chunks only."""
    strays = [chunk_id for chunk_id in chunk_ids if chunk_id not in planted.chunk_ids]
    if strays:
        reverse.leaks.append(Finding(VIEW, operation, "[]",
                                     f"replay left its logged scope: {strays[:3]}"))


def _victim_cli_view(root: click.Command, db_path: str, config_path: Path, planted: Planted,
                     probe: Probe, workdir: Path) -> None:
    """``workbench log --replay ID`` (the developer's view: no namespace) on the victim's
    entries runs in their logged scope and shows nothing of the attacker's."""
    from workbench.bench.isolation.cli_attacks import Commands

    cli = Commands(root, db_path, config_path, _reverse_probe(probe), workdir)
    for log_id in planted.log_ids:
        operation = f"log --replay {log_id}"
        result = cli.invoke(["log", "--replay", str(log_id), "--json"])
        cli.probe.check(VIEW, operation, [], result.output)
        if result.exit_code != 0:
            cli.probe.crash(VIEW, operation, [], result.output)
            continue
        _in_scope(cli.probe, operation, [r["chunk_id"] for r in json.loads(result.stdout)],
                  planted)
    _merge(probe, cli.probe)


async def _victim_view(db_path: str, config: dict[str, Any], planted: Planted,
                       probe: Probe) -> None:
    """The other way round: after every attack, the victim's own reads hold nothing the
    attacker wrote (its mark), and replaying the victim's logged queries, bound to the
    victim's namespace or not, stays in the victim's scope."""
    from core import Engine

    reverse = _reverse_probe(probe)
    async with Engine.open(db_path, config=config) as engine:
        bound: dict[str, Any] = {"namespace": VICTIM}
        views = {
            "list_notes": lambda: engine.list_notes(**bound),
            "list_memories": lambda: engine.notes.list_memories(**bound),
            "recall_memories": lambda: engine.notes.recall_memories(BAIT, **bound),
            "memory_search": lambda: engine.notes.memory_search(BAIT, **bound),
            "memory_search(tags)": lambda: engine.notes.memory_search(BAIT, tags=["shared"],
                                                                      **bound),
            "list_facts": lambda: engine.list_facts(**bound),
            "read_scratchpad": lambda: engine.read_scratchpad(VICTIM_CHAT, **bound),
            "get_context": lambda: engine.get_context(VICTIM_CHAT, BAIT, **bound),
            "search(session)": lambda: engine.search(session_id=VICTIM_CHAT, query=BAIT),
            "search(namespace)": lambda: engine.search(namespace=VICTIM, query=BAIT),
            "search(namespace, mark)": lambda: _found(engine.search(
                namespace=VICTIM, query=f"{BAIT} {ATTACKER_MARK}")),
            "search(namespace, tags)": lambda: engine.search(namespace=VICTIM, query=BAIT,
                                                             tags=["shared"]),
            "search_schedules": lambda: engine.schedules.search_schedules(VICTIM),
            "list_sessions": lambda: engine.list_sessions(agent=VICTIM),
            "recall": lambda: engine.recall(VICTIM_CHAT),
        }
        for operation, run in views.items():
            await reverse.call(VIEW, operation, [], run)
        for log_id in planted.log_ids:
            binds: tuple[dict[str, Any], ...] = ({}, bound)
            for bind in binds:
                operation = f"replay({log_id}{', namespace' if bind else ''})"
                found = await reverse.call(VIEW, operation, [],
                                           functools.partial(engine.replay, log_id, **bind))
                if found is None:
                    reverse.crash(VIEW, operation, [], "the victim's own replay was refused")
                else:
                    _in_scope(reverse, operation, [r.chunk_id for r in found.results], planted)
        await engine.retrieval.flush_logs()
    _merge(probe, reverse)
    probe.arm()  # the victim's own replays were logged in its scope: that is its own change


def _merge(probe: Probe, other: Probe) -> None:
    for entry, count in other.cases.items():
        probe.cases[entry] += count
    probe.leaks += other.leaks
    probe.crashes += other.crashes


async def _found(searching: Any) -> list[tuple[str, str]]:
    """A search's results as (session, text), without the query it echoes."""
    return [(r.session_id, r.text) for r in (await searching).results]
