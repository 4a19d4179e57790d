"""One word rule: the words this code splits are the tokens FTS5's unicode61 makes, and the
query parser, the highlighting and a session's prefixed columns all split by it."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from core.retrieval.fts_query import query_terms
from core.retrieval.search import matched_terms
from core.storage.derived.tokenizer import Tokenizer
from core.storage.fts_words import words
from core.storage.sqlite.connection import sqlite_module

_CONN = sqlite_module().connect(":memory:")
_CONN.execute("CREATE VIRTUAL TABLE t USING fts5(x, tokenize = 'unicode61 remove_diacritics 2')")
_CONN.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
_TOKENIZER = Tokenizer()

ascii_text = st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=40)


@settings(max_examples=300, deadline=None)
@given(ascii_text)
def test_every_query_term_is_found_in_its_own_text(text: str) -> None:
    terms = query_terms(text, drop_stop_words=False)
    assert matched_terms(terms, text) == terms
    # The terms hold the text's words and nothing else (underscores join, never add).
    assert {word for term in terms for word in words(term)} == {
        word.lower() for word in words(text)}
