"""``workbench bench concurrency``: an agent over MCP and the app's engine write one file at once.

Side A is the agent: a real ``workbench mcp --db FILE --namespace agent`` subprocess driven
by the ``mcp`` client, mostly appending to its conversations, also saving memories and notes,
updating them, writing scratchpads and searching. Side B is the developer in the app: an
``Engine`` in this process, opened as the app opens one, hand-editing notes (its own and the
agent's), writing scratchpads (its own and the agent's), appending to its sessions (and now
and then to the agent's), searching, reading sessions, and polling ``pulse()`` as the app's
header does. Both sides run at once, one operation at a time each, as fast as they can, until
each has done ``--ops`` operations (the quicker side keeps going until the other is done, so
the two overlap for the whole run).

Every operation is timed (an agent's from the request sent to the answer read, so it
includes the MCP round trip over stdio). Anything that fails and was not provoked on purpose
is an error surfaced to a user: an exception, an MCP tool error, a warning the engine logs in
either process (a background write that hit "database is locked" shows up there). After the
run a fresh engine checks that nothing acknowledged was lost:

- every acknowledged append is at its sequence with its content, and no event is there
  that nobody acknowledged;
- every note and scratchpad holds a value some side acknowledged, and the right one: the
  last write, or, where writes of the two sides overlapped in time (both in flight at once,
  so either may have committed last), one of the writes no later write followed. A write's
  window is from its request to its acknowledgement, both read on this process's clock;
- every note the developer removed stays removed; every memory key names the note it named;
- ``PRAGMA integrity_check`` (and FTS5's own check) is ok, and no chunk failed to embed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from workbench.bench.concurrency_check import (
    AGENT,
    DEVELOPER,
    SIDES,
    Ledger,
    Verdict,
    verify,
)
from workbench.bench.concurrency_sides import (
    READS,
    REFUSED,
    AgentSide,
    DeveloperSide,
    keep_going,
)
from workbench.bench.measure import percentile
from workbench.command_line import command_config, echo_json, json_option, model_option
from workbench.command_line import run_command as _run_cli

if TYPE_CHECKING:
    from core.engine import Engine


class _LogCatcher(logging.Handler):
    """Warnings and errors the engine logs in this process: background work that failed."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(f"{record.name}: {record.getMessage()}")


# -- the run -------------------------------------------------------------------------------

def _stats(values: list[float]) -> dict[str, float]:
    if not values:
        return {"count": 0, "p50_ms": 0.0, "p95_ms": 0.0, "max_ms": 0.0}
    return {"count": len(values), "p50_ms": percentile(values, 0.50) * 1000,
            "p95_ms": percentile(values, 0.95) * 1000, "max_ms": max(values) * 1000}


@dataclass
class ConcurrencyFigures:
    """What one ``bench concurrency`` run measured and found."""

    model: str
    dimension: int
    ops_asked: int
    seconds: float
    ops: dict[str, int]
    pulses: int
    errors: dict[str, list[str]]
    background: list[str]
    refusals: dict[str, int]
    verdict: Verdict
    kinds: dict[str, dict[str, dict[str, float]]]  # side -> kind -> stats
    writes: dict[str, dict[str, float]]  # side -> stats over its write kinds
    warnings: list[str]

    @property
    def error_count(self) -> int:
        return sum(len(found) for found in self.errors.values()) + len(self.background)

    @property
    def ok(self) -> bool:
        return (self.error_count == 0 and self.verdict.lost == 0
                and self.verdict.integrity == ["ok"])

    def to_dict(self) -> dict[str, Any]:
        v = self.verdict
        return {
            "model": self.model, "dimension": self.dimension, "ops_per_side": self.ops_asked,
            "seconds": self.seconds, "ops": self.ops, "pulses": self.pulses,
            "errors": {side: len(found) for side, found in self.errors.items()},
            "background_errors": len(self.background), "refusals": self.refusals,
            "lost_writes": v.lost, "appends_checked": v.appends_checked,
            "lost_appends": v.lost_appends, "unacknowledged_events": v.unacknowledged_events,
            "registers_checked": v.registers_checked, "lost_notes": v.lost_notes,
            "lost_scratchpads": v.lost_scratchpads, "removed_notes_back": v.removed_back,
            "memory_keys_moved": v.keys_moved, "races": v.races, "integrity": v.integrity,
            "embedding_failed": v.embedding_failed, "write_latency": self.writes,
            "latency_by_kind": self.kinds, "ok": self.ok,
            "error_examples": [e for found in self.errors.values() for e in found[:5]]
            + self.background[:5], "lost_examples": v.examples}

    def lines(self) -> list[str]:
        v, ops = self.verdict, self.ops
        writes = {side: self.writes[side]["count"] for side in SIDES}
        lines = [
            f"model                 {self.model} ({self.dimension} dims)",
            f"run                   agent over MCP (`workbench mcp` subprocess) and the app's "
            f"engine (this process) on one file, at once, {self.seconds:.1f} s",
            f"operations            agent {ops[AGENT]:,} ({writes[AGENT]:,} writes), "
            f"developer {ops[DEVELOPER]:,} ({writes[DEVELOPER]:,} writes) "
            f"+ {self.pulses:,} pulse polls",
            f"errors surfaced       agent {len(self.errors[AGENT])}, developer "
            f"{len(self.errors[DEVELOPER])}, logged in the background {len(self.background)}"
            f"  (must be 0)",
            f"expected refusals     agent {self.refusals.get(AGENT, 0)} (scratchpad over 32 "
            f"items), developer {self.refusals.get(DEVELOPER, 0)} (name taken)",
            f"lost writes           {v.lost}  (must be 0): of {v.appends_checked:,} appends "
            f"{v.lost_appends} lost, {v.unacknowledged_events} unacknowledged events; of "
            f"{v.registers_checked:,} notes and scratchpads {v.lost_notes + v.lost_scratchpads}"
            f" wrong; {v.removed_back} removed notes back; {v.keys_moved} memory keys moved",
            f"overlapping writes    {v.races} notes or scratchpads whose last writes by the "
            f"two sides were in flight at once (either value accepted)",
            f"integrity             {', '.join(v.integrity)} (PRAGMA integrity_check, FTS5 "
            f"integrity-check); {v.embedding_failed} chunks failed to embed",
        ]
        for side, label in ((AGENT, "agent writes  "), (DEVELOPER, "developer writes")):
            s = self.writes[side]
            lines.append(f"{label:<22}p50 {s['p50_ms']:.2f} ms, p95 {s['p95_ms']:.2f} ms, "
                         f"max {s['max_ms']:.1f} ms"
                         + ("  (round trip over MCP stdio)" if side == AGENT else ""))
        total_writes = writes[AGENT] + writes[DEVELOPER]
        lines.append(f"throughput            agent {ops[AGENT] / self.seconds:,.0f} ops/s, "
                     f"developer {ops[DEVELOPER] / self.seconds:,.0f} ops/s; "
                     f"{total_writes / self.seconds:,.0f} writes/s together")
        lines.append("by kind               count, p50 / p95 / max ms")
        for side in SIDES:
            for kind, s in sorted(self.kinds[side].items(), key=lambda kv: -kv[1]["count"]):
                mark = ("" if kind in READS else "  refused on purpose" if kind in REFUSED
                        else "  write")
                lines.append(f"  {side:<9} {kind:<26}{s['count']:>6,}  {s['p50_ms']:7.2f} / "
                             f"{s['p95_ms']:7.2f} / {s['max_ms']:7.1f}{mark}")
        for text in [e for found in self.errors.values() for e in found[:5]] \
                + self.background[:5] + v.examples:
            lines.append(f"! {text}")
        return lines


async def _both_sides(session: Any, engine: Engine, ledger: Ledger, ops: int, seed: int) -> float:
    """Run the agent, the developer and the app's poll at once; the seconds it took."""
    agent = AgentSide(session, ledger, seed)
    developer = DeveloperSide(engine, agent, ledger, seed + 1)
    stop = asyncio.Event()

    async def drive(side: AgentSide | DeveloperSide) -> None:
        while keep_going(ledger, ops):
            await side.step()

    started = time.perf_counter()
    poller = asyncio.create_task(developer.poll(stop))
    try:
        await asyncio.gather(drive(agent), drive(developer))
    finally:
        stop.set()
        await poller
    return time.perf_counter() - started


async def _noting(failures: list[str], what: str, awaitable: Any) -> None:
    """Await, and note a failure instead of raising it: the run's figures still print."""
    try:
        await awaitable
    except Exception as exc:
        failures.append(f"{what}: {type(exc).__name__}: {exc}")


def _server_problems(stderr_text: str) -> list[str]:
    """Lines of the server's stderr that tell of a failure (its start-up lines excepted)."""
    bad = ("WARNING", "ERROR", "CRITICAL", "Traceback", "locked", "busy", "Exception")
    return [f"mcp server: {line}" for line in stderr_text.splitlines()
            if any(word in line for word in bad) and not line.startswith("warning: ")]


async def run_concurrency(config_path: Path | None, model: str | None, ops: int,
                          say: Callable[[str], None] = print,
                          folder: Path | None = None, seed: int = 11) -> ConcurrencyFigures:
    """Run both sides on a fresh file in ``folder`` (a temporary one by default)."""
    with contextlib.ExitStack() as stack:
        if folder is None:
            folder = Path(stack.enter_context(
                tempfile.TemporaryDirectory(prefix="workbench-bench-")))
        return await run_command(config_path, model, ops, say, folder, seed)


async def run_command(config_path: Path | None, model: str | None, ops: int,
               say: Callable[[str], None], folder: Path, seed: int) -> ConcurrencyFigures:
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    from core import Engine
    from core.config import load_config
    from workbench.command_line import with_model

    config = with_model(load_config(config_path), model)
    path = folder / "memory.db"
    env = {k: v for k, v in os.environ.items() if k != "WORKBENCH_CONFIG"}
    if config_path is not None:
        env["WORKBENCH_CONFIG"] = str(Path(config_path).resolve())
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
    args = ["-m", "workbench.cli", "mcp", "--db", str(path), "--namespace", AGENT]
    if model is not None:
        args += ["--model", model]
    params = StdioServerParameters(command=sys.executable, args=args, env=env, cwd=folder)

    ledger = Ledger()
    catcher = _LogCatcher()
    watched = [logging.getLogger(name) for name in ("core", "workbench")]
    loop = asyncio.get_running_loop()
    loop_errors: list[str] = []
    old_handler = loop.get_exception_handler()
    loop.set_exception_handler(lambda _loop, context: loop_errors.append(
        f"event loop: {context.get('message')} {context.get('exception')!r}"))
    for logger in watched:
        logger.addHandler(catcher)
    stderr_path = folder / "mcp-server-stderr.txt"
    say(f"starting `workbench mcp` and the app's engine on {path} …")
    failures: list[str] = []  # what broke outside an operation: a drain, a close, the session
    try:
        with stderr_path.open("w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write), \
                    ClientSession(read, write) as session:
                await session.initialize()
                engine = await Engine.open(path, config=config, defer_model=True)
                try:
                    await engine.model_ready()
                    model_name, dimension = engine.embedder.name, engine.embedder.dimension
                    warnings = list(engine.warnings)
                    say(f"running {ops:,} operations a side at once …")
                    seconds = await _both_sides(session, engine, ledger, ops, seed)
                    say("run done; waiting for the embedding backlog …")
                    await _noting(failures, "draining the embedding backlog",
                                  engine.drain(timeout=300))
                finally:
                    await _noting(failures, "closing the app's engine", engine.close())
    except Exception as exc:  # the MCP session or its server failed as it closed
        failures.append(f"mcp session: {type(exc).__name__}: {exc}")
    finally:
        for logger in watched:
            logger.removeHandler(catcher)
        loop.set_exception_handler(old_handler)
    background = (failures + catcher.records + loop_errors
                  + _server_problems(stderr_path.read_text()))

    say("checking every acknowledged write with a fresh engine …")
    verdict = await verify(path, config, ledger)
    kinds = {side: {kind: _stats(values) for kind, values in ledger.latencies[side].items()}
             for side in SIDES}
    writes = {side: _stats([value for kind, values in ledger.latencies[side].items()
                            if kind not in READS | REFUSED for value in values])
              for side in SIDES}
    return ConcurrencyFigures(
        model=model_name, dimension=dimension, ops_asked=ops, seconds=seconds,
        ops=dict(ledger.done), pulses=len(ledger.latencies[DEVELOPER].get("pulse", [])),
        errors=ledger.errors, background=background, refusals=dict(ledger.refusals),
        verdict=verdict, kinds=kinds, writes=writes, warnings=warnings)


# -- the command ---------------------------------------------------------------------------

@click.command("concurrency")
@click.option("--ops", default=3000, show_default=True, type=click.IntRange(min=10),
              help="Operations per side (the quicker side keeps going until both are done).")
@model_option
@json_option
@click.pass_context
def bench_concurrency(ctx: click.Context, ops: int, model: str | None, as_json: bool) -> None:
    """An agent over MCP and the app's engine write one file at once: errors, lost writes,
    write latency. Exits 1 when an error surfaced or a write was lost."""
    config_path = ctx.obj.get("config_path") if ctx.obj else None
    command_config(ctx)  # a bad config file is refused here, in one line, before anything runs
    figures = _run_cli(run_concurrency(config_path, model, ops,
                                       say=lambda line: click.echo(line, err=True)))
    for warning in figures.warnings:
        click.echo(f"warning: {warning}", err=True)
    if as_json:
        echo_json(figures.to_dict())
    else:
        for line in figures.lines():
            click.echo(line)
    if not figures.ok:
        sys.exit(1)
