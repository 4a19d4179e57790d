"""Tests of core.tokens.TokenCounter, with a tiny in-test tokenizer (no download)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tokenizers import Tokenizer, models, pre_tokenizers

from core.tokens import MESSAGE_OVERHEAD, TokenCounter


@pytest.fixture
def word_tokenizer() -> Tokenizer:
    vocab = {"[UNK]": 0, "hello": 1, "world": 2, "search": 3, "cats": 4}
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    return tokenizer


def test_estimate_without_a_tokenizer():
    counter = TokenCounter()
    assert not counter.exact
    assert counter.count("") == 0
    assert counter.count("a") == 1
    assert counter.count("abcd") == 1
    assert counter.count("abcde") == 2
    assert counter.count_many(["", "abcdefgh", "x" * 9]) == [0, 2, 3]
    assert counter.description.startswith("estimate: ceil(characters / 4)")


@given(st.text())
def test_estimate_is_a_quarter_of_the_length_rounded_up(text):
    count = TokenCounter().count(text)
    assert 4 * count >= len(text) > 4 * (count - 1)


def test_count_with_a_tokenizer(word_tokenizer):
    counter = TokenCounter(word_tokenizer)
    assert counter.exact
    assert counter.count("") == 0
    assert counter.count("hello world") == 2
    assert counter.count("hello, unknown world!") == 5  # punctuation splits off as [UNK]
    assert counter.count_many(["hello", "", "hello world cats"]) == [1, 0, 3]
    assert counter.count_many([]) == []
    assert counter.description == "tokenizer (WordLevel, 5 tokens) + 4 per message"


def test_truncation_and_padding_are_ignored_and_the_original_is_untouched(word_tokenizer):
    word_tokenizer.enable_truncation(max_length=3)
    word_tokenizer.enable_padding(length=10)
    counter = TokenCounter(word_tokenizer)
    long_text = "hello world " * 100
    assert counter.count(long_text) == 200
    assert counter.count_many([long_text, "hello"]) == [200, 1]
    assert word_tokenizer.truncation is not None  # the caller's tokenizer keeps its settings
    assert word_tokenizer.padding is not None


def test_count_message(word_tokenizer):
    message = {
        "role": "assistant",
        "content": "hello",
        "tool_calls": [{"id": "1", "type": "function",
                        "function": {"name": "search", "arguments": '{"q": "cats"}'}}],
    }
    counter = TokenCounter(word_tokenizer)
    # "hello\nsearch\ncats": 3 tokens plus the framing
    assert counter.count_message(message) == 3 + MESSAGE_OVERHEAD
    assert counter.count_message({"role": "assistant", "content": None}) == MESSAGE_OVERHEAD
    assert counter.count_messages([message, {"role": "user", "content": "world"}]) == \
        [3 + MESSAGE_OVERHEAD, 1 + MESSAGE_OVERHEAD]
    estimate = TokenCounter()
    assert estimate.count_message({"role": "user", "content": "x" * 10}) == 3 + MESSAGE_OVERHEAD
    assert estimate.count_messages([]) == []
