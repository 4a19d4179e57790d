"""What a person typed, as the terms the full-text leg looks for.

Anything typed is a valid query: quotes, AND/OR/NOT/NEAR, ``*``, ``-``, ``:``, brackets,
emoji or nothing at all. Only its terms (:func:`core.storage.fts_words.terms`: words, or
words joined by underscores) go to the backend, which matches each as words, never as
syntax, and says what it ran (:class:`core.storage.executed.Executed`). Common English
function words are dropped when the query has other words (a question's "when is my"
matches everything and ranks by noise); a query made only of them keeps them all.
"""

from __future__ import annotations

from core.storage.fts_words import terms as written_terms

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
    for word in written_terms(query.lower()):
        seen.setdefault(word, None)
    words = list(seen)
    if drop_stop_words:
        content = [word for word in words if word not in STOP_WORDS]
        if content:
            return content
    return words

