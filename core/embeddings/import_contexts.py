"""An import's conversational contexts: each session's latest messages as context parts, and
from them each new message's context and its chunks' blended vectors.

A chunk is indexed and embedded with the messages before it (:mod:`core.embeddings.context`).
An import knows them before it writes: the parts are the earlier messages' first chunks, cut
at ``context_chars``, whose vectors the import made already. :class:`ImportContexts` keeps them
from batch to batch, in input order. The importing process keeps it for the batches it
prepares, and hands a session's parts to the embedding helper the first time the helper
prepares one of its messages (:mod:`core.embeddings.process`): the helper then keeps them,
and the work is off the process whose thread writes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from core.embeddings.context import blend_rows
from core.storage.fts_rows import context_text, prefixed, session_prefix
from core.storage.messages import PreparedMessage

# A context part: its text (cut at ``context_chars``), its vector (None: not embedded yet),
# and its words glued to the session's prefix (for chunks_fts's session_context).
Part = tuple[str, np.ndarray | None, str]


class ImportContexts:
    """Each session's latest ``count`` messages as context parts, as an import goes."""

    def __init__(self, count: int, max_chars: int) -> None:
        self.count = count
        self.max_chars = max_chars
        self.tails: dict[str, list[Part]] = {}

    def unseen(self, sessions: Iterable[str]) -> list[str]:
        """The sessions whose parts this does not hold."""
        return [sid for sid in sessions if sid not in self.tails]

    def from_file(self, sessions: Sequence[str], found: dict[str, list[str]]) -> None:
        """Start ``sessions`` from the texts the file holds (``Backend.session_tails``)."""
        for sid in sessions:
            prefix = session_prefix(sid)
            self.tails[sid] = [(text[:self.max_chars], None,
                                prefixed(prefix, text[:self.max_chars]))
                               for text in found.get(sid, [])]

    def without_vectors(self, sessions: Iterable[str]) -> list[str]:
        """The parts' texts of ``sessions`` that have no vector yet, each once."""
        return list(dict.fromkeys(text for sid in sessions for text, vector, _ in self.tails[sid]
                                  if vector is None))

    def give_vectors(self, sessions: Iterable[str], texts: Sequence[str],
                     vectors: np.ndarray) -> None:
        """The vectors of :meth:`without_vectors`'s texts, in its order."""
        made = dict(zip(texts, vectors, strict=True))
        for sid in sessions:
            self.tails[sid] = [(text, made[text] if vector is None else vector, words)
                               for text, vector, words in self.tails[sid]]

    def hand_over(self, sessions: Iterable[str]) -> dict[str, list[Part]]:
        """The parts of ``sessions`` this holds, removed from it (the helper keeps them now)."""
        return {sid: self.tails.pop(sid) for sid in sessions if sid in self.tails}

    def take(self, parts: dict[str, list[Part]]) -> None:
        """Parts handed over by :meth:`hand_over` (or read from the file)."""
        self.tails.update(parts)

    def apply(self, batch: list[tuple[int, PreparedMessage]], raw: np.ndarray | None,
              ) -> tuple[list[tuple[int, PreparedMessage]], np.ndarray | None]:
        """Each message's context, and its chunks' vectors blended with it, in input order;
        every session of ``batch`` must be held.

        ``raw`` holds the chunks' own vectors, then those of the first chunks cut at
        ``context_chars`` that were longer; with it, every held part has its vector. Each
        message then becomes a part of the next ones of its session.
        """
        max_chars, count = self.max_chars, self.count
        out: list[tuple[int, PreparedMessage]] = []
        parts: list[list[np.ndarray]] = []
        extra = iter(raw[sum(len(p.chunks) for _, p in batch):] if raw is not None else ())
        row = 0
        for index, prepared in batch:
            tail = self.tails[prepared.session_id]
            # The context's prefixed words are its parts' in order (prefixed_context).
            out.append((index, prepared.with_context(
                context_text([text for text, _, _ in tail], max_chars),
                " ".join(words for text, _, words in tail if text and words))))
            parts += [[vector for _, vector, _ in tail if vector is not None]] * len(
                prepared.chunks)
            if prepared.chunks:
                first = prepared.chunks[0].text
                vector = None
                if raw is not None:
                    vector = next(extra) if len(first) > max_chars else raw[row]
                words = prepared.part_words
                if words is None:
                    words = prefixed(session_prefix(prepared.session_id), first[:max_chars])
                tail.append((first[:max_chars], vector, words))
                del tail[:-count]
            row += len(prepared.chunks)
        return out, None if raw is None else blend_rows(raw[:row], parts)
