"""PostgreSQL: schedules and their runs (oxydra's ``SchedulerStore``), as
:mod:`core.storage.sqlite.schedules` keeps them in SQLite.

Rows are read as the SQLite side reads them (:func:`core.storage.rows.schedule_definition`),
with its columns, order and refusals. SQLite serializes every writer; here many write at
once, so what SQLite's lock gave is asked for explicitly:
a claim takes its rows with ``FOR UPDATE SKIP LOCKED`` (two runners never get the same due
schedule, and neither waits for the other's), and a run is recorded with the schedule row
locked, so two runs finishing together both count towards ``consecutive_failures``.
``row_order`` stands in for SQLite's rowid wherever that breaks a tie.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from psycopg import sql

from core.errors import NotFound
from core.storage.pg.connection import Conn
from core.storage.rows import (
    SCHEDULE_COLUMNS,
    SCHEDULE_RUN_COLUMNS,
    paused_reason,
    run_values,
    schedule_definition,
    schedule_run,
)
from core.storage.vocabulary import ScheduleChanges, ScheduleDraft
from core.types import ScheduleDefinition, ScheduleRun

_SELECT = f"SELECT {', '.join(SCHEDULE_COLUMNS)} FROM schedules"
_SELECT_RUNS = f"SELECT {', '.join(SCHEDULE_RUN_COLUMNS)} FROM schedule_runs"


def _limit(limit: int) -> int | None:
    """SQLite reads a negative LIMIT as none; PostgreSQL refuses one, and LIMIT NULL is none."""
    return limit if limit >= 0 else None


def _rows(rows: Sequence[Sequence[Any]]) -> list[ScheduleDefinition]:
    return [schedule_definition(row) for row in rows]


def _runs(rows: Sequence[Sequence[Any]]) -> list[ScheduleRun]:
    return [schedule_run(row) for row in rows]


async def _fetch(conn: Conn, query: str, params: Sequence[Any]) -> list[ScheduleDefinition]:
    cursor = await conn.execute(query, params)
    return _rows(await cursor.fetchall())


async def _count(conn: Conn, query: str, params: Sequence[Any]) -> int:
    cursor = await conn.execute(query, params)
    row = await cursor.fetchone()
    assert row is not None
    return int(row[0])


async def insert_schedule(conn: Conn, draft: ScheduleDraft) -> ScheduleDefinition:
    """Store a new schedule."""
    row = draft.columns()
    statement = sql.SQL("INSERT INTO schedules({}) VALUES ({})").format(
        sql.SQL(", ").join(sql.Identifier(column) for column in row),
        sql.SQL(", ").join(sql.Placeholder() * len(row)))
    await conn.execute(statement, tuple(row.values()))
    return await get_schedule(conn, draft.schedule_id)


async def get_schedule(conn: Conn, schedule_id: str) -> ScheduleDefinition:
    """One schedule; ``NotFound`` when there is none."""
    found = await _fetch(conn, f"{_SELECT} WHERE schedule_id = %s", (schedule_id,))
    if not found:
        raise NotFound(f"no schedule {schedule_id!r}")
    return found[0]


async def schedules_named(conn: Conn, name: str, user_id: str | None) -> list[ScheduleDefinition]:
    """Schedules with this name (of one user, or of all)."""
    if user_id is None:
        return await _fetch(conn, f"{_SELECT} WHERE name = %s ORDER BY created_at, row_order",
                            (name,))
    return await _fetch(conn, f"{_SELECT} WHERE user_id = %s AND name = %s"
                        " ORDER BY created_at, row_order", (user_id, name))


def _escape_like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


async def search_schedules(
    conn: Conn,
    user_id: str | None,
    status: str | None,
    name: str | None,
    text: str | None,
    limit: int,
    offset: int,
) -> tuple[int, list[ScheduleDefinition]]:
    """(total, page) of schedules matching every filter given, newest first.

    ``name`` matches exactly; ``text`` is a case-insensitive substring of the name or goal.
    ILIKE on these ``COLLATE "C"`` columns folds ASCII letters only, as SQLite's LIKE does.
    """
    where: list[str] = []
    params: list[Any] = []
    for column, value in (("user_id", user_id), ("status", status), ("name", name)):
        if value is not None:
            where.append(f"{column} = %s")
            params.append(value)
    if text:
        pattern = f"%{_escape_like(text)}%"
        where.append("(goal ILIKE %s ESCAPE '\\' OR coalesce(name, '') ILIKE %s ESCAPE '\\')")
        params += [pattern, pattern]
    clause = f" WHERE {' AND '.join(where)}" if where else ""
    total = await _count(conn, f"SELECT count(*) FROM schedules{clause}", params)
    page = await _fetch(conn, f"{_SELECT}{clause} ORDER BY created_at DESC, row_order DESC"
                        " LIMIT %s OFFSET %s", [*params, _limit(limit), offset])
    return total, page


async def count_schedules(conn: Conn, user_id: str) -> int:
    """A user's schedules."""
    return await _count(conn, "SELECT count(*) FROM schedules WHERE user_id = %s", (user_id,))


async def delete_schedule(conn: Conn, schedule_id: str) -> bool:
    """Delete a schedule and (by cascade) its runs; False when there was none."""
    cursor = await conn.execute("DELETE FROM schedules WHERE schedule_id = %s", (schedule_id,))
    return cursor.rowcount > 0


async def update_schedule(
    conn: Conn, schedule_id: str, changes: ScheduleChanges, now: str
) -> ScheduleDefinition:
    """Apply checked changes; ``NotFound`` when there is no such schedule."""
    columns = changes.columns()
    assignments = [sql.SQL("{} = %s").format(sql.Identifier(column)) for column in columns]
    statement = sql.SQL("UPDATE schedules SET {} WHERE schedule_id = %s RETURNING {}").format(
        sql.SQL(", ").join([*assignments, sql.SQL("updated_at = %s")]),
        sql.SQL(", ").join(sql.Identifier(column) for column in SCHEDULE_COLUMNS))
    cursor = await conn.execute(statement, (*columns.values(), now, schedule_id))
    updated = _rows(await cursor.fetchall())
    if not updated:
        raise NotFound(f"no schedule {schedule_id!r}")
    return updated[0]


async def due_schedules(conn: Conn, now: str, limit: int) -> list[ScheduleDefinition]:
    """Active schedules whose next run is at or before ``now``, soonest first (the partial
    ``schedules_due`` index answers it)."""
    return await _fetch(conn, f"{_SELECT} WHERE status = 'active' AND next_run_at <= %s"
                        " ORDER BY next_run_at, row_order LIMIT %s", (now, _limit(limit)))


async def claim_due(
    conn: Conn, now: str, runner: str, until: str, limit: int
) -> list[ScheduleDefinition]:
    """Claim up to ``limit`` due schedules no live claim holds, for ``runner`` until
    ``until``; the claimed rows, soonest first.

    ``SKIP LOCKED`` passes over rows another runner is claiming right now, and READ
    COMMITTED re-checks the condition on a row whose claim committed meanwhile, so two
    runners never get the same row and neither waits for the other.
    """
    cursor = await conn.execute(
        "SELECT schedule_id FROM schedules WHERE status = 'active' AND next_run_at <= %s"
        " AND (claimed_by IS NULL OR claim_expires_at <= %s)"
        " ORDER BY next_run_at, row_order LIMIT %s FOR UPDATE SKIP LOCKED",
        (now, now, _limit(limit)))
    ids = [row[0] for row in await cursor.fetchall()]
    if not ids:
        return []
    claimed = await _fetch(conn, "UPDATE schedules SET claimed_by = %s, claim_expires_at = %s"
                           f" WHERE schedule_id = ANY(%s) RETURNING {', '.join(SCHEDULE_COLUMNS)}",
                           (runner, until, ids))
    position = {schedule_id: n for n, schedule_id in enumerate(ids)}
    return sorted(claimed, key=lambda schedule: position[schedule.schedule_id])


async def release_claim(conn: Conn, schedule_id: str, runner: str) -> None:
    """Give a claim back without recording a run."""
    await conn.execute("UPDATE schedules SET claimed_by = NULL, claim_expires_at = NULL"
                       " WHERE schedule_id = %s AND claimed_by = %s", (schedule_id, runner))


async def record_run_and_reschedule(
    conn: Conn,
    run: ScheduleRun,
    next_run_at: str | None,
    status: str | None,
    status_reason: str | None,
    failure_limit: int,
    keep: int,
    now: str,
) -> ScheduleDefinition:
    """Record a run and reschedule its schedule in one transaction (oxydra).

    The run row; ``last_run_at``/``last_run_status``; ``consecutive_failures`` (reset by a
    success); the next run; the status (``status`` when given; paused, with the reason, once
    the failures reach ``failure_limit``); the claim released; history pruned to ``keep``.
    The schedule row is locked first, so a concurrent run's count is never overwritten.
    """
    found = await _fetch(conn, f"{_SELECT} WHERE schedule_id = %s FOR UPDATE",
                         (run.schedule_id,))
    if not found:
        raise NotFound(f"no schedule {run.schedule_id!r}")
    schedule = found[0]
    await conn.execute(f"INSERT INTO schedule_runs({', '.join(SCHEDULE_RUN_COLUMNS)}) VALUES "
                       f"({', '.join(['%s'] * len(SCHEDULE_RUN_COLUMNS))})",
                       run_values(run))
    failures = 0 if run.status == "ok" else schedule.consecutive_failures + 1
    reason = status_reason if status is not None else schedule.status_reason
    new_status = status or schedule.status
    if failure_limit and failures >= failure_limit and new_status == "active":
        new_status = "paused"
        reason = paused_reason(failures, run)
    await conn.execute(
        "UPDATE schedules SET last_run_at = %s, last_run_status = %s,"
        " consecutive_failures = %s, next_run_at = %s, status = %s, status_reason = %s,"
        " claimed_by = NULL, claim_expires_at = NULL, updated_at = %s"
        " WHERE schedule_id = %s",
        (run.started_at, run.status, failures, next_run_at, new_status, reason, now,
         run.schedule_id))
    await prune_run_history(conn, run.schedule_id, keep)
    return await get_schedule(conn, run.schedule_id)


async def prune_run_history(conn: Conn, schedule_id: str, keep: int) -> int:
    """Delete all but the newest ``keep`` runs of a schedule; how many went."""
    cursor = await conn.execute(
        "DELETE FROM schedule_runs WHERE schedule_id = %(schedule)s AND run_id NOT IN ("
        " SELECT run_id FROM schedule_runs WHERE schedule_id = %(schedule)s"
        " ORDER BY started_at DESC, run_id DESC LIMIT %(keep)s)",
        {"schedule": schedule_id, "keep": max(0, keep)})
    return cursor.rowcount


async def run_history(conn: Conn, schedule_id: str, limit: int) -> list[ScheduleRun]:
    """A schedule's runs, newest first."""
    cursor = await conn.execute(f"{_SELECT_RUNS} WHERE schedule_id = %s"
                                " ORDER BY started_at DESC, run_id DESC LIMIT %s",
                                (schedule_id, _limit(limit)))
    return _runs(await cursor.fetchall())


async def count_runs(conn: Conn, schedule_id: str) -> int:
    """How many runs of a schedule the history holds."""
    return await _count(conn, "SELECT count(*) FROM schedule_runs WHERE schedule_id = %s",
                        (schedule_id,))


async def get_run(conn: Conn, run_id: str) -> ScheduleRun:
    """One run; ``NotFound`` when there is none."""
    cursor = await conn.execute(f"{_SELECT_RUNS} WHERE run_id = %s", (run_id,))
    found = _runs(await cursor.fetchall())
    if not found:
        raise NotFound(f"no schedule run {run_id!r}")
    return found[0]
