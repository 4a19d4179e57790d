"""Compaction into archives (crabtalk, pynchy) and consolidation of idle conversations
(aidaemon).

``compact`` folds everything since the latest compact marker into one Archive note
(category ``conversation``, a generated name ``archive <session> #<n>``), appends a new
marker event naming it, marks the folded events ``consolidated_at`` and resets the rolling
summary, all in one transaction that first checks nothing moved since the history was read.
The markdown copy is written after the commit; an archive whose file is missing (a crash in
between, a full disk) is written again from its note by the next consolidation, so nothing
is ever summarised twice.

``consolidate`` compacts every conversation idle for ``consolidation.idle_hours`` that still
holds unfolded events, oldest first, one transaction each: a crash loses at most the
conversation in hand, and the next pass skips every one already folded. While the engine
is open it runs every ``consolidation.interval_hours`` (the last run is kept in the file, so
the cadence survives restarts).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import random
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from core import clock
from core.clock import format_utc, utc_now
from core.errors import (
    InvalidInput,
    MemoryBusy,
    NotFound,
    ReadOnlyDatabase,
    StorageFull,
    SummaryConflict,
    SummaryError,
)
from core.inputs import MAX_IDENTIFIER_CHARS, shown
from core.storage.vocabulary import CompactionPlan
from core.summary import archive_files
from core.summary.service import summary_turns, turns_of
from core.tasks import cancel_and_wait, mark_as_upkeep
from core.types import CompactionResult, ConsolidationReport, MemoryRecord

if TYPE_CHECKING:
    from core.config import ConsolidationConfig, SummaryConfig
    from core.embeddings.current_model import CurrentModel
    from core.notes.service import Notes
    from core.storage.backend import Backend
    from core.summary.service import Replay, Summaries
    from core.working_memory import WorkingMemory

log = logging.getLogger(__name__)

LAST_RUN_KEY = "consolidation_last_run"
# Attempts at one compaction that lose to other writers before it is refused.
COMPACT_ATTEMPTS = 3
ARCHIVE_TAG = "archive"

Progress = Callable[[int, int, str], None]  # (done, total, session just handled)


def archive_name(session_id: str, number: int) -> str:
    """``archive <session> #<n>``; a session id too long for a name is cut and hashed."""
    suffix = f" #{number}"
    room = MAX_IDENTIFIER_CHARS - len("archive ") - len(suffix)
    shown = " ".join(session_id.split()) or "_"
    if len(shown) > room or shown != session_id:
        digest = hashlib.sha256(session_id.encode("utf-8")).hexdigest()[:8]
        shown = f"{shown[:room - 9]}~{digest}"
    return f"archive {shown}{suffix}"


def parse_utc(text: str) -> datetime:
    """An engine timestamp back to an aware datetime."""
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)


class Compactor:
    """Compacts conversations and consolidates idle ones, for one engine."""

    def __init__(self, backend: Backend, summary: SummaryConfig,
                 consolidation: ConsolidationConfig, *, summaries: Summaries, notes: Notes,
                 model: CurrentModel, working_memory: WorkingMemory,
                 wake: Callable[[], None]) -> None:
        self._backend = backend
        self._summary = summary
        self._consolidation = consolidation
        self._summaries = summaries
        self._notes = notes
        self._model = model
        self._working_memory = working_memory
        self._wake = wake
        self.root = archive_files.archive_root(summary.archive_dir, backend.location)
        self._loop: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()

    # -- one compaction --------------------------------------------------------------------

    async def compact(self, session_id: str) -> CompactionResult:
        """Fold the history since the latest marker into an Archive note and a new marker
        (crabtalk), with a markdown copy of the archive (pynchy).

        A session being written meanwhile (a message arriving between the read and the
        commit, another process holding the write lock) is compacted again from a fresh
        read, up to ``COMPACT_ATTEMPTS`` times with growing pauses: each attempt that lost
        wrote nothing, so trying again is safe. Still losing after that is a
        ``SummaryConflict`` (or ``MemoryBusy``) saying to try again later.
        """
        self._backend.require_writable()
        for attempt in range(1, COMPACT_ATTEMPTS + 1):
            try:
                return await self._compact_once(session_id)
            except SummaryConflict as exc:
                if attempt == COMPACT_ATTEMPTS:
                    raise SummaryConflict(
                        f"session {session_id[:100]!r} kept changing while it was being "
                        f"compacted ({COMPACT_ATTEMPTS} attempts); nothing was written; "
                        "try again when it is quieter") from exc
            except MemoryBusy:
                if attempt == COMPACT_ATTEMPTS:
                    raise
            log.info("compaction of %r lost to another writer (attempt %d); trying again",
                     session_id, attempt)
            # Jittered, so two compactors that collided do not meet again.
            await asyncio.sleep(random.uniform(0.5, 1.0) * 0.05 * 2 ** attempt)
        raise AssertionError("unreachable: the last attempt returns or raises")

    async def _compact_once(self, session_id: str) -> CompactionResult:
        """One compaction from a fresh read of the session; ``SummaryConflict`` and nothing
        written when the session moved on before the commit."""
        replay = await self._summaries.replay(session_id)
        folded = replay.messages
        if not folded and not replay.summary:
            raise InvalidInput(f"nothing to compact in session {shown(session_id)}: no messages "
                               "since its last compact marker")
        everything = await self._since_marker(session_id, replay)
        first, last = everything[0].sequence, everything[-1].sequence
        name = archive_name(session_id, await self._backend.archive_count(session_id) + 1)
        summarizer = self._summaries.summarizer
        header = (f"Conversation {session_id}: messages #{first}-#{last} ({len(everything)} "
                  f"messages, {everything[0].created_at} to {everything[-1].created_at}), "
                  f"summarised by {summarizer.name}.")
        turns = turns_of(folded)
        if replay.summary:  # what the rolling summary already condensed, line by line
            turns[:0] = summary_turns(replay.summary, replay.upper_sequence)
        room = self._summary.archive_tokens - self._model.tokens.count(header) - 2
        body = await asyncio.to_thread(summarizer.summarize, turns, max(1, room))
        now = utc_now()
        draft = self._notes.draft(
            name, f"{header}\n\n{body}" if body else header,
            namespace=self._notes.namespace(await self._namespace(session_id)),
            kind="Archive", category="conversation", tags=[ARCHIVE_TAG], source="compaction")
        marker = {"role": "system",
                  "content": f"Compact marker: the {len(everything)} messages before this "
                             f"point (#{first}-#{last}) are archived in the note {name!r}; "
                             "search memory or open that note to see them.",
                  "metadata": {"compact_marker": {"archive_name": name, "archived_at": now,
                                                  "first_sequence": first,
                                                  "last_sequence": last}}}
        plan = CompactionPlan(session_id, replay.epoch, replay.last_sequence or last, first,
                              len(everything), summarizer.name, marker)
        committed = await self._backend.commit_compaction(plan, draft, now)
        self._working_memory.drop(session_id)
        self._wake()  # the archive note's chunks wait for vectors
        path, error = await self._write_file(session_id, committed.marker_sequence, name,
                                             committed.note.content)
        return CompactionResult(session_id, name, committed.note.note_id, now,
                                committed.marker_sequence, first, last, len(everything),
                                path, error)

    async def _since_marker(self, session_id: str, replay: Replay) -> list[MemoryRecord]:
        """Every message the compaction folds: after the marker, summarised ones included."""
        if not replay.summary:
            return replay.messages
        floor = replay.marker.sequence if replay.marker else 0
        rows = await self._backend.read_events(session_id, after_sequence=floor)
        return rows

    async def _namespace(self, session_id: str) -> str | None:
        agent = await self._backend.session_agent(session_id)
        if agent is None:
            raise NotFound(f"no session {shown(session_id)}")
        return agent or None

    async def _write_file(self, session_id: str, marker_sequence: int, name: str,
                          content: str) -> tuple[str | None, str | None]:
        """Write one archive's markdown and record where (or why not)."""
        path = archive_files.archive_path(self.root, session_id, name)
        try:
            await asyncio.to_thread(archive_files.write_atomically, path,
                                    archive_files.render(name, content))
        except OSError as exc:
            error = f"{type(exc).__name__}: {exc}"
            log.warning("archive %r: markdown not written: %s", name, error)
            await self._record_file(session_id, marker_sequence, None, error)
            return None, error
        return str(path), await self._record_file(session_id, marker_sequence, str(path), None)

    async def _record_file(self, session_id: str, marker_sequence: int, path: str | None,
                           error: str | None) -> str | None:
        """Record where an archive's markdown went; on a full disk the compaction (already
        committed) stands and the next repair records it: the reason, else None. (So a
        busy file here never makes :meth:`compact` try a committed compaction again.)"""
        try:
            await self._backend.record_archive_file(session_id, marker_sequence, path, error)
        except (StorageFull, ReadOnlyDatabase, MemoryBusy) as exc:
            log.warning("archive of %r: markdown location not recorded: %s", session_id, exc)
            return error or f"markdown location not recorded: {exc}"
        return error

    async def repair_files(self) -> int:
        """Write every archive whose markdown is missing; how many were written."""
        written = 0
        for archive, content in await self._backend.unwritten_archives():
            path, _ = await self._write_file(archive.session_id, archive.marker_sequence,
                                             archive.archive_name, content)
            written += path is not None
        return written

    # -- consolidation ---------------------------------------------------------------------

    async def consolidate(self, idle_hours: float | None = None,
                          progress: Progress | None = None) -> ConsolidationReport:
        """Compact every conversation idle longer than ``idle_hours`` (default: config)."""
        self._backend.require_writable()
        hours = self._consolidation.idle_hours if idle_hours is None else idle_hours
        if isinstance(hours, bool) or not isinstance(hours, int | float) or hours < 0:
            raise InvalidInput(f"idle_hours must be a number of hours, 0 or more, got {hours!r}")
        async with self._lock:  # one pass at a time in this process
            started = utc_now()
            idle_before = format_utc(parse_utc(started) - timedelta(hours=hours))
            report = ConsolidationReport(started, started, idle_before,
                                         files_repaired=await self.repair_files())
            sessions = await self._backend.idle_sessions(idle_before)
            for done, session_id in enumerate(sessions, start=1):
                try:
                    report.compacted.append(await self.compact(session_id))
                except (SummaryConflict, MemoryBusy, InvalidInput, NotFound) as exc:
                    report.skipped[session_id] = str(exc)
                except SummaryError as exc:
                    report.failed[session_id] = str(exc)
                    await self._backend.record_summary_error(session_id, str(exc), utc_now())
                if progress is not None:
                    progress(done, len(sessions), session_id)
            finished = utc_now()
            await self._backend.write_meta(LAST_RUN_KEY, finished)
            return ConsolidationReport(started, finished, idle_before, report.compacted,
                                       report.skipped, report.failed, report.files_repaired)

    def start(self) -> None:
        """Run consolidation every ``interval_hours`` while the engine is open."""
        if self._loop is None and self._consolidation.enabled and not self._backend.read_only:
            self._loop = asyncio.create_task(self._every_interval(), name="consolidation")

    async def stop(self) -> None:
        """Stop the background loop (a compaction in hand is rolled back, never half-done)."""
        if self._loop is not None:
            await cancel_and_wait(self._loop)
            self._loop = None

    async def _every_interval(self) -> None:
        mark_as_upkeep()
        interval = timedelta(hours=self._consolidation.interval_hours)
        while True:
            last = await self._backend.read_meta(LAST_RUN_KEY)
            if last is None:  # a new file: the first pass is one interval from now
                last = utc_now()
                await self._backend.write_meta(LAST_RUN_KEY, last)
            wait = (parse_utc(last) + interval - clock.now()).total_seconds()
            if wait > 0:
                await asyncio.sleep(wait)
                continue  # another process may have run it meanwhile: read again
            try:
                report = await self.consolidate()
                log.info("consolidation: %d compacted, %d skipped, %d failed",
                         len(report.compacted), len(report.skipped), len(report.failed))
            except (StorageFull, ReadOnlyDatabase) as exc:
                # Nothing can be recorded either: try again in an interval, not in a loop.
                log.warning("consolidation pass failed: %s", exc)
                await asyncio.sleep(interval.total_seconds())
            except Exception:
                log.exception("consolidation pass failed")
                await self._backend.write_meta(LAST_RUN_KEY, utc_now())
