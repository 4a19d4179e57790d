"""The ingest path's whole-batch shortcuts give exactly what the plain per-row forms give."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.embeddings.base import l2_normalise
from core.embeddings.context import blend_rows
from core.indexing import CONTEXT_SEPARATOR
from core.storage.fts_rows import fts_rows, prefixed, prefixed_context, session_prefix
from core.storage.messages import (
    PreparedChunk,
    PreparedMessage,
    chunk_id_for,
    chunk_metadata_json,
    plan_chunks,
    planned_chunks,
)

# Words, punctuation, underscores, accents and blanks: what the tokenizer splits on.
_PART = st.text(alphabet=st.sampled_from("ab é_Z9 .,!\n'-"), max_size=40)


@settings(max_examples=300, deadline=None)
@given(parts=st.lists(_PART, max_size=4), session_id=st.text(min_size=1, max_size=8))
def test_a_context_prefixed_part_by_part_equals_it_prefixed_whole(
        parts: list[str], session_id: str) -> None:
    prefix = session_prefix(session_id)
    context = CONTEXT_SEPARATOR.join(parts)
    assert prefixed_context(prefix, context) == prefixed(prefix, context)


def test_fts_rows_hold_the_text_and_the_context_prefixed() -> None:
    context = CONTEXT_SEPARATOR.join(["Did you paint?", "", "Yes, a sunset."])
    (row,) = fts_rows([(7, "s1", "Up north, near the cabin.", "tok", context)])
    prefix = session_prefix("s1")
    assert row == (7, "Up north, near the cabin.", "tok", context,
                   prefixed(prefix, "Up north, near the cabin."), prefixed(prefix, context))


def _blend_one_row_at_a_time(own: np.ndarray, parts: list[list[np.ndarray]]) -> np.ndarray:
    out = l2_normalise(own)
    for index, row_parts in enumerate(parts):
        if row_parts:
            context = l2_normalise([l2_normalise(row_parts).sum(axis=0)])[0]
            out[index] = l2_normalise([out[index] + context])[0]
    return out


@settings(max_examples=60, deadline=None)
@given(counts=st.lists(st.integers(0, 3), min_size=1, max_size=30), seed=st.integers(0, 2**16),
       zero_part=st.booleans())
def test_blending_a_batch_equals_blending_each_row(counts: list[int], seed: int,
                                                   zero_part: bool) -> None:
    rng = np.random.default_rng(seed)
    own = rng.normal(size=(len(counts), 16)).astype(np.float32)
    parts = [[rng.normal(size=16).astype(np.float32) for _ in range(count)] for count in counts]
    if zero_part and any(parts):  # an all-zero part vector stays zero, adding nothing
        next(row for row in parts if row)[0] = np.zeros(16, dtype=np.float32)
    assert np.array_equal(blend_rows(own, parts), _blend_one_row_at_a_time(own, parts))


def test_a_message_with_its_context_is_a_new_message_and_the_old_one_is_untouched() -> None:
    message = PreparedMessage("s", 3, "{}", "user", 0.5, (PreparedChunk("text", "hash"),),
                              {"role": "user"}, "agent", "2026-01-01 00:00:00", bound=True)
    given = message.with_context("before\x1ejust before")
    assert given == dataclasses.replace(message, context="before\x1ejust before")
    assert message.context is None and given is not message
    with pytest.raises(dataclasses.FrozenInstanceError):
        given.context = "other"  # type: ignore[misc]


def test_chunk_ids_and_metadata_worked_out_before_the_write_plan_as_the_write_would() -> None:
    chunks = (PreparedChunk("one", "h1"), PreparedChunk("two", "h2"), PreparedChunk("one", "h1"))
    bare = PreparedMessage("s", 3, "{}", "user", 0.5, chunks, {"role": "user", "tags": ["a"]},
                           "agent", "2026-01-01 00:00:00")
    ahead = dataclasses.replace(
        bare, chunk_ids=tuple(chunk_id_for("s", chunk.content_hash) for chunk in chunks),
        metadata_json=chunk_metadata_json(bare.chunk_metadata, 3))
    later = dataclasses.replace(bare, sequence=None)  # allocated in the write: worked out there
    stored = {chunk_id_for("s", "h2"): 1}
    plans = [plan_chunks(planned_chunks([m], [(m, 3)]), dict(stored))
             for m in (bare, ahead, later)]
    assert [[(c.chunk_id, c.chunk, c.vector_row, c.metadata_json) for c in plan.new]
            for plan in plans] == [[(chunk_id_for("s", "h1"), chunks[0], 0,
                                     '{"role": "user", "tags": ["a"], "sequence": 3}')]] * 3
    # "two" was stored before; "one" came twice and is stored once
    assert [plan.extended for plan in plans] == [
        {chunk_id_for("s", "h2"): 3, chunk_id_for("s", "h1"): 3}] * 3
