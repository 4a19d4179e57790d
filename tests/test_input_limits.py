"""Limits on what reaches a parser or a loop, and one identifier rule, on both backends.

Every value a caller gives that the engine parses (a cadence, a time zone, a query) or keeps
as an identifier (a note name, a tag, a session id, a namespace, a schedule name) has a
length limit, and an identifier holding a control or invisible character is refused. A
refusal is one line quoting at most ~100 characters of the input, and writes nothing.

One engine per backend serves the module (a SQLite file, a PostgreSQL database of its own),
on a loop the tests drive, so the property test's examples do not each open a memory.
"""

from __future__ import annotations

import asyncio
import math
import sys
import unicodedata
import uuid
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core import Engine
from core.errors import InvalidCadence, InvalidInput, WorkbenchError
from tests.conftest import DETERMINISTIC

# What a refusal may hold: its own words and a quote of at most ~100 characters of the input.
MAX_REFUSAL_CHARS = 300
COUNTED = ("sessions", "conversation_events", "chunks", "notes", "note_names", "note_tags",
           "schedules", "session_state")
MEGABYTE = 1_000_000


class Memory:
    """An engine on a private loop: ``run`` a coroutine, ``refusal`` of a call, ``counts``."""

    def __init__(self, where: Path | str) -> None:
        self.where = where
        self.loop = asyncio.new_event_loop()
        config = {**DETERMINISTIC, "consolidation": {"enabled": False}}
        self.engine: Engine = self.loop.run_until_complete(
            Engine.open(where, config=config, start_worker=False))
        self.run(self.engine.add_note("seed", "the seed note, about zebras", tags=["seed"]))
        self.run(self.engine.append("s-seed", {"role": "user", "content": "hello zebra"}))
        self.run(self.engine.write_scratchpad("s-seed", ["first step"]))
        self.run(self.engine.schedules.create_schedule(
            "seeder", "keep going", {"kind": "interval", "value": "1h"}, name="seeded"))

    def run(self, coro: Awaitable[Any]) -> Any:
        return self.loop.run_until_complete(coro)

    def counts(self) -> dict[str, int]:
        return {table: self.run(self.engine.backend.count_rows(table)) for table in COUNTED}

    def refusal(self, make: Callable[[], Awaitable[Any]],
                kind: type[WorkbenchError] = InvalidInput) -> str:
        """The message of the clear refusal ``make()`` must meet; the call wrote nothing."""
        before = self.counts()
        with pytest.raises(WorkbenchError) as caught:
            self.run(make())
        assert isinstance(caught.value, kind), f"{type(caught.value).__name__}: {caught.value}"
        message = str(caught.value)
        assert_one_short_line(message)
        assert self.counts() == before, "a refused call wrote"
        return message

    def close(self) -> None:
        self.run(self.engine.close())
        self.loop.close()


def assert_one_short_line(message: str) -> None:
    assert message.strip()
    assert len(message) <= MAX_REFUSAL_CHARS, f"{len(message):,} characters: {message[:200]!r}"
    assert len(message.splitlines()) == 1, message[:300]
    assert not any(unicodedata.category(c) in ("Cc", "Cs") for c in message), message[:300]


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def memory(request: pytest.FixtureRequest,
           tmp_path_factory: pytest.TempPathFactory) -> Iterator[Memory]:
    where: Path | str = tmp_path_factory.mktemp("limits") / "memory.db"
    if request.param == "postgres":
        server = request.getfixturevalue("pg_server")
        database = server.create_database(server.migrated_template())
        request.addfinalizer(lambda: server.drop_database(database))
        where = server.url(database)
    opened = Memory(where)
    try:
        yield opened
    finally:
        opened.close()


# --- cadences and time zones ---------------------------------------------------------------------

def test_a_megabyte_cron_is_refused_at_once_and_nothing_is_stored(memory: Memory) -> None:
    """A 1 MB cron (accepted after 21 s, every later listing 7.5 s and 2 MB) is refused by
    its length, before croniter reads it."""
    cron = "0 0 * * " + ",".join(["1"] * (MEGABYTE // 2))
    message = memory.refusal(lambda: memory.engine.schedules.create_schedule(
        "u", "g", {"kind": "cron", "value": cron}), InvalidCadence)
    assert "characters" in message and "limit" in message


@pytest.mark.parametrize("kind", ["cron", "once", "interval"])
def test_every_cadence_value_has_a_length_limit(memory: Memory, kind: str) -> None:
    message = memory.refusal(lambda: memory.engine.schedules.create_schedule(
        "u", "g", {"kind": kind, "value": "1" * 5000}), InvalidCadence)
    assert "limit" in message


def test_a_cadence_given_as_json_has_a_length_limit(memory: Memory) -> None:
    padded = '{"kind": "interval", "value": "1h", "timezone": "UTC"' + " " * MEGABYTE + "}"
    memory.refusal(lambda: memory.engine.schedules.create_schedule("u", "g", padded),
                   InvalidCadence)


def test_a_time_zone_of_two_thousand_parts_is_refused_not_a_recursion_error(
        memory: Memory) -> None:
    zone = "/".join(["a"] * 2000)
    message = memory.refusal(lambda: memory.engine.schedules.create_schedule(
        "u", "g", {"kind": "interval", "value": "1h", "timezone": zone}), InvalidCadence)
    assert "time zone" in message


def test_a_long_time_zone_under_the_limit_is_still_named_unknown(memory: Memory) -> None:
    """Under the length limit, a made-up zone of many parts is an unknown zone, as before."""
    zone = "/".join(["Europe"] * 9)
    message = memory.refusal(lambda: memory.engine.schedules.create_schedule(
        "u", "g", {"kind": "interval", "value": "1h", "timezone": zone}), InvalidCadence)
    assert "unknown time zone" in message


def test_a_schedule_still_takes_the_longest_real_zone_and_a_long_cron(memory: Memory) -> None:
    cron = ",".join(str(minute) for minute in range(0, 60, 5)) + " 1,2,3,4,5,6 * * 1-5"
    made = memory.run(memory.engine.schedules.create_schedule(
        "u", "g", {"kind": "cron", "value": cron,
                   "timezone": "America/Argentina/ComodRivadavia"}, name="long but fine"))
    memory.run(memory.engine.schedules.delete_schedule(made.schedule_id))


# --- queries: the LIKE fallback -------------------------------------------------------------------

def test_a_fifty_kilobyte_query_is_refused_by_its_length(memory: Memory) -> None:
    """It reached SQLite's LIKE, which failed: "LIKE or GLOB pattern too complex"."""
    from core.inputs import MAX_QUERY_CHARS

    query = "zq" * 25_000
    message = memory.refusal(lambda: memory.engine.search(
        query=query, namespace=memory.engine.config.agent))
    assert f"{MAX_QUERY_CHARS:,}" in message
    memory.refusal(lambda: memory.engine.list_notes(text=query))
    memory.refusal(lambda: memory.engine.notes.recall_memories(query))
    memory.refusal(lambda: memory.engine.schedules.search_schedules(text=query))


@pytest.mark.parametrize("char", ["%", "_", "\\", "😀", "é"])
def test_the_longest_query_reaches_the_like_fallback_and_answers(memory: Memory,
                                                                 char: str) -> None:
    """At the limit, whatever its characters (escaped wildcards take two bytes, an emoji
    four), the LIKE pattern fits SQLite's 50,000 bytes."""
    from core.inputs import MAX_QUERY_CHARS

    query = char * MAX_QUERY_CHARS
    found = memory.run(memory.engine.search(query=query, namespace=memory.engine.config.agent,
                                            mode="keyword"))
    assert found.results == []
    assert memory.run(memory.engine.list_notes(text=query)).notes == []
    assert memory.run(memory.engine.schedules.search_schedules(text=query)).total == 0


# --- scratchpad ----------------------------------------------------------------------------------

def test_a_nul_in_a_scratchpad_item_is_refused_on_both_backends(memory: Memory) -> None:
    """PostgreSQL's jsonb cannot hold U+0000: it failed there as a multi-line internal error
    and was stored on SQLite."""
    message = memory.refusal(lambda: memory.engine.write_scratchpad("s-seed", ["a\x00b"]))
    assert "item 1" in message
    assert memory.run(memory.engine.read_scratchpad("s-seed")).items == ["first step"]


# --- refusals quote at most ~100 characters -------------------------------------------------------

HUGE = "x" * MEGABYTE


@pytest.mark.parametrize("call", [
    "get_note", "delete_note", "rename", "add_alias", "remove_alias", "get_schedule",
    "delete_schedule", "forget", "export_session", "summary_state", "compact", "read_pad",
    "clear_pad", "fact", "namespace", "session_id", "tag", "name", "schedule_name",
    "schedule_user", "ref_schedule_update", "query_namespace", "timezone", "once"])
def test_a_refusal_quotes_at_most_a_hundred_characters_of_a_megabyte_input(
        memory: Memory, call: str) -> None:
    """Each call a megabyte identifier reaches refuses it in one short line (they echoed
    it whole), and writes nothing."""
    engine = memory.engine
    calls: dict[str, Callable[[], Awaitable[Any]]] = {
        "get_note": lambda: engine.get_note(HUGE),
        "delete_note": lambda: engine.edit_note(HUGE, importance=0.1),
        "rename": lambda: engine.rename_note("seed", HUGE),
        "add_alias": lambda: engine.alias_note("seed", HUGE),
        "remove_alias": lambda: engine.unalias_note(HUGE),
        "get_schedule": lambda: engine.schedules.get_schedule(HUGE),
        "delete_schedule": lambda: engine.schedules.update_schedule(HUGE, goal="g"),
        "forget": lambda: engine.forget(HUGE),
        "export_session": lambda: engine.export_session(HUGE, "/nonexistent/never-written.json"),
        "summary_state": lambda: engine.summary_state(HUGE),
        "compact": lambda: engine.compact(HUGE),
        "read_pad": lambda: engine.read_scratchpad(HUGE),
        "clear_pad": lambda: engine.clear_scratchpad(HUGE),
        "fact": lambda: engine.get_fact(HUGE, "key"),
        "namespace": lambda: engine.add_note("n", "c", namespace=HUGE),
        "session_id": lambda: engine.append(HUGE, {"role": "user", "content": "hi"}),
        "tag": lambda: engine.add_note("n", "c", tags=[HUGE]),
        "name": lambda: engine.add_note(HUGE, "c"),
        "schedule_name": lambda: engine.schedules.create_schedule(
            "u", "g", {"kind": "interval", "value": "1h"}, name=HUGE),
        "schedule_user": lambda: engine.schedules.create_schedule(
            HUGE, "g", {"kind": "interval", "value": "1h"}),
        "ref_schedule_update": lambda: engine.schedules.pause_schedule(HUGE),
        "query_namespace": lambda: engine.search(query="zebra", namespace=HUGE),
        "timezone": lambda: engine.schedules.create_schedule(
            "u", "g", {"kind": "interval", "value": "1h", "timezone": "Q" * MEGABYTE}),
        "once": lambda: engine.schedules.create_schedule(
            "u", "g", {"kind": "once", "value": "2" * MEGABYTE}),
    }
    before = memory.counts()
    try:  # forgetting a session that is not there answers False: no refusal to word
        memory.run(calls[call]())
    except WorkbenchError as refused:
        assert_one_short_line(str(refused))
    else:
        assert call == "forget", "a megabyte identifier was accepted"
    assert memory.counts() == before


# --- one identifier rule -------------------------------------------------------------------------

def identifier_calls(engine: Engine) -> dict[str, Callable[[str], Awaitable[Any]]]:
    """Each kind of identifier, given through the engine's API (the other names in a call
    are fresh, so an accepted call cannot make a later one fail for a taken name)."""
    fresh = f"fresh-{uuid.uuid4()}"
    return {
        "note name": lambda value: engine.add_note(value, "some content"),
        "tag": lambda value: engine.add_note(fresh, "some content", tags=["ok", value]),
        "session id": lambda value: engine.append(value, {"role": "user", "content": "hi"}),
        "namespace": lambda value: engine.add_note(fresh, "some content", namespace=value),
        "schedule name": lambda value: engine.schedules.create_schedule(
            "u", "g", {"kind": "interval", "value": "1h"}, name=value),
    }


KINDS = ["note name", "tag", "session id", "namespace", "schedule name"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("char", ["\x00", "\t", "\n", "\u200b", "\u2028", "\ufeff", "\u202e"])
def test_an_identifier_with_a_control_or_invisible_character_is_refused(
        memory: Memory, kind: str, char: str) -> None:
    """SQLite stored NUL, tab, newline and zero-width characters in all but note names."""
    message = memory.refusal(lambda: identifier_calls(memory.engine)[kind](f"ab{char}cd"))
    assert f"U+{ord(char):04X}" in message


@pytest.mark.parametrize("kind", KINDS)
def test_a_plain_identifier_of_each_kind_is_accepted(memory: Memory, kind: str) -> None:
    memory.run(identifier_calls(memory.engine)[kind]("plain-ident été 日本"))


def test_a_blank_tag_is_dropped_as_a_repeat_is_and_the_rules_of_seed_001_hold(
        memory: Memory) -> None:
    """Answered, not changed: tags are trimmed, lower-cased and deduplicated, and a blank one
    is dropped (it holds nothing to store); the README says so."""
    note = memory.run(memory.engine.add_note(f"tidy-{uuid.uuid4()}", "c",
                                             tags=[" A ", "a", "  ", "", "B"]))
    assert note.tags == ["a", "b"]
    memory.run(memory.engine.remove_note(note.note_id))


def test_a_nan_importance_is_named_not_a_number(memory: Memory) -> None:
    message = memory.refusal(lambda: memory.engine.add_note("nan", "c", importance=math.nan))
    assert "not a number" in message


INVISIBLE = st.characters(categories=["Cc", "Cf"]) | st.sampled_from(["\u2028", "\u2029"])
VISIBLE = st.text(st.characters(codec="utf-8", categories=["L", "N", "P", "S"]),
                  min_size=1, max_size=150)


@settings(max_examples=40, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(kind=st.sampled_from(KINDS), head=VISIBLE, bad=INVISIBLE, tail=VISIBLE)
def test_any_identifier_holding_a_control_or_format_character_is_refused(
        memory: Memory, kind: str, head: str, bad: str, tail: str) -> None:
    """For every kind, wherever the character sits, whatever surrounds it; the refusal
    quotes at most ~100 characters and nothing is written."""
    value = head + bad + tail
    before = memory.counts()
    with pytest.raises(InvalidInput) as caught:
        memory.run(identifier_calls(memory.engine)[kind](value))
    message = str(caught.value)
    assert_one_short_line(message)
    # The quote is the input's start, cut: no 100 characters of it in a row are shown.
    quoted = repr(value)[1:-1]
    if len(quoted) > 100:
        assert quoted[:100] not in message, message
    assert memory.counts() == before


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-n", "0", "-q"]))
