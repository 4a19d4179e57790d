"""Tests of the pure storage-pipeline functions in core.indexing."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.config import ImportanceConfig
from core.errors import InvalidInput, InvalidMessage
from core.indexing import (
    MAX_DEPTH,
    ROLES,
    chunk_spans,
    chunk_text,
    content_hash,
    default_importance,
    extract_indexable_text,
    normalize_tags,
    normalize_text,
    validate_message,
)

# ------------------------------------------------------------------------------------------
# validate_message


def test_valid_message_is_copied_and_normalised():
    payload = {"role": "assistant", "tool_calls": ({"id": "c1", "function": {"name": "f"}},),
               "importance": 1, "x-extra": {"kept": True}}
    message = validate_message(payload)
    assert message == {
        "role": "assistant", "content": None, "importance": 1.0, "x-extra": {"kept": True},
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f"}}],
    }
    assert isinstance(message["importance"], float)
    message["x-extra"]["kept"] = False
    assert payload["x-extra"]["kept"] is True  # a deep copy


def test_every_role_and_content_shape_is_accepted():
    for role in ROLES:
        assert validate_message({"role": role, "content": "hi"})["role"] == role
    parts = [{"type": "text", "text": "a"}, {"type": "image_url", "image_url": {"url": "u"}}]
    assert validate_message({"role": "user", "content": parts})["content"] == parts
    tool = {"role": "tool", "content": "42", "tool_call_id": "c1", "tool_name": "calc",
            "name": None, "metadata": {"k": [1, 2.5, None]}}
    assert validate_message(tool) == tool


@pytest.mark.parametrize(
    ("payload", "expected"),
    [
        ({"role": "bot"}, "message.role must be one of user, assistant, tool, system; got 'bot'"),
        ({"content": "x"}, "message.role must be one of user, assistant, tool, system; "
                           "it is missing"),
        ({"role": "user", "content": 3}, "message.content must be a string, null or a list"),
        ({"role": "user", "content": ["x"]}, "message.content[0] must be a dict"),
        ({"role": "user", "content": [{"type": "text"}]}, "message.content[0].text must be"),
        ({"role": "user", "content": [{"text": "a"}]}, "message.content[0].type must be"),
        ({"role": "assistant", "tool_calls": {}}, "message.tool_calls must be a list; got dict"),
        ({"role": "assistant", "tool_calls": [{"function": {"name": "f"}}]},
         "message.tool_calls[0].id must be a string"),
        ({"role": "assistant", "tool_calls": [{"id": "1", "type": "x", "function": {}}]},
         'message.tool_calls[0].type must be "function"'),
        ({"role": "assistant", "tool_calls": [{"id": "1", "function": {"name": ""}}]},
         "message.tool_calls[0].function.name must be a non-empty string"),
        ({"role": "assistant", "tool_calls": [{"id": "1", "function": {"name": "f",
                                                                        "arguments": 3}}]},
         "message.tool_calls[0].function.arguments must be a JSON string or a dict; got int"),
        ({"role": "tool", "tool_call_id": 7}, "message.tool_call_id must be a string; got int"),
        ({"role": "user", "importance": True}, "message.importance must be a number"),
        ({"role": "user", "importance": "high"}, "message.importance must be a number"),
        ({"role": "user", "importance": 1.5}, "message.importance must be from 0 to 1; got 1.5"),
        ({"role": "user", "metadata": []}, "message.metadata must be a dict; got list"),
        ({"role": "user", "metadata": {"x": float("nan")}}, "message.metadata.x is nan"),
        ({"role": "user", "metadata": {"x": math.inf}}, "message.metadata.x is inf"),
        ({"role": "user", "metadata": {1: "a"}}, "message.metadata has a key of type int"),
        ({"role": "user", "metadata": {"a b": {1}}}, "message.metadata['a b'] is a set"),
        ({"role": "user", "metadata": {"n": 2**70}}, "message.metadata.n is an integer outside"),
        ({"role": "user", "content": [{"type": "text", "text": "ok\ud800"}]},
         "message.content[0].text contains a lone surrogate '\\ud800' at index 2"),
        ({"role": "user", "metadata": {"\udcff": 1}}, "a key of message.metadata contains"),
    ],
)
def test_invalid_messages_say_what_is_wrong(payload, expected):
    with pytest.raises(InvalidMessage) as caught:
        validate_message(payload)
    assert expected in str(caught.value)


def test_non_dict_payload():
    with pytest.raises(InvalidMessage, match=r"a message must be a dict .*got list"):
        validate_message([{"role": "user"}])


def test_nesting_limit_and_cycles():
    def nested(levels):
        value: dict = {}
        for _ in range(levels - 2):  # the message dict and metadata are the first two levels
            value = {"a": value}
        return {"role": "user", "metadata": value}

    validate_message(nested(MAX_DEPTH))
    with pytest.raises(InvalidMessage, match=f"nested deeper than {MAX_DEPTH} levels"):
        validate_message(nested(MAX_DEPTH + 1))
    cyclic: dict = {"role": "user", "metadata": {}}
    cyclic["metadata"]["self"] = cyclic
    with pytest.raises(InvalidMessage, match="nested deeper"):
        validate_message(cyclic)


def test_nul_characters_survive_a_json_round_trip():
    message = validate_message({"role": "user", "content": "a\x00b"})
    text = json.dumps(message, allow_nan=False, ensure_ascii=False)
    assert "\x00" not in text  # escaped as \u0000, so SQLite TEXT never sees a raw NUL
    assert json.loads(text)["content"] == "a\x00b"
    assert normalize_text(message["content"]) == "ab"


json_leaves = (st.none() | st.booleans() | st.integers() | st.floats()
               | st.text() | st.binary())
json_ish = st.recursive(
    json_leaves,
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.text(max_size=8) | st.integers(), children, max_size=4),
    max_leaves=30,
)
message_ish = st.fixed_dictionaries(
    {},
    optional={
        "role": st.sampled_from([*ROLES, "bot", 3]),
        "content": json_ish,
        "tool_calls": json_ish,
        "tool_call_id": json_ish,
        "importance": json_ish,
        "metadata": json_ish,
        "extra": json_ish,
    },
)


@settings(max_examples=300, deadline=None)
@given(st.one_of(message_ish, json_ish))
def test_validate_message_only_ever_raises_invalid_message(payload):
    try:
        message = validate_message(payload)
    except InvalidMessage:
        return
    text = json.dumps(message, allow_nan=False)
    text.encode("utf-8")
    assert message["role"] in ROLES
    assert isinstance(extract_indexable_text(message), str)


# ------------------------------------------------------------------------------------------
# extract_indexable_text


def test_extract_text_parts_and_tool_calls():
    message = {
        "role": "assistant",
        "content": [{"type": "text", "text": "first"}, {"type": "image_url", "image_url": {}},
                    {"type": "text", "text": "second"}],
        "tool_calls": [
            {"id": "1", "type": "function",
             "function": {"name": "search", "arguments": '{"q": "cats", "n": 3, '
                                                         '"opts": {"lang": "en", "x": [true]}}'}},
            {"id": "2", "type": "function", "function": {"name": "raw", "arguments": "not json"}},
            {"id": "3", "type": "function", "function": {"name": "d", "arguments": {"k": "v"}}},
        ],
    }
    assert extract_indexable_text(message) == "first\nsecond\nsearch\ncats\nen\nraw\nnot json\nd\nv"


def test_extract_tool_result_and_empty():
    assert extract_indexable_text({"role": "tool", "content": "result", "tool_call_id": "1"}) \
        == "result"
    assert extract_indexable_text({"role": "assistant", "content": None}) == ""
    # Malformed stored payloads are tolerated, not refused.
    assert extract_indexable_text({"content": [3], "tool_calls": [None, {"function": 1}]}) == ""


# ------------------------------------------------------------------------------------------
# normalize_text


def test_normalize_text():
    raw = "  ﬁne\u00a0 \t text\r\nline\x00two\x07\r\r\r\n\n\nend \n\tnext\x85last\u2028x  "
    assert normalize_text(raw) == "fine text\nlinetwo\n\nend\nnext\nlast\nx"
    assert normalize_text("") == ""
    assert normalize_text("lone \ud800 surrogate") == "lone surrogate"


@given(st.text())
def test_normalize_text_is_idempotent(text):
    once = normalize_text(text)
    assert normalize_text(once) == once
    assert "\n\n\n" not in once and "  " not in once and "\t" not in once
    once.encode("utf-8")


# ------------------------------------------------------------------------------------------
# chunk_text

_CJK_ENDS = "。！？"


def _boundary(text: str, i: int) -> bool:
    """Whether position i (a cut before text[i]) lies between two words."""
    return (i <= 0 or i >= len(text) or text[i].isspace() or text[i - 1].isspace()
            or text[i - 1] in _CJK_ENDS)


def _word_length_at(text: str, i: int) -> int:
    """The length of the whitespace-delimited word around position i."""
    start = i
    while start > 0 and not text[start - 1].isspace():
        start -= 1
    end = i
    while end < len(text) and not text[end].isspace():
        end += 1
    return end - start


def test_chunk_text_basics():
    assert chunk_text("") == []
    assert chunk_text(" \n\t ") == []
    assert chunk_text("short text") == ["short text"]
    assert chunk_text("  padded  ") == ["padded"]
    text = "x" * 640
    assert chunk_text(text) == [text]
    with pytest.raises(ValueError):
        chunk_text("abc", max_chars=10, overlap=10)


def test_chunk_prefers_sentence_and_paragraph_ends():
    sentences = " ".join(f"Sentence number {i} is here." for i in range(40))
    chunks = chunk_text(sentences, max_chars=200, overlap=30)
    assert all(chunk.endswith(".") for chunk in chunks)
    paragraphs = "\n\n".join("word " * 30 + "end" for _ in range(5))
    chunks = chunk_text(paragraphs, max_chars=250, overlap=20)
    assert all(chunk.endswith("end") for chunk in chunks[:-1])


def test_chunk_overlap_starts_at_a_word():
    text = " ".join(f"w{i:03d}" for i in range(400))
    spans = chunk_spans(text, max_chars=100, overlap=30)
    for (_, end), (start, _) in zip(spans, spans[1:], strict=False):
        assert 30 - 5 <= end - start <= 30  # words are 4 chars, so at most 5 are lost
        assert text[start - 1] == " "


def test_chunk_long_word_is_split_with_exact_overlap():
    text = "intro " + "y" * 300 + " outro"
    spans = chunk_spans(text, max_chars=100, overlap=10)
    chunks = [text[s:e] for s, e in spans]
    assert chunks[0] == "intro"
    assert all(len(c) <= 100 for c in chunks)
    inner = [(s, e) for s, e in spans if text[s] == "y" and text[e - 1] == "y"]
    for (_, end), (start, _) in zip(inner, inner[1:], strict=False):
        assert end - start == 10
    assert "".join(chunks).replace("intro", "").replace("outro", "").count("y") >= 300


def test_chunk_does_not_duplicate_when_overlap_would_split_a_fitting_word():
    text = ("a " * 40) + "z" * 90 + " tail" * 30
    chunks = chunk_text(text, max_chars=100, overlap=20)
    # The 90-char word fits a chunk, so it is kept whole rather than cut to make room for the
    # overlap, and no chunk is a mere copy of part of its neighbour.
    assert all("z" * 90 in chunk for chunk in chunks if "z" in chunk)
    assert len(chunks) == len(set(chunks))


chunk_alphabet = st.sampled_from(list("abcdefghij    .,!?\n\t\r。é\u3000"))


@settings(max_examples=300, deadline=None)
@given(st.text(chunk_alphabet, max_size=1500) | st.text(max_size=400),
       st.integers(16, 200), st.data())
def test_chunk_properties(text, max_chars, data):
    overlap = data.draw(st.integers(0, max_chars // 2 - 1))
    spans = chunk_spans(text, max_chars, overlap)
    chunks = chunk_text(text, max_chars, overlap)
    assert chunks == [text[s:e] for s, e in spans]
    assert chunk_text(text, max_chars, overlap) == chunks  # deterministic
    if not text.strip():
        assert chunks == []
        return
    if len(text.strip()) <= max_chars:
        assert chunks == [text.strip()]
    covered = [False] * len(text)
    for chunk, (start, end) in zip(chunks, spans, strict=True):
        assert 0 < len(chunk) <= max_chars
        assert chunk == chunk.strip()
        for i in range(start, end):
            covered[i] = True
        # never mid-word, unless that word is longer than a chunk
        for cut in (start, end):
            assert _boundary(text, cut) or _word_length_at(text, min(cut, len(text) - 1)) \
                > max_chars
    assert all(covered[i] or ch.isspace() for i, ch in enumerate(text))
    for (prev_start, prev_end), (start, _) in zip(spans, spans[1:], strict=False):
        assert prev_start < start  # progress
        shared = prev_end - start
        assert shared <= overlap  # neighbours share at most `overlap` characters
        if shared < 0:  # no overlap: only whitespace between them
            assert not text[prev_end:start].strip()


@settings(max_examples=100, deadline=None)
@given(st.lists(st.text("abcdefgh", min_size=1, max_size=8), min_size=1, max_size=300),
       st.integers(0, 40))
def test_chunk_overlap_is_close_to_requested_with_short_words(words, overlap):
    text = " ".join(words)
    spans = chunk_spans(text, 100, overlap)
    for (_, prev_end), (start, _) in zip(spans, spans[1:], strict=False):
        assert overlap - 9 <= prev_end - start <= overlap


# ------------------------------------------------------------------------------------------
# content_hash, tags, importance


def test_content_hash():
    assert content_hash("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    assert content_hash("é") != content_hash("e")
    assert len(content_hash("x" * 10_000)) == 64


def test_normalize_tags():
    assert normalize_tags(None) == []
    assert normalize_tags([" Work ", "work", "", "  ", "Urgent", "WORK", "x y"]) == \
        ["work", "urgent", "x y"]
    assert normalize_tags(tag for tag in ["B", "a"]) == ["b", "a"]
    assert normalize_tags(["t"] * 40) == ["t"]  # duplicates do not count against the limit


def test_normalize_tags_refuses_over_the_limits():
    with pytest.raises(InvalidInput, match=r"is 80 characters; the limit is 64"):
        normalize_tags(["x" * 80])
    with pytest.raises(InvalidInput, match=r"^21 tags given; the limit is 16$"):
        normalize_tags([f"t{i}" for i in range(21)])
    normalize_tags(["x" * 64], max_chars=64)
    normalize_tags([f"t{i}" for i in range(16)])
    with pytest.raises(InvalidInput, match="tags must be strings"):
        normalize_tags(["ok", 3])
    with pytest.raises(InvalidInput, match="single str"):
        normalize_tags("work")
    with pytest.raises(InvalidInput, match="list of strings, got int"):
        normalize_tags(5)  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="UTF-8"):
        normalize_tags(["a\ud800"])


@given(st.lists(st.text(max_size=10), max_size=12))
def test_normalize_tags_is_idempotent(tags):
    try:
        once = normalize_tags(tags)
    except InvalidInput:
        return
    assert normalize_tags(once) == once
    assert len(once) == len(set(once)) <= 16
    assert all(tag and tag == tag.strip() for tag in once)


def test_default_importance():
    defaults = ImportanceConfig()
    assert [default_importance(role, defaults) for role in ROLES] == [0.5, 0.5, 0.3, 0.1]
    assert default_importance("tool", ImportanceConfig(tool=0.9)) == 0.9
    with pytest.raises(InvalidMessage):
        default_importance("bot", defaults)


def test_a_participant_name_is_part_of_the_indexed_text() -> None:
    from core.indexing import extract_indexable_text

    said = {"role": "user", "name": "Caroline", "content": "I went to the support group"}
    assert extract_indexable_text(said) == "Caroline: I went to the support group"
    tool = {"role": "tool", "name": "weather", "content": "sunny"}
    assert extract_indexable_text(tool) == "sunny"
    assert extract_indexable_text({"role": "user", "name": "Ann", "content": ""}) == ""
