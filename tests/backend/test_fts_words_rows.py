"""The tests of tests/test_fts_words.py that read or stage the memory's tables directly (FTS5's own
tokens)."""

from __future__ import annotations

from hypothesis import given, settings

from core.storage.fts_rows import prefixed
from core.storage.fts_words import words
from tests.test_fts_words import _CONN, _TOKENIZER, ascii_text


def _fts5_tokens(text: str) -> list[str]:
    _CONN.execute("DELETE FROM t")
    _CONN.execute("INSERT INTO t(rowid, x) VALUES (1, ?)", (text,))
    return [term for term, in _CONN.execute("SELECT term FROM v ORDER BY offset")]


@settings(max_examples=300, deadline=None)
@given(ascii_text)
def test_words_are_fts5_tokens(text: str) -> None:
    assert [word.lower() for word in words(text)] == _fts5_tokens(text)
    # A session's prefixed copy holds one prefixed token per word; the derived index's
    # split gives FTS5's own tokens for the same text.
    assert len(_fts5_tokens(prefixed("bbbbbbbbbbbb", text))) == len(words(text))
    assert _TOKENIZER.splits_alike(text)
