"""A saved index's lookup table: answers from its sorted arrays until the first change."""

from __future__ import annotations

import numpy as np
import pytest

from core.storage.derived.lookup import SavedLookup


@pytest.mark.parametrize("keys", [[5, 9, 30, 31], [31, 5, 30, 9], []])
def test_a_saved_lookup_answers_as_the_dict_it_stands_for(keys: list[int]) -> None:
    values = [key * 10 for key in keys]
    array = np.asarray(keys, dtype=np.int64)
    lookup = SavedLookup(array, lambda n: values[n], lambda: list(values),
                         values=np.asarray(values, dtype=np.int64))
    plain = dict(zip(keys, values, strict=True))
    for key in (*keys, 0, 6, 32, -1):
        assert (key in lookup) == (key in plain)
        assert lookup.get(key) == plain.get(key)
    assert len(lookup) == len(plain)
    asked = np.asarray([*keys, 7, 100], dtype=np.int64)
    assert lookup.get_many(asked).tolist() == [plain.get(k, -1) for k in asked.tolist()]
    # The first change makes it a dict: every entry kept, the change applied.
    lookup[7] = 70
    plain[7] = 70
    first = keys[0] if keys else 5
    assert lookup.pop(first, None) == plain.pop(first, None)
    assert dict(lookup) == plain
    assert lookup.get_many(asked).tolist() == [plain.get(k, -1) for k in asked.tolist()]
