"""The summarizers: the extractive one's budget, choices and format; the http one against a
loopback chat server; and build_summarizer."""

from __future__ import annotations

import re
import socket
from collections.abc import Iterator
from functools import cache
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers

from core.config import SummaryConfig
from core.errors import InvalidInput, SummaryError
from core.summary.summarizers import (
    SKIP_MARK,
    SYSTEM_PROMPT,
    ExtractiveSummarizer,
    HttpSummarizer,
    Turn,
    build_summarizer,
    split_sentences,
)
from core.tokens import TokenCounter
from tests.chat_server import DEFAULT_ANSWER, ChatServer, serve

API_KEY = "sk-test-4f9a2c7e1b"
LINE = re.compile(r"- (user|assistant|tool|system) #(\d+): (\S.*)")

VOCABULARY = """
the a to of and in is it we you i my she he they on at for with was be this that have will
alice bob carol lyon paris berlin march june monday friday deadline report invoice meeting
moved works lives sister brother engineer doctor budget price euros dollars train flight
hotel booked cancelled decided agreed project launch review draft haha yes ok thanks totally
""".split()

CORPUS = [
    "My sister Alice moved to Lyon in March 2019 and works at Renault as an engineer.",
    "We decided the deadline for the quarterly report is Friday, 2024-06-30.",
    "haha yes totally, ok thanks! see you on Monday at 9:30 in Paris.",
    "The invoice of 3,250.75 euros was paid; the flight to Berlin is booked.",
    "def summarize(turns, max_tokens): return '- user #1: …'  # code & symbols {}[]<>",
] * 3


@cache
def make_counter(kind: str) -> TokenCounter:
    """The length estimate, or a real tiny tokenizer built here (no download)."""
    if kind == "estimate":
        return TokenCounter()
    if kind == "wordlevel":
        vocab = {word: i for i, word in enumerate(["[UNK]", *dict.fromkeys(VOCABULARY)])}
        tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
        tokenizer.normalizer = normalizers.Sequence([normalizers.NFKC(), normalizers.Lowercase()])
        tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
        return TokenCounter(tokenizer)
    # Byte-level BPE: every string encodes, and counts are not additive across joins.
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(vocab_size=400, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tokenizer.train_from_iterator(CORPUS, trainer)
    return TokenCounter(tokenizer)


COUNTER_KINDS = ["estimate", "wordlevel", "bpe"]


def turns_of(*texts: str, role: str = "user") -> list[Turn]:
    return [Turn(sequence, role, text) for sequence, text in enumerate(texts, 1)]


def parsed_lines(summary: str) -> list[tuple[str, int, str]]:
    """(role, sequence, text) of each line, failing on a line not in the bullet format."""
    lines = []
    for line in summary.split("\n"):
        match = LINE.fullmatch(line)
        assert match, f"not a summary line: {line!r}"
        lines.append((match[1], int(match[2]), match[3]))
    return lines


# --- sentences -----------------------------------------------------------------------------------


def test_sentences_split_at_ends_and_line_breaks_but_not_inside_words() -> None:
    text = ("Dr. Smith paid 3.50 euros at example.com/a.html today! Was it J. R. R. Tolkien? "
            "Yes, e.g. the U.S. edition.\n1. Draft by Monday\n2) Review   it \"Friday.\" Done")
    assert split_sentences(text) == [
        "Dr. Smith paid 3.50 euros at example.com/a.html today!",
        "Was it J. R. R. Tolkien?",
        "Yes, e.g. the U.S. edition.",
        "1. Draft by Monday",
        '2) Review it "Friday."',
        "Done",
    ]


def test_a_run_without_ends_is_cut_into_pieces() -> None:
    words = [f"w{i}" for i in range(100)]
    pieces = split_sentences(" ".join(words))
    assert [len(piece.split()) for piece in pieces] == [40, 40, 20]
    assert " ".join(pieces) == " ".join(words)


# --- extractive: what it keeps -------------------------------------------------------------------

CHIT_CHAT = "haha yes totally."
FACT = "My sister Alice moved to Lyon in March 2019."


@pytest.mark.parametrize("kind", COUNTER_KINDS)
def test_the_informative_sentence_wins_within_a_turn(kind: str) -> None:
    counter = make_counter(kind)
    turns = turns_of(f"{CHIT_CHAT} {FACT} ok thanks!", "We booked the hotel.")
    budget = counter.count(f"- user #1: {FACT}") + 2  # room for one sentence, one line
    assert ExtractiveSummarizer(counter).summarize(turns, budget) == f"- user #1: {FACT}"


@pytest.mark.parametrize("kind", COUNTER_KINDS)
def test_chit_chat_turns_are_dropped_first_when_the_budget_is_tight(kind: str) -> None:
    counter = make_counter(kind)
    turns = [Turn(1, "user", CHIT_CHAT), Turn(2, "assistant", "ok thanks!"),
             Turn(3, "user", FACT), Turn(4, "assistant", "Haha yes!")]
    budget = counter.count(f"- user #3: {FACT}") + 2
    assert ExtractiveSummarizer(counter).summarize(turns, budget) == f"- user #3: {FACT}"


def test_with_room_for_everything_all_but_worthless_extras_are_kept() -> None:
    turns = [Turn(7, "user", f"{FACT} She works at Renault."), Turn(8, "assistant", "ok thanks!"),
             Turn(9, "tool", "Flight LH1034 to Berlin booked for 2024-06-30."),
             Turn(10, "user", f"Great. {CHIT_CHAT} The train leaves at 9:30.")]
    summary = ExtractiveSummarizer(TokenCounter()).summarize(turns, 1000)
    assert summary.split("\n") == [
        f"- user #7: {FACT} She works at Renault.",
        "- assistant #8: ok thanks!",  # a turn of nothing but chit-chat keeps its one sentence
        "- tool #9: Flight LH1034 to Berlin booked for 2024-06-30.",
        "- user #10: The train leaves at 9:30.",  # worth-nothing extras are left out
    ]


def test_sentences_keep_their_order_and_skips_are_marked() -> None:
    informative = ["Alice flew to Oslo on 3 May.", "Bob sold the Volvo for 4200 euros.",
                   "Carol starts at Siemens in Munich on 1 July."]
    filler = ["It was a long day for everyone.", "Anyway it was a long and slow day."]
    text = " ".join([filler[0], informative[0], filler[1], informative[1], informative[2]])
    counter = TokenCounter()
    budget = counter.count("- user #1: " + SKIP_MARK.join(informative)) + 3
    summary = ExtractiveSummarizer(counter).summarize(turns_of(text), budget)
    assert summary == ("- user #1: " + informative[0] + SKIP_MARK + informative[1] + " "
                       + informative[2])


def test_a_sentence_too_long_for_the_budget_is_cut_at_a_word_boundary() -> None:
    counter = TokenCounter()
    summary = ExtractiveSummarizer(counter).summarize(turns_of(FACT), 10)
    assert summary == "- user #1: My sister Alice moved to…"
    assert counter.count(summary) <= 10


def test_a_budget_too_small_for_one_word_is_a_summary_error() -> None:
    with pytest.raises(SummaryError, match="max_tokens 2"):
        ExtractiveSummarizer(TokenCounter()).summarize(turns_of(FACT), 2)


def test_empty_input_and_a_budget_below_one() -> None:
    summarizer = ExtractiveSummarizer(TokenCounter())
    assert summarizer.summarize([], 100) == ""
    assert summarizer.summarize(turns_of("", "  \n\t "), 100) == ""
    for budget in (0, -5):
        with pytest.raises(InvalidInput, match="max_tokens"):
            summarizer.summarize(turns_of(FACT), budget)


def test_same_input_same_output() -> None:
    turns = turns_of(*CORPUS)
    first = ExtractiveSummarizer(make_counter("bpe")).summarize(turns, 60)
    assert first == ExtractiveSummarizer(make_counter("bpe")).summarize(list(turns), 60)
    assert first != ExtractiveSummarizer(make_counter("bpe")).summarize(turns, 120)


# --- extractive: the budget, for any turns --------------------------------------------------------

WORDS = st.one_of(st.sampled_from(VOCABULARY + ["Alice", "Lyon", "2019", "3.50", "e.g.", "Dr.",
                                                 "https://example.com/a?b=c", "…", "😀", "!!"]),
                  st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)),
                          min_size=1, max_size=10))
SEPARATORS = st.sampled_from([" ", " ", " ", ". ", "! ", "? ", "\n", ", ", "  \t"])


@st.composite
def turn_texts(draw: st.DrawFn) -> str:
    parts = draw(st.lists(st.tuples(WORDS, SEPARATORS), max_size=60))
    return "".join(word + separator for word, separator in parts)


@st.composite
def turn_streams(draw: st.DrawFn) -> list[Turn]:
    texts = draw(st.lists(turn_texts(), max_size=12))
    roles = draw(st.lists(st.sampled_from(["user", "assistant", "tool", "system"]),
                          min_size=len(texts), max_size=len(texts)))
    first = draw(st.integers(1, 10_000))
    return [Turn(first + i, role, text)
            for i, (role, text) in enumerate(zip(roles, texts, strict=True))]


@pytest.mark.parametrize("kind", COUNTER_KINDS)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(turns=turn_streams(), max_tokens=st.integers(1, 400))
def test_the_summary_always_fits_and_reads_as_the_turns_said(kind: str, turns: list[Turn],
                                                              max_tokens: int) -> None:
    counter = make_counter(kind)
    try:
        summary = ExtractiveSummarizer(counter).summarize(turns, max_tokens)
    except SummaryError:
        # Only for a budget of a few tokens: below what some word of some turn costs on its
        # line with the cut mark (the line of the turn kept has no room for its first word).
        assert any(counter.count(f"- {t.role} #{t.sequence}: {word}…") > max_tokens
                   for t in turns for word in t.text.split())
        return
    assert counter.count(summary) <= max_tokens
    if not any(turn.text.strip() for turn in turns):
        assert summary == ""
        return
    assert summary
    by_sequence = {turn.sequence: turn for turn in turns}
    lines = parsed_lines(summary)
    assert [sequence for _, sequence, _ in lines] == sorted({s for _, s, _ in lines})
    for role, sequence, text in lines:
        assert by_sequence[sequence].role == role
        assert_pieces_in_order(text, " ".join(by_sequence[sequence].text.split()))


def assert_pieces_in_order(kept: str, original: str) -> None:
    """Each " … "-separated piece of ``kept`` is in ``original``, after the piece before it
    (word by word when the original has its own "…", which makes the pieces ambiguous)."""
    if "…" in original:
        assert set(kept.replace("…", " ").split()) <= set(original.replace("…", " ").split())
        return
    position = 0
    for piece in kept.split(SKIP_MARK):
        piece = piece.removesuffix("…") if piece not in original[position:] else piece
        found = original.find(piece, position)
        assert found >= 0, f"{piece!r} not in {original[position:]!r}"
        position = found + len(piece)


# --- http ----------------------------------------------------------------------------------------


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[ChatServer]:
    with serve(ChatServer(), monkeypatch) as state:
        yield state


def http_summarizer(server: ChatServer, **overrides: Any) -> HttpSummarizer:
    values: dict[str, Any] = {"base_url": server.url, "model": "test-chat", "api_key": API_KEY,
                              "timeout": 5.0, "counter": TokenCounter()}
    return HttpSummarizer(**{**values, **overrides})


TURNS = [Turn(1, "user", f"{FACT} haha"), Turn(2, "assistant", "Noted: Alice, Lyon, 2019.")]


def test_http_request_shape_and_answer(server: ChatServer) -> None:
    summarizer = http_summarizer(server, base_url=server.url + "/")
    assert summarizer.name == "http:test-chat"
    assert summarizer.summarize(TURNS + [Turn(3, "tool", "  ")], 120) == DEFAULT_ANSWER
    [request] = server.requests
    assert request["path"] == "/v1/chat/completions" and request["auth"] == f"Bearer {API_KEY}"
    body = request["body"]
    assert (body["model"], body["max_tokens"], body["temperature"]) == ("test-chat", 120, 0)
    system, user = body["messages"]
    assert system == {"role": "system", "content": SYSTEM_PROMPT}
    assert user["role"] == "user" and "120 tokens" in user["content"]
    assert user["content"].endswith(f"user #1: {FACT} haha\n\n"
                                    "assistant #2: Noted: Alice, Lyon, 2019.")
    assert "tool #3" not in user["content"]  # a turn without text is not sent


def test_http_without_a_key_sends_no_authorization(server: ChatServer) -> None:
    http_summarizer(server, api_key="").summarize(TURNS, 50)
    assert [request["auth"] for request in server.requests] == [None]


def test_http_no_turns_and_a_bad_budget_make_no_request(server: ChatServer) -> None:
    summarizer = http_summarizer(server)
    assert summarizer.summarize([], 50) == ""
    with pytest.raises(InvalidInput):
        summarizer.summarize(TURNS, 0)
    assert server.requests == []


@pytest.mark.parametrize(("mode", "reason"), [
    ("error", "HTTP 500 Internal Server Error: internal error"),
    ("garbage", "unexpected response"),
    ("missing", "unexpected response ('choices')"),
    ("redirect", "HTTP 307"),
    ("empty", "empty summary"),
])
def test_http_failures_are_summary_errors_naming_the_url(server: ChatServer, mode: str,
                                                         reason: str) -> None:
    summarizer = http_summarizer(server)
    server.mode = mode
    with pytest.raises(SummaryError) as info:
        summarizer.summarize(TURNS, 50)
    message = str(info.value)
    assert message.startswith(f"POST {server.url}/chat/completions: ") and reason in message
    assert "\n" not in message and API_KEY not in message
    assert info.value.__cause__ is None  # nothing unredacted rides along in a traceback
    assert info.value.__context__ is None or info.value.__suppress_context__
    assert len(server.requests) == 1  # a redirect is not followed with the key


def test_http_garbage_body_is_quoted_on_one_line(server: ChatServer) -> None:
    server.mode = "garbage"
    with pytest.raises(SummaryError, match="unexpected response .*<html> not json </html>"):
        http_summarizer(server).summarize(TURNS, 50)


def test_http_a_key_echoed_back_is_redacted(server: ChatServer) -> None:
    summarizer = http_summarizer(server)
    server.mode = "echo_key"
    with pytest.raises(SummaryError) as info:
        summarizer.summarize(TURNS, 50)
    assert "HTTP 401" in str(info.value) and "invalid header Bearer ***" in str(info.value)
    for text in (str(info.value), repr(info.value), repr(summarizer), str(vars(info.value))):
        assert API_KEY not in text


def test_http_timeout(server: ChatServer) -> None:
    server.mode = "slow"
    with pytest.raises(SummaryError, match=r"timed out after 0\.3 s"):
        http_summarizer(server, timeout=0.3).summarize(TURNS, 50)


def test_http_connection_refused() -> None:
    with socket.socket() as sock:  # a port that was free a moment ago: nothing listens there
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    summarizer = HttpSummarizer(base_url=url, model="m", api_key=API_KEY, timeout=2,
                                counter=TokenCounter())
    with pytest.raises(SummaryError, match=re.escape(f"POST {url}/chat/completions: ")) as info:
        summarizer.summarize(TURNS, 50)
    assert API_KEY not in str(info.value)


@pytest.mark.parametrize("kind", COUNTER_KINDS)
def test_http_an_over_long_answer_is_cut_to_the_budget(server: ChatServer, kind: str) -> None:
    counter = make_counter(kind)
    server.mode = "long"
    summary = http_summarizer(server, counter=counter).summarize(TURNS, 40)
    assert counter.count(summary) <= 40
    lines = summary.split("\n")
    assert all(line == DEFAULT_ANSWER for line in lines[:-1])
    last = lines[-1]
    assert last == DEFAULT_ANSWER or (last.endswith("…") and
                                      DEFAULT_ANSWER.startswith(last.removesuffix("…")))
    assert counter.count(summary + "\n" + DEFAULT_ANSWER) > 40  # nothing more would have fit


def test_http_an_answer_whose_first_line_cannot_fit_is_a_summary_error(server: ChatServer) -> None:
    server.mode = "long"
    with pytest.raises(SummaryError, match="does not fit in 3 tokens"):
        http_summarizer(server).summarize(TURNS, 3)


# --- build_summarizer ----------------------------------------------------------------------------


def test_build_the_extractive_summarizer_by_default() -> None:
    summarizer = build_summarizer(SummaryConfig(), TokenCounter())
    assert isinstance(summarizer, ExtractiveSummarizer) and summarizer.name == "extractive"


def test_build_the_http_summarizer() -> None:
    config = SummaryConfig(backend="http", base_url="http://127.0.0.1:9/v1/", model="small",
                           api_key=API_KEY, timeout_secs=7.5)
    summarizer = build_summarizer(config, TokenCounter())
    assert isinstance(summarizer, HttpSummarizer) and summarizer.name == "http:small"
    assert summarizer.url == "http://127.0.0.1:9/v1/chat/completions"
    assert API_KEY not in repr(summarizer)


@pytest.mark.parametrize(("values", "named"), [
    ({"model": "small"}, "needs summary.base_url: set it"),
    ({"base_url": "http://127.0.0.1:9/v1"}, "needs summary.model: set it"),
    ({}, "needs summary.base_url and summary.model: set them"),
])
def test_build_http_without_url_or_model_says_which_key(values: dict[str, str],
                                                        named: str) -> None:
    with pytest.raises(SummaryError, match=named):
        build_summarizer(SummaryConfig(backend="http", **values), TokenCounter())


def test_a_salient_turn_outlasts_raw_tool_output_when_turns_must_go() -> None:
    counter = TokenCounter()
    tool_json = '{"invoice": "INV-2291", "charges": 2, "amount": 49.0, "currency": "EUR"}'
    fact = "I am allergic to peanuts."
    turns = [Turn(1, "tool", tool_json, weight=0.36), Turn(2, "user", fact, weight=3.24)]
    one_line = counter.count(f"- user #2: {fact}") + 2
    summary = ExtractiveSummarizer(counter).summarize(turns, one_line)
    assert summary == f"- user #2: {fact}"
    unweighted = [Turn(1, "tool", tool_json), Turn(2, "user", fact)]
    assert "INV-2291" in ExtractiveSummarizer(counter).summarize(unweighted, one_line + 8)


def test_http_an_answer_over_the_bound_is_refused(server: ChatServer,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from core.summary import summarizers

    monkeypatch.setattr(summarizers, "MAX_ANSWER_BYTES", 64)
    with pytest.raises(SummaryError, match="answered more than 64 bytes"):
        http_summarizer(server).summarize(TURNS, 50)
