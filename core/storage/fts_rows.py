"""What a chunk's row in ``chunks_fts`` holds, so a session's full-text query costs the session.

``chunks_fts`` has five columns:

- ``chunk_text`` and ``context`` (the previous messages of the conversation, see
  :func:`context_text`): plain words, for namespace-wide and raw-syntax queries;
- ``scope_token``: the session and agent tokens, ANDed into a namespace query's MATCH;
- ``session_text`` and ``session_context``: the same words, each glued to a prefix made from
  the session id (:func:`session_prefix`), so every word is a term of that session alone.

Why the prefixed copy: FTS5's bm25 counts, for every query term, the rows of the whole file
that hold it, before it scores anything. A term common in the file made a one-session
query cost what the file holds (3 ms p50 at 100k chunks, and growing with the file). With
prefixed terms the doclists bm25 walks belong to the session, so its cost follows the
session (0.6 ms at 100k). Term statistics become per-session too: a word is rare if it is
rare in this conversation, which is what a session query asks.

The prefix is twelve consonants (b-z without vowels and y). Porter stemming measures a word
by its vowel-consonant runs; a consonant-only prefix adds none, so a prefixed word stems as
the bare word does (``painting`` and ``prefix+painting`` both lose ``ing``), and a query is
prefixed the same way it was indexed. Two sessions sharing a prefix (about one pair in
10^15) would only see each other's words in ranking: queries also filter on the chunks'
``session_id`` in SQL, so nothing crosses a scope.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
from collections.abc import Iterable

from core.indexing import CONTEXT_SEPARATOR
from core.storage.fts_words import WORD
from core.storage.fts_words import words as words  # the note index imports it from here

_CONSONANTS = "bcdfghjklmnpqrstvwxz"
PREFIX_LENGTH = 12


@functools.lru_cache(maxsize=65536)
def session_prefix(session_id: str) -> str:
    """The consonant prefix that makes a word a term of this session alone."""
    value = int.from_bytes(hashlib.blake2b(session_id.encode("utf-8", "surrogatepass"),
                                           digest_size=8).digest(), "big")
    letters = []
    for _ in range(PREFIX_LENGTH):
        value, digit = divmod(value, len(_CONSONANTS))
        letters.append(_CONSONANTS[digit])
    return "".join(letters)


def prefixed(prefix: str, text: str) -> str:
    """``text``'s words, each glued to ``prefix``, space-separated."""
    found = WORD.findall(text)
    return prefix + (" " + prefix).join(found) if found else ""


def context_text(previous: Iterable[str], max_chars: int) -> str:
    """A chunk's conversational context: earlier messages' text, oldest first, each cut short.

    A reply ("Yes, every Sunday!") says little on its own; the question before it says what
    it answers. Measured on the LoCoMo dev conversations, indexing the two previous messages
    beside each chunk (full text at half weight, and blended into the chunk's vector, see
    ``core.embeddings.context``) lifted turn recall@10 from 0.66 to 0.77.
    """
    return CONTEXT_SEPARATOR.join(text[:max_chars] for text in previous if text)


@functools.lru_cache(maxsize=8192)
def _prefixed_part(prefix: str, text: str) -> str:
    """:func:`prefixed`, remembered: a message's first chunk is prefixed for its own row and
    again as a context part of each of the next messages of its session, often in a later
    batch, so keeping the recent ones spares the writer that work."""
    return prefixed(prefix, text)


def prefixed_context(prefix: str, context: str) -> str:
    """``prefixed(prefix, context)``, built from its parts' prefixed words.

    The separator between parts is no word character, so the context's words are its parts'
    words in order, and their prefixed forms joined by a space are the whole one's.
    """
    found = [_prefixed_part(prefix, part) for part in context.split(CONTEXT_SEPARATOR)]
    return " ".join(part for part in found if part)


def fts_rows(chunks: Iterable[tuple[int, str, str, str, str]],
             known: Iterable[tuple[str | None, str | None]] | None = None,
             ) -> list[tuple[int, str, str, str, str, str]]:
    """``chunks_fts`` rows, in :data:`FTS_COLUMNS` order, for (fts_rowid, session_id, text,
    scope_token, context) chunks. The chunks of one message share its context, which is
    prefixed once for all of them. ``known`` gives, chunk by chunk, the prefixed text and
    context already worked out (the bulk path's, see :mod:`core.prepare`), or None each."""
    prefixed_contexts: dict[tuple[str, str], str] = {}
    rows = []
    given = known if known is not None else itertools.repeat((None, None))  # endless
    for chunk, (text_words, context_words) in zip(chunks, given, strict=False):
        fts_rowid, session_id, text, scope_token, context = chunk
        if text_words is None or context_words is None:
            prefix = session_prefix(session_id)
            if text_words is None:
                text_words = _prefixed_part(prefix, text)
            if context_words is None:
                if (prefix, context) not in prefixed_contexts:
                    prefixed_contexts[prefix, context] = prefixed_context(prefix, context)
                context_words = prefixed_contexts[prefix, context]
        rows.append((fts_rowid, text, scope_token, context, text_words, context_words))
    return rows


FTS_COLUMNS = ("rowid", "chunk_text", "scope_token", "context", "session_text",
               "session_context")
