"""Properties: tag normalisation, and name/alias resolution against a model of it."""

from __future__ import annotations

import asyncio
import itertools
import unicodedata
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    invariant,
    multiple,
    rule,
    run_state_machine_as_test,
)

from core import Engine
from core.errors import InvalidInput, NameTaken, NotFound
from core.indexing import normalize_tags
from tests.conftest import DETERMINISTIC

# --- tags --------------------------------------------------------------------------------------

# Letters whose case mapping is unusual (dotted I lowers to two characters, sharp s has no
# lower form to change, final sigma), blanks of several kinds, and plain letters.
TAG_ALPHABET = st.sampled_from(list("abcABC -_\t\u00a0\u0130\u00df\u03a3\u03c2\u00e9E\u0301"))
TAG = st.text(TAG_ALPHABET, max_size=70)


def expected_tags(items: list[str]) -> list[str]:
    """The rule, stated plainly: trim, lower, drop blanks and repeats, keep first-seen order."""
    return list(dict.fromkeys(t.strip().lower() for t in items if t.strip().lower()))


def holds_control(tag: str) -> bool:
    """Whether a trimmed tag still holds a control character (a tab inside): refused."""
    return any(unicodedata.category(char) == "Cc" for char in tag)


@settings(max_examples=300, deadline=None)
@given(items=st.lists(TAG, max_size=20))
def test_tags_are_trimmed_lowered_deduplicated_or_refused_naming_the_limit(items) -> None:
    wanted = expected_tags(items)
    first_bad = next((tag for tag in wanted if len(tag) > 64 or holds_control(tag)), None)
    try:
        tags = normalize_tags(items)
    except InvalidInput as exc:
        message = str(exc)
        if first_bad is not None and len(first_bad) > 64:
            assert f"is {len(first_bad)} characters; the limit is 64" in message
            assert repr(first_bad[:23])[1:-1] in message  # it names which tag
        elif first_bad is not None:
            assert "control character U+0009" in message
        else:
            assert message == f"{len(wanted)} tags given; the limit is 16"
        return
    assert first_bad is None and len(wanted) <= 16
    assert tags == wanted
    assert normalize_tags(tags) == tags  # idempotent
    assert all(tag == tag.strip().lower() and tag for tag in tags)


@settings(max_examples=200, deadline=None)
@given(items=st.lists(TAG, max_size=20), max_tags=st.integers(0, 20),
       max_chars=st.integers(1, 70))
def test_tag_limits_hold_for_any_configuration(items, max_tags: int, max_chars: int) -> None:
    wanted = expected_tags(items)
    fits = len(wanted) <= max_tags and all(len(tag) <= max_chars for tag in wanted)
    if fits and not any(holds_control(tag) for tag in wanted):
        assert normalize_tags(items, max_tags, max_chars) == wanted
    else:
        with pytest.raises(InvalidInput,
                           match=f"the limit is ({max_tags}|{max_chars})|control character"):
            normalize_tags(items, max_tags, max_chars)


@pytest.fixture
async def engine(memory: str):
    async with Engine.open(memory, config=DETERMINISTIC, start_worker=False) as opened:
        yield opened


NOTE_NUMBERS = itertools.count()


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(items=st.lists(TAG, max_size=18))
async def test_a_note_stores_exactly_the_normalised_tags(engine: Engine, items) -> None:
    name = f"note {next(NOTE_NUMBERS)}"
    try:
        wanted = normalize_tags(items)
    except InvalidInput as exc:
        with pytest.raises(InvalidInput) as refused:
            await engine.add_note(name, "text", tags=items)
        assert str(refused.value) == str(exc)
        with pytest.raises(NotFound):
            await engine.get_note(name)
        return
    note = await engine.add_note(name, "text", tags=items)
    assert note.tags == wanted == (await engine.get_note(name)).tags
    for tag in wanted:  # each tag finds the note, however the filter spells it
        listed = await engine.list_notes(tags=[f" {tag.upper()} " if tag.isascii() else tag],
                                         limit=1000)
        assert note.note_id in [n.note_id for n in listed.notes]


# --- name and alias resolution -----------------------------------------------------------------

# Few, confusable names, so that collisions, renames onto aliases and look-alikes are common:
# surrounding spaces (trimmed), "é" composed and decomposed (one name), case, Cyrillic and
# fullwidth look-alikes (other names), wildcards and quotes.
NAME_CHOICES = ["a", " a ", "A", "\u0430", "\uff41", "caf\u00e9", "cafe\u0301", "%", "_", "'",
                "a b"]
NAMES = st.sampled_from(NAME_CHOICES)


def canonical(name: str) -> str:
    return unicodedata.normalize("NFC", name).strip()


PROBES = sorted({canonical(name) for name in NAME_CHOICES})


def test_name_and_alias_resolution_matches_a_model(tmp_path: Path) -> None:
    """Every name and alias resolves to the note the model says, in its namespace only."""
    loop = asyncio.new_event_loop()
    engine = loop.run_until_complete(Engine.open(tmp_path / "names.db", config=DETERMINISTIC,
                                                 start_worker=False))
    counter = itertools.count()
    run = loop.run_until_complete

    class Resolution(RuleBasedStateMachine):
        notes = Bundle("notes")

        def __init__(self) -> None:
            super().__init__()
            number = next(counter)
            self.namespace, self.neighbour = f"ns{number}", f"ns{number}-next"
            self.bound: dict[str, int] = {}  # canonical name -> note key
            self.primary: dict[int, str] = {}
            self.ids: dict[int, str] = {}

        @rule(target=notes, name=NAMES)
        def add(self, name: str):
            if canonical(name) in self.bound:
                with pytest.raises(NameTaken):
                    run(engine.add_note(name, "x", namespace=self.namespace))
                return multiple()
            note = run(engine.add_note(name, "x", namespace=self.namespace))
            key = len(self.ids)
            self.ids[key], self.primary[key] = note.note_id, canonical(name)
            self.bound[canonical(name)] = key
            # The same name in the neighbouring namespace is another note.
            run(engine.notes.save_memory(name, "y", namespace=self.neighbour))
            return key

        def claim(self, key: int, name: str, call: Any) -> Any:
            """Run a call that binds ``name`` to note ``key``; the refusal the model expects
            (a removed note, a name another note holds) is checked, else its result given."""
            holder = self.bound.get(canonical(name))
            if key not in self.primary:
                with pytest.raises(NotFound):
                    run(call)
            elif holder is not None and holder != key:
                with pytest.raises(NameTaken):
                    run(call)
            else:
                return run(call)
            return None

        @rule(key=notes, alias=NAMES)
        def alias(self, key: int, alias: str) -> None:
            call = engine.alias_note(self.ids[key], alias, namespace=self.namespace)
            if self.claim(key, alias, call) is not None:
                self.bound[canonical(alias)] = key

        @rule(alias=NAMES)
        def unalias(self, alias: str) -> None:
            call = engine.unalias_note(alias, namespace=self.namespace)
            holder = self.bound.get(canonical(alias))
            if holder is None:
                with pytest.raises(NotFound):
                    run(call)
            elif self.primary[holder] == canonical(alias):
                with pytest.raises(InvalidInput, match="own name"):
                    run(call)
            else:
                assert run(call).note_id == self.ids[holder]
                del self.bound[canonical(alias)]

        @rule(key=notes, name=NAMES)
        def rename(self, key: int, name: str) -> None:
            call = engine.rename_note(self.ids[key], name, namespace=self.namespace)
            renamed = self.claim(key, name, call)
            if renamed is not None:
                assert renamed.name == canonical(name)
                if self.primary[key] != canonical(name):
                    del self.bound[self.primary[key]]
                self.primary[key] = canonical(name)
                self.bound[canonical(name)] = key

        @rule(key=notes)
        def remove(self, key: int) -> None:
            removed = run(engine.remove_note(self.ids[key], namespace=self.namespace))
            assert removed is (key in self.primary)
            if removed:
                del self.primary[key]
                self.bound = {n: k for n, k in self.bound.items() if k != key}

        @invariant()
        def every_name_resolves_to_its_note_and_no_other(self) -> None:
            for probe in PROBES:
                holder = self.bound.get(probe)
                if holder is None:
                    with pytest.raises(NotFound):
                        run(engine.get_note(probe, namespace=self.namespace))
                    continue
                note = run(engine.get_note(f" {probe} ", namespace=self.namespace))
                assert note.note_id == self.ids[holder]
                assert note.name == self.primary[holder]
                assert sorted(note.aliases) == sorted(
                    n for n, k in self.bound.items() if k == holder and n != note.name)
                if probe in run(engine.notes.list_memories(namespace=self.neighbour)):
                    other = run(engine.get_note(probe, namespace=self.neighbour))
                    assert other.note_id != note.note_id
            for key, note_id in self.ids.items():
                if key not in self.primary:
                    with pytest.raises(NotFound):
                        run(engine.get_note(note_id, namespace=self.namespace))
                with pytest.raises(NotFound):
                    run(engine.get_note(note_id, namespace=self.neighbour))

    try:
        run_state_machine_as_test(Resolution, settings=settings(
            max_examples=25, stateful_step_count=12, deadline=None,
            suppress_health_check=[HealthCheck.too_slow]))
    finally:
        loop.run_until_complete(engine.close())
        loop.close()
