"""``workbench bench diskfull``: writes on a disk that fills and empties, counted.

Every kind of write the engine makes (messages, notes, scratchpad, facts, schedules, rolling
summaries, compactions, and the embedding worker's vectors) is tried at random while the
file's room comes and goes. Each write either succeeds or is refused with
:class:`core.errors.StorageFull`; anything else is a crash. The file is checked with
``integrity_check`` as it goes, and at the end every accepted write must be there and every
refused one absent (else it counts as a corruption). Once the room is back, every kind of
write must succeed again, and the embedding worker must still be running.

Two ways to fill the disk:

- ``cap``: ``PRAGMA max_page_count`` on the writer (``engine.backend.cap_size``): SQLite
  fails with SQLITE_FULL exactly as on a full disk. Runs anywhere.
- ``tmpfs``: a real file system of a few MiB, mounted for the run and filled with a
  ballast file until the kernel says ENOSPC. Needs root (``mount``); skipped otherwise.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from core.engine import Engine

CONFIG: dict[str, Any] = {
    "embedding": {"backend": "deterministic", "fallback_dimensions": 64, "batch_size": 16},
    "summary": {"token_budget": 400, "auto": False, "min_turns": 2},
    "consolidation": {"enabled": False},
}
KINDS = ("append", "note", "scratchpad", "fact", "schedule", "summary", "compaction", "drain")
_WEIGHTS = (40, 14, 8, 8, 6, 8, 3, 13)


@dataclass
class DiskFullFigures:
    """What one drill counted."""

    mode: str
    operations: int = 0
    succeeded: int = 0
    refused: Counter[str] = field(default_factory=Counter)
    crashes: list[str] = field(default_factory=list)
    corruptions: list[str] = field(default_factory=list)
    integrity_checks: int = 0
    fills: int = 0
    recovered: bool = False
    worker_alive: bool = False
    writer_renewed: int = 0
    seconds: float = 0.0

    def lines(self) -> list[str]:
        refused = sum(self.refused.values())
        by_kind = ", ".join(f"{kind} {n}" for kind, n in sorted(self.refused.items()))
        return [
            f"mode                  {self.mode}",
            f"operations            {self.operations:,} in {self.seconds:.1f} s, the disk "
            f"filled {self.fills} times",
            f"succeeded             {self.succeeded:,}",
            f"refused cleanly       {refused:,} (StorageFull){': ' + by_kind if by_kind else ''}",
            f"crashes               {len(self.crashes)} (any other exception)"
            + (f": {self.crashes[0]}" if self.crashes else ""),
            f"corruptions           {len(self.corruptions)} (integrity_check failures, refused "
            "writes found, accepted writes lost)"
            + (f": {self.corruptions[0]}" if self.corruptions else ""),
            f"integrity checks      {self.integrity_checks}",
            f"writer renewed        {self.writer_renewed} (a failed sqlite-vec insert left it "
            "unable to commit)",
            "after space returned  "
            + ("every kind of write succeeded" if self.recovered else "WRITES STILL FAIL")
            + "; embedding worker "
            + ("alive, backlog drained" if self.worker_alive else "DEAD"),
        ]


@dataclass
class _Expected:
    """What the file must hold: the accepted writes."""

    messages: dict[str, list[int]] = field(default_factory=dict)
    notes: set[str] = field(default_factory=set)
    facts: dict[str, str] = field(default_factory=dict)
    schedules: set[str] = field(default_factory=set)
    scratchpads: dict[str, list[str]] = field(default_factory=dict)


class _Room:
    """Takes the file's room away and gives it back: a page cap, or a real disk's ballast."""

    def __init__(self, engine: Engine, ballast: Path | None) -> None:
        self._engine = engine
        self._ballast = ballast

    async def fill(self, slack_pages: int) -> None:
        if self._ballast is None:
            await self._engine.backend.cap_size(slack_pages)
            return
        _fill_disk(self._ballast, keep_bytes=slack_pages * 4096)

    async def free(self) -> None:
        if self._ballast is None:
            await self._engine.backend.cap_size(None)
            return
        with contextlib.suppress(FileNotFoundError):
            self._ballast.unlink()


def _fill_disk(ballast: Path, keep_bytes: int) -> None:
    """Grow ``ballast`` until the file system is full, then give back ``keep_bytes``."""
    fd = os.open(ballast, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    block = b"\0" * 65536
    try:
        while True:
            try:
                os.write(fd, block)
            except OSError:
                if len(block) == 4096:
                    break
                block = block[:4096]
    finally:
        os.close(fd)
    size = ballast.stat().st_size
    os.truncate(ballast, max(0, size - keep_bytes))


async def drill(path: Path, *, operations: int, seed: int, ballast: Path | None = None,
                mode: str = "cap", say: Callable[[str], None] = lambda line: None,
                ) -> DiskFullFigures:
    """Run ``operations`` random writes on a new file at ``path`` while its room comes and
    goes; count what succeeded, what was refused, what crashed, what got corrupted."""
    rng = random.Random(seed)
    figures = DiskFullFigures(mode)
    expected = _Expected()
    started = time.perf_counter()
    with _counting_renewals(figures):
        await _drill(path, operations, rng, ballast, figures, expected, say)
    figures.seconds = time.perf_counter() - started
    return figures


async def _drill(path: Path, operations: int, rng: random.Random, ballast: Path | None,
                 figures: DiskFullFigures, expected: _Expected,
                 say: Callable[[str], None]) -> None:
    from core import Engine
    from core.errors import StorageFull

    async with Engine.open(path, config=CONFIG) as engine:
        room = _Room(engine, ballast)
        full = False
        for step in range(operations):
            if step % 25 == 0:  # the disk fills (a little slack left, or none) or empties
                if full or rng.random() < 0.4:
                    await room.free()
                    full = False
                else:
                    await room.fill(rng.choice((0, 0, 1, 2, 4, 8)))
                    figures.fills += 1
                    full = True
            kind = rng.choices(KINDS, _WEIGHTS)[0]
            figures.operations += 1
            try:
                await _operate(engine, kind, step, rng, expected)
            except StorageFull:
                figures.refused[kind] += 1
            except Exception as exc:  # a crash: what this drill exists to find
                figures.crashes.append(f"{kind}: {type(exc).__name__}: {exc}")
            else:
                figures.succeeded += 1
            if step % 50 == 49:
                await _check_integrity(engine, figures)
            if step % 200 == 199:
                say(f"{step + 1:,} operations, {sum(figures.refused.values()):,} refused, "
                    f"{len(figures.crashes)} crashes")
        await room.free()
        await _check_integrity(engine, figures)
        figures.recovered = await _every_kind_writes(engine, rng, expected, figures)
        await _check_contents(engine, expected, figures)
        try:
            await asyncio.wait_for(engine.drain(), 60)
            figures.worker_alive = (await engine.embedding_status()).backlog == 0
        except Exception as exc:
            figures.crashes.append(f"final drain: {type(exc).__name__}: {exc}")


@contextlib.contextmanager
def _counting_renewals(figures: DiskFullFigures) -> Iterator[None]:
    """Count the writer connections the storage layer renewed (it logs each one)."""
    class Count(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if "opening a new one" in record.getMessage():
                figures.writer_renewed += 1

    logger = logging.getLogger("core.storage.sqlite.connection")
    handler = Count(logging.WARNING)
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)


async def _operate(engine: Engine, kind: str, step: int, rng: random.Random,
                   expected: _Expected) -> None:
    """One write of ``kind``; the expectation is updated only once it succeeded."""
    from core.errors import InvalidInput

    session = f"s{rng.randrange(6)}"
    if kind == "append":
        words = rng.randrange(5, 600)
        text = " ".join(f"w{rng.randrange(5000)}" for _ in range(words))
        result = await engine.append(session, {"role": rng.choice(("user", "assistant")),
                                               "content": f"step {step}: {text}"})
        expected.messages.setdefault(session, []).append(result.sequence)
    elif kind == "note":
        name = f"note-{step}"
        await engine.add_note(name, " ".join(f"n{rng.randrange(9000)}"
                                             for _ in range(rng.randrange(5, 800))))
        expected.notes.add(name)
    elif kind == "scratchpad":
        items = [f"item {step}.{i} " + "x" * rng.randrange(200)
                 for i in range(rng.randrange(1, 30))]
        await engine.write_scratchpad(session, items)
        expected.scratchpads[session] = items
    elif kind == "fact":
        key = f"k{rng.randrange(40)}"
        value = f"v{step} " + "y" * rng.randrange(4000)
        await engine.upsert_fact("drill", key, value)
        expected.facts[key] = value
    elif kind == "schedule":
        name = f"job-{step}"
        await engine.schedules.create_schedule(
            "drill", "check " + "z" * rng.randrange(3000),
            {"kind": "interval", "value": "6h", "timezone": "UTC"}, name=name)
        expected.schedules.add(name)
    elif kind == "summary":
        if session in expected.messages:
            await engine.summarize(session)
    elif kind == "compaction":
        if len(expected.messages.get(session, ())) >= 2:
            with contextlib.suppress(InvalidInput):  # nothing new since its last marker
                await engine.compact(session)
    elif kind == "drain":
        with contextlib.suppress(TimeoutError):
            await engine.drain(timeout=2)


async def _check_integrity(engine: Engine, figures: DiskFullFigures) -> None:
    figures.integrity_checks += 1
    problems = await engine.backend.integrity_check()
    if problems != ["ok"]:
        figures.corruptions.append(f"integrity_check: {problems[:3]}")


async def _every_kind_writes(engine: Engine, rng: random.Random, expected: _Expected,
                             figures: DiskFullFigures) -> bool:
    """With the room back, each kind of write succeeds again."""
    ok = True
    for number, kind in enumerate(KINDS):
        try:
            await _operate(engine, kind, 10_000_000 + number, rng, expected)
        except Exception as exc:
            figures.crashes.append(f"after recovery, {kind}: {type(exc).__name__}: {exc}")
            ok = False
    return ok


async def _check_contents(engine: Engine, expected: _Expected, figures: DiskFullFigures) -> None:
    """Every accepted write is there; no refused one is."""
    bad = figures.corruptions
    for session, sequences in expected.messages.items():
        stored = {record.sequence for record in await engine.recall(session)}
        ours = {s for s in stored if s in set(sequences)}
        if ours != set(sequences):
            bad.append(f"{session}: accepted messages lost: {sorted(set(sequences) - stored)}")
        extra = {r.sequence for r in await engine.recall(session)
                 if r.payload.get("role") in ("user", "assistant")
                 and str(r.payload.get("content", "")).startswith("step ")} - set(sequences)
        if extra:
            bad.append(f"{session}: refused messages found: {sorted(extra)}")
    names: set[str] = set()
    while True:
        page = await engine.list_notes(limit=1000, offset=len(names))
        names.update(note.name for note in page.notes)
        if len(page.notes) < 1000:
            break
    names = {name for name in names if name.startswith("note-")}
    if names != expected.notes:
        bad.append(f"notes: lost {sorted(expected.notes - names)[:5]}, "
                   f"refused but found {sorted(names - expected.notes)[:5]}")
    facts = {fact.key: fact.value for fact in await engine.list_facts(category="drill")}
    if facts != expected.facts:
        differ = sorted(set(facts) ^ set(expected.facts)
                        | {k for k in facts if facts[k] != expected.facts.get(k)})
        bad.append(f"facts differ on {differ[:5]}")
    for session, items in expected.scratchpads.items():
        state = await engine.read_scratchpad(session)
        if state is None or list(state.items) != items:
            bad.append(f"{session}: scratchpad is not the last accepted write")
    listed = await engine.schedules.search_schedules("drill", limit=100_000)
    found = {schedule.name for schedule in listed.schedules}
    if found != expected.schedules:
        bad.append(f"schedules: lost {sorted(expected.schedules - found, key=str)[:5]}, "
                   f"refused but found {sorted(found - expected.schedules, key=str)[:5]}")


@contextlib.contextmanager
def mounted_tmpfs(size_mb: int) -> Iterator[Path | str]:
    """A tmpfs of ``size_mb`` MiB mounted on a new folder for the block (yields it), or the
    reason it cannot be (yields a str): mounting needs root."""
    folder = Path(tempfile.mkdtemp(prefix="workbench-diskfull-"))
    try:
        if not hasattr(os, "geteuid") or os.geteuid() != 0 or shutil.which("mount") is None:
            yield "mounting a tmpfs needs root"
            return
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_mb}m", "tmpfs",
                               str(folder)], capture_output=True, text=True, check=False)
        if done.returncode != 0:
            yield f"mount refused: {done.stderr.strip() or done.returncode}"
            return
        try:
            yield folder
        finally:
            subprocess.run(["umount", "-l", str(folder)], capture_output=True, check=False)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


async def run_diskfull_bench(operations: int, seed: int, tmpfs_mb: int,
                             say: Callable[[str], None]) -> list[DiskFullFigures | str]:
    """The drill on a capped file, then on a real tmpfs (or why that was skipped)."""
    results: list[DiskFullFigures | str] = []
    with tempfile.TemporaryDirectory(prefix="workbench-diskfull-") as folder:
        say("page cap: PRAGMA max_page_count on the writer")
        results.append(await drill(Path(folder) / "cap.db", operations=operations, seed=seed,
                                   mode="page cap (PRAGMA max_page_count: SQLITE_FULL)",
                                   say=say))
    with mounted_tmpfs(tmpfs_mb) as where:
        if isinstance(where, str):
            results.append(f"tmpfs: skipped ({where})")
        else:
            say(f"tmpfs: {tmpfs_mb} MiB mounted on {where}, filled with a ballast file")
            results.append(await drill(where / "full.db", operations=operations, seed=seed,
                                       ballast=where / "ballast",
                                       mode=f"tmpfs {tmpfs_mb} MiB (real ENOSPC)", say=say))
    return results


@click.command("diskfull")
@click.option("--operations", default=1000, show_default=True, type=click.IntRange(min=1),
              help="Random writes per drill.")
@click.option("--seed", default=7, show_default=True, help="Seed of the random writes.")
@click.option("--tmpfs-mb", default=64, show_default=True, type=click.IntRange(min=4),
              help="Size of the real file system the second drill fills (needs root).")
def diskfull_command(operations: int, seed: int, tmpfs_mb: int) -> None:
    """Disk full: random writes while the disk fills and empties; refused, crashes (must be
    0), corruptions (must be 0), on a capped file and on a real tmpfs."""
    # The engine's warnings (a worker waiting out the full disk) are what is being tested,
    # not news: only the figures and the progress lines are printed.
    logging.getLogger("core").setLevel(logging.ERROR)
    results = asyncio.run(run_diskfull_bench(operations, seed, tmpfs_mb,
                                             lambda line: click.echo(line, err=True)))
    for result in results:
        click.echo("")
        if isinstance(result, str):
            click.echo(result)
        else:
            click.echo("\n".join(result.lines()))
    if any(not isinstance(r, str) and (r.crashes or r.corruptions or not r.recovered)
           for r in results):
        sys.exit(1)
