"""`workbench mcp` over raw stdio answers every request line: a seeded fuzz run, and the lines
the `mcp` library's own transport left unanswered (a lone surrogate, deep nesting, malformed
JSON) or stored mangled (invalid UTF-8 as U+FFFD), each sent to a real subprocess."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")
from workbench.bench.mcp_fuzz import Server, run_mcp_fuzz  # noqa: E402

ANSWER_TIMEOUT_S = 30.0


def test_a_fuzz_run_answers_every_request_and_stores_nothing_refused(tmp_path: Path) -> None:
    figures = run_mcp_fuzz(200, seed=3, db=tmp_path / "fuzz.db")
    report = "\n".join(figures.lines_out())
    assert figures.expected_by_id > 100 and figures.expected_null > 0, report
    assert figures.unanswered == [] and figures.extra_answers == 0, report
    assert figures.answered_by_id == figures.expected_by_id, report
    assert figures.wrongly_accepted == [], report
    assert figures.alive and figures.exit_code == 0, report
    assert figures.accepted_writes > 0 and figures.lost_writes == 0, report
    assert figures.stored_by_refused == [], report
    assert figures.longest_refusal <= 600, report


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, Path]]:
    workdir = tmp_path_factory.mktemp("mcp-lines")
    db = workdir / "m.db"
    running = Server(db, workdir)
    assert ask(running, {"jsonrpc": "2.0", "id": 0, "method": "initialize",
                         "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                                    "clientInfo": {"name": "t", "version": "1"}}})["result"]
    running.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
    yield running, db
    assert running.close() == 0


def ask(server: Server, message: dict[str, Any] | bytes) -> dict[str, Any]:
    """Send one line and return the next answer (failing after a deadline)."""
    line = message if isinstance(message, bytes) else json.dumps(message).encode()
    assert server.send(line)
    answer = server.next_answer(ANSWER_TIMEOUT_S)
    assert answer is not None, f"no answer to {line[:80]!r}"
    return answer


def save(request_id: int, content: str) -> bytes:
    """A memory_save call as the line a client writes (non-ASCII raw, escapes kept)."""
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
                       "params": {"name": "memory_save", "arguments": {"content": content}}},
                      ensure_ascii=False).encode("utf-8", errors="surrogatepass")


def stored(db: Path, text: str) -> int:
    with sqlite3.connect(db) as connection:
        return connection.execute("SELECT count(*) FROM notes WHERE content LIKE ?",
                                  (f"%{text}%",)).fetchone()[0]


def test_a_lone_surrogate_is_answered_as_invalid_params(server: tuple[Server, Path]) -> None:
    running, db = server
    line = save(11, "marker-surrogate @").replace(b"@", b"\\ud800")
    answer = ask(running, line)
    assert answer["id"] == 11 and answer["error"]["code"] == -32602
    assert "surrogate" in answer["error"]["message"]
    assert stored(db, "marker-surrogate") == 0


@pytest.mark.parametrize("depth", [300, 100_000])
def test_deep_nesting_is_answered_under_its_id(server: tuple[Server, Path], depth: int) -> None:
    running, _ = server
    line = save(12 + depth, "x").replace(b'"x"', b"[" * depth + b"]" * depth)
    answer = ask(running, line)
    assert answer["id"] == 12 + depth and answer["error"]["code"] in (-32600, -32602)
    assert "nested" in answer["error"]["message"]


def test_malformed_json_is_a_parse_error_under_its_id(server: tuple[Server, Path]) -> None:
    running, _ = server
    answer = ask(running, save(13, "marker-truncated")[:-10])
    assert answer["id"] == 13 and answer["error"]["code"] == -32700
    answer = ask(running, b"not json")
    assert answer["id"] is None and answer["error"]["code"] == -32700


def test_invalid_utf8_is_refused_not_stored(server: tuple[Server, Path]) -> None:
    running, db = server
    answer = ask(running, save(14, "marker-utf8 @").replace(b"@", b"\xff\xfe"))
    assert answer["id"] == 14 and answer["error"]["code"] == -32700
    assert "UTF-8" in answer["error"]["message"]
    assert stored(db, "marker-utf8") == 0


def test_a_refusal_quotes_a_huge_input_briefly(server: tuple[Server, Path]) -> None:
    running, _ = server
    answer = ask(running, {"jsonrpc": "2.0", "id": 15, "method": "tools/call",
                           "params": {"name": "t" * 1_000_000, "arguments": {}}})
    assert len(json.dumps(answer)) < 600
    answer = ask(running, {"jsonrpc": "2.0", "id": 16, "method": "m" * 1_000_000})
    assert len(json.dumps(answer)) < 600


def test_the_server_still_serves_after_every_refusal(server: tuple[Server, Path]) -> None:
    running, db = server
    answer = ask(running, save(17, "marker-after"))
    assert answer["id"] == 17 and not answer["result"].get("isError")
    assert stored(db, "marker-after") == 1
