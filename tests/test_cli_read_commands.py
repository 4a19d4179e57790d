"""Read commands read: no command starts background work on the memory it opens.

Each command runs on a file where a consolidation pass is due (the last one a year ago,
every conversation idle), under a config that runs consolidation. A command that reads must
leave the file as it found it and start no consolidation pass, compaction, rolling summary
or index upkeep; a command that writes does its one job and starts no background work
either (that belongs to the app, an agent, ``workbench mcp``). Every command opens the
engine through one function, which the last test holds to.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from core import Engine
from core.evaluation import store_dataset
from core.evaluation.dataset import Dataset, DatasetMessage, DatasetQuery, write_dataset
from core.summary.compaction import LAST_RUN_KEY, Compactor
from core.summary.service import Summaries
from core.upkeep import Upkeep
from tests.cli_helpers import invoke

ROOT = Path(__file__).resolve().parents[1]
LONG_AGO = "2020-01-01T00:00:00Z"
DUE_CONFIG = ('[embedding]\nbackend = "deterministic"\nfallback_dimensions = 32\n'
              "[consolidation]\nenabled = true\ninterval_hours = 1\nidle_hours = 0\n"
              '[scheduler]\ncommand = "true"\n')

# Each command that only reads, with what it needs; FILE is replaced by a path.
READS: dict[str, list[str]] = {
    "search session": ["search", "pool exhausted", "--session", "s1"],
    "search namespace": ["search", "pool", "--namespace", "default"],
    "log": ["log"],
    "log --replay": ["log", "--replay", "1"],
    "eval": ["eval", "--dataset", "DATASET"],
    "sessions list": ["sessions", "list"],
    "sessions show": ["sessions", "show", "s1"],
    "sessions context": ["sessions", "context", "s1", "--query", "pool"],
    "sessions export": ["sessions", "export", "s1", "--out", "OUT/s1.json"],
    "notes list": ["notes", "list"],
    "notes show": ["notes", "show", "runbook"],
    "notes export": ["notes", "export", "--out", "OUT/notes.json"],
    "facts list": ["facts", "list"],
    "scratchpad list": ["scratchpad", "list"],
    "scratchpad show": ["scratchpad", "show", "s1"],
    "schedules list": ["schedules", "list"],
    "schedules runs": ["schedules", "runs", "nightly"],
    "export session": ["export", "session", "s1", "--format", "jsonl", "--out", "OUT/s.jsonl"],
    "export namespace": ["export", "namespace", "default", "--format", "markdown",
                         "--out", "OUT/md"],
    "doctor": ["doctor"],
}

# Commands that write: their own job only, no background pass beside it.
WRITES: dict[str, list[str]] = {
    "import jsonl": ["import", "jsonl", "CHATS"],
    "reindex": ["reindex"],
    "sessions append": ["sessions", "append", "s2", "--role", "user", "--content", "hi"],
    "notes add": ["notes", "add", "second", "--content", "a second note"],
    "summarize": ["summarize", "s1"],
    "scheduler run": ["scheduler", "run", "--once"],
}


@pytest.fixture
def due_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A memory whose consolidation pass is due, under a config that runs one."""
    config = tmp_path / "due.toml"
    config.write_text(DUE_CONFIG)
    monkeypatch.setenv("WORKBENCH_CONFIG", str(config))
    dataset = Dataset()
    dataset.messages["s1"] = [
        DatasetMessage("s1", f"m{n}", n, {"role": "user", "content": text,
                                          "metadata": {"message_id": f"m{n}"}})
        for n, text in enumerate(["the db pool is exhausted", "restart the pool",
                                  "the pool is fine now"], 1)]
    dataset.queries.append(DatasetQuery("q1", "s1", "pool exhausted", ("m1",)))
    write_dataset(dataset, tmp_path / "dataset.jsonl")
    (tmp_path / "chats.jsonl").write_text(json.dumps(
        {"session_id": "s3", "message": {"role": "user", "content": "imported"}}) + "\n")
    db = tmp_path / "due.db"

    async def fill() -> None:
        quiet = {"embedding": {"backend": "deterministic", "fallback_dimensions": 32},
                 "consolidation": {"enabled": False}}
        async with Engine.open(db, config=quiet) as engine:
            await store_dataset(engine, dataset)
            await engine.add_note("runbook", "when the pool is exhausted, restart it")
            await engine.write_scratchpad("s1", ["check the pool"])
            await engine.schedules.create_schedule(
                user_id="u", goal="tidy up", cadence={"kind": "interval", "value": "1d"},
                name="nightly")
            await engine.drain()
            await engine.search(query="pool", session_id="s1", caller="cli")
            await engine.backend.write_meta(LAST_RUN_KEY, LONG_AGO)

    asyncio.run(fill())
    return db


@pytest.fixture
def background(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """What background work the engines a command opens start, and what they compact or
    summarise, in order."""
    started: list[str] = []
    compactor_start, upkeep_start = Compactor.start, Upkeep.start
    compact, check = Compactor.compact, Summaries._check

    def start_consolidation(self: Compactor) -> None:
        compactor_start(self)
        if self._loop is not None:
            started.append("consolidation pass")

    def start_upkeep(self: Upkeep) -> None:
        upkeep_start(self)
        if self._task is not None:
            started.append("index upkeep")

    async def compacting(self: Compactor, *args: Any, **kwargs: Any) -> Any:
        started.append("compaction")
        return await compact(self, *args, **kwargs)

    async def summarising(self: Summaries, *args: Any, **kwargs: Any) -> Any:
        started.append("rolling summary")
        return await check(self, *args, **kwargs)

    monkeypatch.setattr(Compactor, "start", start_consolidation)
    monkeypatch.setattr(Upkeep, "start", start_upkeep)
    monkeypatch.setattr(Compactor, "compact", compacting)
    monkeypatch.setattr(Summaries, "_check", summarising)
    return started


def _file_state(db: Path) -> dict[str, Any]:
    """What a consolidation pass, a compaction or a summary would change in the file."""
    async def read() -> dict[str, Any]:
        async with Engine.open(db, config={"embedding": {"backend": "deterministic",
                                                          "fallback_dimensions": 32}},
                               read_only=True, start_worker=False) as engine:
            notes = await engine.list_notes()
            return {"last_run": await engine.backend.read_meta(LAST_RUN_KEY),
                    "notes": sorted(note.name for note in notes.notes),
                    "s1": [(r.sequence, r.payload.get("content")) for r in
                           await engine.recall("s1")],
                    "summary": (await engine.summary_state("s1")).to_dict()}
    return asyncio.run(read())


def _args(args: list[str], tmp_path: Path, db: Path) -> list[str]:
    (tmp_path / "out").mkdir(exist_ok=True)
    paths = {"DATASET": tmp_path / "dataset.jsonl", "CHATS": tmp_path / "chats.jsonl"}
    filled = [str(paths.get(arg, arg)).replace("OUT", str(tmp_path / "out")) for arg in args]
    return [*filled, "--db", str(db)]


@pytest.mark.parametrize("name", sorted(READS))
def test_a_read_command_leaves_a_due_consolidation_alone(
        runner: CliRunner, tmp_path: Path, due_file: Path, background: list[str],
        name: str) -> None:
    before = _file_state(due_file)
    result = invoke(runner, *_args(READS[name], tmp_path, due_file))
    assert result.exit_code == 0, result.output
    assert background == [], f"`workbench {name}` started {background}"
    assert _file_state(due_file) == before


@pytest.mark.parametrize("name", sorted(WRITES))
def test_a_write_command_starts_no_background_pass(
        runner: CliRunner, tmp_path: Path, due_file: Path, background: list[str],
        name: str) -> None:
    result = invoke(runner, *_args(WRITES[name], tmp_path, due_file))
    assert result.exit_code == 0, result.output
    assert "consolidation pass" not in background and "index upkeep" not in background, (
        f"`workbench {name}` started {background}")
    assert _file_state(due_file)["last_run"] == LONG_AGO


def test_every_command_opens_the_engine_through_one_function() -> None:
    opened_directly = [
        f"{path.relative_to(ROOT)}:{number}"
        for folder in ("workbench/cli", "workbench/mcp") for path in (ROOT / folder).glob("*.py")
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if re.search(r"\bEngine\.open\(", line) and path.name != "support.py"]
    assert opened_directly == []


# -- item 8: what read commands say -------------------------------------------------------


def test_a_search_in_a_session_that_does_not_exist_is_an_error(
        runner: CliRunner, tmp_path: Path, due_file: Path) -> None:
    result = invoke(runner, "search", "pool", "--session", "no-such", "--db", due_file)
    assert result.exit_code == 1, result.output
    assert result.stderr == "error: no session 'no-such' to search\n"
    found = invoke(runner, "search", "pool", "--session", "s1", "--db", due_file)
    assert found.exit_code == 0 and found.stdout.startswith("3 results"), found.output


def test_the_log_lists_queries_newest_first_whichever_process_wrote_them_first(
        runner: CliRunner, tmp_path: Path, due_file: Path) -> None:
    config = {"embedding": {"backend": "deterministic", "fallback_dimensions": 32},
              "consolidation": {"enabled": False}}

    async def two_processes() -> None:
        async with Engine.open(due_file, config=config) as early, \
                Engine.open(due_file, config=config) as late:
            await early.search(query="asked first", session_id="s1", caller="cli")
            await asyncio.sleep(0.01)  # the log's times are to the millisecond
            await late.search(query="asked second", session_id="s1", caller="cli")
            await late.retrieval.flush_logs()  # the later query is written first
            await early.retrieval.flush_logs()

    asyncio.run(two_processes())
    entries = json.loads(invoke(runner, "log", "--json", "--db", due_file).stdout)
    assert [e["query"] for e in entries[:2]] == ["asked second", "asked first"]
    times = [e["created_at"] for e in entries]
    assert times == sorted(times, reverse=True)


def test_doctor_names_the_memory_files_storage_from_its_backend(
        runner: CliRunner, due_file: Path) -> None:
    report = json.loads(invoke(runner, "doctor", "--json", "--db", due_file).stdout)
    assert set(report["database"]["storage"]) == {"sqlite", "sqlite_vec"}
    assert report["sqlite"]["fts5"] is True
