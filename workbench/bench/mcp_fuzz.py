"""``workbench bench mcp-fuzz``: a real ``workbench mcp`` fed seeded hostile lines over raw
stdio, and what came back counted.

Valid tool calls are mixed with truncated JSON, lone surrogates in strings and keys, NUL,
nesting 300 to 100,000 deep, 1-5 MB lines, invalid UTF-8, wrong JSON-RPC shapes and param
types, unknown methods, batches, notifications and stray responses. Every request must get
exactly one answer (under its id, or ``null`` when the line holds none), the server must be
alive at the end, and nothing a refused line carried may be in the memory: each line that
could write carries a marker of its own, and after the run every table of the file is
searched for markers. A marker found is allowed only for a call answered with a result.
"""

from __future__ import annotations

import json
import os
import queue
import random
import re
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click

NAMESPACE = "fuzz"
ANSWER_TIMEOUT_S = 60.0
"""How long one expected answer is waited for before it counts as missing."""

ANSWER_BY_ID = "id"
ANSWER_NULL = "null"
NO_ANSWER = "none"

WRITE_TOOLS = ("memory_save", "save_memory", "conversation_append")


@dataclass(frozen=True)
class Case:
    """One line sent: its bytes, what kind of line it is, and what must come back.

    ``answer`` is :data:`ANSWER_BY_ID` (one answer under ``request_id``), :data:`ANSWER_NULL`
    (one answer with a null id) or :data:`NO_ANSWER`; ``refused`` is True when the answer
    must be an error, None when either is right; ``marker`` is the text it would store."""

    kind: str
    line: bytes
    answer: str
    request_id: int | str | None = None
    refused: bool | None = None
    marker: str | None = None
    stores: bool = False


class Generator:
    """Seeded lines: ``case(n)`` is the n-th line of the run."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.random = random.Random(seed)

    def marker(self, n: int) -> str:
        return f"fz{self.seed}x{n}q"

    def request(self, request_id: int | str, method: str, params: Any) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}

    def call(self, n: int | str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return self.request(n, "tools/call", {"name": tool, "arguments": arguments})

    def write_call(self, n: int) -> tuple[str, dict[str, Any]]:
        mark = self.marker(n)
        tool = self.random.choice(WRITE_TOOLS)
        if tool == "memory_save":
            return tool, {"content": f"{mark} lantern note", "tags": ["fuzz"]}
        if tool == "save_memory":
            return tool, {"key": f"key-{mark}", "content": f"{mark} saved"}
        return tool, {"session_id": f"s{self.random.randrange(5)}", "role": "user",
                      "content": f"{mark} said"}

    def case(self, n: int) -> Case:
        kinds = [
            ("write", 18), ("read", 8), ("wrong types", 8), ("surrogate", 8), ("nul", 4),
            ("deep", 5), ("huge", 2), ("bad utf-8", 7), ("truncated", 8), ("garbage", 6),
            ("bad shape", 8), ("bad id", 3), ("batch", 2), ("unknown method", 4),
            ("notification", 5), ("response", 2)]
        kind = self.random.choices([k for k, _ in kinds], [w for _, w in kinds])[0]
        return getattr(self, "_" + kind.replace(" ", "_").replace("-", "_"))(n)

    def _line(self, message: Any, *, escaped: bool | None = None) -> bytes:
        """``message`` as a line, its non-ASCII text written raw or as ``\\u`` escapes (a
        lone surrogate only ever escaped: raw, it would be invalid UTF-8)."""
        if escaped is None:
            escaped = self.random.random() < 0.5
        return json.dumps(message, ensure_ascii=escaped).encode("utf-8")

    def _write(self, n: int) -> Case:
        tool, arguments = self.write_call(n)
        return Case("write", self._line(self.call(n, tool, arguments)), ANSWER_BY_ID, n,
                    marker=self.marker(n), stores=True)

    def _read(self, n: int) -> Case:
        mark = self.marker(n)
        choices: list[tuple[str, dict[str, Any]]] = [
            ("memory_search", {"query": f"lantern {mark}"}),
            ("recall_memories", {"query": f"saved {mark}"}),
            ("list_memories", {"limit": 5}),
            ("scratchpad_read", {"session_id": "s1"}),
            ("conversation_get_context", {"session_id": "s2", "query": mark}),
            ("scratchpad_write", {"session_id": "s1", "items": [mark]}),
        ]
        tool, arguments = self.random.choice(choices)
        return Case("read", self._line(self.call(n, tool, arguments)), ANSWER_BY_ID, n,
                    marker=mark)

    def _wrong_types(self, n: int) -> Case:
        mark = self.marker(n)
        choices: list[tuple[str, dict[str, Any]]] = [
            ("memory_save", {"content": mark, "tags": mark}),
            ("memory_save", {"content": 5, "tags": [mark]}),
            ("save_memory", {"key": [mark], "content": mark}),
            ("conversation_append", {"session_id": "s1", "role": 7, "content": mark}),
            ("memory_save", {"content": mark, "namespace": "other"}),
            ("list_memories", {"limit": mark}),
            ("memory_save", {f"{mark}-arg-" + "k" * 300: mark}),
        ]
        tool, arguments = self.random.choice(choices)
        return Case("wrong types", self._line(self.call(n, tool, arguments)), ANSWER_BY_ID, n,
                    refused=True, marker=mark)

    def _surrogate(self, n: int) -> Case:
        mark = self.marker(n)
        lone = self.random.choice(["\ud800", "\udfff", "\udc00x", "a\ud83d"])
        tool, arguments = self.write_call(n)
        if self.random.random() < 0.3:
            arguments[f"k{lone}"] = mark
        else:
            arguments["content"] = f"{mark} {lone} broken"
        return Case("surrogate", self._line(self.call(n, tool, arguments), escaped=True),
                    ANSWER_BY_ID, n,
                    refused=True, marker=mark)

    def _nul(self, n: int) -> Case:
        tool, arguments = self.write_call(n)
        arguments["content"] = f"{self.marker(n)} nul \u0000 here"
        return Case("nul", self._line(self.call(n, tool, arguments)), ANSWER_BY_ID, n,
                    marker=self.marker(n))

    def _deep(self, n: int) -> Case:
        depth = self.random.choice([300, 1_000, 5_000, 100_000])
        mark = self.marker(n)
        opener, closer = self.random.choice([("[", "]"), ('{"a":', "}")])
        head = self._line(self.call(n, "memory_save", {"content": mark, "tags": "@"}))
        line = head.replace(b'"@"', (opener * depth + f'"{mark}"' + closer * depth).encode())
        return Case("deep", line, ANSWER_BY_ID, n, refused=True, marker=mark)

    def _huge(self, n: int) -> Case:
        mark = self.marker(n)
        size = self.random.randrange(1_000_000, 5_000_000)
        tool, arguments = self.write_call(n)
        if self.random.random() < 0.5:
            arguments["content"] = f"{mark} " + "x" * size
        else:
            arguments = {f"{mark}" + "k" * size: "v"}
        return Case("huge", self._line(self.call(n, tool, arguments)), ANSWER_BY_ID, n,
                    refused=True, marker=mark)

    def _bad_utf_8(self, n: int) -> Case:
        tool, arguments = self.write_call(n)
        arguments["content"] = f"{self.marker(n)} BAD"
        bad = self.random.choice([b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xe2\x82", b"\x80"])
        line = self._line(self.call(n, tool, arguments)).replace(b"BAD", b"bad " + bad)
        return Case("bad utf-8", line, ANSWER_BY_ID, n, refused=True, marker=self.marker(n))

    def _truncated(self, n: int) -> Case:
        tool, arguments = self.write_call(n)
        line = self._line(self.call(n, tool, arguments))
        after_id = line.index(b'"method"')
        cut = self.random.randrange(after_id, len(line) - 1)
        return Case("truncated", line[:cut], ANSWER_BY_ID, n, refused=True,
                    marker=self.marker(n))

    def _garbage(self, n: int) -> Case:
        line = self.random.choice([
            b"}", b"[1, 2", b"null", b"42", b'"text"', b"[]", b"tru", b"\xff\xfe\x00",
            b"not json at all", b"\x00\x01", b"]]]]", b"NaN", b"[" * 50_000,
            bytes(self.random.randrange(1, 256) for _ in range(40)).replace(b"\n", b" ")
            .replace(b"\r", b" ").lstrip(b" \t{") or b"?"])
        return Case("garbage", line, ANSWER_NULL, refused=True)

    def _bad_shape(self, n: int) -> Case:
        mark = self.marker(n)
        base = self.call(n, "memory_save", {"content": mark})
        change: dict[str, Any] = self.random.choice([
            {"jsonrpc": "1.0"}, {"jsonrpc": None}, {"method": 5}, {"method": [mark]},
            {"params": []}, {"params": mark}, {"params": 7}])
        return Case("bad shape", self._line({**base, **change}), ANSWER_BY_ID, n, refused=True,
                    marker=mark)

    def _bad_id(self, n: int) -> Case:
        mark = self.marker(n)
        bad = self.random.choice([None, 1.5, True, [n], {"n": n}, "\ud800"])
        message = self.call(n, "memory_save", {"content": mark})
        return Case("bad id", self._line({**message, "id": bad}, escaped=True), ANSWER_NULL,
                    refused=True,
                    marker=mark)

    def _batch(self, n: int) -> Case:
        mark = self.marker(n)
        batch = [self.call(f"b{n}", "memory_save", {"content": mark}),
                 {"jsonrpc": "2.0", "method": "notifications/fuzz"}]
        return Case("batch", self._line(batch), ANSWER_BY_ID, f"b{n}", refused=True,
                    marker=mark)

    def _unknown_method(self, n: int) -> Case:
        method = self.random.choice(["nope", "tools/nope", "resources/list", "m" * 5_000])
        return Case("unknown method", self._line(self.request(f"u{n}", method, {})),
                    ANSWER_BY_ID, f"u{n}", refused=True)

    def _notification(self, n: int) -> Case:
        mark = self.marker(n)
        params = self.random.choice([
            {"content": mark}, {"content": f"{mark} \udc00"}, [mark], mark,
            {"deep": json.loads("[" * 200 + "]" * 200)}])
        message = {"jsonrpc": "2.0", "method": "notifications/fuzz", "params": params}
        return Case("notification", self._line(message, escaped=True), NO_ANSWER, marker=mark)

    def _response(self, n: int) -> Case:
        message = self.random.choice([{"jsonrpc": "2.0", "id": f"r{n}", "result": {}},
                                      {"jsonrpc": "2.0", "id": f"r{n}",
                                       "error": {"code": 1, "message": "x"}}])
        return Case("response", self._line(message), NO_ANSWER)


class Server:
    """``workbench mcp`` in a subprocess, its stdout read by a thread into a queue."""

    def __init__(self, db: Path, workdir: Path) -> None:
        config = workdir / "mcp-fuzz.toml"
        config.write_text('[embedding]\nbackend = "deterministic"\nfallback_dimensions = 64\n'
                          '[consolidation]\nenabled = false\n')
        root = Path(__file__).resolve().parents[2]
        env = {**os.environ, "WORKBENCH_CONFIG": str(config),
               "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])}
        self.stderr_path = workdir / "mcp-fuzz-stderr.txt"
        with self.stderr_path.open("wb") as stderr:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "workbench.cli", "mcp", "--db", str(db),
                 "--namespace", NAMESPACE],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, env=env,
                cwd=workdir)
        self.answers: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.unreadable = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            try:
                self.answers.put(json.loads(line))
            except ValueError:
                self.unreadable += 1
        self.answers.put(None)

    def send(self, line: bytes) -> bool:
        """Write one line; False when the server no longer reads."""
        assert self.process.stdin is not None
        try:
            self.process.stdin.write(line + b"\n")
            self.process.stdin.flush()
        except (BrokenPipeError, OSError):
            return False
        return True

    def next_answer(self, timeout: float) -> dict[str, Any] | None:
        try:
            return self.answers.get(timeout=timeout)
        except queue.Empty:
            return None

    def close(self, timeout: float = 30.0) -> int | None:
        """Close stdin and wait for the exit code (None: still running, then killed)."""
        assert self.process.stdin is not None
        with suppress(OSError):
            self.process.stdin.close()
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            return None


@dataclass
class FuzzFigures:
    """What a run sent, got back and found stored."""

    seed: int
    lines: int = 0
    kinds: Counter[str] = field(default_factory=Counter)
    expected_by_id: int = 0
    expected_null: int = 0
    no_answer_expected: int = 0
    answered_by_id: int = 0
    answered_null: int = 0
    unanswered: list[str] = field(default_factory=list)
    extra_answers: int = 0
    answer_kinds: Counter[str] = field(default_factory=Counter)
    wrongly_accepted: list[str] = field(default_factory=list)
    longest_refusal: int = 0
    alive: bool = False
    exit_code: int | None = None
    accepted_writes: int = 0
    lost_writes: int = 0
    markers_searched: int = 0
    stored_by_refused: list[str] = field(default_factory=list)
    tables: int = 0
    seconds: float = 0.0

    @property
    def passed(self) -> bool:
        return (not self.unanswered and not self.extra_answers and not self.wrongly_accepted
                and self.alive and self.exit_code == 0 and not self.lost_writes
                and not self.stored_by_refused and self.longest_refusal <= 600)

    def lines_out(self) -> list[str]:
        kinds = ", ".join(f"{kind} {count:,}" for kind, count in sorted(self.kinds.items()))
        answers = ", ".join(f"{kind} {count:,}" for kind, count in
                            sorted(self.answer_kinds.items()))
        return [
            f"mcp fuzz: {self.lines:,} lines (seed {self.seed}) in {self.seconds:.1f} s: "
            + ("passed" if self.passed else "FAIL"),
            f"  lines: {kinds}",
            f"  requests {self.expected_by_id + self.expected_null:,}: answered under their id "
            f"{self.answered_by_id:,}/{self.expected_by_id:,}, with a null id "
            f"{self.answered_null:,}/{self.expected_null:,}; unanswered "
            f"{len(self.unanswered):,}, extra answers {self.extra_answers:,}",
            f"  notifications and responses {self.no_answer_expected:,} (no answer due)",
            f"  answers: {answers}",
            f"  refusable lines answered with a result {len(self.wrongly_accepted):,}; "
            f"longest refusal {self.longest_refusal:,} characters",
            f"  server alive at the end: {'yes' if self.alive else 'NO'} (a ping answered); "
            f"exit code {self.exit_code} after stdin closed",
            f"  memory: {self.accepted_writes:,} accepted writes, {self.lost_writes:,} not found;"
            f" stored by refused lines {len(self.stored_by_refused):,} (markers of "
            f"{self.markers_searched:,} lines searched in {self.tables} tables)",
            *(f"  unanswered: {what}" for what in self.unanswered[:5]),
            *(f"  accepted though refusable: {what}" for what in self.wrongly_accepted[:5]),
            *(f"  stored by a refused line: {what}" for what in self.stored_by_refused[:5]),
        ]


def answer_kind(answer: dict[str, Any]) -> tuple[str, bool, str]:
    """(the kind of an answer, whether it refuses, its refusal text)."""
    if "error" in answer:
        error = answer["error"]
        return str(error.get("code")), True, json.dumps(error)
    result = answer.get("result") or {}
    if result.get("isError"):
        return "tool error", True, "".join(part.get("text", "") for part in result["content"])
    return "result", False, ""


def markers_stored(db: Path, pattern: re.Pattern[str]) -> tuple[set[str], int]:
    """Every marker in any readable table of the file, and how many tables were read."""
    found: set[str] = set()
    tables = 0
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as connection:
        names = [row[0] for row in connection.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'")]
        for name in names:
            try:
                rows = connection.execute(f'SELECT * FROM "{name}"').fetchall()
            except sqlite3.Error:  # a virtual table whose module stdlib sqlite3 lacks
                continue
            tables += 1
            for row in rows:
                for value in row:
                    if isinstance(value, bytes):
                        value = value.decode("utf-8", errors="replace")
                    if isinstance(value, str):
                        found.update(pattern.findall(value))
    return found, tables


def run_mcp_fuzz(requests: int, seed: int, *, db: Path | None = None,
                 say: Callable[[str], None] = lambda line: None) -> FuzzFigures:
    """Send ``requests`` seeded lines to a fresh ``workbench mcp`` and count what happened."""
    with tempfile.TemporaryDirectory(prefix="mcp-fuzz-") as scratch:
        workdir = Path(scratch)
        target = db or workdir / "fuzz.db"
        if target.exists():
            raise FileExistsError(f"{target} exists; mcp-fuzz needs a new file to count in")
        return _run(requests, seed, target, workdir, say)


def _run(requests: int, seed: int, db: Path, workdir: Path,
         say: Callable[[str], None]) -> FuzzFigures:
    figures = FuzzFigures(seed=seed)
    generator = Generator(seed)
    started = time.monotonic()
    server = Server(db, workdir)
    outcome: dict[int | str, tuple[str, bool]] = {}
    cases: list[Case] = []
    answered: Counter[Any] = Counter()
    try:
        server.send(json.dumps({"jsonrpc": "2.0", "id": "init", "method": "initialize",
                                "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                                           "clientInfo": {"name": "fuzz", "version": "1"}}})
                    .encode())
        _await(server, {"init"}, 0, answered, outcome, figures, ANSWER_TIMEOUT_S * 2)
        server.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
        for n in range(1, requests + 1):
            case = generator.case(n)
            cases.append(case)
            figures.lines += 1
            figures.kinds[case.kind] += 1
            if not server.send(case.line):
                figures.unanswered.append(f"line {n} ({case.kind}): the server stopped reading")
                break
            if case.answer == ANSWER_BY_ID:
                figures.expected_by_id += 1
                _await(server, {case.request_id}, 0, answered, outcome, figures,
                       ANSWER_TIMEOUT_S)
            elif case.answer == ANSWER_NULL:
                figures.expected_null += 1
                _await(server, set(), answered[None] + 1, answered, outcome, figures,
                       ANSWER_TIMEOUT_S)
            else:
                figures.no_answer_expected += 1
            if n % 500 == 0:
                say(f"{n:,} lines sent")
        server.send(b'{"jsonrpc":"2.0","id":"last-ping","method":"ping"}')
        _await(server, {"last-ping"}, answered[None], answered, outcome, figures,
               ANSWER_TIMEOUT_S)
        figures.alive = server.process.poll() is None and "last-ping" in answered
    finally:
        figures.exit_code = server.close()
    _drain(server, answered, outcome, figures)
    _judge(cases, answered, outcome, figures)
    pattern = re.compile(rf"fz{seed}x\d+q")
    found, figures.tables = markers_stored(db, pattern)
    _judge_stored(cases, outcome, found, figures)
    figures.seconds = time.monotonic() - started
    return figures


def _record(answer: dict[str, Any], answered: Counter[Any],
            outcome: dict[int | str, tuple[str, bool]], figures: FuzzFigures) -> None:
    request_id = answer.get("id")
    kind, refused, text = answer_kind(answer)
    answered[request_id] += 1
    if request_id is not None and request_id not in outcome:
        outcome[request_id] = (kind, refused)
    figures.answer_kinds[kind] += 1
    if refused:
        figures.longest_refusal = max(figures.longest_refusal, len(text))


def _await(server: Server, ids: set[Any], nulls: int, answered: Counter[Any],
           outcome: dict[int | str, tuple[str, bool]], figures: FuzzFigures,
           timeout: float) -> None:
    """Read answers until each of ``ids`` and ``nulls`` null-id answers have come, or the
    deadline passes."""
    deadline = time.monotonic() + timeout
    while any(answered[i] == 0 for i in ids) or answered[None] < nulls:
        left = deadline - time.monotonic()
        if left <= 0:
            return
        answer = server.next_answer(left)
        if answer is None:
            return
        _record(answer, answered, outcome, figures)


def _drain(server: Server, answered: Counter[Any], outcome: dict[int | str, tuple[str, bool]],
           figures: FuzzFigures) -> None:
    """What the server wrote after the last wait, up to its end of output."""
    while (answer := server.next_answer(5.0)) is not None:
        _record(answer, answered, outcome, figures)


def _judge(cases: list[Case], answered: Counter[Any],
           outcome: dict[int | str, tuple[str, bool]], figures: FuzzFigures) -> None:
    expected_ids = {case.request_id for case in cases if case.answer == ANSWER_BY_ID}
    for case in cases:
        if case.answer != ANSWER_BY_ID or case.request_id is None:
            continue
        count = answered[case.request_id]
        if count == 0:
            figures.unanswered.append(f"{case.kind} id {case.request_id}: "
                                      f"{case.line[:80]!r}")
            continue
        figures.answered_by_id += 1
        kind, refused = outcome[case.request_id]
        if case.refused and not refused:
            figures.wrongly_accepted.append(f"{case.kind} id {case.request_id} ({kind}): "
                                            f"{case.line[:80]!r}")
    figures.answered_null = min(answered[None], figures.expected_null)
    if answered[None] < figures.expected_null:
        figures.unanswered.append(f"{figures.expected_null - answered[None]} lines due a "
                                  "null-id answer")
    unexpected = sum(count for request_id, count in answered.items()
                     if request_id is not None and request_id not in expected_ids
                     and request_id not in ("init", "last-ping"))
    twice = sum(count - 1 for request_id, count in answered.items()
                if request_id is not None and count > 1)
    figures.extra_answers = unexpected + twice + max(0, answered[None] - figures.expected_null)


def _judge_stored(cases: list[Case], outcome: dict[int | str, tuple[str, bool]],
                  found: set[str], figures: FuzzFigures) -> None:
    accepted = set()
    for case in cases:
        if case.marker is None:
            continue
        figures.markers_searched += 1
        result = None if case.request_id is None else outcome.get(case.request_id)
        if case.answer == ANSWER_BY_ID and result is not None and not result[1]:
            accepted.add(case.marker)
            if case.stores:
                figures.accepted_writes += 1
                figures.lost_writes += case.marker not in found
    figures.stored_by_refused = sorted(found - accepted)


@click.command("mcp-fuzz")
@click.option("--requests", default=2_000, show_default=True, type=click.IntRange(min=1),
              help="Lines to send.")
@click.option("--seed", default=1, show_default=True, type=int, help="Seed of the lines.")
@click.option("--db", "db", default=None, type=click.Path(dir_okay=False, path_type=Path),
              help="The SQLite file the server creates and the run searches (default: a "
                   "temporary file); it must not exist.")
def mcp_fuzz_command(requests: int, seed: int, db: Path | None) -> None:
    """A real `workbench mcp` fed seeded hostile lines over raw stdio: every request
    answered once, the server alive, nothing stored by a refused line."""
    try:
        figures = run_mcp_fuzz(requests, seed, db=db,
                               say=lambda line: click.echo(line, err=True))
    except FileExistsError as error:
        raise click.ClickException(str(error)) from error
    for line in figures.lines_out():
        click.echo(line)
    if not figures.passed:
        sys.exit(1)
