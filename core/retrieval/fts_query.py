"""Turning what a person typed into a safe FTS5 expression.

Anything typed is a valid query: quotes, AND/OR/NOT/NEAR, ``*``, ``-``, ``:``, brackets,
emoji or nothing at all. Only words reach MATCH, each quoted as a string (so an operator
word is just a word), ORed together and restricted to a chunk's text and its conversational
context (the storage layer prefixes them for a session, see ``core.storage.fts_rows``). Common
English function words are dropped when the query has other words (a question's "when is
my" matches everything and ranks by noise); a query made only of them keeps them all.
"""

from __future__ import annotations

import re

# Words as FTS5's unicode61 tokenizer sees them (letters, digits, underscore stay together).
_WORD = re.compile(r"\w+", re.UNICODE)

STOP_WORDS = frozenset("""
a about above after again against all am an and any are as at be because been before being
below between both but by can could did do does doing down during each few for from further
had has have having he her here hers herself him himself his how i if in into is it its itself
just me more most my myself no nor not now of off on once only or other our ours ourselves out
over own same she should so some such than that the their theirs them themselves then there
these they this those through to too under until up very was we were what when where which
while who whom why will with would you your yours yourself yourselves s t d ll m re ve
""".split())


def query_terms(query: str, *, drop_stop_words: bool = True) -> list[str]:
    """The distinct words of a query, lower-cased, in order; stop words dropped if others remain."""
    seen: dict[str, None] = {}
    for word in _WORD.findall(query.lower()):
        seen.setdefault(word, None)
    words = list(seen)
    if drop_stop_words:
        content = [word for word in words if word not in STOP_WORDS]
        if content:
            return content
    return words


def fts_match_expression(query: str, *, drop_stop_words: bool = True) -> str | None:
    """A safe FTS5 expression for the query's words, ORed (None when it has no words)."""
    return terms_expression(query_terms(query, drop_stop_words=drop_stop_words))


def terms_expression(terms: list[str]) -> str | None:
    """Words (as :func:`query_terms` gives them) quoted, ORed, on a chunk's text and context."""
    if not terms:
        return None
    quoted = " OR ".join('"' + term.replace('"', '""') + '"' for term in terms)
    return f"{{chunk_text context}} : ({quoted})"
