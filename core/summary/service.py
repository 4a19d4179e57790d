"""Rolling summaries over the engine (oxydra "Rolling Summarization" and "Race Safety").

A session's working context is replayed from its latest compact marker: the marker, the
rolling summary (covering every message up to its ``upper_sequence``), then the messages
after that. :meth:`Summaries.summarize` condenses the oldest of those messages when they
outgrow the budget (see :mod:`core.summary.plan` for the arithmetic) and writes the result
with a compare-and-swap on the summary's epoch, so a slower summary never overwrites a newer
one: it is discarded and the outcome says so. A summarizer failure writes nothing to the
history or the summary; the error is kept in the session state (``summary_error``).

With ``summary.auto`` each ``store``/``append`` schedules a check of its session in the
background (one at a time per session; stores during a check queue one more). The bulk
path does not: an import is summarised on demand or by consolidation.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import re
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from core.clock import utc_now
from core.errors import InvalidInput, NotFound, SummaryError
from core.indexing import extract_indexable_text
from core.inputs import shown
from core.storage.vocabulary import SummaryDraft
from core.summary.plan import (
    BLOCK_HEADER,
    Limits,
    plan_rolling,
    ratio_of,
    summary_message,
    with_block,
)
from core.summary.summarizers import Summarizer, Turn, build_summarizer
from core.tasks import cancel_and_wait
from core.types import MemoryRecord, RestoreResult, SummaryOutcome, SummaryState

if TYPE_CHECKING:
    from core.config import SummaryConfig
    from core.embeddings.current_model import CurrentModel
    from core.storage.backend import Backend
    from core.tokens import TokenCounter

log = logging.getLogger(__name__)

_SHRINK_TRIES = 3  # re-asks when a real tokenizer counts the joined text above the plan


@dataclass(frozen=True)
class Replay:
    """What ``restore`` replays for a session: marker, summary, the messages after them."""

    state: dict[str, Any]
    marker: MemoryRecord | None
    summary: str
    upper_sequence: int          # the summary covers messages up to here (0: none)
    epoch: int
    messages: list[MemoryRecord]  # after the marker and the summary, oldest first

    @property
    def last_sequence(self) -> int | None:
        last = self.state.get("last_sequence")
        return None if last is None else int(last)


def turns_of(records: Sequence[MemoryRecord]) -> list[Turn]:
    """Messages as the summarizer sees them: sequence, role, indexable text and weight (the
    importance over the default 0.5, squared: tool output and system text weigh less)."""
    return [Turn(r.sequence, str(r.payload.get("role", "user")), extract_indexable_text(r.payload),
                 weight=(max(float(r.importance), 0.0) / 0.5) ** 2)
            for r in records]


def summary_state_of(session_id: str, state: dict[str, Any]) -> SummaryState:
    """The rolling summary held in a session's ``state_json``."""
    summary = state.get("summary_state") or {}
    error = (state.get("summary_error") or {}).get("error")
    return SummaryState(session_id, str(summary.get("text") or ""),
                        int(summary.get("upper_sequence", 0)), int(summary.get("epoch", 0)),
                        summary.get("updated_at"), summary.get("summarizer"), error)


_BULLET = re.compile(r"- (\S+) #(\d+): (.*)")


def summary_turns(text: str, upper_sequence: int) -> list[Turn]:
    """A summary's lines back as turns, so folding it again yields the same kind of list:
    "- user #12: …" is turn 12 of the user; any other non-blank line (a header excepted) is
    a "summary" turn at ``upper_sequence``."""
    turns = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line == BLOCK_HEADER:
            continue
        bullet = _BULLET.fullmatch(line)
        if bullet:
            turns.append(Turn(int(bullet.group(2)), bullet.group(1), bullet.group(3)))
        else:
            turns.append(Turn(upper_sequence, "summary", line))
    return turns


@dataclass(frozen=True)
class _Tally:
    """A session's unsummarised token use as of its ``last`` sequence, for the auto check."""

    last: int
    pinned: int         # marker and summary
    messages: int
    tokens: float
    tokens_per_char: float
    added: int = 0      # messages estimated since the file was counted

    def plus(self, sequence: int, characters: int) -> _Tally:
        """One more message, its tokens estimated from its length."""
        estimate = characters * self.tokens_per_char * _ESTIMATE_MARGIN
        return replace(self, last=sequence, messages=self.messages + 1,
                       tokens=self.tokens + estimate, added=self.added + 1)


_RECOUNT_EVERY = 32
QUIET_SECONDS = 0.3
"""How long a session's stores must pause before its check runs: counting and summarising
run on the event loop, and in the middle of an agent's turns they were its slowest turns
(p95 x3 in ``workbench bench frameworks``); after the turn, in the agent's wait for its
model, they cost it nothing. :meth:`Summaries.settle` does not wait for the pause."""
QUIET_AT_MOST_SECONDS = 5.0
"""How long stores that never pause hold a session's check back at most."""
STOP_WAIT_SECONDS = 2.0
"""How long closing the engine gives the checks still waiting for a pause."""
_ESTIMATE_MARGIN = 1.25
_DEFAULT_TOKENS_PER_CHAR = 0.5
_TALLIES_KEPT = 4096


class Summaries:
    """The rolling summary of each session: read, plan, condense, compare-and-swap."""

    def __init__(self, backend: Backend, config: SummaryConfig,
                 model: CurrentModel) -> None:
        self._backend = backend
        self._config = config
        self._model = model
        self._counted_with = model.tokens
        self._summarizer: Summarizer = build_summarizer(config, model.tokens)
        self._checks: dict[str, asyncio.Task[None]] = {}
        self._again: set[str] = set()
        self._stored_at: dict[str, float] = {}  # sessions with a check: their last store
        self._hurry = asyncio.Event()  # settle() is waiting: no check waits for a pause
        self._settling = 0
        self._tallies: OrderedDict[str, _Tally] = OrderedDict()

    @property
    def summarizer(self) -> Summarizer:
        """The configured summarizer, counting with the current model's tokenizer."""
        self._counter()
        return self._summarizer

    def _counter(self) -> TokenCounter:
        """The current model's token counter; when a deferred load has swapped the model in
        since the last call, the summarizer is rebuilt on it and the tallies recounted."""
        counter = self._model.tokens
        if counter is not self._counted_with:
            self._counted_with = counter
            self._summarizer = build_summarizer(self._config, counter)
            self._tallies.clear()
        return counter

    @property
    def limits(self) -> Limits:
        cfg = self._config
        return Limits(cfg.min_turns, cfg.trigger_ratio, cfg.target_ratio, cfg.block_ratio)

    # -- state -----------------------------------------------------------------------------

    async def replay(self, session_id: str) -> Replay:
        """The session's replayable context (``NotFound`` when there is no such session)."""
        state = await self._backend.read_session_state(session_id)
        if state is None:
            raise NotFound(f"no session {shown(session_id)}")
        summary = state.get("summary_state") or {}
        marker_sequence = int((state.get("compaction") or {}).get("marker_sequence", 0))
        text = str(summary.get("text") or "")
        upper = int(summary.get("upper_sequence", 0)) if text else 0
        rows = await self._backend.read_events(
            session_id, after_sequence=marker_sequence - 1 if marker_sequence else upper)
        records = rows
        marker = None
        if marker_sequence and records and records[0].sequence == marker_sequence:
            marker = records.pop(0)
        # What the agent's framework took out of its context (LangGraph's RemoveMessage, the
        # Agents SDK's pop_item and clear_session) is not in the context replayed for it.
        removed = set(await self._backend.removed_sequences(session_id)) if records else set()
        return Replay(state, marker, text, upper, int(summary.get("epoch", 0)),
                      [r for r in records if r.sequence > upper and r.sequence not in removed])

    async def state(self, session_id: str) -> SummaryState:
        """The session's rolling summary as stored (empty text before the first)."""
        state = await self._backend.read_session_state(session_id)
        if state is None:
            raise NotFound(f"no session {shown(session_id)}")
        return summary_state_of(session_id, state)

    async def write_state(self, session_id: str, text: str, upper_sequence: int,
                          expected_epoch: int) -> bool:
        """oxydra's ``write_summary_state``: write when the stored epoch is still
        ``expected_epoch`` (the new one is ``expected_epoch + 1``); False when it is not, and
        nothing was written."""
        if not isinstance(text, str):
            raise InvalidInput(f"summary text must be a string, got {type(text).__name__}")
        for name, value in (("upper_sequence", upper_sequence),
                            ("expected_epoch", expected_epoch)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise InvalidInput(f"{name} must be a non-negative integer, got {value!r}")
        epoch = await self._backend.write_summary_state(
            session_id, SummaryDraft(text, upper_sequence, "caller"), expected_epoch, utc_now())
        return epoch is not None

    async def restore(self, session_id: str, token_budget: int) -> RestoreResult:
        """The session's context for a new run, within ``token_budget``, oldest first.

        Replay starts at the latest compact marker (crabtalk): the marker, then the rolling
        summary as the system message "Rolling session summary: …" (oxydra), then the newest
        messages after the summary that still fit. The marker and the summary come first and
        are kept while they fit. Tokens are counted by :class:`core.tokens.TokenCounter`: the
        embedding model's tokenizer when it has one, else about four characters a token, plus
        a per-message overhead.
        """
        if isinstance(token_budget, bool) or not isinstance(token_budget, int) or token_budget < 0:
            raise InvalidInput(f"token_budget must be a non-negative integer, "
                               f"got {token_budget!r}")
        counter = self._counter()
        try:
            replay = await self.replay(session_id)
        except NotFound:
            return RestoreResult(session_id, [], [], 0, token_budget, 0, counter.description)
        pinned: list[tuple[dict[str, Any], int | None]] = []
        if replay.marker is not None:
            pinned.append((replay.marker.payload, replay.marker.sequence))
        if replay.summary:
            pinned.append((summary_message(replay.summary), None))
        used = 0
        head: list[tuple[dict[str, Any], int | None]] = []
        for payload, sequence in pinned:
            cost = counter.count_message(payload)
            if used + cost <= token_budget:
                head.append((payload, sequence))
                used += cost
        kept: list[MemoryRecord] = []
        costs = counter.count_messages([r.payload for r in replay.messages])
        for record, cost in zip(reversed(replay.messages), reversed(costs), strict=True):
            if used + cost > token_budget:
                break
            kept.append(record)
            used += cost
        kept.reverse()
        return RestoreResult(
            session_id=session_id,
            messages=[p for p, _ in head] + [r.payload for r in kept],
            sequences=[s for _, s in head] + [r.sequence for r in kept], tokens_used=used,
            token_budget=token_budget, dropped=len(replay.messages) - len(kept),
            token_counting=counter.description,
            summarized_through=replay.upper_sequence if replay.summary else None,
            marker_sequence=replay.marker.sequence if replay.marker else None,
            last_sequence=replay.last_sequence)

    # -- one rolling summary ---------------------------------------------------------------

    async def summarize(self, session_id: str, token_budget: int | None = None) -> SummaryOutcome:
        """Check the session against the trigger and, when it fires, condense and write;
        the outcome says whether it fired, and why. With ``summary.auto`` this also runs in
        the background after stores (see :meth:`after_store`)."""
        budget = self._config.token_budget if token_budget is None else token_budget
        if isinstance(budget, bool) or not isinstance(budget, int) or budget < 1:
            raise InvalidInput(f"token_budget must be a positive integer, got {budget!r}")
        self._backend.require_writable()
        replay = await self.replay(session_id)
        counter = self._counter()
        costs = counter.count_messages([r.payload for r in replay.messages])
        marker_cost = counter.count_message(replay.marker.payload) if replay.marker else 0

        def summary_cost(text: str) -> int:
            return counter.count_message(summary_message(text)) if text else 0

        pinned = marker_cost + summary_cost(replay.summary)
        grown = marker_cost + summary_cost(with_block(replay.summary, ""))
        refold_base = marker_cost + summary_cost(BLOCK_HEADER)
        plan = plan_rolling(costs, pinned, grown, refold_base, budget, self.limits)

        def outcome(**fields: Any) -> SummaryOutcome:
            values = {"session_id": session_id, "triggered": plan.triggered, "applied": False,
                      "reason": plan.reason, "tokens_before": plan.use,
                      "tokens_after": plan.use, "token_budget": budget}
            return SummaryOutcome(**{**values, **fields})

        if not plan.triggered:
            return outcome()
        condensed = replay.messages[:plan.condense]
        turns = turns_of(condensed)
        if plan.refold:
            turns[:0] = summary_turns(replay.summary, replay.upper_sequence)
        base = "" if plan.refold else replay.summary
        rest = sum(costs[plan.condense:])
        target = math.floor(ratio_of(self._config.target_ratio, budget))
        block_tokens = plan.block_tokens
        try:
            for _ in range(_SHRINK_TRIES):
                block = await asyncio.to_thread(self.summarizer.summarize, turns, block_tokens)
                text = with_block(base, block)
                after = marker_cost + summary_cost(text) + rest
                if after <= target or block_tokens <= 1:
                    break
                block_tokens = max(1, block_tokens - (after - target))
        except SummaryError as exc:
            await self._backend.record_summary_error(session_id, str(exc), utc_now())
            return outcome(reason=f"the summarizer failed; history left as it was: {exc}",
                           error=str(exc))
        epoch = await self._backend.write_summary_state(
            session_id, SummaryDraft(text, condensed[-1].sequence, self.summarizer.name),
            replay.epoch, utc_now())
        if epoch is None:
            return outcome(reason=f"another writer changed the summary first (epoch "
                                  f"{replay.epoch} is stale); this one was discarded")
        if replay.state.get("summary_error"):
            await self._backend.record_summary_error(session_id, None, utc_now())
        return outcome(applied=True, tokens_after=after, condensed=len(condensed),
                       upper_sequence=condensed[-1].sequence, epoch=epoch)

    # -- automatic checks ------------------------------------------------------------------

    def after_store(self, session_id: str, payload_json: str, sequence: int) -> None:
        """Check a session that just grew (``summary.auto``), without counting on the store
        path: exact counting costs ~0.1 ms a message with a real tokenizer, a store ~1 ms.

        Each session keeps a tally of its unsummarised tokens, counted exactly from the file
        when first needed and again every :data:`_RECOUNT_EVERY` messages (other processes
        write too). In between, a message adds its JSON length times the session's measured
        tokens per character, plus :data:`_ESTIMATE_MARGIN`; a tally crossing the trigger
        starts a background check, which counts exactly before it summarises anything.
        """
        if not self._config.auto or self._backend.read_only:
            return
        if session_id in self._checks:
            self._stored_at[session_id] = time.monotonic()
        self._counter()  # tallies counted with a replaced model's counter are dropped
        tally = self._tallies.get(session_id)
        if tally is not None and sequence > tally.last and tally.added < _RECOUNT_EVERY:
            tally = tally.plus(sequence, len(payload_json))
            self._tallies[session_id] = tally
            if not self._over(tally):
                return
        self._start_check(session_id)

    def _start_check(self, session_id: str) -> None:
        if session_id in self._checks:
            self._again.add(session_id)
            return
        self._stored_at[session_id] = time.monotonic()
        self._checks[session_id] = asyncio.create_task(self._check(session_id),
                                                       name=f"summary-check:{session_id}")

    def _over(self, tally: _Tally) -> bool:
        return (tally.messages >= self._config.min_turns and tally.pinned + tally.tokens
                > ratio_of(self._config.trigger_ratio, self._config.token_budget))

    async def _check(self, session_id: str) -> None:
        try:
            while True:
                await self._pause_in(session_id)
                self._again.discard(session_id)
                try:
                    if self._over(await self._recount(session_id)):
                        self._tallies.pop(session_id, None)
                        await self.summarize(session_id)
                except NotFound:
                    return  # forgotten meanwhile
                except Exception:  # a background check must never take the engine down
                    log.exception("rolling summary check of %r failed", session_id)
                if session_id not in self._again:
                    return
        finally:
            self._checks.pop(session_id, None)
            self._stored_at.pop(session_id, None)

    async def _pause_in(self, session_id: str) -> None:
        """Wait until the session's stores pause for :data:`QUIET_SECONDS` (at most
        :data:`QUIET_AT_MOST_SECONDS`), or :meth:`settle` hurries every check."""
        at_most = time.monotonic() + QUIET_AT_MOST_SECONDS
        while not self._hurry.is_set():
            last = self._stored_at.get(session_id, 0.0)
            left = min(last + QUIET_SECONDS, at_most) - time.monotonic()
            if left <= 0:
                return
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(left):
                    await self._hurry.wait()

    async def _recount(self, session_id: str) -> _Tally:
        """The session's tally counted from the file (and kept for the next stores)."""
        replay = await self.replay(session_id)
        counter = self._counter()
        pinned = counter.count_message(replay.marker.payload) if replay.marker else 0
        if replay.summary:
            pinned += counter.count_message(summary_message(replay.summary))
        last = replay.messages[-1].sequence if replay.messages else int(
            replay.last_sequence or 0)
        tokens = sum(counter.count_messages([r.payload for r in replay.messages]))
        characters = sum(len(json.dumps(r.payload, ensure_ascii=False))
                         for r in replay.messages)
        ratio = tokens / characters if characters else _DEFAULT_TOKENS_PER_CHAR
        tally = _Tally(last, pinned, len(replay.messages), tokens, ratio)
        self._tallies.pop(session_id, None)
        self._tallies[session_id] = tally
        while len(self._tallies) > _TALLIES_KEPT:
            self._tallies.popitem(last=False)
        return tally

    def forget(self, session_id: str) -> None:
        """Drop what is kept about a session that is being deleted."""
        self._tallies.pop(session_id, None)

    async def settle(self) -> None:
        """Wait for every scheduled check (and the checks they queue) to finish, none of
        them waiting for its session's stores to pause."""
        self._settling += 1
        self._hurry.set()
        try:
            while self._checks:
                await asyncio.gather(*self._checks.values(), return_exceptions=True)
        finally:
            self._settling -= 1
            if not self._settling:
                self._hurry.clear()

    async def stop(self) -> None:
        """Run the checks still waiting for their session's pause (a close is one), for at
        most :data:`STOP_WAIT_SECONDS`, then cancel what is left (a cancelled check writes
        nothing): an agent that stores and exits still gets the summary it was owed."""
        if self._checks:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(STOP_WAIT_SECONDS):
                    await self.settle()
        await cancel_and_wait(*self._checks.values())
        self._checks.clear()
