"""Synthetic agent conversations with realistic shapes, for benchmarks and the demo.

Seeded and deterministic: the same seed gives the same messages on every machine, so
benchmark figures from two runs measure the code, not the data. Beside a topic's words the
text draws on a long tail of pseudo-words with Zipf frequencies, as real vocabulary does.
Lengths follow what agent transcripts look like: short user turns, longer assistant
answers, tool calls whose arguments are JSON, tool results of a few hundred characters,
the odd long paste.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from typing import Any

TOPICS = {
    "travel": ["flight", "hotel", "Lisbon", "itinerary", "passport", "layover", "museum",
               "train", "booking", "luggage", "Porto", "check-in"],
    "cooking": ["recipe", "sourdough", "oven", "garlic", "risotto", "spices", "dinner",
                "vegetarian", "braise", "knife", "starter", "pantry"],
    "code": ["function", "database", "migration", "index", "pull request", "deploy",
             "pytest", "stack trace", "refactor", "latency", "cache", "schema"],
    "health": ["running", "sleep", "protein", "physio", "knee", "marathon", "stretching",
               "hydration", "appointment", "blood test", "yoga", "steps"],
    "finance": ["budget", "invoice", "mortgage", "savings", "tax return", "pension",
                "expenses", "subscription", "receipt", "transfer", "loan", "quarterly"],
    "family": ["birthday", "school", "grandmother", "weekend", "dog", "piano lessons",
               "holiday", "anniversary", "garden", "babysitter", "cousin", "wedding"],
}

FILLER = ("the a this that some my our next last new old quick long small big good "
          "important usual same other first second whole early late").split()
VERBS = ("need check remember plan book compare move find fix share send update cancel "
         "prepare review schedule buy try keep").split()
USER_OPENERS = ["Can you", "Please", "I want to", "Could you help me", "Remind me to",
                "What do you think if we", "Is it possible to", "Let's"]
ASSISTANT_OPENERS = ["Sure.", "Good idea.", "Here is what I found.", "Done.",
                     "I looked into it.", "Based on what you told me earlier,",
                     "Let me summarise.", "Noted."]
TOOLS = {
    "search_web": lambda r, w: {"query": f"{w} {r.choice(FILLER)} {r.choice(VERBS)}"},
    "calendar_add": lambda r, w: {"title": w, "date": f"2026-{r.randint(1, 12):02d}-"
                                  f"{r.randint(1, 28):02d}", "duration_min": r.choice(
                                      [15, 30, 60, 90])},
    "read_file": lambda r, w: {"path": f"/home/user/notes/{w.replace(' ', '_')}.md"},
    "send_email": lambda r, w: {"to": "sam@example.com", "subject": f"About the {w}",
                                "body": f"Hi Sam, quick note about the {w}."},
}


def _long_tail(size: int = 20_000, seed: int = 3) -> tuple[list[str], list[float]]:
    """Pseudo-words with Zipf frequencies (the n-th most common ~ 1/n), and their cumulative
    weights. Real conversation draws on thousands of words, most of them rare; without this
    tail every content word would sit in half the chunks, which no real memory looks like
    and which makes full-text search look far slower than it is.
    """
    rng = random.Random(seed)
    onsets = "b c d f g h j k l m n p r s t v w z br cr dr fl gr pl st tr sh ch th".split()
    vowels = "a e i o u ai ea ou io".split()
    codas = ["", "", "n", "r", "l", "s", "t", "nd", "st", "rk"]
    seen: dict[str, None] = {}
    while len(seen) < size:
        word = "".join(rng.choice(onsets) + rng.choice(vowels)
                       for _ in range(rng.choice([1, 2, 2, 3]))) + rng.choice(codas)
        seen.setdefault(word, None)
    words = list(seen)
    total, cumulative = 0.0, []
    # Ranks start at 100: function words (FILLER) already play the head of the curve.
    for rank in range(100, size + 100):
        total += 1.0 / rank ** 1.05
        cumulative.append(total)
    return words, cumulative


LONG_TAIL, _LONG_TAIL_WEIGHTS = _long_tail()


def _sentence(rng: random.Random, words: list[str], length: int) -> str:
    parts = []
    for _ in range(length):
        roll = rng.random()
        parts.append(rng.choice(words) if roll < 0.2 else
                     rng.choice(VERBS) if roll < 0.35 else
                     rng.choices(LONG_TAIL, cum_weights=_LONG_TAIL_WEIGHTS)[0] if roll < 0.6
                     else rng.choice(FILLER))
    text = " ".join(parts)
    return text[0].upper() + text[1:] + rng.choice([".", ".", ".", "?", "!"])


def _paragraph(rng: random.Random, words: list[str], sentences: int) -> str:
    return " ".join(_sentence(rng, words, rng.randint(6, 18)) for _ in range(sentences))


def conversation(rng: random.Random, turns: int) -> Iterator[dict[str, Any]]:
    """One session's messages: user and assistant turns with tool calls and results."""
    topic = rng.choice(list(TOPICS))
    words = TOPICS[topic] + TOPICS[rng.choice(list(TOPICS))][:4]
    produced = 0
    while produced < turns:
        user = f"{rng.choice(USER_OPENERS)} {rng.choice(VERBS)} the {rng.choice(words)}? "
        user += _paragraph(rng, words, rng.choice([0, 1, 1, 2, 3]))
        if rng.random() < 0.03:  # the occasional long paste
            user += "\n\n" + _paragraph(rng, words, rng.randint(12, 30))
        yield {"role": "user", "content": user.strip(), "metadata": {"topic": topic}}
        produced += 1
        if produced < turns and rng.random() < 0.3:
            tool = rng.choice(list(TOOLS))
            call_id = f"call_{rng.getrandbits(48):012x}"
            args = TOOLS[tool](rng, rng.choice(words))
            yield {"role": "assistant", "content": None, "tool_calls": [
                {"id": call_id, "type": "function",
                 "function": {"name": tool, "arguments": json.dumps(args)}}]}
            produced += 1
            if produced < turns:
                result = _paragraph(rng, words, rng.randint(1, 6))
                yield {"role": "tool", "tool_call_id": call_id, "tool_name": tool,
                       "content": result}
                produced += 1
        if produced < turns:
            answer = rng.choice(ASSISTANT_OPENERS) + " " + _paragraph(
                rng, words, rng.choice([1, 2, 3, 4, 6, 9]))
            yield {"role": "assistant", "content": answer}
            produced += 1


def messages(count: int, sessions: int, seed: int = 7) -> list[tuple[str, int, dict[str, Any]]]:
    """``count`` messages spread over ``sessions`` sessions, as (session_id, sequence, payload)."""
    rng = random.Random(seed)
    per_session = max(1, count // max(1, sessions))
    out: list[tuple[str, int, dict[str, Any]]] = []
    index = 0
    while len(out) < count:
        session_id = f"session-{index:05d}"
        wanted = min(per_session, count - len(out))
        for sequence, payload in enumerate(conversation(rng, wanted), 1):
            out.append((session_id, sequence, payload))
        index += 1
    return out
