"""Secrets: the API keys of the embedding and summary endpoints never leave the request.

A hostile loopback server fails every way it can and puts the key it was sent into each
answer: a 500 echoing the request's headers, a 401 quoting the key, a redirect carrying it
in its Location, a 200 of garbage and a 200 of JSON in the wrong shape holding it, a near
copy of it, a response header holding it, a timeout and a dropped connection. The
embedding backend, the summarizer (summarize, compact, consolidate), the engine's
warnings and stored errors, the CLI (doctor, summarize, compact, consolidate, search, log,
exports), the logs at DEBUG, every file left on disk (the memory file and its WAL, exports,
archives), ``repr``/``str`` of the config and the backends, exception messages, their
chains and tracebacks (with locals, as a crash report shows them) and an app screenshot
are all collected, and no text among them may hold the key, nor any 12-character piece
of it. Each test prints how many places it checked.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from core import Engine
from core.config import load_config
from core.embeddings.http_backend import HttpEmbedder, load_http
from core.errors import ConfigError, WorkbenchError
from core.summary.summarizers import build_summarizer
from core.tokens import TokenCounter
from tests.loopback import loopback
from workbench.cli.root import main

SECRET = "sk-test-SECRET-0123456789"
KEY_VAR = "WB_TEST_SECRET_KEY"
PIECE = 12  # no run of this many characters of the key may appear anywhere
MODES = ("echo500", "echo401", "redirect", "garbage", "wrongshape", "near_copy",
         "header", "slow", "drop")
TIMEOUT = 0.4


class Hostile:
    """What the server does with every POST, whatever the path; and what it was sent."""

    def __init__(self) -> None:
        self.mode = "echo500"
        self.auth_seen: list[str | None] = []
        self.url = ""


def _handler(state: Hostile) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            """Quiet."""

        def send(self, status: int, body: str, headers: dict[str, str] | None = None) -> None:
            data = body.encode()
            try:
                self.send_response(status)
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                return

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            auth = self.headers.get("Authorization") or ""
            key = auth.removeprefix("Bearer ")
            state.auth_seen.append(auth or None)
            mode = state.mode
            if mode == "echo500":
                self.send(500, json.dumps({"error": "boom", "you_sent": dict(self.headers)}))
            elif mode == "echo401":
                self.send(401, f"Incorrect API key provided: {key}. Check {auth}.",
                          {"WWW-Authenticate": f'Bearer realm="{key}"'})
            elif mode == "redirect":
                self.send(307, f"moved; key {key}",
                          {"Location": f"http://127.0.0.1:9/steal?key={key}"})
            elif mode == "garbage":
                self.send(200, f"<html><body>{auth}</body></html>")
            elif mode == "wrongshape":
                self.send(200, json.dumps({"data": [{"embedding": auth}],
                                           "choices": [{"message": {"content": 7,
                                                                    "key": key}}]}))
            elif mode == "near_copy":
                self.send(500, f"key {key[:-2]} is revoked; {key[3:]} too")
            elif mode == "header":
                self.send(503, "unavailable", {"X-Debug-Auth": auth})
            elif mode == "slow":
                time.sleep(TIMEOUT * 3)
                self.send(200, json.dumps({"data": []}))
            elif mode == "drop":
                self.close_connection = True
                self.connection.close()

    return Handler


@contextmanager
def hostile(monkeypatch: pytest.MonkeyPatch) -> Iterator[Hostile]:
    state = Hostile()
    with loopback(_handler(state), monkeypatch) as root:
        state.url = root + "/v1"
        yield state


class Places:
    """Every text gathered; ``check`` fails on any that holds the key or a piece of it."""

    def __init__(self) -> None:
        self.texts: list[tuple[str, str]] = []
        self.pieces = {SECRET[i:i + PIECE] for i in range(len(SECRET) - PIECE + 1)}

    def add(self, where: str, text: object) -> None:
        self.texts.append((where, text if isinstance(text, str) else repr(text)))

    def error(self, where: str, exc: BaseException) -> None:
        """The message, the repr, the traceback as Python prints it, and the whole chain
        (suppressed context too) with every frame's variables, as a crash report shows them
        (Textual's prints each frame's locals)."""
        self.add(f"{where}: str", str(exc))
        self.add(f"{where}: repr", repr(exc))
        self.add(f"{where}: traceback", "".join(traceback.format_exception(exc)))
        seen: BaseException | None = exc
        depth = 0
        while seen is not None and depth < 10:
            self.add(f"{where}: chain {depth}", f"{seen!r} {seen} {vars(seen)!r}")
            headers = getattr(seen, "headers", None)
            if headers is not None:
                self.add(f"{where}: chain {depth} headers", str(headers))
            frames = traceback.walk_tb(seen.__traceback__)
            self.add(f"{where}: chain {depth} locals",
                     [f"{frame.f_code.co_name}: {name}={value!r}" for frame, _ in frames
                      for name, value in frame.f_locals.items()])
            seen = seen.__cause__ or seen.__context__
            depth += 1

    def files(self, root: Path) -> None:
        for path in sorted(root.rglob("*")):
            if path.is_file():
                self.add(f"file {path.relative_to(root)}",
                         path.read_bytes().decode("utf-8", "replace"))

    def check(self) -> None:
        leaks = [where for where, text in self.texts
                 if SECRET in text or any(piece in text for piece in self.pieces)]
        print(f"\n{len(self.texts)} places checked for the key, {len(leaks)} leaks")
        assert not leaks, f"the key leaked into: {leaks}"


@pytest.fixture
def places(caplog: pytest.LogCaptureFixture) -> Iterator[Places]:
    caplog.set_level(logging.DEBUG)
    found = Places()
    yield found
    found.add("logs", caplog.text)
    found.add("log records", [(r.getMessage(), r.args, r.exc_text) for r in caplog.records])
    found.check()


def _config(url: str, **sections: Any) -> dict[str, Any]:
    config: dict[str, Any] = {
        "embedding": {"backend": "http", "base_url": url, "model": "emb",
                      "api_key": f"${{{KEY_VAR}}}", "dimensions": 8, "timeout_secs": TIMEOUT},
        "summary": {"backend": "http", "base_url": url, "model": "chat", "auto": False,
                    "api_key": f"${{{KEY_VAR}}}", "timeout_secs": TIMEOUT,
                    "token_budget": 400, "min_turns": 2},
        "consolidation": {"enabled": False},
    }
    for name, values in sections.items():
        config[name] = {**config[name], **values}
    return config


# -- the backends ------------------------------------------------------------------------------

def test_the_embedding_backend_never_shows_the_key(
        monkeypatch: pytest.MonkeyPatch, places: Places) -> None:
    monkeypatch.setenv(KEY_VAR, SECRET)
    with hostile(monkeypatch) as server:
        config = load_config(_config(server.url))
        assert config.embedding.api_key == SECRET  # the key is really in use
        embedder = HttpEmbedder(base_url=server.url, model="emb", api_key=SECRET,
                                timeout=TIMEOUT, dimensions=8)
        places.add("repr(embedder)", repr(embedder))
        places.add("str(embedder)", str(embedder))
        places.add("vars(embedder) but the poster", {k: v for k, v in vars(embedder).items()
                                                     if k != "_http"})
        places.add("repr(poster)", repr(embedder._http))
        for mode in MODES:
            server.mode = mode
            with pytest.raises(WorkbenchError) as embedding:
                embedder.embed(["some text"])
            places.error(f"embed, {mode}", embedding.value)
            probing = config.embedding
            with pytest.raises(WorkbenchError) as probe:
                load_http(type(probing)(**{**vars(probing), "dimensions": None}))
            places.error(f"probe, {mode}", probe.value)
        assert f"Bearer {SECRET}" in server.auth_seen  # it was sent, in the header only


def test_the_summarizer_never_shows_the_key(
        monkeypatch: pytest.MonkeyPatch, places: Places) -> None:
    from core.summary.summarizers import Turn

    monkeypatch.setenv(KEY_VAR, SECRET)
    with hostile(monkeypatch) as server:
        config = load_config(_config(server.url))
        summarizer = build_summarizer(config.summary, TokenCounter(None))
        places.add("repr(summarizer)", repr(summarizer))
        places.add("str(summarizer)", str(summarizer))
        for mode in MODES:
            server.mode = mode
            with pytest.raises(WorkbenchError) as failed:
                summarizer.summarize([Turn("user", 1, "Alice moved to Lyon.")], 50)
            places.error(f"summarize, {mode}", failed.value)


def test_the_config_never_shows_the_key(
        monkeypatch: pytest.MonkeyPatch, places: Places, tmp_path: Path) -> None:
    monkeypatch.setenv(KEY_VAR, SECRET)
    config = load_config(_config("http://127.0.0.1:9/v1") | {
        "scheduler": {"webhook_url": "http://127.0.0.1:9/hook",
                      "webhook_token": f"${{{KEY_VAR}}}"}})
    assert config.scheduler.webhook_token == SECRET
    for name in ("embedding", "summary", "scheduler"):
        places.add(f"repr(config.{name})", repr(getattr(config, name)))
        places.add(f"str(config.{name})", str(getattr(config, name)))
    places.add("repr(config)", repr(config))
    places.add("str(config)", str(config))
    # A key put in the wrong field by mistake is not quoted back in the error.
    for wrong in ({"embedding": {"timeout_secs": f"${{{KEY_VAR}}}"}},
                  {"embedding": {"dimensions": f"${{{KEY_VAR}}}"}},
                  {"short_term": {"session_ttl": f"${{{KEY_VAR}}}"}},
                  {"embedding": {"api_key": 12345, "batch_size": f"${{{KEY_VAR}}}"}}):
        with pytest.raises(ConfigError) as refused:
            load_config(wrong)
        places.error(f"config error {wrong}", refused.value)
    toml = tmp_path / "bad.toml"
    toml.write_text(f'[embedding]\napi_key = "{SECRET}\n')  # a broken line holding the key
    with pytest.raises(ConfigError) as broken:
        load_config(toml)
    places.error("config error, broken TOML", broken.value)


# -- the engine ----------------------------------------------------------------------------------

async def test_the_engine_never_shows_or_stores_the_key(
        monkeypatch: pytest.MonkeyPatch, places: Places, tmp_path: Path) -> None:
    monkeypatch.setenv(KEY_VAR, SECRET)
    turn = "hiking the Dolomites in June, huts and cable cars, " * 8
    (tmp_path / "exports").mkdir()
    with hostile(monkeypatch) as server:
        # The model's size probe fails: the engine falls back to the deterministic model,
        # says why, and the http summarizer fails every summary, compaction, consolidation.
        probing = _config(server.url, embedding={"dimensions": None})
        for mode in MODES:
            server.mode = mode
            async with Engine.open(tmp_path / f"{mode}.db", config=probing) as engine:
                assert engine.model.fell_back
                places.add(f"warnings, {mode}", engine.warnings)
                places.add(f"pulse, {mode}", await engine.pulse())
                places.add(f"repr(engine.config), {mode}", repr(engine.config))
                places.add(f"repr(summarizer), {mode}", repr(engine.summaries.summarizer))
                session = f"trip-{mode}"
                for i in range(6):
                    await engine.append(session, {"role": "user" if i % 2 else "assistant",
                                                  "content": f"Turn {i}: {turn}"})
                outcome = await engine.summarize(session)
                assert outcome.triggered and outcome.error, outcome
                places.add(f"summarize outcome, {mode}", outcome.to_dict())
                places.add(f"summary state, {mode}", await engine.summary_state(session))
                with pytest.raises(WorkbenchError) as compacting:
                    await engine.compact(session)
                places.error(f"compact, {mode}", compacting.value)
                report = await engine.consolidate(idle_hours=0)
                assert report.failed, report
                places.add(f"consolidate report, {mode}", report.to_dict())
                found = await engine.search(session_id=session, query="huts", caller="agent")
                places.add(f"search explain, {mode}", found.explain())
                places.add(f"retrieval log, {mode}", await engine.retrieval_log(50))
                await engine.export_session(session, tmp_path / "exports" / f"{mode}.json")
                await engine.export_notes(tmp_path / "exports" / f"notes-{mode}.json")
        # The model is taken as configured (its size given), and then every batch fails:
        # the worker's error, and the error stored on each chunk.
        sized = _config(server.url, embedding={"max_attempts": 1, "batch_size": 2})
        for mode in MODES:
            server.mode = mode
            async with Engine.open(tmp_path / "sized.db", config=sized) as engine:
                assert engine.worker is not None and not engine.model.fell_back
                engine.worker.last_error = None
                await engine.append("s", {"role": "user", "content": f"text for {mode}"})
                for _ in range(500):  # until the batch has failed (a timeout takes 0.4 s)
                    if engine.worker.last_error is not None:
                        break
                    await asyncio.sleep(0.01)
                assert engine.worker.last_error, mode
                places.add(f"worker error, {mode}", engine.worker.last_error)
                places.add(f"status, {mode}", await engine.embedding_status())
    places.files(tmp_path)


# -- the CLI ---------------------------------------------------------------------------------------

def test_the_cli_never_shows_the_key(
        monkeypatch: pytest.MonkeyPatch, places: Places, tmp_path: Path) -> None:
    monkeypatch.setenv(KEY_VAR, SECRET)
    db = tmp_path / "memory.db"
    with hostile(monkeypatch) as server:
        config = _config(server.url)
        toml = tmp_path / "workbench.toml"
        toml.write_text(_toml(config))
        monkeypatch.setenv("WORKBENCH_CONFIG", str(toml))

        async def fill() -> None:
            async with Engine.open(db, config=config) as engine:
                for i in range(6):
                    await engine.append("trip", {"role": "user", "content": f"hut {i} in June"})
                await engine.add_note("packing", "boots and a rain shell")

        asyncio.run(fill())
        runner = CliRunner()
        out = tmp_path / "out"
        out.mkdir()
        commands = [
            ["doctor", "--json", "--db", db], ["doctor", "--db", db],
            ["summarize", "trip", "--db", db, "--json"], ["compact", "trip", "--db", db],
            ["consolidate", "--db", db, "--idle-hours", "0"],
            ["search", "hut", "--db", db, "--session", "trip", "--json", "--explain"],
            ["log", "--db", db, "--json"],
            ["export", "session", "trip", "--db", db, "--format", "jsonl",
             "--out", out / "trip.jsonl"],
            ["export", "session", "trip", "--db", db, "--format", "markdown", "--out", out],
            ["export", "namespace", "default", "--db", db, "--format", "jsonl",
             "--out", out / "all.jsonl"],
            ["sessions", "export", "trip", "--db", db, "--out", out / "trip.json"],
            ["notes", "export", "--db", db, "--out", out / "notes.json"],
        ]
        # Two answers that hold the key (the others are covered through the engine above).
        for mode in ("echo500", "near_copy"):
            server.mode = mode
            for args in commands:
                result = runner.invoke(main, [str(arg) for arg in args])
                # Each command ran: only those whose summarizer fails say so with exit 1.
                failing = args[0] in ("compact", "consolidate")
                assert result.exit_code == failing, (args, result.output)
                where = f"workbench {' '.join(map(str, args[:2]))}, {mode}"
                places.add(f"{where}: stdout", result.stdout)
                places.add(f"{where}: stderr", result.stderr)
                if result.exception is not None and not isinstance(result.exception,
                                                                   SystemExit):
                    places.error(f"{where}: exception", result.exception)
    places.files(tmp_path)


def _toml(config: dict[str, Any]) -> str:
    lines = []
    for section, values in config.items():
        lines.append(f"[{section}]")
        lines.extend(f"{key} = {json.dumps(value)}" for key, value in values.items())
    return "\n".join(lines) + "\n"


# -- the app ---------------------------------------------------------------------------------

async def test_the_app_screen_never_shows_the_key(
        monkeypatch: pytest.MonkeyPatch, places: Places, tmp_path: Path) -> None:
    from tests.app_support import settle
    from workbench.app.app import AppSettings, WorkbenchApp
    from workbench.app.themes import PROJECT_THEMES
    from workbench.app.widgets.header import StatusHeader

    monkeypatch.setenv(KEY_VAR, SECRET)
    path = tmp_path / "memory.db"
    with hostile(monkeypatch) as server:
        config = _config(server.url, embedding={"dimensions": None})
        async with Engine.open(path, config=config) as engine:
            await engine.append("trip", {"role": "user", "content": "hut in June"})
        for mode in ("echo401",):
            server.mode = mode
            app = WorkbenchApp(path, config, AppSettings(still=True, theme="workbench-dusk",
                                                         theme_dirs=(PROJECT_THEMES,),
                                                         defer_model=False))
            notes: list[str] = []
            original = app.notify

            def notify(message: str, *args: Any, _original: Any = original,
                       _notes: list[str] = notes, **kwargs: Any) -> None:
                _notes.append(f"{kwargs.get('title', '')}: {message}")
                _original(message, *args, **kwargs)

            monkeypatch.setattr(app, "notify", notify)
            async with app.run_test(size=(160, 48)) as pilot:
                await settle(pilot)
                assert app.engine is not None and app.engine.model.fell_back
                places.add(f"screenshot, {mode}", app.export_screenshot())
                places.add(f"header, {mode}", str(app.query_one(StatusHeader).render()))
                places.add(f"notifications, {mode}", notes)
                outcome = await app.engine.summarize("trip")
                places.add(f"summarize in the app, {mode}", outcome)
