"""``workbench bench crash``: kill a writing process at random moments and check the file.

A child process (``python -m workbench.bench.crash_child``) opens a memory file and writes to it
without pause, one of four workloads:

- **ingest**: ``append`` and ``store`` of synthetic agent messages (tool calls and results
  among them, some repeating an earlier text so the dedup path runs) over three sessions;
- **notes**: add, write, rename, alias, unalias and remove notes in one namespace;
- **compact**: messages, then ``compact`` and ``summarize`` of their sessions;
- **recall**: messages in one namespace, each followed by a namespace query, which brings
  the child's derived namespace matrix up to the file (:mod:`workbench.bench.crash_recall`
  checks that every chunk is then found by both legs in namespace scope).

Before each operation the child appends a *begin* line to an acknowledgement file (opened
with ``O_APPEND``); when the engine returns it appends a *done* line, or *refused* when the
engine said no and wrote nothing. A done line is an acknowledged write. The lines are
``write(2)`` calls, which survive the death of the process that made them (no fsync: a
SIGKILL is not a power cut, and neither is what SQLite's ``synchronous=NORMAL`` guards).

The parent kills the child with SIGKILL after a seeded random delay (most after the engine
is open, some while it is still starting), then checks the file:

1. through a connection of its own, before any engine touches it:
   :func:`core.storage.sqlite.invariants.check_file` (integrity checks, half-stored messages, notes
   and compactions, orphaned rows, the backlog left behind);
2. through a fresh ``Engine`` (:mod:`workbench.bench.crash_ledger`): every acknowledged
   write is there as acknowledged (messages by session and sequence with the same payload;
   notes in the state the last done line gave; compactions' archives; summaries' epochs
   never behind), and nothing is there that was never asked for. The one operation begun
   and not acknowledged may be there or not;
3. the work left behind resumes: ``drain()`` empties the embedding backlog with no failed
   chunk, a consolidation pass writes every archive's markdown the kill left unwritten, and
   the file still passes step 1.

The next child of the same workload carries on in the same file, so later kills also check
that what earlier runs left is still intact. Workloads rotate across kills.

With ``--db postgresql://…`` the children write into that database instead (every workload
into the one database, in sessions of its own, which must hold no messages yet), and step
1 is :func:`core.storage.pg.invariants.check_database`, read through a connection of its
own; the server's own recovery stands where SQLite's integrity checks were.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import os
import random
import signal
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click

from core.locations import Location
from workbench.bench import crash_ledger, crash_recall
from workbench.bench.crash_child import (
    CRASH_DB_VARIABLE,
    NOTES_NAMESPACE,
)
from workbench.bench.crash_ledger import WORKLOAD_SESSIONS
from workbench.command_line import MEMORY, command_config, run_command, with_model
from workbench.text import to_json

WORKLOADS = ("ingest", "notes", "compact", "recall")
# recall drills the SQLite file's derived namespace index (PostgreSQL's in-memory ones are
# rebuilt by a restarted process; tests/pg/test_pg_derived.py checks how they follow writes).
PG_WORKLOADS = ("ingest", "notes", "compact")
WORKER_BATCH = 32  # chunks per embedding batch: the worker commits often, so kills land there too
EARLY_SHARE = 0.125  # kills aimed at a child still importing or opening the engine
EARLY_WINDOW_S = 0.6
KILL_WINDOW_S = (0.02, 1.2)  # after the child is open and about to write
READY_TIMEOUT_S = 60.0


# -- the parent: figures ---------------------------------------------------------------------


MUST_BE_ZERO = ("lost", "phantom", "half_stored", "orphans", "integrity_failures",
                "backlog_after", "failed_after", "archives_unwritten", "child_failures",
                "unfindable")


@dataclass
class WorkloadFigures:
    """One workload's kills and what the checks after them found."""

    workload: str
    kills: int = 0
    early_kills: int = 0  # before the engine said it was open
    acknowledged: int = 0
    lost: int = 0
    phantom: int = 0
    half_stored: int = 0
    orphans: int = 0
    integrity_failures: int = 0  # kills after which a file check did not pass
    backlog_found: int = 0  # chunks waiting for a vector when the file was reopened
    backlog_after: int = 0  # ... after drain(): must be 0
    failed_after: int = 0
    archives_unwritten: int = 0  # archives without markdown after a consolidation pass
    child_failures: int = 0  # a child that died by itself, before the kill
    # Where the kill landed: inside an operation that then was (or was not) committed.
    in_flight_committed: int = 0
    in_flight_rolled_back: int = 0
    # The recall workload: kills after an acknowledged write and before the namespace query
    # that brings the child's derived matrix up to it; chunks then looked for by both legs
    # in namespace scope (by two engines), and those a leg did not find.
    killed_before_sync: int = 0
    chunks_looked_for: int = 0
    unfindable: int = 0

    def add(self, other: WorkloadFigures) -> None:
        for item in dataclasses.fields(self):
            if item.name != "workload":
                setattr(self, item.name, getattr(self, item.name) + getattr(other, item.name))


@dataclass
class CrashFigures:
    """What ``bench crash`` measured."""

    model: str
    dimension: int
    seed: int
    seconds: float
    window: tuple[float, float]
    workloads: list[WorkloadFigures]
    problems: list[str]

    @property
    def total(self) -> WorkloadFigures:
        total = WorkloadFigures("total")
        for figures in self.workloads:
            total.add(figures)
        return total

    @property
    def passed(self) -> bool:
        """Every must-be-zero figure is 0, and something was acknowledged."""
        total = self.total
        return total.acknowledged > 0 and not any(getattr(total, n) for n in MUST_BE_ZERO)

    def as_dict(self) -> dict[str, Any]:
        """The figures for ``--json``."""
        return {"model": self.model, "dimension": self.dimension, "seed": self.seed,
                "seconds": round(self.seconds, 1), "kill_window_s": list(self.window),
                "passed": self.passed,
                "must_be_zero": list(MUST_BE_ZERO),
                "workloads": [dataclasses.asdict(w) for w in self.workloads],
                "total": dataclasses.asdict(self.total), "problems": self.problems}

    def lines(self) -> list[str]:
        """The figures as the lines the command prints."""
        total = self.total
        header = ("workload  kills  acked writes  lost  phantom  half-stored  orphans"
                  "  integrity failures  backlog at reopen  backlog after resume")
        rows = [header]
        for w in [*self.workloads, total]:
            rows.append(f"{w.workload:<8}  {w.kills:>5}  {w.acknowledged:>12,}  {w.lost:>4}"
                        f"  {w.phantom:>7}  {w.half_stored:>11}  {w.orphans:>7}"
                        f"  {w.integrity_failures:>18}  {w.backlog_found:>17,}"
                        f"  {w.backlog_after + w.failed_after:>20}")
        verdict = ("pass: every must-be-zero figure is 0" if self.passed else
                   "FAIL: a must-be-zero figure is not 0" if total.acknowledged else
                   "FAIL: nothing was acknowledged, so nothing was checked")
        return [
            f"model                 {self.model} ({self.dimension} dims)",
            f"kills                 {total.kills} SIGKILLs, workloads in turn, seed {self.seed}:"
            f" {total.kills - total.early_kills} {self.window[0]:.2f}-{self.window[1]:.2f} s"
            f" after the engine was open, {total.early_kills} while the child was starting;"
            f" {self.seconds:.0f} s in all",
            f"in flight at the kill {total.in_flight_committed} operations committed but not"
            f" yet acknowledged, {total.in_flight_rolled_back} rolled back",
            *([f"recall workload       {total.killed_before_sync} kills between an "
               f"acknowledged commit and the derived index update; {total.chunks_looked_for:,}"
               f" chunks looked for in namespace scope by both legs, by a fresh engine and by"
               f" one open across the kills: {total.unfindable} not found"]
              if any(w.workload == "recall" for w in self.workloads) else []),
            f"after resume          failed chunks {total.failed_after}, archives without"
            f" markdown {total.archives_unwritten}, children that died by themselves"
            f" {total.child_failures}",
            "", *rows, "",
            f"verdict               {verdict}",
            *(f"  {problem}" for problem in self.problems[:20]),
        ]


@dataclass
class _Workload:
    name: str
    db: Path | str  # a SQLite file, or a PostgreSQL URL
    held: crash_ledger.Holdings = field(default_factory=crash_ledger.Holdings)
    figures: WorkloadFigures = field(init=False)
    observer: Any = None  # recall: an engine open across the kills, its matrix built
    checked_rowid: int = 0  # recall: the chunks up to this fts_rowid were looked for

    def __post_init__(self) -> None:
        self.figures = WorkloadFigures(self.name)


def _config_dict(config: Any) -> dict[str, Any]:
    """The config as the JSON the child reads, with the harness's worker batch size."""
    from core.config import load_config

    as_dict = load_config(config).to_dict()
    as_dict["embedding"]["batch_size"] = WORKER_BATCH
    return as_dict


async def _kill_one(workload: _Workload, run: int, folder: Path, config_path: Path,
                    rng: random.Random, window: tuple[float, float],
                    early_share: float) -> tuple[Path, bool, str | None]:
    """Start a child on the workload, kill it; its ack file, whether it was killed early,
    and what it said if it died by itself."""
    acks = folder / f"acks-{run:04d}.jsonl"
    errors = folder / f"child-{run:04d}.err"
    early = rng.random() < early_share
    delay = rng.uniform(0.0, EARLY_WINDOW_S) if early else rng.uniform(*window)
    with errors.open("wb") as stderr:
        child = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "workbench.bench.crash_child", workload.name,
            str(acks), str(config_path), str(rng.getrandbits(31)),
            env={**os.environ, CRASH_DB_VARIABLE: str(workload.db)},
            stdout=asyncio.subprocess.PIPE, stderr=stderr)
    assert child.stdout is not None
    try:
        if not early:
            line = await asyncio.wait_for(child.stdout.readline(), READY_TIMEOUT_S)
            if line.strip() != b"ready":
                await child.wait()
        if child.returncode is None:
            await asyncio.sleep(delay)
    finally:
        if child.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(child.pid, signal.SIGKILL)
        await child.wait()
    if child.returncode != -signal.SIGKILL:
        said = errors.read_text(encoding="utf-8", errors="replace").strip().splitlines()
        return acks, early, f"exit {child.returncode}: {' | '.join(said[-3:])}"
    return acks, early, None


async def _check(workload: _Workload, config: dict[str, Any], acks: Path,
                 problems: list[str], run: int) -> tuple[str, int]:
    """Everything the kill must not have broken; the model's name and size."""
    from core import Engine
    from core.storage import check_file, open_connection

    figures = workload.figures
    chunking = config["chunking"]

    def check_file_once() -> Any:
        if isinstance(workload.db, str):
            return _check_database(workload.db, chunking)
        conn = open_connection(workload.db, read_only=False, busy_timeout_ms=15000)
        try:
            return check_file(conn, max_chars=chunking["max_chars"],
                              overlap_chars=chunking["overlap_chars"])
        finally:
            conn.close()

    def count(findings: Any, when: str) -> None:
        figures.half_stored += findings.half_stored_count
        figures.orphans += findings.orphan_count
        for kind, listed in (("integrity", findings.integrity),
                             ("half-stored", findings.half_stored),
                             ("orphan", findings.orphans)):
            problems.extend(f"{workload.name} kill {run} ({when}): {kind}: {p}" for p in listed)

    before = await asyncio.to_thread(check_file_once)
    figures.backlog_found += before.pending_chunks
    count(before, "at reopen")

    done, open_op = crash_ledger.read_acks(acks)
    figures.acknowledged += len(done)
    async with Engine.open(workload.db, config=config) as engine:
        sessions_of = None if isinstance(workload.db, Path) else workload.name
        held = await crash_ledger.holdings(engine, sessions_of)
        compared = crash_ledger.compare(crash_ledger.expected(workload.held, done), held, open_op)
        figures.lost += compared.lost
        figures.phantom += compared.phantom
        figures.in_flight_committed += compared.open_committed is True
        figures.in_flight_rolled_back += compared.open_committed is False
        problems.extend(f"{workload.name} kill {run}: {p}" for p in compared.problems)
        workload.held = held
        await engine.drain(timeout=300)
        status = await engine.embedding_status()
        figures.backlog_after += status.backlog
        figures.failed_after += status.failed
        if workload.name == "recall":
            assert isinstance(workload.db, Path)
            found = await crash_recall.check_after_kill(engine, workload.observer, workload.db,
                                                        acks, workload.checked_rowid)
            figures.killed_before_sync += found.killed_before_sync
            figures.chunks_looked_for += found.looked_for
            figures.unfindable += len(found.problems)
            problems.extend(f"recall kill {run}: {p}" for p in found.problems)
            workload.checked_rowid = found.checked_rowid
        if isinstance(workload.db, Path) or workload.name == "compact":
            # Repairs archive files only: none is idle.
            await engine.consolidate(idle_hours=10**6)
            unwritten = [a for a in await engine.list_archives() if not a.file_path]
            figures.archives_unwritten += len(unwritten)
        model = (engine.embedder.name, engine.embedder.dimension)

    after = await asyncio.to_thread(check_file_once)
    count(after, "after resume")
    figures.integrity_failures += bool(before.integrity or after.integrity)
    return model


def _check_database(url: str, chunking: dict[str, Any]) -> Any:
    import psycopg

    from core.storage.pg.invariants import check_database

    with psycopg.connect(url, autocommit=True) as conn:
        return check_database(conn, max_chars=chunking["max_chars"],
                              overlap_chars=chunking["overlap_chars"])


async def _refuse_used(url: str, config: dict[str, Any], workloads: tuple[str, ...]) -> None:
    """Make the schema, and refuse a database whose workload sessions hold messages: the
    checks expect to know everything they hold."""
    from core import Engine

    async with Engine.open(url, config=config) as engine:
        for name in workloads:
            for session_id in WORKLOAD_SESSIONS[name]:
                if await engine.recall(session_id, limit=1):
                    raise FileExistsError(f"{session_id} already holds messages; bench crash "
                                          "needs a database without its sessions")
            if name == "notes" and (await engine.list_notes(namespace=NOTES_NAMESPACE,
                                                            limit=1)).notes:
                raise FileExistsError(f"namespace {NOTES_NAMESPACE!r} already holds notes; "
                                      "bench crash needs a database without them")


async def run_crash_bench(config: Any, kills: int, seed: int,
                          say: Callable[[str], None] = print, *,
                          window: tuple[float, float] = KILL_WINDOW_S,
                          early_share: float = EARLY_SHARE, db: str | None = None,
                          workloads: tuple[str, ...] | None = None) -> CrashFigures:
    """Kill ``kills`` children (workloads in turn) and check the file after each.

    A child is killed ``window`` seconds (uniform, seeded) after its engine is open; a share
    ``early_share`` of kills come instead while it is still starting (up to 0.6 s after it
    was spawned). ``db``, a ``postgresql://`` URL, puts every workload in that database
    otherwise each has a temporary file of its own.
    """
    from core import Engine
    from core.locations import parse_location

    url = None
    if db is not None:
        location = parse_location(db)
        if not location.is_postgres:
            raise ValueError(f"{db} is not a postgresql:// URL; a SQLite drill makes its own "
                             "files")
        url = location.target
    names = workloads or (PG_WORKLOADS if url is not None else WORKLOADS)

    rng = random.Random(seed)
    as_dict = _config_dict(config)
    started = time.perf_counter()
    problems: list[str] = []
    with tempfile.TemporaryDirectory(prefix="workbench-crash-") as name:
        folder = Path(name)
        config_path = folder / "config.json"
        config_path.write_text(json.dumps(as_dict), encoding="utf-8")
        running: list[_Workload]
        if url is not None:
            await _refuse_used(url, as_dict, names)
            running = [_Workload(w, url) for w in names]
        else:
            running = [_Workload(w, folder / w / "memory.db") for w in names]
        for workload in running:  # the schema is made once, so every kill hits writes
            if isinstance(workload.db, Path):
                workload.db.parent.mkdir()
                async with Engine.open(workload.db, config=as_dict):
                    pass
                if workload.name == "recall":
                    workload.observer = await crash_recall.open_observer(workload.db, as_dict)
        try:
            model = await _kill_all(running, kills, folder, config_path, rng, window,
                                    early_share, as_dict, problems, say)
        finally:
            for workload in running:
                if workload.observer is not None:
                    await workload.observer.close()
    return CrashFigures(model=model[0], dimension=model[1], seed=seed,
                        seconds=time.perf_counter() - started, window=window, workloads=[
                            w.figures for w in running], problems=problems)


async def _kill_all(workloads: list[_Workload], kills: int, folder: Path, config_path: Path,
                    rng: random.Random, window: tuple[float, float], early_share: float,
                    config: dict[str, Any], problems: list[str],
                    say: Callable[[str], None]) -> tuple[str, int]:
    """Kill ``kills`` children, the workloads in turn, and check after each; the model."""
    model = ("", 0)
    for run in range(1, kills + 1):
        workload = workloads[(run - 1) % len(workloads)]
        acks, early, died = await _kill_one(workload, run, folder, config_path, rng,
                                            window, early_share)
        figures = workload.figures
        figures.kills += 1
        figures.early_kills += early
        if died is not None:
            figures.child_failures += 1
            problems.append(f"{workload.name} kill {run}: the child died by itself, {died}")
        acked_before = figures.acknowledged
        model = await _check(workload, config, acks, problems, run)
        say(f"kill {run}/{kills} {workload.name:<7} "
            f"{'(starting) ' if early else ''}{figures.acknowledged - acked_before} "
            f"acknowledged; lost {figures.lost}, half-stored {figures.half_stored}")
    return model


@click.command("crash")
@click.option("--kills", default=50, show_default=True, type=click.IntRange(min=1),
              help="Children to kill with SIGKILL (the workloads in turn).")
@click.option("--seed", default=1, show_default=True, type=int,
              help="Seed of the kill delays and of the children's operations.")
@click.option("--model", default=None,
              help="model2vec hub id or folder for the children and the checks;"
                   " default: the deterministic backend (no model to load, fastest).")
@click.option("--db", "db", default=None, type=MEMORY,
              help="A postgresql:// URL to write into (default: temporary SQLite files).")
@click.option("--workload", "workloads", multiple=True, type=click.Choice(WORKLOADS),
              help="A workload to run (repeatable); default: all four on SQLite, all but "
                   "recall on PostgreSQL.")
@click.option("--json", "as_json", is_flag=True, help="Print the figures as JSON.")
@click.pass_context
def crash_command(ctx: click.Context, kills: int, seed: int, model: str | None,
                  db: Location | None,
                  workloads: tuple[str, ...], as_json: bool) -> None:
    """Kill writers at random moments; check nothing acknowledged is lost or half-stored."""
    config = with_model(command_config(ctx), model or "deterministic")
    try:
        figures = run_command(run_crash_bench(config, kills, seed,
                                              say=lambda line: click.echo(line, err=True),
                                              db=None if db is None else str(db.target),
                                              workloads=workloads or None))
    except (FileExistsError, ValueError) as error:
        raise click.ClickException(str(error)) from error
    if as_json:
        click.echo(to_json(figures.as_dict()))
    else:
        for line in figures.lines():
            click.echo(line)
    if not figures.passed:
        sys.exit(1)
