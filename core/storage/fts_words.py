"""A word as ``chunks_fts``'s tokenizer sees it: the one rule every word split here follows.

``chunks_fts`` tokenizes with ``porter unicode61 remove_diacritics 2``. unicode61 keeps
letters and digits together and treats everything else, the underscore included, as a
separator: :data:`WORD` (Python's ``[^\\W_]``). Every module that splits text into words
for full text uses this module: the query parser (:mod:`core.retrieval.fts_query`), the
matched-terms highlighting (:mod:`core.retrieval.search`), a session's prefixed columns
(:mod:`core.storage.fts_rows`) and the derived index's tokenizer
(:mod:`core.storage.derived.tokenizer`).

Two deliberate differences, each named where it is used:

- :data:`TERM`, a query term: words joined by underscores stay one term (an identifier such
  as ``search_web``), which FTS5 reads, quoted, as the phrase of its words. Highlighting
  uses the same rule, so a term is found in a text as it was typed.
- :data:`RUN`, the derived index's split: runs between ASCII separators only. Python's
  Unicode tables are not SQLite's (a combining mark inside a word, an emoji FTS5 keeps
  inside a token, a letter newer than SQLite's tables), so the derived index never decides
  a non-ASCII character itself: it hands each run to FTS5's own tokenizer and stays bit-exact
  with it. For ASCII, :data:`RUN` and :data:`WORD` split alike; where they do not
  (``Tokenizer.splits_alike``), FTS5 ranks.
"""

from __future__ import annotations

import re

WORD = re.compile(r"[^\W_]+")
"""A word as unicode61 sees it: letters and digits; anything else separates."""

TERM = re.compile(r"[^\W_]+(?:_+[^\W_]+)*")
"""A query term: words, possibly joined by underscores (FTS5 matches it as their phrase)."""

RUN = re.compile(r"[0-9A-Za-z\u0080-\U0010ffff]+")
"""A run between ASCII separators: ASCII letters and digits, and every non-ASCII character
(FTS5 decides whether those are token characters)."""


def words(text: str) -> list[str]:
    """The words of ``text`` as the FTS tokenizer splits them."""
    return WORD.findall(text)


def terms(text: str) -> list[str]:
    """The query terms of ``text`` (:data:`TERM`), as written."""
    return TERM.findall(text)
