"""Facts (aidaemon): upsert, get, list, delete; key unique per category; isolated by namespace."""

from __future__ import annotations

from pathlib import Path

import pytest

from core import Engine
from core.errors import InvalidInput, NotFound
from core.storage.sqlite.connection import open_connection
from tests.conftest import DETERMINISTIC


@pytest.fixture
async def engine(memory: str):
    async with Engine.open(memory, config=DETERMINISTIC) as opened:
        yield opened


async def test_upsert_get_list_delete(engine: Engine) -> None:
    first = await engine.upsert_fact("user", "timezone", "Europe/Lisbon", source="user")
    assert (first.category, first.key, first.value, first.source, first.namespace) == (
        "user", "timezone", "Europe/Lisbon", "user", "default")
    assert first.created_at == first.updated_at and isinstance(first.id, int)
    assert await engine.get_fact("user", "timezone") == first
    await engine.upsert_fact("project", "name", "workbench")
    await engine.upsert_fact("user", "name", "Ann")
    listed = await engine.list_facts()
    assert [(f.category, f.key) for f in listed] == [
        ("project", "name"), ("user", "name"), ("user", "timezone")]
    assert [f.key for f in await engine.list_facts(category="user")] == ["name", "timezone"]
    assert await engine.delete_fact("user", "timezone") is True
    assert await engine.delete_fact("user", "timezone") is False
    with pytest.raises(NotFound, match="no fact 'timezone' in category 'user'"):
        await engine.get_fact("user", "timezone")


async def test_a_key_is_unique_per_category_and_an_upsert_replaces(engine: Engine) -> None:
    original = await engine.upsert_fact("user", "name", "Ann")
    await engine.upsert_fact("pet", "name", "Max")  # the same key in another category
    replaced = await engine.upsert_fact(" user ", "name", "Anna", source="user")
    assert (replaced.id, replaced.created_at) == (original.id, original.created_at)
    assert (replaced.value, replaced.source) == ("Anna", "user")
    assert replaced.updated_at >= original.updated_at
    assert (await engine.get_fact("pet", "name")).value == "Max"
    assert len(await engine.list_facts()) == 2


@pytest.mark.parametrize("args, kwargs, words", [
    (("", "k", "v"), {}, "category must not be empty"),
    (("c", " ", "v"), {}, "key must not be empty"),
    (("c" * 201, "k", "v"), {}, "201 characters; the limit is 200"),
    (("c", "k\nk", "v"), {}, "U\\+000A"),
    (("c", "k\x00k", "v"), {}, "U\\+0000"),
    (("c", "k", 5), {}, "value must be a string"),
    (("c", "k", "v"), {"source": "robot"}, "source must be one of agent, user"),
    (("c", "k", "v"), {"source": ""}, "source must be one of"),
])
async def test_bad_facts_are_refused_and_nothing_written(engine: Engine, args, kwargs,
                                                         words: str) -> None:
    with pytest.raises(InvalidInput, match=words):
        await engine.upsert_fact(*args, **kwargs)
    assert await engine.list_facts() == []


async def test_facts_are_namespaced_and_survive_reopening(memory: str) -> None:
    hostile = ["team%", "team_", "TEAM", "te\u0430m", "team' OR 1=1 --"]
    async with Engine.open(memory, config=DETERMINISTIC) as engine:
        await engine.upsert_fact("infra", "region", "eu-west", namespace="team")
        for namespace in hostile:
            assert await engine.list_facts(namespace=namespace) == []
            with pytest.raises(NotFound):
                await engine.get_fact("infra", "region", namespace=namespace)
            assert await engine.delete_fact("infra", "region", namespace=namespace) is False
            await engine.upsert_fact("infra", "region", namespace, namespace=namespace)
    async with Engine.open(memory, config=DETERMINISTIC) as engine:
        assert (await engine.get_fact("infra", "region", namespace="team")).value == "eu-west"
        for namespace in hostile:
            assert (await engine.get_fact("infra", "region", namespace=namespace)).value == \
                namespace


async def test_the_facts_table_keeps_seed_000s_columns(db_path: Path) -> None:
    # About the SQLite file: its table's column order, read with a PRAGMA.
    async with Engine.open(db_path, config=DETERMINISTIC):
        pass
    conn = open_connection(db_path, read_only=True, busy_timeout_ms=5000)
    columns = [row[1] for row in conn.execute("PRAGMA table_info(facts)")]
    conn.close()
    assert columns[:7] == ["id", "category", "key", "value", "source", "created_at",
                           "updated_at"]
