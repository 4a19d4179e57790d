"""Summarizers: a run of conversation turns made into a short bulleted list within a token budget.

Both summarizers answer in one format, one line per kept turn::

    - user #12: We moved to Lyon in March 2019. … My sister Alice lives there too.

and both guarantee the answer counts at most ``max_tokens`` with the engine's one
:class:`~core.tokens.TokenCounter`. Failures raise ``SummaryError``; a budget below one raises
``InvalidInput``; no turns with text give "".

``ExtractiveSummarizer`` (the default) needs no model. What it keeps can be predicted:

1. Sentences. Each turn's text is split at line breaks and after a word ending in ".", "!" or
   "?" (closing quotes or brackets may follow), except after known abbreviations ("Dr.",
   "vs."), dotted initials ("J.", "e.g.", "U.S.") and a list number opening a sentence ("1.").
   A dot inside a word (3.14, example.com/a.html) never splits. Runs over
   ``MAX_SENTENCE_WORDS`` words are cut into pieces that long, so a pasted log becomes many
   pieces rather than one sentence that would crowd out every other turn.
2. Scores. A word is a run of letters and digits with its inner joiners ("3.50",
   "2024-06-30", "example.com/a.html" and "don't" are one word each), lowercased, a trailing
   "'s" dropped; a leading list marker ("1.", "-") is not a word. Stopwords, chit-chat ("the",
   "ok", "thanks", "haha", "totally") and single letters are worth nothing; any other word is
   worth its idf over the turns being summarised, log(1 + turns / turns containing it),
   doubled when it holds a digit or is capitalised other than as its sentence's first word
   (numbers, dates, names, places). A sentence scores the sum over its distinct words divided
   by the square root of its word count, so filler dilutes it, times its turn's weight: the
   square of the message's importance over the default 0.5 (aidaemon's by role: a tool
   result 0.3 weighs 0.36, a system message 0.04; a salient fact the agent marked 0.9 weighs
   3.24). Squared, because raw tool output is full of the digits and names the idf doubles;
   this way it gives way to what was said about it. A turn is as informative as its best
   sentence.
3. Turns. Every turn with text keeps at least its best sentence when the budget holds all those
   lines; otherwise the least informative turn is dropped (the earlier of equals: later turns
   lead into the live history) until it does or one turn is left.
4. Shares. The budget beyond those lines is shared between the kept turns in proportion to the
   tokens of their other sentences; each turn adds sentences best-first while they fit its
   share, skipping those that do not. What is left then goes to the best remaining sentences
   of any kept turn. A sentence worth nothing ("haha yes totally.") is only ever kept as the
   best of a turn that has nothing better.
5. Text. Kept sentences print in their original order, " … " between two that were not
   adjacent. The text is counted whole: while it is over budget its lowest-scoring sentence
   goes, and a last sentence still too long is cut at a word boundary and ends in "…". A
   budget too small for the one line left to hold a word of its text (a few tokens) raises
   ``SummaryError``.

Ties go by position, so the same turns and budget always give the same text.

``HttpSummarizer`` asks any OpenAI-compatible chat endpoint through
:class:`core.http_post.SecretPost`, as the embeddings' http backend does: redirects are
refused and the API key is redacted from every message this module builds.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from itertools import pairwise
from typing import TYPE_CHECKING, Any, Protocol

from core.embeddings import short_reason
from core.errors import InvalidInput, SummaryError
from core.http_post import PostFailed, SecretPost

if TYPE_CHECKING:
    from core.config import SummaryConfig
    from core.tokens import TokenCounter

__all__ = ["ExtractiveSummarizer", "HttpSummarizer", "Summarizer", "Turn", "build_summarizer",
           "cut_to_fit", "split_sentences"]

MAX_SENTENCE_WORDS = 40
MAX_ANSWER_BYTES = 4 * 1024 * 1024
"""The most a chat endpoint's answer is read of: a summary is a few thousand tokens at most,
so anything larger is a broken or hostile endpoint."""
"""Words in one sentence before it is cut into pieces."""

SKIP_MARK = " … "
"""Joins two kept sentences of a turn that had sentences between them."""

SYSTEM_PROMPT = (
    "You summarise part of a conversation between a user and an AI assistant, so that your "
    "summary can stand in for the turns it replaces. Answer with a bulleted list and nothing "
    'else: one line per turn worth keeping, exactly in the form "- {role} #{sequence}: '
    '{summary}", with that turn\'s role and sequence number as the transcript gives them, in '
    "the transcript's order. Keep every fact: names, numbers, dates, places, decisions and "
    "commitments. Leave out small talk. Never add anything the transcript does not say."
)

_ABBREVIATIONS = frozenset("mr mrs ms dr prof sr jr st vs cf fig approx inc ltd co dept".split())
_CLOSERS = "\"')]}»”’"
_DOTTED_INITIALS = re.compile(r"(?:[^\W\d_]\.)+")
# A word: letters and digits, with inner joiners kept so "3.50", "2024-06-30", "don't" and
# "example.com/a.html" are one word each.
_WORD = re.compile(r"\w+(?:[.,'’/:@+-]\w+)*")
_POSSESSIVE = re.compile(r"'s$")
_LIST_MARKER = re.compile(r"^(?:\d{1,3}[.)]|[-*•+])\s+")
_BULLET_HEAD = re.compile(r"- \S+ #\d+:")

STOPWORDS = frozenset("""
about above after again against all also am an and any are as at be because been before being
below between both but by can could did do does doing down during each few for from further had
has have having he her here hers herself him himself his how if in into is it its itself just me
more most my myself no nor not now of off on once only or other our ours out over own same she
should so some such than that the their theirs them then there these they this those through to
too under until up very was we were what when where which while who whom why will with would
you your yours yourself i'm i've i'll i'd you're you've you'll you'd we're we've we'll we'd
they're they've they'll they'd don't doesn't didn't isn't aren't wasn't weren't won't wouldn't
shouldn't couldn't can't haven't hasn't hadn't e.g i.e etc yes yeah yep yup nope ok okay sure
thanks thank thx ty please pls hi hello hey bye haha hahaha lol lmao hmm hm um uh oh ah wow cool
great nice good fine totally really right alright got gotcha let lets know think like actually
maybe one thing things something anything get go going
""".split())
"""Words worth nothing to the extractive score: function words and chit-chat."""


@dataclass(frozen=True)
class Turn:
    """One message of the run being summarised."""

    sequence: int
    role: str
    """One of "user", "assistant", "tool" or "system"."""
    text: str
    """The message's indexable text, already extracted."""
    weight: float = 1.0
    """How much the turn's sentences count: (importance / 0.5) squared."""


class Summarizer(Protocol):
    """Makes turns into a bulleted list within a token budget; synchronous, run in a thread."""

    name: str
    """What made the summary: "extractive" or "http:<model>"."""

    def summarize(self, turns: Sequence[Turn], max_tokens: int) -> str:
        """One line per kept turn, "- {role} #{sequence}: {text}", counting <= ``max_tokens``.

        Raises ``SummaryError`` when it fails and ``InvalidInput`` when ``max_tokens`` < 1;
        no turns with text give "".
        """
        ...


def build_summarizer(config: SummaryConfig, counter: TokenCounter) -> Summarizer:
    """The summarizer ``config.backend`` names, measuring its answers with ``counter``."""
    if config.backend == "extractive":
        return ExtractiveSummarizer(counter)
    if config.backend != "http":
        raise SummaryError(f'summary.backend is {config.backend!r}; use "extractive" or "http"')
    missing = [key for key, value in (("summary.base_url", config.base_url),
                                      ("summary.model", config.model)) if not value]
    if missing:
        raise SummaryError(f"the http summarizer needs {' and '.join(missing)}: set "
                           f"{'them' if len(missing) > 1 else 'it'} in the [summary] section")
    return HttpSummarizer(base_url=config.base_url, model=config.model, api_key=config.api_key,
                          timeout=config.timeout_secs, counter=counter)


def check_budget(max_tokens: int) -> None:
    """Refuse a budget that could not hold a single token."""
    if max_tokens < 1:
        raise InvalidInput(f"max_tokens must be at least 1, got {max_tokens}")


def split_sentences(text: str) -> list[str]:
    """The sentences of ``text`` as the module docstring defines them, whitespace collapsed."""
    sentences: list[str] = []
    for line in text.splitlines():
        words: list[str] = []
        for word in line.split():
            words.append(word)
            if _ends_sentence(word, opens_sentence=len(words) == 1):
                sentences.extend(_pieces(words))
                words = []
        sentences.extend(_pieces(words))
    return sentences


def _ends_sentence(word: str, *, opens_sentence: bool) -> bool:
    bare = word.rstrip(_CLOSERS)
    if bare.endswith(("!", "?")):
        return True
    if not bare.endswith("."):
        return False
    stem = bare[:-1]
    if stem.lower() in _ABBREVIATIONS or _DOTTED_INITIALS.fullmatch(bare):
        return False
    return not (opens_sentence and stem.isdigit())  # "1." opening a numbered item


def _pieces(words: list[str]) -> list[str]:
    """``words`` as sentences of at most ``MAX_SENTENCE_WORDS`` words."""
    return [" ".join(words[start:start + MAX_SENTENCE_WORDS])
            for start in range(0, len(words), MAX_SENTENCE_WORDS)]


def content_words(sentence: str) -> tuple[dict[str, float], int]:
    """The sentence's distinct content words with their weight (2 for a number or a name, else
    1), and how many words it has in all."""
    weights: dict[str, float] = {}
    tokens = _WORD.findall(_LIST_MARKER.sub("", sentence, count=1))
    for index, token in enumerate(tokens):
        word = _POSSESSIVE.sub("", token.lower().replace("’", "'"))
        if word in STOPWORDS or (len(word) == 1 and not word.isdigit()):
            continue
        salient = any(char.isdigit() for char in token) or (index > 0 and token[0].isupper())
        weights[word] = max(weights.get(word, 1.0), 2.0 if salient else 1.0)
    return weights, len(tokens)


def inverse_document_frequency(documents: Sequence[Iterable[str]]) -> dict[str, float]:
    """log(1 + documents / documents holding the word), for every word of ``documents``."""
    holding = Counter(word for document in documents for word in set(document))
    return {word: math.log(1 + len(documents) / count) for word, count in holding.items()}


@dataclass
class _Sentence:
    text: str
    turn: int  # its turn's place among the turns with text
    position: int  # its place in its turn
    score: float
    cost: int  # its tokens with a skip mark before it: at least what it adds to its line
    kept: bool = False


@dataclass
class _TurnPlan:
    """One turn's header and sentences, some of them kept."""

    index: int  # its place among the turns with text
    header: str
    header_cost: int  # the header's tokens and its line break
    sentences: list[_Sentence]

    @cached_property
    def best(self) -> _Sentence:
        return _ranked(self.sentences)[0]

    @property
    def minimum_cost(self) -> int:
        return self.header_cost + self.best.cost

    def kept_sentences(self) -> list[_Sentence]:
        return [sentence for sentence in self.sentences if sentence.kept]

    def unkept_sentences(self) -> list[_Sentence]:
        return [sentence for sentence in self.sentences if not sentence.kept]

    def line(self) -> str:
        """The turn's bullet line; sentences that were not adjacent joined by the skip mark."""
        kept = self.kept_sentences()
        parts = [kept[0].text]
        for before, after in pairwise(kept):
            parts.append(" " if after.position == before.position + 1 else SKIP_MARK)
            parts.append(after.text)
        return f"{self.header} {''.join(parts)}"


class ExtractiveSummarizer:
    """Keeps each turn's most informative sentences within the budget; no model, deterministic."""

    name = "extractive"

    def __init__(self, counter: TokenCounter) -> None:
        self._counter = counter

    def summarize(self, turns: Sequence[Turn], max_tokens: int) -> str:
        """See :class:`Summarizer`, and the module docstring for what is kept."""
        check_budget(max_tokens)
        plans = self._plan(turns)
        if not plans:
            return ""
        kept = _keep_turns(plans, max_tokens)
        _share_spare(kept, max_tokens - _planned_cost(kept))
        leftovers = _ranked(sentence for plan in kept for sentence in plan.unkept_sentences())
        _keep_best_first(leftovers, max_tokens - _planned_cost(kept))
        return self._fit(kept, max_tokens)

    def _plan(self, turns: Sequence[Turn]) -> list[_TurnPlan]:
        """Each turn with text, split into scored and costed sentences."""
        split = [(turn, split_sentences(turn.text)) for turn in turns]
        split = [(turn, sentences) for turn, sentences in split if sentences]
        words = [[content_words(sentence) for sentence in sentences] for _, sentences in split]
        idf = inverse_document_frequency([[word for weights, _ in turn_words for word in weights]
                                          for turn_words in words])
        headers = [f"- {turn.role} #{turn.sequence}:" for turn, _ in split]
        header_costs = self._counter.count_many(header + "\n" for header in headers)
        costs = iter(self._counter.count_many(SKIP_MARK + sentence for _, sentences in split
                                              for sentence in sentences))
        plans = []
        for index, ((turn, sentences), turn_words) in enumerate(zip(split, words, strict=True)):
            scored = [_Sentence(text, index, position,
                                _score(weights, count, idf) * turn.weight, next(costs))
                      for position, (text, (weights, count))
                      in enumerate(zip(sentences, turn_words, strict=True))]
            plans.append(_TurnPlan(index, headers[index], header_costs[index], scored))
        return plans

    def _fit(self, kept: list[_TurnPlan], max_tokens: int) -> str:
        """The kept sentences as text, trimmed until the counter agrees that it fits."""
        text = _render(kept)
        while self._counter.count(text) > max_tokens:
            chosen = [sentence for plan in kept for sentence in plan.kept_sentences()]
            if len(chosen) == 1:
                break
            min(chosen, key=lambda s: (s.score, s.turn, s.position)).kept = False
            text = _render(kept)
        text = cut_to_fit(text, max_tokens, self._counter)
        if not text:
            raise SummaryError(f"max_tokens {max_tokens} cannot hold one summary line")
        return text


def _score(weights: dict[str, float], word_count: int, idf: dict[str, float]) -> float:
    information = sum(idf[word] * weight for word, weight in weights.items())
    return information / math.sqrt(max(word_count, 1))


def _ranked(sentences: Iterable[_Sentence]) -> list[_Sentence]:
    """Best first; equals in the order given (``sorted`` is stable)."""
    return sorted(sentences, key=lambda sentence: -sentence.score)


def _keep_turns(plans: list[_TurnPlan], max_tokens: int) -> list[_TurnPlan]:
    """The turns whose best sentences fit, least informative dropped first; each keeps its best."""
    kept, total = list(plans), sum(plan.minimum_cost for plan in plans)
    for plan in sorted(plans, key=lambda plan: (plan.best.score, plan.index)):
        if len(kept) == 1 or total <= max_tokens:
            break
        kept.remove(plan)
        total -= plan.minimum_cost
    for plan in kept:
        plan.best.kept = True
    return kept


def _planned_cost(plans: Iterable[_TurnPlan]) -> int:
    """The tokens the kept sentences' lines will take at most, by the per-piece costs."""
    return sum(plan.header_cost + sum(s.cost for s in plan.kept_sentences()) for plan in plans)


def _share_spare(kept: list[_TurnPlan], spare: int) -> None:
    """Give each turn ``spare`` tokens in proportion to its unkept sentences' tokens."""
    rest = [sum(sentence.cost for sentence in plan.unkept_sentences()) for plan in kept]
    if spare <= 0 or not sum(rest):
        return
    for plan, tokens in zip(kept, rest, strict=True):
        _keep_best_first(_ranked(plan.unkept_sentences()), spare * tokens // sum(rest))


def _keep_best_first(candidates: list[_Sentence], budget: int) -> None:
    """Keep candidates worth something, in the order given, while they fit ``budget`` (skipping
    those that do not)."""
    for sentence in candidates:
        if sentence.score > 0 and sentence.cost <= budget:
            sentence.kept = True
            budget -= sentence.cost


def _render(plans: Iterable[_TurnPlan]) -> str:
    """One line per turn with a kept sentence, in the turns' order."""
    return "\n".join(plan.line() for plan in plans if plan.kept_sentences())


def cut_to_fit(text: str, max_tokens: int, counter: TokenCounter) -> str:
    """``text`` cut to count at most ``max_tokens``: its lines while they fit, then the next line
    cut at a word boundary and ended with "…" when more than its bullet head fits; "" when
    nothing does."""
    def fits(candidate: str) -> bool:
        return counter.count(candidate) <= max_tokens

    lines = text.split("\n")
    whole = _longest_prefix(len(lines), lambda k: fits("\n".join(lines[:k])))
    if whole == len(lines):
        return text
    kept, words = lines[:whole], lines[whole].split()
    head = _BULLET_HEAD.match(lines[whole])
    head_words = len(head.group().split()) if head else 0

    def with_words(k: int) -> str:
        return "\n".join([*kept, " ".join(words[:k]) + "…"])

    cut = _longest_prefix(len(words) - 1, lambda k: fits(with_words(k)))
    return with_words(cut) if cut > head_words else "\n".join(kept)


def _longest_prefix(limit: int, fits: Callable[[int], bool]) -> int:
    """The largest k in 0..limit for which ``fits(k)`` holds, taking counts to grow with k.

    Every k returned above 0 was tested, so the guarantee holds even where a tokenizer's
    count does not quite grow with the text.
    """
    low, high = 0, max(limit, 0)
    while low < high:
        middle = (low + high + 1) // 2
        if fits(middle):
            low = middle
        else:
            high = middle - 1
    return low


class HttpSummarizer:
    """Summarises by asking an OpenAI-compatible chat endpoint."""

    def __init__(self, *, base_url: str, model: str, api_key: str, timeout: float,
                 counter: TokenCounter) -> None:
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.name = "http:" + model
        self._model = model
        self._counter = counter
        self._http = SecretPost(self.url, api_key, timeout)

    def __repr__(self) -> str:
        return self._redact(f"HttpSummarizer(name={self.name!r}, url={self.url!r})")

    def summarize(self, turns: Sequence[Turn], max_tokens: int) -> str:
        """See :class:`Summarizer`; an answer over ``max_tokens`` is cut to fit."""
        check_budget(max_tokens)
        turns = [turn for turn in turns if turn.text.strip()]
        if not turns:
            return ""
        answer = self._parse(self._post(self.request_body(turns, max_tokens)))
        summary = cut_to_fit(answer, max_tokens, self._counter)
        if not summary:
            raise self._error(f"the answer's first line does not fit in {max_tokens} tokens")
        return summary

    def request_body(self, turns: Sequence[Turn], max_tokens: int) -> dict[str, Any]:
        """The chat request: the system prompt, then the turns as a transcript."""
        transcript = "\n\n".join(f"{turn.role} #{turn.sequence}: {turn.text.strip()}"
                                 for turn in turns)
        instruction = f"Summarise these {len(turns)} turns in at most {max_tokens} tokens."
        return {"model": self._model,
                "messages": [{"role": "system", "content": SYSTEM_PROMPT},
                             {"role": "user", "content": f"{instruction}\n\n{transcript}"}],
                "max_tokens": max_tokens, "temperature": 0}

    def _post(self, body: dict[str, Any]) -> bytes:
        try:
            raw = self._http.post(body, max_bytes=MAX_ANSWER_BYTES)[1]
        except PostFailed as exc:
            raise self._error(str(exc)) from None
        if len(raw) > MAX_ANSWER_BYTES:
            raise self._error(f"answered more than {MAX_ANSWER_BYTES:,} bytes; nothing was "
                              "read past it")
        return raw

    def _parse(self, raw: bytes) -> str:
        """``choices[0].message.content`` of the answer, stripped and not empty."""
        try:
            content = json.loads(raw)["choices"][0]["message"]["content"]
            if not isinstance(content, str):
                raise TypeError(f"message content is {type(content).__name__}, not text")
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            excerpt = self._one_line(raw.decode("utf-8", "replace"))
            raise self._error(f"unexpected response ({short_reason(exc)}): {excerpt}") from None
        if not content.strip():
            raise self._error("the model answered with an empty summary")
        return content.strip()

    def _error(self, detail: str) -> SummaryError:
        return SummaryError(self._redact(f"POST {self.url}: {detail}"))

    def _one_line(self, text: str) -> str:
        return self._http.one_line(text)

    def _redact(self, text: str) -> str:
        return self._http.redact(text)
