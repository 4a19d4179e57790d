"""SQL for schedules and their runs (oxydra ``SchedulerStore``).

:mod:`core.schedules.store` checks what goes in; what comes out is
:class:`core.types.ScheduleDefinition` and :class:`core.types.ScheduleRun`
(:func:`core.storage.rows.schedule_definition`). Every multi-row change is one
``BEGIN IMMEDIATE`` transaction, so a run is never recorded without its reschedule, and two
runners (in any processes) never claim the same due schedule.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from core.errors import NotFound
from core.storage.rows import (
    SCHEDULE_COLUMNS,
    SCHEDULE_RUN_COLUMNS,
    paused_reason,
    run_values,
    schedule_definition,
    schedule_run,
)
from core.storage.sqlite.connection import transaction
from core.storage.vocabulary import ScheduleChanges, ScheduleDraft
from core.types import ScheduleDefinition, ScheduleRun

_SELECT = f"SELECT {', '.join(SCHEDULE_COLUMNS)} FROM schedules"


def _rows(rows: Sequence[Sequence[Any]]) -> list[ScheduleDefinition]:
    return [schedule_definition(row) for row in rows]


def insert_schedule(conn: Any, draft: ScheduleDraft) -> ScheduleDefinition:
    """Store a new schedule."""
    row = draft.columns()
    with transaction(conn):
        conn.execute(f"INSERT INTO schedules({', '.join(row)}) VALUES "
                     f"({', '.join('?' * len(row))})", tuple(row.values()))
    return get_schedule(conn, draft.schedule_id)


def get_schedule(conn: Any, schedule_id: str) -> ScheduleDefinition:
    """One schedule; ``NotFound`` when there is none."""
    found = _rows(conn.execute(f"{_SELECT} WHERE schedule_id = ?", (schedule_id,)).fetchall())
    if not found:
        raise NotFound(f"no schedule {schedule_id!r}")
    return found[0]


def schedules_named(conn: Any, name: str, user_id: str | None) -> list[ScheduleDefinition]:
    """Schedules with this name (of one user, or of all)."""
    if user_id is None:
        return _rows(conn.execute(f"{_SELECT} WHERE name = ? ORDER BY created_at",
                                  (name,)).fetchall())
    return _rows(conn.execute(f"{_SELECT} WHERE user_id = ? AND name = ? ORDER BY created_at",
                              (user_id, name)).fetchall())


def _escape_like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def search_schedules(conn: Any, user_id: str | None, status: str | None, name: str | None,
                     text: str | None, limit: int,
                     offset: int) -> tuple[int, list[ScheduleDefinition]]:
    """(total, page) of schedules matching every filter given, newest first.

    ``name`` matches exactly; ``text`` is a case-insensitive substring of the name or goal.
    """
    where, params = [], []
    for column, value in (("user_id", user_id), ("status", status), ("name", name)):
        if value is not None:
            where.append(f"{column} = ?")
            params.append(value)
    if text:
        pattern = f"%{_escape_like(text)}%"
        where.append("(goal LIKE ? ESCAPE '\\' OR coalesce(name, '') LIKE ? ESCAPE '\\')")
        params += [pattern, pattern]
    clause = f" WHERE {' AND '.join(where)}" if where else ""
    total = conn.execute(f"SELECT count(*) FROM schedules{clause}", params).fetchone()[0]
    page = conn.execute(f"{_SELECT}{clause} ORDER BY created_at DESC, rowid DESC"
                        " LIMIT ? OFFSET ?", [*params, limit, offset]).fetchall()
    return total, _rows(page)


def count_schedules(conn: Any, user_id: str) -> int:
    """A user's schedules."""
    return int(conn.execute("SELECT count(*) FROM schedules WHERE user_id = ?",
                            (user_id,)).fetchone()[0])


def delete_schedule(conn: Any, schedule_id: str) -> bool:
    """Delete a schedule and (by cascade) its runs; False when there was none."""
    with transaction(conn):
        return bool(conn.execute("DELETE FROM schedules WHERE schedule_id = ?",
                                 (schedule_id,)).rowcount > 0)


def update_schedule(conn: Any, schedule_id: str, changes: ScheduleChanges,
                    now: str) -> ScheduleDefinition:
    """Apply checked changes; ``NotFound`` when there is no such schedule."""
    columns = changes.columns()
    with transaction(conn):
        get_schedule(conn, schedule_id)
        assignments = ", ".join(f"{column} = ?" for column in columns)
        conn.execute(f"UPDATE schedules SET {assignments}{', ' if columns else ''}"
                     "updated_at = ? WHERE schedule_id = ?",
                     (*columns.values(), now, schedule_id))
        return get_schedule(conn, schedule_id)


def due_schedules(conn: Any, now: str, limit: int) -> list[ScheduleDefinition]:
    """Active schedules whose next run is at or before ``now``, soonest first (the partial
    ``schedules_due`` index answers it)."""
    return _rows(conn.execute(
        f"{_SELECT} WHERE status = 'active' AND next_run_at <= ? ORDER BY next_run_at LIMIT ?",
        (now, limit)).fetchall())


def claim_due(conn: Any, now: str, runner: str, until: str,
              limit: int) -> list[ScheduleDefinition]:
    """Claim up to ``limit`` due schedules no live claim holds, for ``runner`` until
    ``until``; the claimed rows. One transaction: two runners never get the same row."""
    with transaction(conn):
        ids = [row[0] for row in conn.execute(
            "SELECT schedule_id FROM schedules WHERE status = 'active' AND next_run_at <= ?"
            " AND (claimed_by IS NULL OR claim_expires_at <= ?) ORDER BY next_run_at LIMIT ?",
            (now, now, limit)).fetchall()]
        conn.executemany("UPDATE schedules SET claimed_by = ?, claim_expires_at = ?"
                         " WHERE schedule_id = ?", [(runner, until, i) for i in ids])
        return [get_schedule(conn, i) for i in ids]


def release_claim(conn: Any, schedule_id: str, runner: str) -> None:
    """Give a claim back without recording a run."""
    with transaction(conn):
        conn.execute("UPDATE schedules SET claimed_by = NULL, claim_expires_at = NULL"
                     " WHERE schedule_id = ? AND claimed_by = ?", (schedule_id, runner))


def record_run_and_reschedule(conn: Any, run: ScheduleRun, next_run_at: str | None,
                              status: str | None, status_reason: str | None,
                              failure_limit: int, keep: int, now: str) -> ScheduleDefinition:
    """Record a run and reschedule its schedule in one transaction (oxydra).

    The run row; ``last_run_at``/``last_run_status``; ``consecutive_failures`` (reset by a
    success); the next run; the status (``status`` when given; paused, with the reason, once
    the failures reach ``failure_limit``); the claim released; history pruned to ``keep``.
    """
    with transaction(conn):
        schedule = get_schedule(conn, run.schedule_id)
        conn.execute(f"INSERT INTO schedule_runs({', '.join(SCHEDULE_RUN_COLUMNS)}) VALUES "
                     f"({', '.join('?' * len(SCHEDULE_RUN_COLUMNS))})",
                     run_values(run))
        failures = 0 if run.status == "ok" else schedule.consecutive_failures + 1
        reason = status_reason if status is not None else schedule.status_reason
        new_status = status or schedule.status
        if failure_limit and failures >= failure_limit and new_status == "active":
            new_status = "paused"
            reason = paused_reason(failures, run)
        conn.execute(
            "UPDATE schedules SET last_run_at = ?, last_run_status = ?,"
            " consecutive_failures = ?, next_run_at = ?, status = ?, status_reason = ?,"
            " claimed_by = NULL, claim_expires_at = NULL, updated_at = ?"
            " WHERE schedule_id = ?",
            (run.started_at, run.status, failures, next_run_at, new_status, reason, now,
             run.schedule_id))
        prune_run_history(conn, run.schedule_id, keep)
        return get_schedule(conn, run.schedule_id)


def prune_run_history(conn: Any, schedule_id: str, keep: int) -> int:
    """Delete all but the newest ``keep`` runs of a schedule; how many went."""
    with transaction(conn):
        return int(conn.execute(
            "DELETE FROM schedule_runs WHERE schedule_id = ?1 AND run_id NOT IN ("
            " SELECT run_id FROM schedule_runs WHERE schedule_id = ?1"
            " ORDER BY started_at DESC, run_id DESC LIMIT ?2)",
            (schedule_id, max(0, keep))).rowcount)


def run_history(conn: Any, schedule_id: str, limit: int) -> list[ScheduleRun]:
    """A schedule's runs, newest first."""
    rows = conn.execute(f"SELECT {', '.join(SCHEDULE_RUN_COLUMNS)} FROM schedule_runs"
                        " WHERE schedule_id = ? ORDER BY started_at DESC, run_id DESC LIMIT ?",
                        (schedule_id, limit)).fetchall()
    return [schedule_run(row) for row in rows]


def count_runs(conn: Any, schedule_id: str) -> int:
    """How many runs of a schedule the history holds."""
    return int(conn.execute("SELECT count(*) FROM schedule_runs WHERE schedule_id = ?",
                            (schedule_id,)).fetchone()[0])


def get_run(conn: Any, run_id: str) -> ScheduleRun:
    """One run; ``NotFound`` when there is none."""
    row = conn.execute(f"SELECT {', '.join(SCHEDULE_RUN_COLUMNS)} FROM schedule_runs"
                       " WHERE run_id = ?", (run_id,)).fetchone()
    if row is None:
        raise NotFound(f"no schedule run {run_id!r}")
    return schedule_run(row)
