"""A write's rows read back as they were given, with SQLite's types: the import path reads
them from one JSON array (``insert_json_rows``), and that must change nothing."""

from __future__ import annotations

import json
from pathlib import Path

from core import Engine, indexing
from core.indexing import CONTEXT_SEPARATOR
from tests.conftest import DETERMINISTIC, rows

AWKWARD = 'quotes " and \\ backslash, tab\there, emoji 🎉, line\u2028sep, "json": [1, 2.5]'


async def test_rows_keep_their_text_and_types(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    items = [("s", 1, {"role": "user", "content": AWKWARD, "importance": 0.5,
                       "metadata": {"k": "v", "n": 3}}),
             ("s", 2, {"role": "assistant", "content": "a reply " * 120}),
             ("s", None, {"role": "user", "content": "no sequence given"})]
    async with Engine.open(path, config=DETERMINISTIC) as engine:
        result = await engine.store_many(items, batch_size=2)
        assert result.stored == 3 and result.rejected == []
    events = rows(path, "SELECT sequence, typeof(sequence), payload_json, role,"
                        " typeof(importance), importance, typeof(created_at)"
                        " FROM conversation_events ORDER BY sequence")
    assert [row[0] for row in events] == [1, 2, 3]
    assert {row[1] for row in events} == {"integer"} and {row[6] for row in events} == {"text"}
    assert json.loads(events[0][2]) == items[0][2]
    assert events[0][3:6] == ("user", "real", 0.5)
    chunks = rows(path, "SELECT chunk_text, typeof(sequence_start), typeof(fts_rowid),"
                        " metadata_json, embedding_status, context_text FROM chunks"
                        " ORDER BY fts_rowid")
    assert chunks[0][0] == indexing.normalize_text(AWKWARD)  # the tab is a space now
    assert chunks[0][1:3] == ("integer", "integer")
    assert chunks[0][3] == '{"k": "v", "n": 3, "role": "user", "sequence": 1}'
    assert chunks[0][5] == ""  # the first message has no context
    # A later chunk's context holds the earlier message's text, separators and all.
    assert indexing.normalize_text(AWKWARD) in chunks[-1][5] and chunks[-1][4] == "done"
    assert CONTEXT_SEPARATOR in chunks[-1][5]
