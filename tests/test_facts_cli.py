"""``workbench facts …``: list, get, set (upsert) and rm, their JSON, their refusals."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from core import Engine
from core.errors import NotFound
from tests.cli_helpers import FIXTURE_CONFIG, invoke, memory_file, ok, ok_json, refused


@pytest.fixture
def db(tmp_path: Path) -> Path:
    """A file with two facts of namespace default and one of namespace bot-b."""
    async def fill(engine: Engine) -> None:
        await engine.upsert_fact("user", "name", "Ada")
        await engine.upsert_fact("project", "editor", "helix", source="user")
        await engine.upsert_fact("user", "name", "Grace", namespace="bot-b")

    return memory_file(tmp_path / "memory.db", fill)


def stored_fact(db: Path, category: str, key: str, namespace: str | None = None) -> Any:
    """The fact as an Engine of its own reads it back, or None when there is none."""
    async def read() -> Any:
        async with Engine.open(db, config=FIXTURE_CONFIG, start_worker=False) as engine:
            try:
                return await engine.get_fact(category, key, namespace=namespace)
            except NotFound:
                return None

    return asyncio.run(read())


def test_list_prints_a_table_by_category_then_key(runner: CliRunner, db: Path) -> None:
    lines = ok(runner, "facts", "list", "--db", db).stdout.splitlines()
    assert lines[0].split() == ["category", "key", "value", "source", "updated"]
    assert [line.split()[:4] for line in lines[1:3]] == [["project", "editor", "helix", "user"],
                                                         ["user", "name", "Ada", "agent"]]
    assert lines[3] == "2 facts in namespace 'default'"

    listed = ok_json(runner, "facts", "list", "--db", db, "--category", "user")
    assert (listed["namespace"], listed["category"]) == ("default", "user")
    assert [(f["category"], f["key"], f["value"], f["source"], f["namespace"])
            for f in listed["facts"]] == [("user", "name", "Ada", "agent", "default")]
    assert ok(runner, "facts", "list", "--db", db, "--category", "none").stdout == (
        "0 facts of category 'none' in namespace 'default'\n")


def test_a_namespace_sees_only_its_own_facts(runner: CliRunner, db: Path) -> None:
    other = ok_json(runner, "facts", "list", "--db", db, "--namespace", "bot-b")["facts"]
    assert [(f["key"], f["value"]) for f in other] == [("name", "Grace")]
    assert ok_json(runner, "facts", "get", "user", "name", "--db", db,
                   "--namespace", "bot-b")["value"] == "Grace"
    assert refused(runner, "facts", "get", "project", "editor", "--db", db,
                   "--namespace", "bot-b") == (
        "error: no fact 'editor' in category 'project' of namespace 'bot-b'")


def test_get_shows_the_fields_then_the_value(runner: CliRunner, db: Path) -> None:
    lines = ok(runner, "facts", "get", "user", "name", "--db", db).stdout.splitlines()
    assert lines[1:4] == ["category:   user", "key:        name", "source:     agent"]
    assert lines[-2:] == ["", "Ada"]
    got = ok_json(runner, "facts", "get", "user", "name", "--db", db)
    assert {key: got[key] for key in ("category", "key", "value", "source", "namespace")} == {
        "category": "user", "key": "name", "value": "Ada", "source": "agent",
        "namespace": "default"}
    assert refused(runner, "facts", "get", "user", "age", "--db", db) == (
        "error: no fact 'age' in category 'user' of namespace 'default'")


def test_set_adds_then_replaces_and_says_which(runner: CliRunner, db: Path) -> None:
    added = ok(runner, "facts", "set", "user", "city", "Lisbon", "--db", db).stdout
    assert added == "added fact 'city' in category 'user' of namespace 'default': 'Lisbon'\n"
    first = stored_fact(db, "user", "city")
    assert (first.value, first.source) == ("Lisbon", "user")

    replaced = ok_json(runner, "facts", "set", "user", "city", "Porto", "--db", db,
                       "--source", "agent")
    assert (replaced["outcome"], replaced["previous_value"], replaced["value"],
            replaced["source"]) == ("replaced", "Lisbon", "Porto", "agent")
    again = ok(runner, "facts", "set", "user", "city", "Faro", "--db", db).stdout
    assert again == ("replaced fact 'city' in category 'user' of namespace 'default': "
                     "'Porto' → 'Faro'\n")
    last = stored_fact(db, "user", "city")
    assert (last.id, last.value, last.source, last.created_at) == (
        first.id, "Faro", "user", first.created_at)
    assert stored_fact(db, "user", "city", "bot-b") is None

    elsewhere = ok_json(runner, "facts", "set", "user", "city", "Oslo", "--db", db,
                        "--namespace", "bot-b")
    assert (elsewhere["outcome"], elsewhere["namespace"]) == ("added", "bot-b")
    assert stored_fact(db, "user", "city").value == "Faro"


def test_set_refuses_usage_errors_with_2_and_engine_refusals_with_1(
        runner: CliRunner, db: Path, tmp_path: Path) -> None:
    for wrong in (["user", "city"], ["user", "city", "Rome", "--source", "robot"]):
        assert invoke(runner, "facts", "set", *wrong, "--db", db).exit_code == 2, wrong
    assert refused(runner, "facts", "set", "user", "  ", "Rome", "--db", db) == (
        "error: key must not be empty")
    assert "invisible character" in refused(runner, "facts", "set", "us\x07er", "city",
                                            "Rome", "--db", db)
    assert stored_fact(db, "user", "city") is None


def test_rm_asks_and_declining_keeps_the_fact(runner: CliRunner, db: Path) -> None:
    declined = invoke(runner, "facts", "rm", "user", "name", "--db", db, stdin="n\n")
    assert declined.exit_code == 1
    assert ("remove fact 'name' in category 'user' of namespace 'default' ('Ada')?"
            in declined.stderr)
    assert stored_fact(db, "user", "name").value == "Ada"

    accepted = ok(runner, "facts", "rm", "user", "name", "--db", db, stdin="y\n")
    assert accepted.stdout == "removed fact 'name' in category 'user' of namespace 'default'\n"
    assert stored_fact(db, "user", "name") is None
    assert stored_fact(db, "user", "name", "bot-b").value == "Grace"


def test_rm_yes_json_and_a_missing_fact(runner: CliRunner, db: Path) -> None:
    removed = ok_json(runner, "facts", "rm", "project", "editor", "--db", db, "--yes")
    assert (removed["removed"], removed["category"], removed["key"], removed["value"]) == (
        True, "project", "editor", "helix")
    assert stored_fact(db, "project", "editor") is None
    assert refused(runner, "facts", "rm", "project", "editor", "--db", db, "--yes") == (
        "error: no fact 'editor' in category 'project' of namespace 'default'")
    assert invoke(runner, "facts", "rm", "project", "--db", db).exit_code == 2
