"""A PostgreSQL URL's password never shows: not in the CLI's output (doctor included), an
error, its traceback, the log, the app's header, notifications and screen, nor the argv of
a process we start.

The test server trusts every local login, except for roles named ``pw_…``, which must give
their password (a pg_hba.conf line this module adds): a wrong one is refused as a real
server refuses it, and the right one gets in.
"""

from __future__ import annotations

import json
import logging
import subprocess
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import psycopg
import pytest
from click.testing import CliRunner

from core import Engine
from core.errors import StorageUnavailable
from core.locations import parse_location
from core.storage.pg import roles
from tests.pg_server import PgTestServer
from workbench.cli.root import main

RIGHT = "right-PASSWORD-0123456789"
WRONG = "WRONG-password-9876543210"
PIECE = 12  # no run of this many characters of either password may appear anywhere
ROLE = "pw_agent"
HBA_LINE = "local all /^pw_ scram-sha-256\n"


def ensure_password_logins(server: PgTestServer) -> None:
    """Make the server ask ``pw_…`` roles for their password (once per server)."""
    with server.admin() as admin:
        row = admin.execute("SHOW hba_file").fetchone()
        assert row is not None
        hba = Path(row[0])
        text = hba.read_text()
        if HBA_LINE not in text:
            hba.write_text(HBA_LINE + text)
            admin.execute("SELECT pg_reload_conf()")


def url_as(pg_url: str, password: str, *, in_query: bool = False) -> str:
    """The test database's URL for ROLE with ``password`` (in the userinfo, or as a query
    parameter)."""
    parts = urlsplit(pg_url)
    host = parts.query  # host=/socket/folder
    if in_query:
        return f"postgresql://{ROLE}@{parts.path}?{host}&password={quote(password)}"
    return f"postgresql://{ROLE}:{quote(password)}@{parts.path}?{host}"


def assert_no_password(texts: dict[str, str]) -> None:
    """No text holds either password, whole or in part."""
    pieces = {secret[i:i + PIECE] for secret in (RIGHT, WRONG)
              for i in range(len(secret) - PIECE + 1)}
    for where, text in texts.items():
        found = [piece for piece in pieces if piece in text]
        assert not found, f"a password shows in {where}: {text!r}"


@pytest.fixture
def password_role(pg_server: PgTestServer, pg_url: str) -> Iterator[str]:
    """ROLE, bound to namespace alpha, with password RIGHT; the owner's URL."""
    ensure_password_logins(pg_server)
    result = CliRunner().invoke(main, ["pg", "grant", "alpha", ROLE, "--password", "-",
                                       "--db", pg_url], input=RIGHT + "\n")
    assert result.exit_code == 0, result.output
    assert result.output.strip() == f"role '{ROLE}' sees namespace 'alpha' only (password set)"
    yield pg_url
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f'DROP OWNED BY "{ROLE}"')
        conn.execute(f'DROP ROLE "{ROLE}"')


def test_the_right_password_logs_in_and_the_role_sees_its_own_binding(
        password_role: str) -> None:
    right = url_as(password_role, RIGHT)
    listed = CliRunner().invoke(main, ["pg", "roles", "--json", "--db", right])
    assert listed.exit_code == 0, listed.output
    # Connected as the bound role, memory_roles shows it its own row only.
    assert [(r["role"], r["namespace"]) for r in json.loads(listed.output)] == [
        (ROLE, "alpha")]
    as_owner = CliRunner().invoke(main, ["pg", "roles", "--db", password_role])
    assert ROLE in as_owner.output
    assert_no_password({"pg roles": listed.output, "pg grant": as_owner.output})


@pytest.mark.parametrize("in_query", [False, True])
def test_a_refused_password_shows_nowhere_in_the_cli(
        password_role: str, in_query: bool, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    wrong = url_as(password_role, WRONG, in_query=in_query)
    runner = CliRunner()
    outputs: dict[str, str] = {}
    for args in (["sessions", "list"], ["doctor", "--json"], ["doctor"],
                 ["notes", "list", "--namespace", "alpha"], ["facts", "list"],
                 ["search", "hello", "--namespace", "alpha"], ["log"], ["pg", "roles"],
                 ["reindex"], ["scratchpad", "list"], ["schedules", "list"]):
        result = runner.invoke(main, [*args, "--db", wrong])
        assert result.exit_code == 1, (args, result.output)
        outputs[" ".join(args)] = result.output
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            outputs[f"{args} exception"] = "".join(traceback.format_exception(result.exception))
    assert "password authentication failed" in outputs["sessions list"]
    report = json.loads(outputs["doctor --json"])
    assert report["database"]["ok"] is False
    assert report["database"]["path"] == parse_location(wrong).display
    outputs["log records"] = caplog.text
    assert_no_password(outputs)


async def test_a_refused_password_shows_nowhere_in_the_engines_error(
        password_role: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    wrong = url_as(password_role, WRONG)
    with pytest.raises(StorageUnavailable) as refused:
        await Engine.open(wrong, config={"embedding": {"backend": "deterministic"}})
    error = refused.value
    assert error.__cause__ is None and error.__suppress_context__
    assert_no_password({
        "str": str(error), "repr": repr(error), "log": caplog.text,
        "traceback": "".join(traceback.format_exception(error)),
        # From the engine's frames down: this test's own locals hold the URL it was given.
        "traceback with locals": "".join(traceback.TracebackException.from_exception(
            error.with_traceback(refused.tb.tb_next), capture_locals=True).format()),
    })


async def test_a_refused_password_shows_nowhere_in_the_app(password_role: str) -> None:
    from tests.app_support import settle
    from workbench.app.app import AppSettings, WorkbenchApp
    from workbench.app.themes import PROJECT_THEMES
    from workbench.app.widgets.header import StatusHeader

    wrong = url_as(password_role, WRONG)
    app = WorkbenchApp(wrong, {"embedding": {"backend": "deterministic"}},
                       AppSettings(still=True, theme="workbench-dusk",
                                   theme_dirs=(PROJECT_THEMES,), defer_model=False))
    notes: list[str] = []
    original = app.notify

    def notify(message: str, *args: Any, **kwargs: Any) -> None:
        notes.append(f"{kwargs.get('title', '')}: {message}")
        original(message, *args, **kwargs)

    app.notify = notify  # type: ignore[method-assign]
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        header = app.query_one(StatusHeader)
        assert app.engine is None and "password authentication failed" in header.opening_error
        shown = {"header": str(header.render()), "notifications": "\n".join(notes),
                 "screen": app.export_screenshot()}
    assert f"{ROLE}:***@" in shown["header"]
    assert_no_password(shown)


def test_the_app_benchmark_gives_its_child_the_url_on_stdin_not_in_argv(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from workbench.bench import app as bench_app

    started: list[tuple[list[str], str]] = []

    def run(argv: list[str], *, input: str, **kwargs: Any) -> subprocess.CompletedProcess[str]:
        started.append((argv, input))
        return subprocess.CompletedProcess(argv, 0, stdout=json.dumps({"first_paint": 0.0}),
                                           stderr="")

    monkeypatch.setattr(bench_app.subprocess, "run", run)
    location = parse_location(f"postgresql://agent:{RIGHT}@db.example/memory")
    bench_app.run_app_bench(location, {}, 1, lambda line: None)
    (argv, given), = started
    assert json.loads(given)["db"] == location.target
    assert_no_password({"argv": " ".join(argv)})


async def test_grant_refuses_a_sqlite_file(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["pg", "roles", "--db", str(tmp_path / "m.db")])
    assert result.exit_code == 1 and "has no roles" in result.output
    with pytest.raises(AssertionError):
        await roles.grant(parse_location(tmp_path / "m.db"), "alpha", "agent")


def test_mcp_and_the_configured_url_reach_the_server_and_keep_the_password(
        password_role: str, tmp_path: Path) -> None:
    wrong = url_as(password_role, WRONG, in_query=True)
    runner = CliRunner()
    served = runner.invoke(main, ["mcp", "--db", wrong, "--namespace", "alpha"])
    config = tmp_path / "config.toml"
    # The password from the environment, as a team's config would take it.
    config.write_text(
        f'[storage]\nurl = "{wrong.replace(WRONG, "${WB_TEST_PGPASSWORD}")}"\n')
    configured = runner.invoke(main, ["--config", str(config), "sessions", "list"],
                               env={"WB_TEST_PGPASSWORD": WRONG})
    for result in (served, configured):
        assert result.exit_code == 1, result.output
        assert "password authentication failed" in result.output
    assert_no_password({"mcp": served.output, "configured": configured.output})
