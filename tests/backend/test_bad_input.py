"""Bad input, generated: every entry point answers or refuses clearly, and a refusal writes nothing.

Six families of input, each thrown at the real engine (deterministic backend) by hypothesis:
query text, cadences, tags, note names and aliases, message payloads and config files. For
each call the rule is the same (:meth:`Harness.attempt`): it succeeds, or it raises a
``WorkbenchError`` (``ConfigError`` for config) whose message is one printable line of
sensible length; any other exception is a bug. After a refused write the row counts of the
tables it would touch are unchanged.

One engine per backend serves the whole module (a SQLite file, a PostgreSQL database), on a
loop this module drives, because opening one per example would cost more than the examples.
The in-suite runs are modest and derandomized (the same examples every run); for a stress
run, random like any hypothesis run, set ``WORKBENCH_FUZZ_EXAMPLES`` (e.g. 3000) and pass
``-s`` to see the per-family table::

    WORKBENCH_FUZZ_EXAMPLES=3000 python -m pytest -q -n0 -s tests/backend/test_bad_input.py

``WORKBENCH_FUZZ_REPORT=path.json`` also writes the table as JSON.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import unicodedata
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from core import Engine
from core.config import describe_fields, load_config
from core.errors import ConfigError, InvalidCadence, WorkbenchError
from core.schedules.cadence import (
    Cadence,
    next_runs,
    parse_cadence,
    parse_duration,
    validate_cadence,
)
from tests.conftest import DETERMINISTIC, rows

EXAMPLES = int(os.environ.get("WORKBENCH_FUZZ_EXAMPLES", "0") or 0)


def fuzz(default: int) -> Callable[[Any], Any]:
    """Hypothesis settings for one family: ``default`` examples in the suite, or the
    ``WORKBENCH_FUZZ_EXAMPLES`` of a stress run. Applied per test, never as a global profile,
    so the rest of the suite keeps its own settings."""
    return settings(
        max_examples=EXAMPLES or default, deadline=None, derandomize=not EXAMPLES,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                               HealthCheck.filter_too_much, HealthCheck.large_base_example,
                               HealthCheck.function_scoped_fixture])


# --- what a clear refusal is ---------------------------------------------------------------------

MAX_MESSAGE_CHARS = 500
TALLY: dict[str, Counter[str]] = {}


def assert_clear(exc: BaseException) -> None:
    """A refusal a person can read: non-empty, one line, printable, short, no traceback.

    A config refusal lists every problem it found, as "; "-separated clauses (one message
    for all, so a person fixes the file once): each clause is held to the length instead.
    """
    message = str(exc)
    assert message.strip(), f"{type(exc).__name__} with an empty message"
    clauses = message.split("; ") if isinstance(exc, ConfigError) else [message]
    longest = max(clauses, key=len)
    assert len(longest) <= MAX_MESSAGE_CHARS, f"{len(longest)} characters: {longest[:200]!r}"
    assert len(message) <= 4 * MAX_MESSAGE_CHARS, f"{len(message)}-character message"
    assert len(message.splitlines()) == 1, f"message spans lines: {message!r}"
    assert "Traceback" not in message, message
    message.encode("utf-8")  # a lone surrogate here could not even be printed
    controls = [c for c in message if unicodedata.category(c) in ("Cc", "Cs")]
    assert not controls, f"message holds control characters {controls!r}: {message!r}"


def attempt(family: str, call: Callable[[], Any],
            refusal: type[BaseException] = WorkbenchError) -> tuple[bool, Any]:
    """Run ``call``; (True, result) or (False, the clear refusal). Anything else is counted as
    a failure (hypothesis's replays while shrinking included) and propagates."""
    tally = TALLY.setdefault(family, Counter())
    tally["calls"] += 1
    try:
        result = call()
    except refusal as exc:
        try:
            assert_clear(exc)
        except AssertionError:
            tally["failures"] += 1
            raise
        tally["refused"] += 1
        return False, exc
    except BaseException:
        tally["failures"] += 1
        raise
    tally["accepted"] += 1
    return True, result


def examples_of(family: str) -> None:
    TALLY.setdefault(family, Counter())["examples"] += 1


# --- one engine for the module, on a loop driven from the tests ----------------------------------

COUNTED = ("sessions", "conversation_events", "chunks", "notes", "note_names", "note_tags",
           "schedules", "session_state")
# SQLite's full-text rows live in a table of their own; PostgreSQL's are a column of chunks.
COUNTED_SQLITE = ("chunks_fts_docsize",)


class Harness:
    """An engine on a private loop: ``run`` a coroutine, ``attempt`` a call, ``counts``."""

    def __init__(self, path: Path | str) -> None:
        self.path = path
        self.counted = COUNTED + (COUNTED_SQLITE if isinstance(path, Path) else ())
        self.loop = asyncio.new_event_loop()
        config = {**DETERMINISTIC, "consolidation": {"enabled": False}}
        self.engine: Engine = self.loop.run_until_complete(
            Engine.open(path, config=config, start_worker=False))
        self.note_id = self.run(self.engine.add_note("target", "the target note of renames",
                                                     tags=["seed"])).note_id
        self.run(self.engine.append("s-fuzz", {"role": "user", "content": "hello fuzz world"}))
        self.schedule_id = self.run(self.engine.schedules.create_schedule(
            "fuzzer", "keep going", {"kind": "interval", "value": "1h"})).schedule_id

    def run(self, coro: Awaitable[Any]) -> Any:
        return self.loop.run_until_complete(coro)

    def attempt(self, family: str, make: Callable[[], Awaitable[Any]]) -> tuple[bool, Any]:
        return attempt(family, lambda: self.run(make()))

    def counts(self) -> dict[str, int]:
        sql = "SELECT " + ", ".join(f"(SELECT count(*) FROM {t})" for t in self.counted)
        return dict(zip(self.counted, rows(self.path, sql)[0], strict=True))

    def close(self) -> None:
        self.run(self.engine.close())
        self.loop.close()


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def harness(request: pytest.FixtureRequest,
            tmp_path_factory: pytest.TempPathFactory) -> Iterator[Harness]:
    """One engine per backend for the module: a file, or a PostgreSQL database of its own."""
    where: Path | str = tmp_path_factory.mktemp("bad-input") / "memory.db"
    if request.param == "postgres":
        server = request.getfixturevalue("pg_server")
        database = server.create_database(server.migrated_template())
        request.addfinalizer(lambda: server.drop_database(database))
        where = server.url(database)
    opened = Harness(where)
    try:
        yield opened
    finally:
        opened.close()


@pytest.fixture(scope="module", autouse=True)
def report_tally() -> Iterator[None]:
    """Print (and with WORKBENCH_FUZZ_REPORT, save) examples, accepted and refused per family."""
    TALLY.clear()
    yield
    columns = ("examples", "calls", "accepted", "refused", "failures")
    lines = [f"{'family':<10}" + "".join(f"{column:>10}" for column in columns)]
    for family, tally in sorted(TALLY.items()):
        lines.append(f"{family:<10}" + "".join(f"{tally[column]:>10,}" for column in columns))
    print("\nbad input, per family (failures must be 0)\n" + "\n".join(lines))
    if path := os.environ.get("WORKBENCH_FUZZ_REPORT"):
        Path(path).write_text(json.dumps({f: dict(t) for f, t in TALLY.items()}, indent=2))


# --- strategies ----------------------------------------------------------------------------------

NASTY = st.sampled_from([
    "\x00", "\ud800", "\udfff", "\udc80", "\n", "\r", "\t", "\x0b", "\x1e", "\x85", "\u2028",
    "\u200b", "\u202e", "\ufeff", "\u0301", "\u00e9", "\U0001f600", "\uffff", '"', "'", "*",
    "(", ")", ":", "^", "-", "+", "{", "}", "%", "_", "\\", " ", "\u00a0", "\u3000", ",", "#",
    "/", "@", "$",
])
CHARS = st.one_of(st.characters(), NASTY)
TEXT = st.text(CHARS, max_size=30)
LONG_TEXT = st.builds(lambda piece, times: piece * times,
                      st.text(CHARS, min_size=1, max_size=4), st.integers(200, 4000))
BLANK = st.text(st.sampled_from(" \t\n\r\x0b\x0c\u00a0\u2028\u3000\u200b"), max_size=8)
NOTE_ID_SHAPED = st.uuids().flatmap(lambda u: st.sampled_from([
    f"note-{u}", f"NOTE-{u}", f" note-{u} ", f"note-{u}".upper(), f"note-{u}\x00",
    f"note-{u.hex}", f"note-{u}-x"]))
FTS_WORDS = st.sampled_from([
    '"', '""', "AND", "OR", "NOT", "NEAR", "NEAR(", "NEAR(a b, 2)", "*", "^", ":", "(", ")",
    "{", "}", "-", "+", "chunk_text", "context", "chunk_text:", "{chunk_text context}:",
    "x:y", "'", ",", "hello", "fuzz", "world", "a*", "\x00", "\ud800", "\u00e9t\u00e9",
])
FTS_QUERY = st.lists(st.one_of(FTS_WORDS, TEXT), max_size=10).flatmap(
    lambda words: st.sampled_from([" ".join(words), "".join(words)]))
ANY_TEXT = st.one_of(TEXT, FTS_QUERY, BLANK, NOTE_ID_SHAPED, LONG_TEXT)
WRONG = st.one_of(
    st.none(), st.booleans(), st.integers(), st.just(2**70), st.floats(), st.binary(max_size=8),
    st.lists(st.integers(), max_size=3), st.dictionaries(TEXT, st.integers(), max_size=2),
    st.tuples(TEXT), st.builds(object), st.builds(datetime.now))
TEXT_OR_WRONG = st.one_of(ANY_TEXT, ANY_TEXT, ANY_TEXT, WRONG)


def mostly(good: st.SearchStrategy[Any], bad: st.SearchStrategy[Any],
           weight: int = 3) -> st.SearchStrategy[Any]:
    """``good`` about ``weight`` times as often as ``bad``: an example then has one or two bad
    parts among good ones, and reaches past the first check. (``one_of`` would not weight
    them: it draws each distinct branch equally often.)"""
    return st.integers(0, 999).flatmap(lambda pick: bad if pick % (weight + 1) == 0 else good)


WORD = st.one_of(st.sampled_from(["hello", "fuzz", "world", "deploy", "friday", "café",
                                  "naïve", "日本", "😀", "x", "42"]),
                 st.text(st.characters(codec="utf-8", exclude_categories=("C", "Z")),
                         min_size=1, max_size=12))
WORDS = st.lists(WORD, min_size=1, max_size=6).map(" ".join)
TAG_ITEM = st.one_of(TEXT, TEXT, st.builds(lambda c, n: c * n, st.sampled_from("aé😀 "),
                                           st.integers(60, 70)), WRONG)
TAGS = mostly(st.one_of(st.none(), st.lists(mostly(WORD, TAG_ITEM), max_size=6)), st.one_of(
    st.lists(TAG_ITEM, max_size=20), st.lists(TAG_ITEM, max_size=20).map(tuple),
    st.lists(WORD, min_size=17, max_size=20), TEXT, WRONG,
    st.dictionaries(TEXT, st.integers(), max_size=3), st.sets(TEXT, max_size=4)), 2)

IMPORTANCE = mostly(st.floats(0, 1), st.one_of(
    st.floats(), st.sampled_from([math.nan, math.inf, -math.inf, -0.0, 1.0000001]),
    st.integers(-2, 2), WRONG, TEXT))


# --- query text ----------------------------------------------------------------------------------

KNOB_FLOAT = mostly(st.none(), st.one_of(st.floats(), st.integers(-2, 2), WRONG))
KNOB_INT = mostly(st.none(), st.one_of(st.integers(-3, 5000), st.just(2**63), st.just(2**70),
                                       WRONG))


@fuzz(100)
@given(query=mostly(WORDS, TEXT_OR_WRONG, 2),
       mode=st.sampled_from([None, "keyword", "vector", "hybrid", "x"]),
       raw_fts=st.booleans(), fusion=st.sampled_from([None, "minmax", "rrf", "dbsf", "?"]),
       scope=st.sampled_from(["session", "namespace", "memory", "nowhere"]), tags=TAGS,
       top_k=mostly(st.integers(1, 30), KNOB_INT), weights=st.tuples(KNOB_FLOAT, KNOB_FLOAT),
       rrf_k=KNOB_INT, min_score=KNOB_FLOAT,
       query_embedding=mostly(st.none(), st.one_of(
           st.lists(st.floats(), min_size=64, max_size=64), st.lists(st.floats(), max_size=70),
           st.lists(TEXT, max_size=3), WRONG), 4))
@example(query="hi \ud800", mode=None, raw_fts=False, fusion=None, scope="session", tags=None,
         top_k=10, weights=(None, None), rrf_k=None, min_score=None, query_embedding=None)
@example(query='"', mode="keyword", raw_fts=True, fusion=None, scope="session", tags=None,
         top_k=10, weights=(None, None), rrf_k=None, min_score=None, query_embedding=None)
@example(query="x", mode=None, raw_fts=False, fusion=None, scope="session", tags=None,
         top_k=2**70, weights=(None, None), rrf_k=None, min_score=None, query_embedding=None)
@example(query="x", mode="vector", raw_fts=False, fusion=None, scope="session", tags=None,
         top_k=10, weights=(None, None), rrf_k=None, min_score=None, query_embedding=["a"])
@example(query=5, mode=None, raw_fts=False, fusion=None, scope="session", tags=5,
         top_k=10, weights=(None, None), rrf_k=None, min_score=None, query_embedding=None)
def test_query_text_is_answered_or_refused_clearly(
        harness: Harness, query: Any, mode: Any, raw_fts: bool, fusion: Any, scope: str,
        tags: Any, top_k: Any, weights: tuple[Any, Any], rrf_k: Any, min_score: Any,
        query_embedding: Any) -> None:
    engine = harness.engine
    examples_of("query")
    where = {"session": {"session_id": "s-fuzz"}, "namespace": {"namespace": "default"},
             "memory": {"session_id": engine.note_session()},
             "nowhere": {"session_id": "no such session"}}[scope]
    harness.attempt("query", lambda: engine.hybrid_query(
        **where, query=query, top_k=top_k, vector_weight=weights[0], fts_weight=weights[1],
        tags=tags, fusion=fusion, rrf_k=rrf_k, mode=mode, min_score=min_score, raw_fts=raw_fts,
        query_embedding=query_embedding))
    harness.attempt("query", lambda: engine.search(**where, query=query, mode=mode,
                                                   raw_fts=raw_fts, tags=tags))
    harness.attempt("query", lambda: engine.notes.memory_search(query, tags=tags))
    harness.attempt("query", lambda: engine.notes.recall_memories(query))
    harness.attempt("query", lambda: engine.get_context(where.get("session_id", "s-fuzz"),
                                                        query))


@fuzz(60)
@given(session_id=TEXT_OR_WRONG, limit=st.one_of(st.none(), st.integers(-2, 5), WRONG))
@example(session_id="\ud800", limit=None)
@example(session_id="s-fuzz", limit="x")
def test_session_ids_are_answered_or_refused_clearly(harness: Harness, session_id: Any,
                                                     limit: Any) -> None:
    """Session ids reach the reading calls as text of any kind (a forget of a session that
    does not exist is False and deletes nothing)."""
    engine = harness.engine
    examples_of("query")
    before = harness.counts()
    harness.attempt("query", lambda: engine.recall(session_id, limit))
    harness.attempt("query", lambda: engine.get_context(session_id, "hello"))
    harness.attempt("query", lambda: engine.hybrid_query(session_id=session_id, query="hello"))
    if session_id != "s-fuzz":
        done, removed = harness.attempt("query", lambda: engine.forget(session_id))
        if not removed:
            assert harness.counts() == before


# --- cadences ------------------------------------------------------------------------------------

CRON_PIECE = st.one_of(
    st.sampled_from(["*", "?", "L", "W", "LW", "15W", "5L", "1#2", "1#9", "H", "H(0-5)", "R",
                     "*/0", "*/5", "0-59/15", "9-9", "22-2", "jan", "JAN-mar", "mon-fri",
                     "sun,sat", "0", "60", "-1", "1,2,,3", "", "\u0661", "1e3", "0x1"]),
    st.integers(-5, 100).map(str), st.just("99999999999999999999"),
    st.tuples(st.integers(0, 70), st.integers(0, 70)).map(lambda p: f"{p[0]}-{p[1]}"),
    st.tuples(st.integers(0, 70), st.integers(0, 20)).map(lambda p: f"{p[0]}/{p[1]}"), TEXT)
CRON = st.one_of(
    st.lists(CRON_PIECE, max_size=8).flatmap(
        lambda fields: st.sampled_from([" ".join(fields), "\t".join(fields),
                                        "\n".join(fields)])),
    st.sampled_from(["@daily", "@HOURLY", "@reboot", "@every 5m", "@", " @weekly "]), TEXT)
ZONE = st.one_of(st.sampled_from(["UTC", "Europe/Paris", "America/New_York", "Asia/Tokyo",
                                  "Pacific/Kiritimati", "Etc/GMT+12", "Etc/GMT-14",
                                  "localtime", "", " UTC ", "utc", "../../etc/passwd",
                                  "Europe/Pariss", "posixrules", "Factory", "\x00", "\ud800"]),
                 TEXT, WRONG)
EXTREME = [datetime(1, 1, 1), datetime(9999, 12, 31, 23, 59), datetime(1970, 1, 1),
           datetime(2038, 1, 19, 3, 14, 8)]
ONCE = st.one_of(
    st.builds(lambda moment: moment.isoformat(timespec="minutes"),
              st.one_of(st.datetimes(), st.sampled_from(EXTREME))),
    st.builds(lambda moment, minutes: moment.replace(
        tzinfo=UTC).astimezone(__import__("datetime").timezone(timedelta(minutes=minutes)))
        .isoformat(), st.one_of(st.datetimes(min_value=datetime(2, 1, 1),
                                             max_value=datetime(9998, 1, 1)),
                               st.sampled_from(EXTREME[2:])),
              st.integers(-23 * 60, 23 * 60)),
    st.sampled_from(["2026-12-01", "2026-12-01T09:00:00.5", "2026-02-30T09:00", "T", "now",
                     "2026-12-01 09:00Z", "+275760-09-13T00:00"]), TEXT)
INTERVAL = st.one_of(st.sampled_from(["90s", "15m", "1h30m", "2d", "1w", "0", "0s", "-5m",
                                      "1.5h", "999999999w", "1h 30m", "m", ""]),
                     st.integers(-10, 10**14).map(str), TEXT)
KIND = mostly(st.sampled_from(["cron", "once", "interval"]),
              st.one_of(st.sampled_from(["CRON", " once ", "every", ""]), TEXT, WRONG))


def cron_field(low: int, high: int) -> st.SearchStrategy[str]:
    number = st.integers(low, high).map(str)
    return st.one_of(st.just("*"), number, st.integers(1, high).map(lambda step: f"*/{step}"),
                     st.tuples(number, number).map("-".join),
                     st.lists(number, min_size=1, max_size=3).map(",".join))


VALID_CRON = st.one_of(
    st.tuples(cron_field(0, 59), cron_field(0, 23), cron_field(1, 31), cron_field(1, 12),
              cron_field(0, 6)).map(" ".join),
    st.tuples(cron_field(0, 59), cron_field(0, 23), cron_field(1, 31), cron_field(1, 12),
              cron_field(0, 6), cron_field(0, 59)).map(" ".join),
    st.sampled_from(["@daily", "@hourly", "@weekly", "@monthly", "@yearly", "30 2 * * 1-5",
                     "0 0 29 2 *", "0 0 31 4 *", "0 9 L * *", "0 9 * * 5L", "0 9 * * mon#2"]))
VALID_ONCE = st.one_of(st.datetimes(min_value=datetime(2027, 1, 1),
                                    max_value=datetime(9998, 12, 1)),
                       st.sampled_from([datetime(2030, 3, 31, 2, 30),
                                        datetime(2030, 10, 27, 2, 30)])).map(
    lambda moment: moment.replace(microsecond=0).isoformat())
VALID_INTERVAL = st.one_of(st.integers(300, 10**9).map(str),
                           st.tuples(st.integers(0, 99), st.integers(0, 23),
                                     st.integers(0, 59)).map(
                               lambda p: f"{p[0]}d{p[1]}h{p[2]}m" if any(p) else "1h"))
REAL_ZONES = st.sampled_from(sorted(zone for zone in __import__("zoneinfo")
                                    .available_timezones() if zone != "localtime"))


@st.composite
def cadence_parts(draw: st.DrawFn) -> tuple[Any, Any, Any]:
    kind = draw(KIND)
    named = kind.strip().lower() if isinstance(kind, str) else None
    value_for = {"cron": mostly(VALID_CRON, CRON, 2), "once": mostly(VALID_ONCE, ONCE, 2),
                 "interval": mostly(VALID_INTERVAL, INTERVAL, 2)}.get(
        named, st.one_of(CRON, ONCE, INTERVAL))
    return kind, draw(mostly(value_for, WRONG, 6)), draw(mostly(REAL_ZONES, ZONE))


@fuzz(200)
@given(parts=cadence_parts())
@example(parts=("once", "9999-12-31T23:59", "Etc/GMT+12"))
@example(parts=("once", "0001-01-01T00:00", "Asia/Tokyo"))
@example(parts=("cron", "a\nb", "UTC"))
@example(parts=("interval", "1h", "\ud800"))
def test_cadences_parse_or_are_refused_clearly(parts: tuple[Any, Any, Any]) -> None:
    """parse_cadence, then (what it accepts) validate, next runs and describe never crash."""
    examples_of("cadence")
    kind, value, zone = parts
    parsed, cadence = attempt("cadence", lambda: parse_cadence(kind, value, zone))
    if not parsed:
        return
    assert isinstance(cadence, Cadence)
    assert parse_cadence(cadence.kind, cadence.value, cadence.timezone) == cadence
    now = datetime(2026, 6, 1, tzinfo=UTC)
    attempt("cadence", lambda: validate_cadence(cadence, 300, now))
    times = next_runs(cadence, now, 3)
    assert times == sorted(set(times)) and all(moment > now for moment in times)
    assert cadence.describe()
    assert Cadence.from_json(cadence.to_json()) == cadence


@fuzz(100)
@given(text=st.one_of(VALID_INTERVAL, INTERVAL, TEXT, WRONG))
def test_durations_parse_or_are_refused_clearly(text: Any) -> None:
    examples_of("cadence")
    parsed, seconds = attempt("cadence", lambda: parse_duration(text))
    assert not parsed or (isinstance(seconds, int) and seconds > 0)


@fuzz(100)
@given(parts=cadence_parts(),
       shape=mostly(st.sampled_from(["dict", "json", "cadence"]), st.just("junk"), 6),
       user_id=mostly(WORDS, TEXT_OR_WRONG, 4), goal=mostly(WORDS, TEXT_OR_WRONG, 4),
       name=mostly(st.one_of(st.none(), WORDS), TEXT_OR_WRONG, 4),
       policy=mostly(st.sampled_from(["always", "on_failure", "never"]), TEXT_OR_WRONG, 4),
       channel=mostly(st.one_of(st.none(), WORDS), TEXT_OR_WRONG, 4))
@example(parts=("interval", "1h", "UTC"), shape="dict", user_id="\ud800", goal="g", name=None,
         policy="always", channel=None)
@example(parts=("interval", "1h", "UTC"), shape="dict", user_id="u", goal="g", name=None,
         policy="always", channel={"a": 1})
@example(parts=("cron", "@daily", "UTC"), shape="dict", user_id="u", goal="g", name=None,
         policy="0" * 600, channel=None)
def test_schedules_are_created_or_refused_leaving_nothing(
        harness: Harness, parts: tuple[Any, Any, Any], shape: str, user_id: Any, goal: Any,
        name: Any, policy: Any, channel: Any) -> None:
    schedules = harness.engine.schedules
    examples_of("cadence")
    kind, value, zone = parts
    cadence: Any = value  # "junk": a value where the whole cadence belongs
    if shape == "dict":
        cadence = {"kind": kind, "value": value, "timezone": zone}
    elif shape == "cadence":
        cadence = Cadence(kind, value, zone)
    elif shape == "json":
        cadence = json.dumps({"kind": str(kind), "value": str(value), "timezone": str(zone)})
    before = harness.counts()
    created, _ = harness.attempt("cadence", lambda: schedules.create_schedule(
        user_id, goal, cadence, name=name, notification_policy=policy, channel_id=channel,
        channel_context_id=channel))
    after = harness.counts()
    assert after["schedules"] == before["schedules"] + created
    # The same cadence as a change to an existing schedule: refused, it is left as it was.
    kept = harness.run(schedules.get_schedule(harness.schedule_id))
    changed, _ = harness.attempt("cadence", lambda: schedules.update_schedule(
        harness.schedule_id, cadence=cadence, name=name, channel_id=channel))
    if not changed:
        assert harness.run(schedules.get_schedule(harness.schedule_id)) == kept


# --- tags ----------------------------------------------------------------------------------------

NOTE_NUMBERS = iter(range(10**9))


@fuzz(100)
@given(tags=TAGS, where=st.sampled_from(["note", "write", "message", "list"]))
@example(tags=5, where="note")
@example(tags=["\ud800"], where="message")
def test_tags_are_stored_or_refused_leaving_nothing(harness: Harness, tags: Any,
                                                    where: str) -> None:
    engine = harness.engine
    examples_of("tags")
    before = harness.counts()
    if where == "note":
        added, note = harness.attempt("tags", lambda: engine.add_note(
            f"tagged {next(NOTE_NUMBERS)}", "a tagged note", tags=tags))
        grew = {"notes": int(added)}
    elif where == "write":
        kept = harness.run(engine.get_note(harness.note_id))
        added, note = harness.attempt("tags", lambda: engine.write_note(harness.note_id,
                                                                       tags=tags))
        if not added:
            assert harness.run(engine.get_note(harness.note_id)) == kept
        grew = {"notes": 0}
    elif where == "message":
        added, _ = harness.attempt("tags", lambda: engine.append(
            "s-tags", {"role": "user", "content": "tagged words", "metadata": {"tags": tags}}))
        grew = {"conversation_events": int(added)}
    else:
        added, _ = harness.attempt("tags", lambda: engine.list_notes(tags=tags))
        grew = {"notes": 0}
    after = harness.counts()
    for table, more in grew.items():
        assert after[table] == before[table] + more
    if not added:
        assert after == before
    if added and where == "note":
        assert list(note.tags) == list(dict.fromkeys(note.tags))
        assert all(tag == tag.strip().lower() and tag for tag in note.tags)


# --- note names and aliases -----------------------------------------------------------------------

NAME = mostly(WORDS, st.one_of(
    TEXT, NOTE_ID_SHAPED, BLANK,
    st.builds(lambda c, n: c * n, st.sampled_from("ab é"), st.integers(190, 10_000)), WRONG), 2)


@fuzz(100)
@given(name=NAME, alias=NAME,
       aliases=mostly(st.one_of(st.none(), st.lists(NAME, max_size=4)), NAME),
       content=mostly(WORDS, st.one_of(TEXT, BLANK, LONG_TEXT, WRONG)),
       fields=mostly(st.just({}), st.fixed_dictionaries({}, optional={
           "kind": mostly(st.sampled_from(["Note", "archive"]), TEXT_OR_WRONG),
           "category": mostly(st.sampled_from(["core", "daily", "conversation"]),
                              TEXT_OR_WRONG),
           "importance": IMPORTANCE, "source": mostly(WORDS, TEXT_OR_WRONG)})),
       op=st.sampled_from(["add", "rename", "alias", "unalias", "get", "remove", "edit"]))
@example(name="a\x00b", alias="x", aliases=None, content="c", fields={}, op="add")
@example(name="\ud800", alias="x", aliases=None, content="c", fields={}, op="get")
@example(name="a" * 468, alias="x", aliases=None, content="c", fields={}, op="get")
@example(name="n", alias="x", aliases=None, content="c", fields={"kind": "0" * 600}, op="add")
def test_names_and_aliases_are_bound_or_refused_leaving_nothing(
        harness: Harness, name: Any, alias: Any, aliases: Any, content: Any,
        fields: dict[str, Any], op: str) -> None:
    engine = harness.engine
    examples_of("names")
    before = harness.counts()
    target = harness.note_id
    calls: dict[str, Callable[[], Awaitable[Any]]] = {
        "add": lambda: engine.add_note(name, content, aliases=aliases, **fields),
        "rename": lambda: engine.rename_note(target, name),
        "alias": lambda: engine.alias_note(target, alias),
        "unalias": lambda: engine.unalias_note(alias),
        "get": lambda: engine.get_note(name),
        "remove": lambda: engine.remove_note(name),
        "edit": lambda: engine.edit_note(target, name=name, aliases=aliases, content=content,
                                         **fields),
    }
    done, result = harness.attempt("names", calls[op])
    after = harness.counts()
    if not done:
        assert after == before
        return
    if op == "add":
        assert after["notes"] == before["notes"] + 1
        assert harness.run(engine.get_note(result.name)).note_id == result.note_id
        for bound in result.aliases:
            assert harness.run(engine.get_note(bound)).note_id == result.note_id
        harness.run(engine.remove_note(result.note_id))
    elif op in ("rename", "alias", "edit"):
        assert after["notes"] == before["notes"]
        assert harness.run(engine.get_note(result.name)).note_id == target
    elif op == "remove" and result and not harness.run(engine.list_notes(text="target")).total:
        harness.note_id = harness.run(engine.add_note(
            f"target {next(NOTE_NUMBERS)}", "the target note of renames")).note_id


# --- message payloads ----------------------------------------------------------------------------


class Deep:
    """A value nested ``depth`` lists or dicts deep, built only when the call is made: the
    value itself would overflow the recursion of hypothesis's printer of examples."""

    def __init__(self, depth: int, kind: str, leaf: Any = "deep") -> None:
        self.depth, self.kind, self.leaf = depth, kind, leaf

    def __repr__(self) -> str:
        return f"Deep({self.depth}, {self.kind!r}, {self.leaf!r})"

    def build(self) -> Any:
        value = self.leaf
        for _ in range(self.depth):
            value = [value] if self.kind == "list" else {"k": value}
        return value


class Cyclic:
    """A message whose metadata holds the message itself."""

    def __repr__(self) -> str:
        return "Cyclic()"

    def build(self) -> Any:
        looped: dict[str, Any] = {"role": "user", "content": "loop"}
        looped["metadata"] = {"self": looped}
        return looped


def built(value: Any) -> Any:
    """``value`` with its Deep and Cyclic markers built (the rest of it is shallow)."""
    if isinstance(value, Deep | Cyclic):
        return value.build()
    if isinstance(value, dict):
        return {key: built(item) for key, item in value.items()}
    if isinstance(value, list):
        return [built(item) for item in value]
    if isinstance(value, tuple):
        return tuple(built(item) for item in value)
    return value


JSONISH = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.just(2**64), st.floats(), TEXT),
    lambda inner: st.one_of(st.lists(inner, max_size=4),
                            st.dictionaries(TEXT, inner, max_size=4)), max_leaves=12)
ODD_KEY = st.one_of(TEXT, st.integers(), st.none(), st.booleans(), st.floats(),
                    st.tuples(st.integers()), st.just(""), st.sampled_from(["\ud800", "\x00"]))
DEEP = st.builds(Deep, st.sampled_from([10, 63, 64, 65, 200, 1000, 1500, 5000]),
                 st.sampled_from(["list", "dict"]), st.one_of(TEXT, st.integers()))
HUGE = st.builds(lambda piece, size: (piece * (size // len(piece) + 1))[:size],
                 st.sampled_from(["x", "word ", "\x00", "é ", "\ud800", "a\nb "]),
                 st.sampled_from([100_000, 1_000_000, 2_500_000]))
CONTENT = mostly(WORDS, st.one_of(
    ANY_TEXT, st.none(), JSONISH, DEEP, WRONG, HUGE, st.builds(list),
    st.lists(st.one_of(st.fixed_dictionaries({"type": st.just("text"), "text": TEXT_OR_WRONG}),
                       st.dictionaries(TEXT, JSONISH, max_size=3), WRONG), max_size=3)))
ARGUMENTS = mostly(st.dictionaries(WORD, WORDS, max_size=3).map(json.dumps),
                   st.one_of(JSONISH, TEXT, DEEP, DEEP.map(lambda d: json.dumps(d.build())),
                             WRONG))
FUNCTION = st.fixed_dictionaries({"name": mostly(WORD, TEXT_OR_WRONG)},
                                 optional={"arguments": ARGUMENTS})
TOOL_CALL = mostly(
    st.fixed_dictionaries({"id": mostly(WORD, TEXT_OR_WRONG), "function": FUNCTION},
                          optional={"type": mostly(st.just("function"), TEXT_OR_WRONG)}),
    st.one_of(st.fixed_dictionaries({"id": WORD}, optional={"function": WRONG}), JSONISH,
              WRONG))
METADATA = mostly(st.dictionaries(WORD, st.one_of(WORDS, st.integers(), st.booleans()),
                                  max_size=4),
                  st.one_of(st.dictionaries(ODD_KEY, st.one_of(JSONISH, DEEP, TAGS), max_size=4),
                            st.fixed_dictionaries({"tags": TAGS}), JSONISH, WRONG))
OPTIONAL = {"tool_calls": mostly(st.lists(TOOL_CALL, max_size=3), TOOL_CALL),
            "tool_call_id": mostly(WORD, TEXT_OR_WRONG), "tool_name": mostly(WORD, TEXT_OR_WRONG),
            "name": mostly(WORD, TEXT_OR_WRONG), "importance": IMPORTANCE, "metadata": METADATA}


@st.composite
def payloads(draw: st.DrawFn) -> Any:
    """A Message dict, mostly right: a field or two wrong, odd extra keys, or no dict at all."""
    if draw(st.integers(0, 9)) == 0:
        return draw(st.one_of(WRONG, JSONISH, TEXT, st.just([{"role": "user"}])))
    payload: dict[Any, Any] = {"role": draw(mostly(
        st.sampled_from(["user", "assistant", "tool", "system"]),
        st.one_of(st.sampled_from(["User", "", " user", "function", "developer"]),
                  TEXT_OR_WRONG), 5))}
    if draw(st.integers(0, 5)):
        payload["content"] = draw(CONTENT)
    for key, strategy in OPTIONAL.items():
        if draw(st.integers(0, 3)) == 0:
            payload[key] = draw(strategy)
    if draw(st.integers(0, 4)) == 0:
        payload[draw(ODD_KEY)] = draw(st.one_of(JSONISH, DEEP))
    return payload


SESSION = mostly(st.just("s-msg"), st.one_of(TEXT_OR_WRONG, st.just("memory:default"),
                                             st.just(" ")))
SEQUENCE = mostly(st.none(), st.one_of(st.integers(-3, 10**6), st.just(2**63), st.just(2**70),
                                       st.just(-(2**70)), st.floats(), TEXT, st.booleans()))
AGENT = mostly(st.none(), TEXT_OR_WRONG, 4)


@fuzz(100)
@given(payload=payloads(), session_id=SESSION, sequence=SEQUENCE,
       agent=AGENT)
@example(payload={"role": "user", "content": "x"}, session_id="\ud800", sequence=None,
         agent=None)
@example(payload={"role": "user", "content": "x"}, session_id="s-big", sequence=2**70,
         agent=None)
@example(payload={"role": "user", "content": "x"}, session_id="s-agent", sequence=None,
         agent="\ud800")
@example(payload=Cyclic(), session_id="s-msg", sequence=None, agent=None)
@example(payload={"role": "user", "content": Deep(1500, "list")},
         session_id="s-msg", sequence=None, agent=None)
@example(payload={"role": "user", "content": "\ud800"}, session_id="s-msg", sequence=None,
         agent=None)
@example(payload={"role": "user", "content": "x", "importance": math.nan},
         session_id="s-msg", sequence=None, agent=None)
@example(payload={"role": "user", "content": "x" * 3_000_000}, session_id="s-msg",
         sequence=None, agent=None)
def test_messages_are_stored_or_refused_leaving_nothing(
        harness: Harness, payload: Any, session_id: Any, sequence: Any, agent: Any) -> None:
    engine = harness.engine
    examples_of("messages")
    payload = built(payload)
    before = harness.counts()
    if sequence is None:
        stored, result = harness.attempt("messages", lambda: engine.append(
            session_id, payload, agent=agent))
    else:
        stored, result = harness.attempt("messages", lambda: engine.store(
            session_id, sequence, payload, agent=agent))
    after = harness.counts()
    if not stored:
        assert after == before
        return
    assert after["conversation_events"] == before["conversation_events"] + 1
    (record,) = harness.run(engine.recall(session_id, 1))
    assert record.sequence == result.sequence and record.payload["role"] == payload["role"]


# --- config files --------------------------------------------------------------------------------

# Every known key with its default; a good value is the default or a neighbour of it.
KNOWN = {key: default for key, default, _ in describe_fields()}
CHOICES = {"storage.synchronous": ["NORMAL", "FULL", "EXTRA", "normal", "OFF"],
           "embedding.backend": ["deterministic", "model2vec", "http", "onnx"],
           "retrieval.default_recall_mode": ["keyword", "vector", "hybrid", "both"],
           "retrieval.fusion": ["minmax", "rrf", "dbsf", "sum"],
           "summary.backend": ["extractive", "http", "llm"],
           "notes.default_category": ["core", "daily", "conversation", "misc"],
           "short_term.session_ttl": ["24h", "1h30m", "90", "0s", "1.5d", "forever"]}


def good_value(key: str) -> st.SearchStrategy[Any]:
    default = KNOWN[key]
    if key in CHOICES:
        return st.sampled_from(CHOICES[key])
    if isinstance(default, bool):
        return st.booleans()
    if isinstance(default, int):
        return st.integers(0, max(2 * default, 10))
    if isinstance(default, float):
        return st.floats(0, max(2 * default, 1.0))
    if default is None:
        return st.one_of(st.none(), st.integers(1, 512))
    return st.one_of(st.just(default), WORDS)


ENV = {"SET": "set", "NUM": "12", "NEG": "-1", "FLOAT": "0.5", "TRUE": "true", "EMPTY": "",
       "NL": "a\nb", "NUL": "a\x00b", "HUGE": "9" * 5000, "NAN": "nan"}
ENV_TEXT = st.one_of(
    st.sampled_from([f"${{{name}}}" for name in ENV] + [
        "${MISSING}", "${}", "${ }", "${a\nb}", "${file:/}", "${file:/nonexistent}",
        "${file:\x00}", "${SET}${NUM}", "$SET", "${SET", "${${SET}}", "${file:~}"]),
    TEXT.map(lambda name: f"${{{name}}}"))
CONFIG_VALUE = st.one_of(
    st.none(), st.booleans(), st.integers(), st.just(10**400), st.floats(), TEXT, ENV_TEXT,
    st.sampled_from(["24h", "1h30m", "90", "-1s", "1e400", "9" * 400 + "w", "NORMAL", "full",
                     "deterministic", "hybrid", "rrf", "core", "0", ""]),
    st.lists(st.integers(), max_size=2), st.dictionaries(TEXT, st.integers(), max_size=2),
    st.builds(datetime.now), st.builds(lambda n: "x" * n, st.integers(300, 10_000)))
CONFIG_KEY = st.one_of(TEXT, st.builds(lambda n: "k" * n, st.integers(300, 10_000)),
                       st.integers(), st.sampled_from(["log_enabled", "storage.mmap_mb"]))


@st.composite
def config_dicts(draw: st.DrawFn) -> dict[Any, Any]:
    """Known keys with good values mostly, a wrong value, an unknown key or section now and
    then, nested as the TOML file is."""
    config: dict[Any, Any] = {}
    for key in draw(st.lists(st.sampled_from(sorted(KNOWN)), max_size=5, unique=True)):
        value = draw(mostly(good_value(key), CONFIG_VALUE))
        section, _, name = key.rpartition(".")
        if not section:
            config[name] = value
        elif isinstance(config.setdefault(section, {}), dict):
            config[section][name] = value
    if draw(st.integers(0, 3)) == 0:
        section = draw(st.one_of(st.sampled_from(sorted({k.split(".")[0] for k in KNOWN})),
                                 CONFIG_KEY))
        config[section] = draw(st.one_of(
            st.dictionaries(CONFIG_KEY, CONFIG_VALUE, max_size=3), CONFIG_VALUE))
    return config


CONFIG_DICT = config_dicts()
CONFIG_SOURCE = mostly(CONFIG_DICT, st.one_of(st.lists(st.integers()), st.integers(),
                                              st.none(), st.binary(max_size=5)), 6)


def toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(str(k))} = {toml_value(v)}"
                               for k, v in value.items()) + "}"
    return json.dumps(str(value))


def toml_text(data: dict[Any, Any]) -> str:
    """The dict as TOML text (tables for dict values), right or wrong as the dict is."""
    lines = [f"{json.dumps(str(k))} = {toml_value(v)}" for k, v in data.items()
             if not isinstance(v, dict)]
    for key, table in data.items():
        if isinstance(table, dict):
            lines.append(f"[{json.dumps(str(key))}]")
            lines += [f"{json.dumps(str(k))} = {toml_value(v)}" for k, v in table.items()]
    return "\n".join(lines) + "\n"


TOML_NOISE = st.sampled_from(["[", "]", "[[a]]", "=", '"', "'''", "\x00", "\ufeff", "#",
                              "a = 1\na = 2", "a.b = 1", "[storage]\n[storage]", "x = [" * 600,
                              "\r", "\\u", "1979-05-27T07:32:00Z"])


@st.composite
def toml_files(draw: st.DrawFn) -> bytes:
    shape = draw(st.integers(0, 4))
    if shape == 0:
        return draw(st.binary(max_size=200))
    if shape == 1:
        return draw(st.text(max_size=200)).encode("utf-8")
    text = toml_text(draw(CONFIG_DICT))
    if shape == 2:
        return text.encode("utf-8", "surrogatepass")
    cut = draw(st.integers(0, len(text)))
    noise = draw(st.one_of(TOML_NOISE, TEXT))
    return (text[:cut] + noise + text[cut:]).encode("utf-8", "surrogatepass")


@fuzz(200)
@given(source=CONFIG_SOURCE)
@example(source=[1])
@example(source=5)
@example(source={"short_term": {"session_ttl": 10**400}})
@example(source={"short_term": {"session_ttl": "9" * 400 + "w"}})
@example(source={"x" * 10_000: 1})
@example(source={"agent": ["y" * 10_000]})
@example(source={"agent": "${NO\nPE}"})
@example(source={"storage": {"mmap_mb": 10**30}})
@example(source={"embedding": {"backend": "x" * 600}})
def test_config_dicts_load_or_are_refused_clearly(source: Any) -> None:
    examples_of("config")
    attempt("config", lambda: load_config(source, environ=ENV), ConfigError)


@fuzz(120)
@given(content=toml_files())
@example(content=b"\xff\xfe = 1")
@example(content=("a = " + "[" * 5000 + "]" * 5000).encode())
def test_config_files_load_or_are_refused_clearly(tmp_path_factory: pytest.TempPathFactory,
                                                   content: bytes) -> None:
    examples_of("config")
    path = tmp_path_factory.getbasetemp() / "fuzzed-config.toml"
    path.write_bytes(content)
    attempt("config", lambda: load_config(path, environ=ENV), ConfigError)


@pytest.mark.parametrize("path", ["a\x00b", "/nonexistent/\ud800.toml", "", "/", "~nobody-x/c"])
def test_config_paths_that_cannot_be_read_are_refused_clearly(path: str) -> None:
    examples_of("config")
    attempt("config", lambda: load_config(path, environ=ENV), ConfigError)


def test_a_refused_cadence_message_names_the_value_on_one_line() -> None:
    """Regression: cadence messages quoted the raw value, so a newline split them."""
    with pytest.raises(InvalidCadence) as refused:
        parse_cadence("once", "2026-12-01\n09:00", "UTC")
    assert_clear(refused.value)
    assert "'2026-12-01\\n09:00'" in str(refused.value)


# --- regressions the generated runs found, pinned as plain tests --------------------------------


def test_a_query_may_ask_for_more_results_than_sqlite_vec_gives_one_leg(harness: Harness) -> None:
    """Regression: top_k above 819 asked sqlite-vec for more than its 4096 neighbours (an
    OperationalError); memory_search's top_k of 1000 did so too. Above 4096 it is refused."""
    engine = harness.engine
    assert harness.run(engine.hybrid_query(session_id="s-fuzz", query="hello", top_k=1000))
    assert harness.run(engine.notes.memory_search("target note", top_k=1000))
    for top_k in (4097, 2**70):
        ok, refusal = harness.attempt("query", lambda k=top_k: engine.hybrid_query(
            session_id="s-fuzz", query="hello", top_k=k))
        assert not ok and "top_k must be an integer from 1 to 4096" in str(refusal)


def test_memory_search_refuses_tags_given_as_one_string(harness: Harness) -> None:
    """Regression: ``tags="abc"`` was searched as the tags a, b and c."""
    ok, refusal = harness.attempt("tags",
                                  lambda: harness.engine.notes.memory_search("x", tags="abc"))
    assert not ok and "single str" in str(refusal)


@pytest.mark.parametrize("source", [
    {"short_term": {"session_ttl": "9" * 400 + "w"}},  # was accepted as an infinite TTL
    {"storage": {"mmap_mb": 10**30}},  # was accepted, then failed opening the file
    {"short_term": {"session_ttl": 10**400}},  # was an OverflowError
])
def test_config_numbers_out_of_range_are_refused(source: dict[str, Any]) -> None:
    ok, refusal = attempt("config", lambda: load_config(source, environ={}), ConfigError)
    assert not ok and ("finite" in str(refusal) or "range" in str(refusal)
                       or "too large" in str(refusal))


def test_a_sequence_refusal_for_a_long_session_id_stays_short(harness: Harness) -> None:
    """Regression: the SequenceError quoted the whole session id (the store found it with a
    session id of 200 control characters, an 865-character message; such an id is refused
    now, so the long id here is 200 visible characters, half of them backslashes, which
    repr doubles)."""
    session_id = "\u00e9\\" * 100
    harness.run(harness.engine.store(session_id, 1, {"role": "user", "content": "first"}))
    before = harness.counts()
    ok, refusal = harness.attempt("messages", lambda: harness.engine.store(
        session_id, 1, {"role": "user", "content": "again"}))
    assert not ok and "is not greater than its last sequence 1" in str(refusal)
    assert harness.counts() == before


def test_a_name_taken_refusal_for_long_names_stays_short(harness: Harness) -> None:
    """Regression: NameTaken quoted the name and the holder's name whole (two names of 191
    'é' made a 503-character message)."""
    engine = harness.engine
    name = "\u00e9" * 191
    note = harness.run(engine.add_note(name, "long named"))
    before = harness.counts()
    ok, refusal = harness.attempt("names", lambda: engine.add_note(name, "again"))
    assert not ok and "is already the name of note" in str(refusal)
    assert harness.counts() == before
    harness.run(engine.remove_note(note.note_id))
