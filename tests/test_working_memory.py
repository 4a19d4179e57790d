"""Tests of core.working_memory.WorkingMemory with a fake clock (nothing sleeps)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.working_memory import WorkingMemory


class FakeClock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def make(**kwargs):
    clock = FakeClock()
    expired: list[tuple[str, list]] = []
    memory = WorkingMemory(clock=clock, on_expire=lambda sid, recs: expired.append((sid, recs)),
                           **kwargs)
    return memory, clock, expired


def test_append_get_and_history_cap():
    memory, _, expired = make(max_history_turns=3)
    assert memory.get("s") is None
    assert "s" not in memory
    for i in range(5):
        memory.append("s", i)
    assert memory.get("s") == [2, 3, 4]
    memory.extend("s", [5, 6])
    assert memory.get("s") == [4, 5, 6]
    memory.extend("s", range(10))
    assert memory.get("s") == [7, 8, 9]
    assert "s" in memory and len(memory) == 1
    assert expired == []


def test_get_returns_a_copy():
    memory, _, _ = make()
    memory.append("s", {"role": "user"})
    records = memory.get("s")
    records.append("x")
    assert memory.get("s") == [{"role": "user"}]


def test_load_replaces_with_the_last_n():
    memory, _, _ = make(max_history_turns=4)
    memory.append("s", "old")
    memory.load("s", range(10))
    assert memory.get("s") == [6, 7, 8, 9]
    memory.load("t", [])
    assert memory.get("t") == []


def test_drop_does_not_fire_on_expire():
    memory, _, expired = make()
    memory.append("s", 1)
    assert memory.drop("s") is True
    assert memory.drop("s") is False
    assert memory.get("s") is None and expired == []


def test_idle_sessions_expire():
    memory, clock, expired = make(session_ttl=60)
    memory.append("a", 1)
    clock.advance(30)
    memory.append("b", 2)
    clock.advance(30)
    assert memory.expire_idle() == []  # exactly the TTL is not yet "longer than"
    clock.advance(1)
    assert memory.expire_idle() == ["a"]
    assert expired == [("a", [1])]
    assert "b" in memory and "a" not in memory
    clock.advance(29)
    assert memory.get("b") == [2]  # touching resets the idle time
    clock.advance(59)
    assert memory.expire_idle() == []
    clock.advance(2)
    assert memory.expire_idle() == ["b"]
    assert len(memory) == 0


def test_an_expired_session_is_not_revived_by_access():
    memory, clock, expired = make(session_ttl=10)
    memory.append("s", "old")
    clock.advance(11)
    assert "s" not in memory  # __contains__ does not sweep, but says no
    assert len(memory) == 1
    assert memory.get("s") is None
    assert expired == [("s", ["old"])]
    memory.append("s", "new")
    assert memory.get("s") == ["new"]


def test_overflow_evicts_the_oldest_idle_session():
    memory, clock, expired = make(max_sessions=2)
    memory.append("a", 1)
    clock.advance(1)
    memory.append("b", 2)
    clock.advance(1)
    memory.get("a")  # now "b" is the oldest idle
    clock.advance(1)
    memory.append("c", 3)
    assert expired == [("b", [2])]
    assert memory.session_ids() == ["a", "c"]
    memory.append("a", 4)  # an existing session never evicts
    assert len(expired) == 1
    stats = memory.stats()
    assert (stats.sessions, stats.records, stats.evicted_overflow, stats.evicted_idle) == \
        (2, 3, 1, 0)
    assert stats.oldest_idle_seconds == 0.0  # "c" and "a" were both touched at this instant


def test_unbounded_sessions_and_infinite_ttl():
    memory, clock, expired = make(max_sessions=0, session_ttl=math.inf)
    for i in range(500):
        memory.append(f"s{i}", i)
    clock.advance(1e12)
    assert memory.expire_idle() == []
    assert len(memory) == 500 and expired == []


def test_a_failing_callback_does_not_stop_the_others():
    clock = FakeClock()
    seen = []

    def on_expire(session_id, records):
        seen.append(session_id)
        if session_id == "a":
            raise RuntimeError("boom")

    memory = WorkingMemory(session_ttl=5, clock=clock, on_expire=on_expire)
    memory.append("a", 1)
    memory.append("b", 2)
    clock.advance(6)
    with pytest.raises(RuntimeError, match="boom"):
        memory.expire_idle()
    assert seen == ["a", "b"] and len(memory) == 0


def test_invalid_caps_are_refused():
    with pytest.raises(ValueError):
        WorkingMemory(max_history_turns=0)
    with pytest.raises(ValueError):
        WorkingMemory(session_ttl=0)
    with pytest.raises(ValueError):
        WorkingMemory(max_sessions=-1)


def test_defaults_follow_the_seeds():
    memory = WorkingMemory()
    stats = memory.stats()
    assert (stats.max_history_turns, stats.session_ttl, stats.max_sessions) == \
        (50, 86400.0, 10000)
    assert 1 not in memory  # a non-string id is simply not held


operations = st.lists(
    st.tuples(
        st.sampled_from(["append", "extend", "load", "get", "drop", "expire", "tick"]),
        st.integers(0, 7),  # session
        st.lists(st.integers(), max_size=6),
        st.floats(0, 40),
    ),
    max_size=60,
)


@settings(max_examples=200, deadline=None)
@given(operations, st.integers(1, 5), st.integers(0, 4))
def test_caps_are_never_exceeded(ops, max_turns, max_sessions):
    memory, clock, expired = make(max_history_turns=max_turns, max_sessions=max_sessions,
                                  session_ttl=50)
    stats = memory.stats()
    for op, session, records, seconds in ops:
        sid = f"s{session}"
        if op == "append":
            memory.append(sid, records[0] if records else None)
        elif op == "extend":
            memory.extend(sid, records)
        elif op == "load":
            memory.load(sid, records)
        elif op == "get":
            got = memory.get(sid)
            assert got is None or len(got) <= max_turns
        elif op == "drop":
            memory.drop(sid)
        elif op == "expire":
            memory.expire_idle()
        else:
            clock.advance(seconds)
        stats = memory.stats()
        if max_sessions:
            assert stats.sessions <= max_sessions
        assert stats.records <= stats.sessions * max_turns
    # The private order is what makes eviction O(1): it must stay oldest-touched first.
    touched = [memory._sessions[sid].touched for sid in memory.session_ids()]
    assert touched == sorted(touched)
    assert stats.evicted_idle + stats.evicted_overflow == len(expired)
