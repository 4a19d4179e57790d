"""Shared by the Agents SDK session tests: generated items of every kind the SDK keeps, and
the parity run of WorkbenchSession against the SDK's own SQLiteSession."""

from __future__ import annotations

import json
import random
from typing import Any

from agents.memory import SQLiteSession

from core.integrations.openai_agents import WorkbenchSession

ENGINE_CONFIG: dict[str, Any] = {"embedding": {"backend": "deterministic"},
                                 "summary": {"auto": False},
                                 "consolidation": {"enabled": False}}

_WORDS = ["hello", "naïve café", "日本語のテキスト", "emoji 🧪🚀", "שלום", "e\u0301",
          "tab\tnew\nline", "quote \" back\\slash", "nul\x00byte", "lone \ud83d surrogate",
          "", "  spaced  "]
_NUMBERS: list[Any] = [0, -1, 2**70, 0.1, 1e308, -0.0, 5e-324, 3.141592653589793,
                       float("nan"), float("inf"), True, False, None]


def _word(rng: random.Random) -> str:
    return rng.choice(_WORDS) + (str(rng.randrange(1000)) if rng.random() < 0.5 else "")


def _value(rng: random.Random, depth: int = 0) -> Any:
    roll = rng.random()
    if depth < 4 and roll < 0.2:
        return _shuffled(rng, {_word(rng) or "k": _value(rng, depth + 1)
                               for _ in range(rng.randrange(4))})
    if depth < 4 and roll < 0.35:
        return [_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    if roll < 0.65:
        return _word(rng)
    return rng.choice(_NUMBERS)


def _shuffled(rng: random.Random, item: dict[str, Any]) -> dict[str, Any]:
    """The same item with its keys in a random order (json.dumps keeps insertion order)."""
    keys = list(item)
    rng.shuffle(keys)
    return {key: item[key] for key in keys}


def random_item(rng: random.Random, index: int) -> dict[str, Any]:
    """One Responses input item of a random kind, with odd text, numbers and key orders."""
    call_id = f"call_{rng.randrange(50)}"
    kind = rng.randrange(9)
    item: dict[str, Any]
    if kind == 0:
        item = {"role": "user", "content": _word(rng)}
    elif kind == 1:
        item = {"role": rng.choice(["user", "system", "developer"]), "type": "message",
                "content": [{"type": "input_text", "text": _word(rng)}
                            for _ in range(rng.randrange(1, 3))]}
    elif kind == 2:
        item = {"id": f"msg_{index}", "type": "message", "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": _word(rng), "annotations": [],
                             "logprobs": [rng.choice(_NUMBERS)]}]}
    elif kind == 3:
        item = {"type": "function_call", "call_id": call_id, "name": "lookup",
                "arguments": json.dumps({"q": _word(rng), "n": rng.choice(_NUMBERS)}),
                "id": f"fc_{index}", "status": "completed"}
    elif kind == 4:
        item = {"type": "function_call_output", "call_id": call_id,
                "output": _word(rng) if rng.random() < 0.7
                else [{"type": "input_text", "text": _word(rng)}]}
    elif kind == 5:
        item = {"type": "reasoning", "id": f"rs_{index}",
                "summary": [{"type": "summary_text", "text": _word(rng)}],
                "encrypted_content": "gAAAA" + "x" * rng.randrange(40)}
    elif kind == 6:
        item = {"type": "web_search_call", "id": f"ws_{index}", "status": "completed",
                "action": {"type": "search", "query": _word(rng)}}
    elif kind == 7:
        item = {"type": "compaction", "id": f"cmp_{index}", "encrypted_content": "opaque"}
    else:
        item = {"role": "assistant", "content": _word(rng), "extra": _value(rng)}
    return _shuffled(rng, item)


def dumped(items: Any) -> str:
    """What is compared: the JSON text, as SQLiteSession would write it again."""
    return json.dumps(items)


async def run_parity(reference: dict[str, SQLiteSession], ours: dict[str, WorkbenchSession],
                     seed: int, operations: int) -> dict[str, int]:
    """``operations`` random operations on both sessions of each id, every answer compared
    as JSON text (and each session's whole history after every write); how many of each
    operation ran."""
    rng = random.Random(seed)
    counts = {"add_items": 0, "get_items": 0, "pop_item": 0, "clear_session": 0}
    index = 0
    for step in range(operations):
        session_id = rng.choice(sorted(reference))
        theirs, mine = reference[session_id], ours[session_id]
        roll = rng.random()
        if roll < 0.45:
            items: list[Any] = [random_item(rng, index + n) for n in range(rng.randrange(1, 5))]
            index += len(items)
            await theirs.add_items(items)
            await mine.add_items(items)
            counts["add_items"] += 1
        elif roll < 0.8:
            limit = rng.choice([None, None, 0, 1, 2, 3, 5, 8, 20, -1])
            expected, got = await theirs.get_items(limit), await mine.get_items(limit)
            assert dumped(got) == dumped(expected), (seed, step, "get_items", limit)
            counts["get_items"] += 1
            continue
        elif roll < 0.97:
            expected_item, got_item = await theirs.pop_item(), await mine.pop_item()
            assert dumped(got_item) == dumped(expected_item), (seed, step, "pop_item")
            counts["pop_item"] += 1
        else:
            await theirs.clear_session()
            await mine.clear_session()
            counts["clear_session"] += 1
        assert dumped(await mine.get_items()) == dumped(await theirs.get_items()), (seed, step)
    return counts
