"""Conversational context in chunks, and session-prefixed full-text terms."""

from __future__ import annotations

from pathlib import Path

import pytest

from core import Engine
from core.storage import fts_rows
from core.storage.sqlite.search import Scope
from tests.conftest import DETERMINISTIC

TURNS = [
    ("user", "Caroline", "Did you paint anything over the summer?"),
    ("assistant", "Melanie", "Yes! A sunset over the lake, I loved it."),
    ("user", "Caroline", "That sounds lovely. Where was the lake?"),
    ("assistant", "Melanie", "Up north, near my grandmother's cabin."),
    ("user", "Caroline", "I went to a support group yesterday."),
]


def payload(role: str, name: str, content: str) -> dict:
    return {"role": role, "name": name, "content": content}


async def test_a_reply_is_found_by_the_words_of_the_question_it_answers(memory: str) -> None:
    async with Engine.open(memory, config=DETERMINISTIC) as engine:
        for role, name, text in TURNS:
            await engine.append("s", payload(role, name, text))
        # Full text alone, without the boosts (the speaker boost would also lift Melanie's
        # other turns above Caroline's question).
        found = await engine.search(session_id="s", query="what did Melanie paint?",
                                    mode="keyword", speaker_boost=0, neighbour_weight=0)
        # The answer holds "Melanie" itself and "paint" in the question before it.
        assert [r.text for r in found.results[:2]] == [
            "Melanie: Yes! A sunset over the lake, I loved it.",
            "Caroline: Did you paint anything over the summer?"]
        reply = next(r for r in found.explain()["results"] if "sunset" in r["text"])
        assert reply["matched_terms"] == ["melanie"] and reply["context_terms"] == ["paint"]
        assert reply["context"].startswith("Caroline: Did you paint")


async def test_session_terms_stem_like_plain_words(memory: str) -> None:
    async with Engine.open(memory, config=DETERMINISTIC) as engine:
        await engine.store("s", 1, payload("user", "", "she paints sunsets and feeds the cats"),
                           agent="x")
        for scope in ({"session_id": "s"}, {"namespace": "x"}):
            for word in ("painting", "sunset", "feed", "cat"):
                found = await engine.hybrid_query(query=word, mode="keyword", **scope)
                assert [r.sequence_start for r in found] == [1], (scope, word)


def test_prefixes_are_consonants_and_prefixing_follows_the_tokenizer() -> None:
    prefix = fts_rows.session_prefix("locomo-26")
    assert len(prefix) == fts_rows.PREFIX_LENGTH and not set(prefix) & set("aeiouy")
    assert prefix != fts_rows.session_prefix("locomo-30")
    assert fts_rows.prefixed("p", "search_web, café 2023!") == "psearch pweb pcafé p2023"


async def test_sessions_sharing_a_prefix_still_never_see_each_other(
        db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # About SQLite's FTS5 table, where a session's terms carry a prefix of its id.
    monkeypatch.setattr(fts_rows, "session_prefix", lambda session_id: "bcdfghjklmnp")
    monkeypatch.setattr("core.storage.sqlite.search.session_prefix",
                        lambda session_id: "bcdfghjklmnp")
    async with Engine.open(db_path, config=DETERMINISTIC) as engine:
        await engine.store("mine", 1, payload("user", "", "my lisbon flight"))
        await engine.store("theirs", 1, payload("user", "", "their lisbon secret"))
        rows = await engine.backend.fts_search(Scope(session_id="mine"), ["lisbon"], 10)
        assert len(rows) == 1
        found = await engine.hybrid_query(session_id="mine", query="lisbon secret")
        assert {r.session_id for r in found} == {"mine"}
        # The session's one-read fetch keeps neither the other session's row nor its hit.
        kept = await engine.search(session_id="mine", query="lisbon secret", mode="keyword")
        assert len(kept.legs.fts) == 1
        assert {chunk.session_id for chunk in kept.legs.chunks.values()} == {"mine"}
